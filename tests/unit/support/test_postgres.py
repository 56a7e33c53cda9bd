"""tests/support/postgres.py without a server: where it finds PostgreSQL's programs, what it says when they are
missing (naming the package to install), whom it runs the server as when the tests run as root, and the fixture's
skip (or, in CI, failure) when PostgreSQL cannot run. The server itself: tests/integration/test_postgres_fixture.py."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import pytest

from tests.conftest import start_postgres
from tests.support import postgres
from tests.support.postgres import PostgresUnavailable, database_name, find_bindir, server_os_user, unavailable_reason


def stand_in_programs(directory: Path, names: tuple[str, ...] = postgres.PROGRAMS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        program = directory / name
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return directory


def test_the_bindir_override_is_used_when_it_has_every_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = stand_in_programs(tmp_path / "bin")
    monkeypatch.setenv(postgres.BINDIR_ENV, str(found))
    assert find_bindir() == found


def test_missing_programs_name_the_package_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory with initdb but no pg_ctl or postgres (as libpq-dev's pg_config --bindir may be) is not enough."""
    monkeypatch.setenv(postgres.BINDIR_ENV, str(stand_in_programs(tmp_path / "bin", ("initdb",))))
    assert find_bindir() is None
    reason = unavailable_reason()
    assert reason is not None
    assert "apt-get install postgresql" in reason
    assert "initdb, pg_ctl, postgres" in reason


def test_as_root_the_server_runs_as_an_unprivileged_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.delenv(postgres.OS_USER_ENV, raising=False)
    chosen = server_os_user()
    assert chosen is not None
    assert chosen.uid != 0
    assert chosen.name in postgres.OS_USER_CANDIDATES
    assert pwd.getpwnam(chosen.name).pw_uid == chosen.uid


def test_as_root_a_named_user_that_is_missing_or_root_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv(postgres.OS_USER_ENV, "no-such-user-for-asyncconsumer")
    with pytest.raises(PostgresUnavailable, match=r"no-such-user-for-asyncconsumer.*ASYNCCONSUMER_PG_OS_USER"):
        server_os_user()
    monkeypatch.setenv(postgres.OS_USER_ENV, "root")
    with pytest.raises(PostgresUnavailable, match="refuses to run as root"):
        server_os_user()


def test_not_as_root_the_server_runs_as_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert server_os_user() is None


def test_without_postgresql_the_fixture_skips_naming_it_and_fails_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(postgres.BINDIR_ENV, str(tmp_path / "empty"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install postgresql"):
        start_postgres()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install postgresql(.|\n)*CI is set"):
        start_postgres()


def test_database_names_are_legal_and_fresh() -> None:
    first, second = database_name("test_x[Kafka-1] long " + "y" * 80), database_name("test_x[Kafka-1] long")
    assert first != second
    assert len(first.encode()) <= 63
    assert first.startswith("test_x_kafka_1_long_")
    assert all(c.isalnum() or c == "_" for c in first)
