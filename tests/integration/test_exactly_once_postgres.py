"""``process_transactionally`` into PostgreSQL (the ``postgres_db`` fixture: Debian's PostgreSQL started by the
tests) against the real brokers: both faces through psycopg's two sides; the zombie (a member holding open
transactions is SIGSTOPped past its session, another member takes its partitions and finishes them, and when the
first is SIGCONTed its commits are refused with ``OffsetStoreFencedError`` and nothing it wrote lands), with both
group protocols; a consumer SIGKILLed at random points at least 20 times, into PostgreSQL and SQLite side by side;
a rebalance storm; and the database restarted mid-run (processing pauses, then resumes with nothing lost or
doubled)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from asyncconsumer import AsyncConsumer, Consumer, ConsumerRecord, OffsetStoreUnavailableError, TopicPartition
from asyncconsumer._caller.processing import transactional
from asyncconsumer._logs import Logger
from asyncconsumer.tools.embedded_broker import free_port
from tests.conftest import Broker, TopicFactory
from tests.support.postgres import PostgresDatabase
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
INSERT = 'INSERT INTO results (partition, "offset", member) VALUES (%s, %s, %s)'


def _group(name: str) -> str:
    return f"eos-pg-{name}-{uuid.uuid4().hex[:8]}"


def _results(db: PostgresDatabase) -> None:
    with db.connect(autocommit=True) as conn:
        conn.execute('CREATE TABLE results (partition integer, "offset" bigint, member text)')


def _counts(dsn: str) -> dict[tuple[int, int], int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute('SELECT partition, "offset", count(*) FROM results GROUP BY 1, 2').fetchall()
    return {(p, o): c for p, o, c in found}


def _members(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return dict(conn.execute("SELECT member, count(*) FROM results GROUP BY 1").fetchall())


def _exactly_once(counts: dict[tuple[int, int], int], partitions: int, per_partition: int) -> None:
    expected = {(p, o) for p in range(partitions) for o in range(per_partition)}
    missing = sorted(expected - set(counts))
    doubled = sorted(key for key, count in counts.items() if count > 1)
    assert (missing[:10], doubled[:10], len(counts)) == ([], [], len(expected))


async def _insert(records: list[ConsumerRecord], tx: Any, member: str) -> None:
    async with tx.cursor() as cursor:
        await cursor.executemany(INSERT, [(r.partition, r.offset, member) for r in records])


class _Recording(Logger):
    def __init__(self) -> None:
        super().__init__("asyncconsumer.eos")
        self.events: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **kw: Any) -> None:
        self.events.append((event, kw))
        super().warning(event, **kw)


async def test_both_faces_write_through_psycopgs_two_sides(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, postgres_db: PostgresDatabase
) -> None:
    name = topic(4)
    await produce.values_async(name, 2_000, 4)
    _results(postgres_db)
    group = _group("faces")
    seen_types: set[str] = set()

    async with AsyncConsumer(broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest") as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(2)])

        handled = 0

        async def handle(records: list[ConsumerRecord], tx: Any) -> None:
            nonlocal handled
            seen_types.add(type(tx).__name__)
            await _insert(records, tx, "async")
            handled += len(records)
            if handled >= 1_000:  # the last batches: stopping lets them commit, and nothing is left to take
                consumer.stop_processing()

        await asyncio.wait_for(consumer.process_transactionally(handle, postgres_db.dsn, batch_size=50), 60)

    def blocking() -> None:
        with Consumer(broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest") as sync:
            sync.assign([TopicPartition(name, p) for p in range(2, 4)])
            lock = threading.Lock()
            handled = 0

            def handle(records: list[ConsumerRecord], tx: psycopg.Connection[Any]) -> None:
                nonlocal handled
                seen_types.add(type(tx).__name__)
                with tx.cursor() as cursor:
                    cursor.executemany(INSERT, [(r.partition, r.offset, "blocking") for r in records])
                with lock:
                    handled += len(records)
                    if handled >= 1_000:
                        sync.stop_processing()

            sync.process_transactionally(handle, postgres_db.dsn, batch_size=50)

    await asyncio.wait_for(asyncio.to_thread(blocking), 60)
    _exactly_once(_counts(postgres_db.dsn), 4, 500)
    assert _members(postgres_db.dsn) == {"async": 1_000, "blocking": 1_000}
    assert seen_types == {"AsyncConnection", "Connection"}


async def test_a_dsn_that_leads_nowhere_stops_processing_with_a_typed_error_naming_it(
    broker: Broker, topic: TopicFactory
) -> None:
    name = topic(1)
    dsn = f"postgresql://app:hunter2@127.0.0.1:{free_port()}/app"

    async def handle(records: list[ConsumerRecord], tx: Any) -> None:
        raise AssertionError("never called")

    async with AsyncConsumer(broker.bootstrap_servers) as consumer:
        await consumer.assign([TopicPartition(name, 0)])
        with pytest.raises(OffsetStoreUnavailableError, match=r"postgresql://app:\*\*\*@127\.0\.0\.1") as caught:
            await asyncio.wait_for(consumer.process_transactionally(handle, dsn), 30)
    assert "hunter2" not in str(caught.value)


ZOMBIE = """
import asyncio, os, sys
from asyncconsumer import AsyncConsumer, OffsetStoreFencedError
from asyncconsumer._caller.processing import transactional
from asyncconsumer._logs import Logger

bootstrap, topic, dsn, group, protocol, release = sys.argv[1:7]

class Printing(Logger):
    def warning(self, event, **kw):
        if event == "eos.fenced":
            print("FENCED", kw["partition"], kw["held_epoch"], kw["current_epoch"], kw["still_held"], flush=True)
        super().warning(event, **kw)

transactional.log = Printing("asyncconsumer.eos")

async def main():
    settings = {"group_id": group, "auto_offset_reset": "earliest", "group_protocol": protocol}
    if protocol == "classic":
        settings["session_timeout_ms"] = 6000
    async with AsyncConsumer(bootstrap, **settings) as consumer:
        await consumer.subscribe([topic])

        async def handle(records, tx):
            async with tx.cursor() as cursor:
                await cursor.executemany(
                    'INSERT INTO results (partition, "offset", member) VALUES (%s, %s, %s)',
                    [(r.partition, r.offset, "zombie") for r in records],
                )
            print("HOLDING", records[0].partition, flush=True)
            while not os.path.exists(release):  # the transaction stays open, its rows written, until released
                await asyncio.sleep(0.05)

        try:
            await consumer.process_transactionally(handle, dsn, batch_size=10, mirror_interval_ms=None)
        except OffsetStoreFencedError as exc:
            print("RAISED", exc.partition.partition, exc.held_epoch, exc.current_epoch, flush=True)
            sys.exit(3)

asyncio.run(main())
"""


@pytest.mark.kafka_only("both group protocols against Kafka's own coordinator (Tansu has no KIP-848)")
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_a_zombie_member_is_fenced_and_nothing_it_wrote_lands(
    broker: Broker,
    topic: TopicFactory,
    produce: ProduceHelper,
    postgres_db: PostgresDatabase,
    tmp_path: Path,
    protocol: str,
) -> None:
    name = topic(2)
    await produce.values_async(name, 200, 2)
    _results(postgres_db)
    group = _group(f"zombie-{protocol}")
    if protocol == "consumer":
        broker.set_group_config(group, {"consumer.session.timeout.ms": 6_000})  # type: ignore[attr-defined]
    release = tmp_path / "release"
    zombie = subprocess.Popen(
        [sys.executable, "-c", ZOMBIE, broker.bootstrap_servers, name, postgres_db.dsn, group, protocol, str(release)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert zombie.stdout is not None
    try:
        holding = {await asyncio.wait_for(asyncio.to_thread(zombie.stdout.readline), 60) for _ in range(2)}
        assert holding == {b"HOLDING 0\n", b"HOLDING 1\n"}, holding
        zombie.send_signal(signal.SIGSTOP)  # both transactions open, their rows written and not committed

        settings: dict[str, Any] = {"group_id": group, "auto_offset_reset": "earliest", "group_protocol": protocol}
        async with AsyncConsumer(broker.bootstrap_servers, **settings) as owner:
            await owner.subscribe([name])

            async def handle(records: list[ConsumerRecord], tx: Any) -> None:
                await _insert(records, tx, "owner")

            running = asyncio.ensure_future(owner.process_transactionally(handle, postgres_db.dsn, batch_size=10))
            await wait_for_async(
                lambda: _members(postgres_db.dsn).get("owner", 0) >= 200 or running.done(),
                60,
                message="the new owner took the zombie's partitions and finished them",
            )
            release.touch()
            zombie.send_signal(signal.SIGCONT)
            fenced = []
            while len(fenced) < 2:
                line = await asyncio.wait_for(asyncio.to_thread(zombie.stdout.readline), 30)
                assert line, f"the zombie ended without its fences (exit {zombie.poll()}): {fenced}"
                if line.startswith(b"FENCED"):
                    fenced.append(line.split())
            if any(f[4] == b"True" for f in fenced):  # it still thought it held a partition: a zombie, so it stops
                rest = await asyncio.wait_for(asyncio.to_thread(zombie.stdout.read), 30)
                assert zombie.wait(10) == 3 and b"RAISED" in rest, rest
            owner.stop_processing()
            await asyncio.wait_for(running, 30)
    finally:
        zombie.send_signal(signal.SIGCONT)
        zombie.kill()
        zombie.communicate(timeout=10)  # reaps it and closes its pipes
    assert sorted(f[1] for f in fenced) == [f"{name}-0".encode(), f"{name}-1".encode()]
    assert all(f[2] == b"1" and int(f[3]) >= 2 for f in fenced), fenced  # its epoch 1 against the owner's claim
    assert _members(postgres_db.dsn) == {"owner": 200}  # nothing the zombie wrote landed
    _exactly_once(_counts(postgres_db.dsn), 2, 100)


CRASH_MEMBER = """
import asyncio, random, sys
from asyncconsumer import AsyncConsumer, TopicPartition

bootstrap, topic, store, seed = sys.argv[1:5]
rng = random.Random(seed)
finisher = seed == "finish"  # the last run: no pauses, big batches
postgres = store.startswith("postgresql:")
insert = (
    'INSERT INTO results (partition, "offset", member) VALUES (%s, %s, %s)'
    if postgres
    else 'INSERT INTO results (partition, "offset", member) VALUES (?, ?, ?)'
)

async def main():
    async with AsyncConsumer(bootstrap, group_id="crash-" + topic, auto_offset_reset="earliest") as consumer:
        await consumer.assign([TopicPartition(topic, p) for p in range(4)])

        async def handle(records, tx):
            rows = [(r.partition, r.offset, "crash") for r in records]
            if postgres:
                async with tx.cursor() as cursor:
                    await cursor.executemany(insert, rows)
            else:
                await tx.executemany(insert, rows)
            if not finisher:
                await asyncio.sleep(rng.random() / 50)  # a kill lands inside the transaction too
            print("unit", flush=True)

        await consumer.process_transactionally(
            handle, store, batch_size=200 if finisher else rng.randint(1, 20), mirror_interval_ms=None
        )

asyncio.run(main())
"""

KILLS = 20


async def _member(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASH_MEMBER,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=ENV,
    )


async def _kill_repeatedly(bootstrap: str, topic: str, store: str, seed: int) -> None:
    """Starts a member on ``store`` and SIGKILLs it at a random moment after its first commit, ``KILLS`` times."""
    rng = random.Random(seed)
    for kill in range(KILLS):
        member = await _member(bootstrap, topic, store, str(seed * 100 + kill))
        assert member.stdout is not None and member.stderr is not None
        try:
            first = await asyncio.wait_for(member.stdout.readline(), 60)
        except TimeoutError:
            first = b"nothing within 60 s"
        if not first.startswith(b"unit"):
            member.kill()
            _, errors = await member.communicate()
            raise AssertionError(f"{store} run {kill}: the member printed {first!r}: {errors[-3_000:]!r}")
        await asyncio.sleep(rng.random() * 0.3)
        member.kill()
        await member.communicate()


@pytest.mark.tansu_only("the stores' transactions are under test, the same on either broker: one run is enough")
async def test_a_consumer_killed_at_random_points_20_times_leaves_one_row_per_record(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, postgres_db: PostgresDatabase, tmp_path: Path
) -> None:
    """Into PostgreSQL and SQLite side by side (two topics, one chain of kills each), so the run costs one chain."""
    total = 20_000
    pg_topic, sqlite_topic = topic(4), topic(4)
    await produce.values_async(pg_topic, total, 4, value_size=16)
    await produce.values_async(sqlite_topic, total, 4, value_size=16)
    _results(postgres_db)
    path = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute('CREATE TABLE results (partition INTEGER, "offset" INTEGER, member TEXT)')
    stores = {pg_topic: postgres_db.dsn, sqlite_topic: f"sqlite:///{path}"}
    await asyncio.gather(
        *(_kill_repeatedly(broker.bootstrap_servers, t, store, seed) for seed, (t, store) in enumerate(stores.items()))
    )

    def sqlite_counts() -> dict[tuple[int, int], int]:
        with contextlib.closing(sqlite3.connect(path, timeout=10)) as conn, conn:
            found = conn.execute('SELECT partition, "offset", COUNT(*) FROM results GROUP BY 1, 2').fetchall()
        return {(p, o): c for p, o, c in found}

    counts = {pg_topic: lambda: _counts(postgres_db.dsn), sqlite_topic: sqlite_counts}
    assert all(len(count()) < total for count in counts.values()), "the kills ended after the topics: produce more"
    finishers = [await _member(broker.bootstrap_servers, t, store, "finish") for t, store in stores.items()]
    try:
        for t, count in counts.items():
            await wait_for_async(lambda count=count: len(count()) >= total, 120, message=f"{t} finished")  # type: ignore[misc]
    finally:
        for finisher in finishers:
            finisher.kill()
            await finisher.communicate()
    for count in counts.values():
        _exactly_once(count(), 4, total // 4)
    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        epochs = {e for (e,) in conn.execute("SELECT epoch FROM asyncconsumer_offsets")}
    assert epochs == {KILLS + 1}  # each of the 21 runs claimed every partition once


async def _left(leave: Callable[[int], Awaitable[None]]) -> BaseException | None:
    """The first member left; what its run raised, if anything (every member is closed either way)."""
    try:
        await leave(0)
    except Exception as exc:
        return exc
    return None


@pytest.mark.kafka_only("members joining and leaving under both group protocols (Tansu has no KIP-848)")
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_a_rebalance_storm_while_records_flow_keeps_every_record_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, postgres_db: PostgresDatabase, protocol: str
) -> None:
    name = topic(4)
    _results(postgres_db)
    group = _group(f"storm-{protocol}")
    total = 6_000
    settings: dict[str, Any] = {
        "group_id": group,
        "auto_offset_reset": "earliest",
        "group_protocol": protocol,
        **({"session_timeout_ms": 6_000} if protocol == "classic" else {}),
    }
    rng = random.Random(4)
    members: list[tuple[AsyncConsumer, asyncio.Future[None]]] = []
    started = 0

    async def join() -> None:
        nonlocal started
        started += 1
        label = f"m{started}"
        consumer = AsyncConsumer(broker.bootstrap_servers, **settings)
        await consumer.subscribe([name])

        async def handle(records: list[ConsumerRecord], tx: Any) -> None:
            await asyncio.sleep(0.005)
            await _insert(records, tx, label)

        members.append(
            (consumer, asyncio.ensure_future(consumer.process_transactionally(handle, postgres_db.dsn, batch_size=25)))
        )

    async def leave(index: int) -> None:
        consumer, running = members.pop(index)
        consumer.stop_processing()
        try:
            await asyncio.wait_for(running, 60)
        finally:  # closed whatever the run ended with: no member outlives the test
            await consumer.close()

    async def flow() -> None:
        for _ in range(20):
            await produce.values_async(name, total // 20, 4)
            await asyncio.sleep(0.4)

    producing = asyncio.ensure_future(flow())
    await join()
    try:
        while not producing.done():  # a member joins or leaves every 1-2 s while the records flow
            await asyncio.sleep(1 + rng.random())
            if len(members) < 2 or (len(members) < 3 and rng.random() < 0.5):
                await join()
            else:
                await leave(rng.randrange(len(members)))
        await producing
        if not members:
            await join()
        await wait_for_async(lambda: len(_counts(postgres_db.dsn)) >= total, 120, message="the storm's records landed")
    finally:
        errors = [error for error in [await _left(leave) for _ in range(len(members))] if error is not None]
    assert not errors, errors
    _exactly_once(_counts(postgres_db.dsn), 4, total // 4)
    assert started >= 5 and len(_members(postgres_db.dsn)) >= 3


async def test_the_database_restarted_mid_run_pauses_processing_and_nothing_is_lost_or_doubled(
    broker: Broker,
    topic: TopicFactory,
    produce: ProduceHelper,
    postgres_db: PostgresDatabase,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = topic(4)
    total = 4_000
    await produce.values_async(name, total, 4)
    _results(postgres_db)
    recording = _Recording()
    monkeypatch.setattr(transactional, "log", recording)
    handled = 0
    async with AsyncConsumer(
        broker.bootstrap_servers, group_id=_group("restart"), auto_offset_reset="earliest", session_timeout_ms=6_000
    ) as consumer:
        await consumer.subscribe([name])

        async def handle(records: list[ConsumerRecord], tx: Any) -> None:
            nonlocal handled
            await asyncio.sleep(0.01)
            await _insert(records, tx, "m")
            handled += len(records)

        running = asyncio.ensure_future(consumer.process_transactionally(handle, postgres_db.dsn, batch_size=20))
        await wait_for_async(lambda: handled >= 1_000 or running.done(), 60, message="a quarter handled")
        await asyncio.to_thread(postgres_db.restart)
        await wait_for_async(
            lambda: running.done() or len(_counts(postgres_db.dsn)) >= total, 120, message="the rest after the restart"
        )
        consumer.stop_processing()
        await asyncio.wait_for(running, 30)
    _exactly_once(_counts(postgres_db.dsn), 4, total // 4)
    paused = [kw for event, kw in recording.events if event == "eos.store_unavailable"]
    assert paused and all(postgres_db.name in kw["store"] for kw in paused)
    assert handled >= total  # batches cut by the restart ran again (rolled back first): more calls than records
