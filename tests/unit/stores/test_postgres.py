"""The PostgreSQL store on a real server (the ``postgres_db`` fixture: Debian's PostgreSQL in a temp directory),
both sides: the table made if missing, claims bumping the lease epoch, writes inside the caller's transaction, a
zombie's write fenced with everything it wrote rolled back (also when its transaction began before the new owner's
claim), an earlier attempt's commit recognised, connections the server cut replaced after a restart, and a DSN
that leads nowhere giving a typed error naming it (without its password) after a bounded retry."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from asyncconsumer.errors import OffsetStoreFencedError, OffsetStoreUnavailableError
from asyncconsumer.records import TopicPartition
from asyncconsumer.stores.base import OffsetAlreadyStored, open_store
from asyncconsumer.stores.postgres import BlockingPostgresOffsetStore, PostgresOffsetStore
from asyncconsumer.tools.embedded_broker import free_port
from tests.support.postgres import PostgresDatabase

pytestmark = pytest.mark.anyio

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def _results(db: PostgresDatabase) -> None:
    with db.connect(autocommit=True) as conn:
        conn.execute('CREATE TABLE results (partition integer, "offset" bigint)')


def _rows(db: PostgresDatabase) -> list[tuple[Any, ...]]:
    with db.connect(autocommit=True) as conn:
        return conn.execute('SELECT partition, "offset" FROM results ORDER BY 1, 2').fetchall()


def _stored(db: PostgresDatabase) -> list[tuple[Any, ...]]:
    with db.connect(autocommit=True) as conn:
        return conn.execute("SELECT partition, next_offset, epoch FROM asyncconsumer_offsets ORDER BY 1").fetchall()


async def test_claims_make_the_table_and_writes_land_with_the_handlers_rows(postgres_db: PostgresDatabase) -> None:
    _results(postgres_db)
    store = open_store(postgres_db.dsn, blocking=False)
    assert isinstance(store, PostgresOffsetStore)
    await store.open()
    first = await store.claim("g", [TP0, TP1])
    async with store.transaction() as tx:
        await tx.execute("INSERT INTO results VALUES (0, 0), (0, 1)")
        await store.write(tx, first[TP0], 2)
    again = await store.claim("g", [TP0])
    await store.close()
    assert {tp: (lease.epoch, lease.offset) for tp, lease in first.items()} == {TP0: (1, None), TP1: (1, None)}
    assert (again[TP0].epoch, again[TP0].offset) == (2, 2)
    assert _rows(postgres_db) == [(0, 0), (0, 1)]
    assert _stored(postgres_db) == [(0, 2, 2), (1, None, 1)]


async def test_a_zombie_whose_transaction_began_before_the_claim_is_fenced_and_rolled_back(
    postgres_db: PostgresDatabase,
) -> None:
    _results(postgres_db)
    zombie, owner = PostgresOffsetStore(postgres_db.dsn), PostgresOffsetStore(postgres_db.dsn)
    await zombie.open()
    await owner.open()
    old = (await zombie.claim("g", [TP0]))[TP0]
    with pytest.raises(OffsetStoreFencedError) as caught:
        async with zombie.transaction() as tx:
            await tx.execute("INSERT INTO results VALUES (0, 0)")
            new = (await owner.claim("g", [TP0]))[TP0]  # the new owner claims while the zombie's transaction is open
            async with owner.transaction() as owner_tx:
                await owner_tx.execute("INSERT INTO results VALUES (0, 100)")
                await owner.write(owner_tx, new, 1)
            await zombie.write(tx, old, 1)
    await zombie.close()
    await owner.close()
    assert (caught.value.partition, caught.value.held_epoch, caught.value.current_epoch) == (TP0, 1, 2)
    assert "t-0" in str(caught.value) and postgres_db.name in caught.value.store
    assert _rows(postgres_db) == [(0, 100)]
    assert _stored(postgres_db) == [(0, 1, 2)]


async def test_an_earlier_attempts_commit_is_recognised(postgres_db: PostgresDatabase) -> None:
    store = PostgresOffsetStore(postgres_db.dsn)
    await store.open()
    lease = (await store.claim("g", [TP0]))[TP0]
    async with store.transaction() as tx:
        await store.write(tx, lease, 7)
    with pytest.raises(OffsetAlreadyStored):
        async with store.transaction() as tx:
            await store.write(tx, lease, 7)
    await store.close()


async def test_connections_the_server_cut_are_replaced_after_a_restart(postgres_db: PostgresDatabase) -> None:
    store = PostgresOffsetStore(postgres_db.dsn)
    await store.open()
    lease = (await store.claim("g", [TP0]))[TP0]
    postgres_db.restart()
    with pytest.raises(Exception) as caught:
        async with store.transaction() as tx:
            await store.write(tx, lease, 1)
    assert store.unavailable(caught.value), repr(caught.value)
    async with store.transaction() as tx:  # a new connection
        await store.write(tx, lease, 1)
    await store.close()
    assert _stored(postgres_db) == [(0, 1, 1)]


async def test_a_dsn_that_leads_nowhere_is_a_typed_error_naming_it_without_its_password() -> None:
    dsn = f"postgresql://app:s3cret@127.0.0.1:{free_port()}/app"
    store = PostgresOffsetStore(dsn, connect_timeout_s=1)
    started = time.monotonic()
    with pytest.raises(OffsetStoreUnavailableError, match="3 attempts") as caught:
        await store.open()
    assert time.monotonic() - started < 10
    assert caught.value.store == f"postgresql://app:***@127.0.0.1:{dsn.rsplit(':', 1)[1]}"
    assert "s3cret" not in str(caught.value)


def test_the_blocking_side_fences_and_rolls_back_the_same_way(postgres_db: PostgresDatabase) -> None:
    _results(postgres_db)
    zombie = open_store(postgres_db.dsn, blocking=True)
    assert isinstance(zombie, BlockingPostgresOffsetStore)
    owner = BlockingPostgresOffsetStore(postgres_db.dsn)
    zombie.open()
    owner.open()
    old = zombie.claim("g", [TP0])[TP0]
    new = owner.claim("g", [TP0])[TP0]
    with owner.transaction() as tx:
        assert isinstance(tx, psycopg.Connection)
        tx.execute("INSERT INTO results VALUES (0, 0)")
        owner.write(tx, new, 1)
    with pytest.raises(OffsetStoreFencedError), zombie.transaction() as tx:
        tx.execute("INSERT INTO results VALUES (0, 99)")
        zombie.write(tx, old, 1)
    with pytest.raises(OffsetAlreadyStored), owner.transaction() as tx:
        owner.write(tx, new, 1)
    zombie.close()
    owner.close()
    assert _rows(postgres_db) == [(0, 0)]


def test_the_blocking_side_names_a_dsn_that_leads_nowhere() -> None:
    dsn = f"postgresql://app@127.0.0.1:{free_port()}/app"
    with pytest.raises(OffsetStoreUnavailableError, match=dsn):
        BlockingPostgresOffsetStore(dsn, connect_timeout_s=1).open()
