"""``process_transactionally`` into SQLite against the real brokers: every record's row exactly once with the offsets
in the same file, on both faces; the positions taken from the store (never from Kafka's mirrored offsets) when a
member starts again; two members sharing a group through a rebalance (classic on both brokers, KIP-848 on Kafka);
a consumer SIGKILLed at random points over and over (one row per record in the end); and a file that cannot be
opened giving a typed error that names it. PostgreSQL's suite (the zombie, the database restarted) is in
``test_exactly_once_postgres.py``."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from asyncconsumer import AsyncConsumer, Consumer, ConsumerRecord, OffsetStoreUnavailableError, TopicPartition
from tests.conftest import Broker, TopicFactory
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4


def _group(name: str) -> str:
    return f"eos-{name}-{uuid.uuid4().hex[:8]}"


def _results(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS results (partition INTEGER, offset INTEGER, value BLOB, member TEXT)")


def _counts(path: Path) -> dict[tuple[int, int], int]:
    with contextlib.closing(sqlite3.connect(path, timeout=10)) as conn, conn:
        found = conn.execute("SELECT partition, offset, COUNT(*) FROM results GROUP BY partition, offset").fetchall()
    return {(p, o): c for p, o, c in found}


def _stored(path: Path, group: str) -> dict[int, tuple[int | None, int]]:
    with contextlib.closing(sqlite3.connect(path, timeout=10)) as conn, conn:
        found = conn.execute(
            "SELECT partition, next_offset, epoch FROM asyncconsumer_offsets WHERE group_id = ?", (group,)
        ).fetchall()
    return {p: (o, e) for p, o, e in found}


def _exactly_once(path: Path, per_partition: int) -> None:
    counts = _counts(path)
    expected = {(p, o) for p in range(PARTITIONS) for o in range(per_partition)}
    missing = sorted(expected - set(counts))
    doubled = sorted(key for key, count in counts.items() if count > 1)
    assert (missing[:10], doubled[:10], len(counts)) == ([], [], len(expected))


async def test_every_record_lands_once_with_its_offset_and_a_restart_starts_from_the_store(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    name = topic(PARTITIONS)
    await produce.values_async(name, 2_000, PARTITIONS)
    path = tmp_path / "app.db"
    _results(path)
    group = _group("async")
    batches: list[int] = []

    async with AsyncConsumer(
        broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest", session_timeout_ms=6_000
    ) as consumer:
        await consumer.subscribe([name])

        async def handle(records: list[ConsumerRecord], tx: Any) -> None:
            assert len({r.partition for r in records}) == 1
            batches.append(len(records))
            await tx.executemany(
                "INSERT INTO results VALUES (?, ?, ?, 'a')", [(r.partition, r.offset, r.value) for r in records]
            )
            if sum(batches) >= 2_000:
                consumer.stop_processing()

        await asyncio.wait_for(
            consumer.process_transactionally(handle, f"sqlite:///{path}", batch_size=50, mirror_interval_ms=100), 120
        )
        mirrored = await consumer.committed([TopicPartition(name, p) for p in range(PARTITIONS)])
    _exactly_once(path, 500)
    assert max(batches) <= 50
    assert _stored(path, group) == dict.fromkeys(range(PARTITIONS), (500, 1))
    assert {tp.partition: c.offset if c else None for tp, c in mirrored.items()} == dict.fromkeys(
        range(PARTITIONS), 500
    )

    # Kafka's committed offsets are moved back: a restart must start from the store's, not from them
    async with AsyncConsumer(broker.bootstrap_servers, group_id=group) as rewinder:
        await rewinder.assign([TopicPartition(name, p) for p in range(PARTITIONS)])
        await rewinder.commit({TopicPartition(name, p): 0 for p in range(PARTITIONS)})
    await produce.values_async(name, 400, PARTITIONS)
    async with AsyncConsumer(
        broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest", session_timeout_ms=6_000
    ) as again:
        await again.subscribe([name])
        seen: list[tuple[int, int]] = []

        async def handle_again(records: list[ConsumerRecord], tx: Any) -> None:
            seen.extend((r.partition, r.offset) for r in records)
            await tx.executemany(
                "INSERT INTO results VALUES (?, ?, ?, 'b')", [(r.partition, r.offset, r.value) for r in records]
            )
            if len(seen) >= 400:
                again.stop_processing()

        await asyncio.wait_for(again.process_transactionally(handle_again, f"sqlite:///{path}"), 120)
    assert sorted(seen) == [(p, o) for p in range(PARTITIONS) for o in range(500, 600)]
    _exactly_once(path, 600)
    assert _stored(path, group) == dict.fromkeys(range(PARTITIONS), (600, 2))


async def test_the_blocking_consumer_writes_through_the_sync_side(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    name = topic(PARTITIONS)
    await produce.values_async(name, 1_000, PARTITIONS)
    path = tmp_path / "app.db"
    _results(path)
    group = _group("blocking")
    threads: set[str] = set()
    lock = threading.Lock()
    handled = 0

    def run() -> None:
        with Consumer(
            broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest", session_timeout_ms=6_000
        ) as consumer:
            consumer.subscribe([name])

            def handle(records: list[ConsumerRecord], tx: sqlite3.Connection) -> None:
                nonlocal handled
                assert isinstance(tx, sqlite3.Connection) and tx.in_transaction
                tx.executemany(
                    "INSERT INTO results VALUES (?, ?, ?, 'a')", [(r.partition, r.offset, r.value) for r in records]
                )
                with lock:
                    threads.add(threading.current_thread().name)
                    handled += len(records)
                    if handled >= 1_000:
                        consumer.stop_processing()

            consumer.process_transactionally(handle, f"sqlite:///{path}", concurrency=4, batch_size=40)

    await asyncio.wait_for(asyncio.to_thread(run), 120)
    _exactly_once(path, 250)
    assert _stored(path, group) == dict.fromkeys(range(PARTITIONS), (250, 1))
    assert all(t.startswith("asyncconsumer-process") for t in threads)


async def test_a_database_file_that_cannot_be_opened_is_a_typed_error_naming_it(
    broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    name = topic(1)
    missing = tmp_path / "no-such-dir" / "app.db"

    async def handle(records: list[ConsumerRecord], tx: Any) -> None:
        raise AssertionError("never called")

    async with AsyncConsumer(broker.bootstrap_servers) as consumer:
        await consumer.assign([TopicPartition(name, 0)])
        started = time.monotonic()
        with pytest.raises(OffsetStoreUnavailableError, match=f"sqlite:{missing}") as caught:
            await consumer.process_transactionally(handle, f"sqlite:///{missing}")
        assert time.monotonic() - started < 5
    assert caught.value.store == f"sqlite:{missing}"


async def test_two_members_share_the_partitions_through_rebalances_and_every_record_lands_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    await _two_members(broker, topic, produce, tmp_path, "classic")


@pytest.mark.kafka_only("Tansu has no ConsumerGroupHeartbeat (API 68)")
async def test_two_kip848_members_share_the_partitions_and_every_record_lands_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    await _two_members(broker, topic, produce, tmp_path, "consumer")


async def _two_members(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path, protocol: str
) -> None:
    name = topic(PARTITIONS)
    total = 4_000
    await produce.values_async(name, total, PARTITIONS)
    path = tmp_path / "app.db"
    _results(path)
    group = _group(f"share-{protocol}")
    settings: dict[str, Any] = {
        "group_id": group,
        "auto_offset_reset": "earliest",
        "group_protocol": protocol,
        **({"session_timeout_ms": 6_000} if protocol == "classic" else {}),
    }

    def member(label: str) -> tuple[AsyncConsumer, Any]:
        consumer = AsyncConsumer(broker.bootstrap_servers, **settings)

        async def handle(records: list[ConsumerRecord], tx: Any) -> None:
            await asyncio.sleep(0.02)  # slow enough that the rebalances find batches running
            await tx.executemany(
                "INSERT INTO results VALUES (?, ?, ?, ?)", [(r.partition, r.offset, r.value, label) for r in records]
            )

        return consumer, handle

    a, handle_a = member("a")
    b, handle_b = member("b")
    async with a, b:
        await a.subscribe([name])
        await b.subscribe([name])
        run_a = asyncio.ensure_future(a.process_transactionally(handle_a, f"sqlite:///{path}", batch_size=20))
        await wait_for_async(lambda: len(_counts(path)) >= 500, 60, message="a made progress alone")
        run_b = asyncio.ensure_future(b.process_transactionally(handle_b, f"sqlite:///{path}", batch_size=20))
        await wait_for_async(
            lambda: len(a.assignment()) and len(b.assignment()) and len(a.assignment()) + len(b.assignment()) == 4,
            60,
            message="both members hold partitions",
        )
        held_by_a = set(a.assignment())
        a.stop_processing()
        await asyncio.wait_for(run_a, 60)
        await a.unsubscribe()  # b takes every partition
        await wait_for_async(lambda: len(_counts(path)) >= total, 120, message="b finished the rest")
        b.stop_processing()
        await asyncio.wait_for(run_b, 60)
    _exactly_once(path, total // PARTITIONS)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        members = {m for (m,) in conn.execute("SELECT DISTINCT member FROM results")}
    assert members == {"a", "b"}
    epochs = _stored(path, group)
    assert held_by_a and all(epochs[tp.partition][1] >= 2 for tp in held_by_a)  # b claimed what a let go
