"""The PostgreSQL fixtures (``postgres``, ``postgres_db``; tests/support/postgres.py) on a real server: it runs as an
unprivileged user on loopback, connections work, each test's database is fresh and empty, a restart keeps committed
data and cuts open connections, and a stopped server refuses connections until it is started again. About 10 s here
(the server's start ~5 s, then ~1 s a test: a database made and dropped, a restart)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import psycopg
import pytest

from tests.support.postgres import PostgresDatabase, PostgresServer


def process_uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for pid {pid}")


def process_gone(pid: int) -> bool:
    """No such process, or a zombie (exited, not yet reaped by its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_the_server_runs_unprivileged_on_loopback_and_connects(postgres_db: PostgresDatabase) -> None:
    server = postgres_db.server
    assert re.fullmatch(rf"postgresql://asyncconsumer@127\.0\.0\.1:{server.port}/{postgres_db.name}", postgres_db.dsn)
    assert server.pid is not None
    uid = process_uid(server.pid)
    assert uid != 0
    if os.geteuid() == 0:
        assert server.os_user is not None
        assert uid == server.os_user.uid
    else:
        assert uid == os.geteuid()
    with postgres_db.connect() as conn:
        row = conn.execute(
            "SELECT current_database(), current_user, inet_server_addr()::text, current_setting('server_version_num'),"
            " current_setting('fsync'), current_setting('synchronous_commit')"
        ).fetchone()
    assert row is not None
    database, user, address, version, fsync, synchronous_commit = row
    assert (database, user, address) == (postgres_db.name, "asyncconsumer", "127.0.0.1/32")
    assert int(str(version)) // 10000 == int(server.version) >= 15
    assert (fsync, synchronous_commit) == ("on", "on")


@pytest.mark.parametrize("turn", ["first", "second"])
def test_each_test_gets_a_fresh_empty_database(postgres_db: PostgresDatabase, turn: str) -> None:
    """Both turns write the same table: whichever runs second would find the first's table and row if the database
    were shared or reused."""
    with postgres_db.connect() as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        assert tables == []
        conn.execute("CREATE TABLE shared_name (turn text)")
        conn.execute("INSERT INTO shared_name VALUES (%s)", (turn,))
    with postgres_db.connect() as conn:
        assert conn.execute("SELECT turn FROM shared_name").fetchall() == [(turn,)]
    assert postgres_db.name in postgres_db.server.databases()


def test_restart_keeps_committed_data_and_cuts_open_connections(postgres_db: PostgresDatabase) -> None:
    server = postgres_db.server
    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE kept (id int PRIMARY KEY)")
        conn.execute("INSERT INTO kept SELECT generate_series(1, 100)")
    open_conn = postgres_db.connect()
    try:
        open_conn.execute("INSERT INTO kept VALUES (1000)")  # in an open transaction, never committed
        old_pid = server.pid
        postgres_db.restart()
        assert server.pid != old_pid
        assert old_pid is not None
        with pytest.raises(psycopg.OperationalError):
            open_conn.execute("SELECT 1")
    finally:
        open_conn.close()
    with postgres_db.connect() as conn:
        assert conn.execute("SELECT count(*), max(id) FROM kept").fetchone() == (100, 100)


def test_stop_refuses_connections_until_start(postgres: PostgresServer, postgres_db: PostgresDatabase) -> None:
    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE kept (id int)")
        conn.execute("INSERT INTO kept VALUES (7)")
    pid = postgres.pid
    assert pid is not None
    postgres_db.stop()
    assert not postgres.running
    assert process_gone(pid)
    with pytest.raises(psycopg.OperationalError, match=str(postgres.port)):
        psycopg.connect(postgres_db.dsn, connect_timeout=5)
    postgres_db.start()
    assert postgres.running
    with postgres_db.connect() as conn:
        assert conn.execute("SELECT id FROM kept").fetchall() == [(7,)]


def test_an_immediate_stop_recovers_committed_data_from_the_wal(postgres_db: PostgresDatabase) -> None:
    """``stop("immediate")`` is a crash as far as the data goes (no checkpoint): what was committed comes back."""
    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE kept (id int)")
        conn.execute("INSERT INTO kept SELECT generate_series(1, 50)")
    postgres_db.stop("immediate")
    postgres_db.start()
    with postgres_db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM kept").fetchone() == (50,)
    assert "database system was not properly shut down" in postgres_db.server.log_tail(60)


def test_a_test_that_leaves_the_server_stopped_does_not_stop_the_next(postgres: PostgresServer) -> None:
    """``postgres_db`` starts it again: the next test's database is made on a running server."""
    postgres.stop()
    assert not postgres.running
    postgres.ensure_running()
    assert postgres.running
    with psycopg.connect(postgres.dsn(), connect_timeout=5) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
