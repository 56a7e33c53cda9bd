"""``process_transactionally``'s units and hook over real SQLite files, driven by the processing driver over the fake
consumer of ``test_driver.py`` on a ``ManualClock``: one transaction per run of one partition with its offset, runs
of a partition in order and partitions side by side, a handler that raises rolling back (then retried or skipped
with the offset written alone), a fenced unit stopping a zombie and dropped quietly for a partition already gone,
a store that cannot be reached retried and then a typed error, an earlier attempt's commit not doubled, and the
mirror that is never read back. The brokers' runs are in ``tests/integration/test_exactly_once.py``."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.processing.commits import NoCommits
from asyncconsumer._caller.processing.core import ProcessingCore
from asyncconsumer._caller.processing.driver import ProcessingDriver
from asyncconsumer._caller.processing.transactional import (
    AsyncUnits,
    BlockingUnits,
    Claims,
    Leases,
    MirrorOffsets,
    run_transactionally,
    transactional_driver,
    transactional_options,
)
from asyncconsumer._clock import ManualClock
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError, OffsetStoreFencedError, OffsetStoreUnavailableError
from asyncconsumer.records import ConsumerRecord, TopicPartition
from asyncconsumer.stores.base import Lease
from asyncconsumer.stores.sqlite import BlockingSQLiteOffsetStore, SQLiteOffsetStore
from tests.support.no_broker import REFUSED
from tests.unit._caller.processing.test_driver import TP0, TP1, FakeConsumer, record, until

pytestmark = pytest.mark.anyio


class _Config:
    group_id = "g"
    auto_offset_reset = "earliest"


class _Core:
    config = _Config()


def options(**overrides: Any) -> Any:
    settings: dict[str, Any] = {
        "concurrency": 4,
        "batch_size": 10,
        "max_in_flight_per_partition": 1_000,
        "mirror_interval_ms": None,
        "revoke_timeout_ms": 1_000,
        "retries": 0,
        "retry_backoff_ms": 1,
        "on_error": "stop",
        "on_skip": None,
    }
    settings.update(overrides)
    return transactional_options(_Core(), **settings)  # type: ignore[arg-type]


async def opened(path: Path) -> SQLiteOffsetStore:
    store = SQLiteOffsetStore(path)
    await store.open()
    async with store.transaction() as tx:
        await tx.execute("CREATE TABLE IF NOT EXISTS results (partition INTEGER, offset INTEGER)")
    return store


def rows(path: Path) -> list[tuple[int, int]]:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        return sorted(conn.execute("SELECT partition, offset FROM results").fetchall())


def stored(path: Path) -> dict[int, tuple[int | None, int]]:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        found = conn.execute("SELECT partition, next_offset, epoch FROM asyncconsumer_offsets").fetchall()
    return {p: (o, e) for p, o, e in found}


async def insert(records: list[ConsumerRecord], tx: Any) -> None:
    await tx.executemany("INSERT INTO results VALUES (?, ?)", [(r.partition, r.offset) for r in records])


def driver_for(consumer: FakeConsumer, units: AsyncUnits, **overrides: Any) -> ProcessingDriver:
    chosen = attrs.evolve(options(**overrides), on_skip=units.skip)
    return ProcessingDriver(consumer, units.handle, chosen, ManualClock(), None, ProcessingCore(chosen, NoCommits()))


async def claimed(store: SQLiteOffsetStore, leases: Leases, *partitions: TopicPartition) -> None:
    leases.update(await store.claim("g", partitions))


async def test_each_run_is_one_partitions_records_in_order_committed_with_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    store = await opened(path)
    leases = Leases()
    await claimed(store, leases, TP0, TP1)
    batches: list[list[tuple[int, int]]] = []

    async def handle(records: list[ConsumerRecord], tx: Any) -> None:
        batches.append([(r.partition, r.offset) for r in records])
        await insert(records, tx)

    consumer = FakeConsumer([record(tp, o) for tp in (TP0, TP1) for o in range(25)], per_poll=50)
    units = AsyncUnits(store, leases, handle, None, ManualClock(), 1_000)
    driver = driver_for(consumer, units)
    runner = asyncio.ensure_future(driver.run())
    await until(lambda: sum(map(len, batches)) >= 50 or runner.done())
    driver.stop()
    await runner
    await store.close()
    assert all(len({p for p, _ in batch}) == 1 and len(batch) <= 10 for batch in batches)
    for partition in (0, 1):
        offsets = [o for batch in batches for p, o in batch if p == partition]
        assert offsets == list(range(25))
    assert rows(path) == [(p, o) for p in (0, 1) for o in range(25)]
    assert stored(path) == {0: (25, 1), 1: (25, 1)}
    assert (leases.get(TP0), leases.get(TP1)) == (Lease("g", TP0, 1, 25), Lease("g", TP1, 1, 25))


async def test_a_handler_that_raises_rolls_back_then_a_skip_writes_the_offset_alone(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    store = await opened(path)
    leases = Leases()
    await claimed(store, leases, TP0)
    skipped: list[tuple[list[int], str]] = []
    attempts = 0

    async def handle(records: list[ConsumerRecord], tx: Any) -> None:
        nonlocal attempts
        await insert(records, tx)
        if records[0].offset == 0:
            attempts += 1
            raise ValueError("bad batch")

    def on_skip(records: list[ConsumerRecord], error: BaseException) -> None:
        skipped.append(([r.offset for r in records], str(error)))

    consumer = FakeConsumer([record(TP0, o) for o in range(15)], per_poll=15)
    units = AsyncUnits(store, leases, handle, on_skip, ManualClock(), 1_000)
    driver = driver_for(consumer, units, retries=2, on_error="skip")
    runner = asyncio.ensure_future(driver.run())
    await until(lambda: stored(path).get(0, (None, 0))[0] == 15 or runner.done())
    driver.stop()
    await runner
    await store.close()
    assert attempts == 3
    assert skipped == [(list(range(10)), "bad batch")]
    assert rows(path) == [(0, o) for o in range(10, 15)]  # the failed batch's rows rolled back every time
    assert stored(path) == {0: (15, 1)}


async def test_a_handler_error_under_stop_leaves_nothing_of_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    store = await opened(path)
    leases = Leases()
    await claimed(store, leases, TP0)

    async def handle(records: list[ConsumerRecord], tx: Any) -> None:
        await insert(records, tx)
        if records[-1].offset >= 10:
            raise RuntimeError("stop here")

    consumer = FakeConsumer([record(TP0, o) for o in range(20)], per_poll=20)
    units = AsyncUnits(store, leases, handle, None, ManualClock(), 1_000)
    with pytest.raises(RuntimeError, match="stop here"):
        await driver_for(consumer, units).run()
    await store.close()
    assert rows(path) == [(0, o) for o in range(10)]
    assert stored(path) == {0: (10, 1)}


async def test_a_zombie_is_fenced_and_stops_while_nothing_it_wrote_lands(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    zombie_store, owner_store = await opened(path), await opened(path)
    zombie_leases = Leases()
    await claimed(zombie_store, zombie_leases, TP0)
    await owner_store.claim("g", [TP0])  # another member took the partition meanwhile

    consumer = FakeConsumer([record(TP0, o) for o in range(5)])
    units = AsyncUnits(zombie_store, zombie_leases, insert, None, ManualClock(), 1_000)
    with pytest.raises(OffsetStoreFencedError) as caught:
        await driver_for(consumer, units, retries=3, on_error="skip").run()
    await zombie_store.close()
    await owner_store.close()
    assert (caught.value.partition, caught.value.held_epoch, caught.value.current_epoch) == (TP0, 1, 2)
    assert rows(path) == []
    assert stored(path) == {0: (None, 2)}


async def test_a_fenced_unit_of_a_partition_already_gone_is_dropped_quietly(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    store, other = await opened(path), await opened(path)
    leases = Leases()
    await claimed(store, leases, TP0)
    await other.claim("g", [TP0])

    async def lost_meanwhile(records: list[ConsumerRecord], tx: Any) -> None:
        leases.drop([TP0])  # the hook hears the partition is lost while the unit runs
        await insert(records, tx)

    await AsyncUnits(store, leases, lost_meanwhile, None, ManualClock(), 1_000).handle([record(TP0, 0)])
    await store.close()
    await other.close()
    assert rows(path) == []
    assert stored(path) == {0: (None, 2)}


class Flaky:
    """A SQLite store whose first ``failures`` transactions fail as a database that cannot be reached does, and
    whose ``commit_lost`` first commits land while their answer is lost; the clock moves ``step_ms`` per failure."""

    def __init__(self, store: SQLiteOffsetStore, clock: ManualClock, failures: int, commit_lost: int = 0) -> None:
        self.store = store
        self.name = store.name
        self.clock = clock
        self.failures = failures
        self.commit_lost = commit_lost
        self.step_ms = 100

    async def open(self) -> None:
        await self.store.open()

    async def claim(self, group: str, partitions: Any) -> Any:
        return await self.store.claim(group, partitions)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        if self.failures:
            self.failures -= 1
            self.clock.advance(self.step_ms)
            raise sqlite3.OperationalError("database is locked")
        async with self.store.transaction() as tx:
            yield tx
        if self.commit_lost:
            self.commit_lost -= 1
            raise sqlite3.OperationalError("disk I/O error")

    async def write(self, tx: Any, lease: Lease, next_offset: int) -> None:
        await self.store.write(tx, lease, next_offset)

    def unavailable(self, error: BaseException) -> bool:
        return self.store.unavailable(error)

    async def close(self) -> None:
        await self.store.close()


async def test_a_store_that_cannot_be_reached_is_retried_and_a_lost_commit_answer_lands_once(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    clock = ManualClock()
    store = Flaky(await opened(path), clock, failures=3, commit_lost=1)
    leases = Leases()
    leases.update(await store.claim("g", [TP0]))
    units = AsyncUnits(store, leases, insert, None, clock, 10_000)
    await units.handle([record(TP0, 0), record(TP0, 1)])
    await units.handle([record(TP0, 2)])
    await store.close()
    assert rows(path) == [(0, 0), (0, 1), (0, 2)]  # the retry after the lost answer was rolled back
    assert stored(path) == {0: (3, 1)}


async def test_a_store_unreachable_past_its_bound_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    clock = ManualClock()
    store = Flaky(await opened(path), clock, failures=100)
    store.step_ms = 400
    leases = Leases()
    leases.update(await store.claim("g", [TP0]))
    units = AsyncUnits(store, leases, insert, None, clock, 1_000)
    with pytest.raises(OffsetStoreUnavailableError, match=f"sqlite:{path}: unreachable for 1200 ms"):
        await units.handle([record(TP0, 0)])
    await store.close()


def test_the_blocking_units_do_the_same_in_the_callers_thread(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    store = BlockingSQLiteOffsetStore(path)
    store.open()
    with store.transaction() as tx:
        tx.execute("CREATE TABLE results (partition INTEGER, offset INTEGER)")
    leases = Leases()
    leases.update(store.claim("g", [TP0, TP1]))

    def handle(records: list[ConsumerRecord], tx: sqlite3.Connection) -> None:
        tx.executemany("INSERT INTO results VALUES (?, ?)", [(r.partition, r.offset) for r in records])
        if records[0].partition == 1:
            raise ValueError("no")

    skipped: list[int] = []
    units = BlockingUnits(
        store, leases, handle, lambda records, error: skipped.extend(r.offset for r in records), 1_000, ManualClock(0)
    )
    units.handle([record(TP0, 0), record(TP0, 1)])
    with pytest.raises(ValueError, match="no"):
        units.handle([record(TP1, 0)])
    units.skip([record(TP1, 0)], ValueError("no"))
    store.claim("g", [TP0])  # another member takes TP0
    with pytest.raises(OffsetStoreFencedError):
        units.handle([record(TP0, 2)])
    store.close()
    assert rows(path) == [(0, 0), (0, 1)]
    assert skipped == [0]
    assert stored(path) == {0: (2, 2), 1: (1, 1)}


async def test_what_is_assigned_is_claimed_only_once_the_hook_hears_every_later_assignment(tmp_path: Path) -> None:
    # a group's assignment made before the hook was installed went by unheard (no listener asked): the run claims
    # what is assigned after the hook is in, so no assignment falls between the two and goes unclaimed
    path = tmp_path / "o.db"
    store = await opened(path)
    first = (await store.claim("g", [TP0]))[TP0]
    async with store.transaction() as tx:
        await store.write(tx, first, 7)  # a stored offset: the claim only seeks
    core = ConsumerCore(ConsumerConfig.from_kwargs(REFUSED, group_id="g"))
    await asyncio.wrap_future(core.assign([TP0]))
    seen: list[tuple[bool, list[TopicPartition]]] = []

    class Watching(Claims):
        async def claim(self, group: str, partitions: Any) -> dict[TopicPartition, Lease]:
            seen.append((core.rebalance_hook is not None, sorted(partitions)))
            driver.stop()
            return await super().claim(group, partitions)

    leases = Leases()
    units = AsyncUnits(store, leases, insert, None, ManualClock(), 1_000)
    driver, hook = transactional_driver(core, units.handle, options(), Watching(store), leases, 1_000)
    try:
        await asyncio.wait_for(run_transactionally(core, driver, hook), 10)
        assert seen == [(True, [TP0])]
        lease = leases.get(TP0)
        assert lease is not None and lease.epoch == 2 and lease.offset == 7
        assert await asyncio.wrap_future(core.position(TP0, 1_000)) == 7
    finally:
        future = core.close(1_000)
        if future is not None:
            await asyncio.wrap_future(future)
        await asyncio.to_thread(core.finish_close, 2.0)


async def test_the_mirror_is_never_read_back() -> None:
    mirror = MirrorOffsets.__new__(MirrorOffsets)
    assert await mirror.load([TP0, TP1]) == {TP0: None, TP1: None}


def test_options_are_runs_of_one_partition_with_the_stores_errors_fatal() -> None:
    chosen = options(mirror_interval_ms=2_000)
    assert chosen.runs and chosen.ordering.value == "partition" and chosen.batch_size == 10
    assert chosen.commits and chosen.commit_interval_ms == 2_000
    assert not options(mirror_interval_ms=None).commits
    with pytest.raises(ConfigError, match="batch_size"):
        options(batch_size=0)
    with pytest.raises(ConfigError, match="mirror_interval_ms"):
        options(mirror_interval_ms=0)
