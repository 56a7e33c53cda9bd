"""The SQLite store on real files, both sides: the table made if missing, WAL mode, claims that bump the lease
epoch, writes inside the caller's transaction, a zombie's write fenced with everything it wrote rolled back, an
earlier attempt's commit recognised, a handler that raises rolling back, and a file that cannot be opened giving a
typed error naming it after a bounded retry."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from asyncconsumer.errors import OffsetStoreFencedError, OffsetStoreUnavailableError
from asyncconsumer.records import TopicPartition
from asyncconsumer.stores.base import OffsetAlreadyStored
from asyncconsumer.stores.sqlite import BlockingSQLiteOffsetStore, SQLiteOffsetStore, create, path_of

pytestmark = pytest.mark.anyio

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        return conn.execute(sql).fetchall()


def _results(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE results (offset INTEGER)")


async def test_claims_make_the_table_and_bump_the_epoch_each_time(tmp_path: Path) -> None:
    store = SQLiteOffsetStore(tmp_path / "o.db")
    await store.open()
    first = await store.claim("g", [TP0, TP1])
    second = await store.claim("g", [TP1])
    await store.close()
    assert {tp: (lease.epoch, lease.offset) for tp, lease in first.items()} == {TP0: (1, None), TP1: (1, None)}
    assert (second[TP1].epoch, second[TP1].offset) == (2, None)
    assert _rows(tmp_path / "o.db", "PRAGMA journal_mode") == [("wal",)]
    assert sorted(_rows(tmp_path / "o.db", "SELECT topic, partition, epoch FROM asyncconsumer_offsets")) == [
        ("t", 0, 1),
        ("t", 1, 2),
    ]


async def test_a_write_lands_with_the_handlers_rows_and_the_next_claim_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    _results(path)
    store = SQLiteOffsetStore(path)
    await store.open()
    lease = (await store.claim("g", [TP0]))[TP0]
    async with store.transaction() as tx:
        await tx.executemany("INSERT INTO results VALUES (?)", [(0,), (1,)])
        await store.write(tx, lease, 2)
    again = (await store.claim("g", [TP0]))[TP0]
    await store.close()
    assert (again.offset, again.epoch) == (2, 2)
    assert _rows(path, "SELECT offset FROM results") == [(0,), (1,)]


async def test_a_zombies_write_is_fenced_and_its_rows_roll_back(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    _results(path)
    zombie, owner = SQLiteOffsetStore(path), SQLiteOffsetStore(path)
    await zombie.open()
    await owner.open()
    old = (await zombie.claim("g", [TP0]))[TP0]
    new = (await owner.claim("g", [TP0]))[TP0]
    with pytest.raises(OffsetStoreFencedError) as caught:
        async with zombie.transaction() as tx:
            await tx.execute("INSERT INTO results VALUES (7)")
            await zombie.write(tx, old, 8)
    async with owner.transaction() as tx:
        await owner.write(tx, new, 3)
    await zombie.close()
    await owner.close()
    assert (caught.value.held_epoch, caught.value.current_epoch, caught.value.partition) == (1, 2, TP0)
    assert _rows(path, "SELECT offset FROM results") == []
    assert _rows(path, "SELECT next_offset, epoch FROM asyncconsumer_offsets") == [(3, 2)]


async def test_an_earlier_attempts_commit_is_recognised_as_already_stored(tmp_path: Path) -> None:
    store = SQLiteOffsetStore(tmp_path / "o.db")
    await store.open()
    lease = (await store.claim("g", [TP0]))[TP0]
    async with store.transaction() as tx:
        await store.write(tx, lease, 5)
    with pytest.raises(OffsetAlreadyStored):
        async with store.transaction() as tx:  # the same lease (offset None) again: its answer "was lost"
            await store.write(tx, lease, 5)
    await store.close()


async def test_a_handler_that_raises_rolls_its_rows_back(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    _results(path)
    store = SQLiteOffsetStore(path)
    await store.open()
    with pytest.raises(ValueError, match="handler"):
        async with store.transaction() as tx:
            await tx.execute("INSERT INTO results VALUES (1)")
            raise ValueError("handler")
    async with store.transaction() as tx:  # the connection is usable again
        await tx.execute("INSERT INTO results VALUES (2)")
    await store.close()
    assert _rows(path, "SELECT offset FROM results") == [(2,)]


async def test_a_file_that_cannot_be_opened_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "o.db"
    store = SQLiteOffsetStore(missing)
    with pytest.raises(OffsetStoreUnavailableError, match=f"sqlite:{missing}.*3 attempts") as caught:
        await store.open()
    assert caught.value.store == f"sqlite:{missing}"
    with pytest.raises(OffsetStoreUnavailableError, match="not opened"):
        await store.claim("g", [TP0])


def test_the_blocking_side_fences_and_rolls_back_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    _results(path)
    zombie, owner = BlockingSQLiteOffsetStore(path), BlockingSQLiteOffsetStore(path)
    zombie.open()
    owner.open()
    old = zombie.claim("g", [TP0])[TP0]
    new = owner.claim("g", [TP0])[TP0]
    with owner.transaction() as tx:
        tx.execute("INSERT INTO results VALUES (0)")
        owner.write(tx, new, 1)
    with pytest.raises(OffsetStoreFencedError), zombie.transaction() as tx:
        tx.execute("INSERT INTO results VALUES (99)")
        zombie.write(tx, old, 1)
    with pytest.raises(OffsetAlreadyStored), owner.transaction() as tx:
        owner.write(tx, new, 1)
    assert owner.claim("g", [TP0])[TP0].offset == 1
    zombie.close()
    owner.close()
    assert _rows(path, "SELECT offset FROM results") == [(0,)]


def test_the_blocking_side_names_a_file_it_cannot_open(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "o.db"
    with pytest.raises(OffsetStoreUnavailableError, match=str(missing)):
        BlockingSQLiteOffsetStore(missing).open()


def test_a_lock_held_past_the_busy_timeout_counts_as_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    holder, waiter = BlockingSQLiteOffsetStore(path), BlockingSQLiteOffsetStore(path, busy_timeout_ms=50)
    holder.open()
    waiter.open()
    with holder.transaction(), pytest.raises(sqlite3.OperationalError) as caught, waiter.transaction():
        pass
    assert waiter.unavailable(caught.value)
    assert not waiter.unavailable(ValueError("locked"))
    holder.close()
    waiter.close()


@pytest.mark.parametrize(
    ("url", "path"),
    [("sqlite:///o.db", "o.db"), ("sqlite:////tmp/o.db", "/tmp/o.db"), ("sqlite:o.db", "o.db")],
)
def test_sqlite_urls_name_files_as_sqlalchemy_spells_them(url: str, path: str) -> None:
    assert path_of(url) == path
    assert isinstance(create(url), SQLiteOffsetStore)
    assert isinstance(create(url, blocking=True), BlockingSQLiteOffsetStore)
