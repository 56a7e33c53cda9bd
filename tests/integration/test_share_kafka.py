"""Share groups (KIP-932) against Apache Kafka's share coordinator: three kinds of member read a topic together and
accept every record once; RELEASE, REJECT, the delivery limit, lock expiry, a SIGKILLed member, RENEW, both
acknowledgement modes and ``close()`` in each; and on Tansu, which has no share groups, a typed error at once."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from pathlib import Path

import pytest

from asyncconsumer import (
    AcknowledgeType,
    AsyncShareConsumer,
    IllegalStateError,
    ShareConsumer,
    ShareRecord,
    TopicPartition,
)
from asyncconsumer.errors import InvalidRecordStateError, UnsupportedVersionError
from tests.conftest import Broker, TopicFactory
from tests.support.groups import new_group_id
from tests.support.kafka_broker import KafkaCluster
from tests.support.produce import ProduceHelper, Record
from tests.support.share import ShareMemberProcess, Tally, new_share_group
from tests.support.waiting import wait_for_async

pytestmark = pytest.mark.anyio

KAFKA_ONLY = pytest.mark.kafka_only("Tansu has no share groups (APIs 76-79)")
LOCK_MS = 2_000
"""The acquisition lock of the groups whose tests wait for one to expire."""


def kafka_of(broker: Broker) -> KafkaCluster:
    assert isinstance(broker, KafkaCluster)
    return broker


async def poll_until(
    consumer: AsyncShareConsumer, wanted: int, timeout: float = 30.0, *, accept: bool = False
) -> list[ShareRecord]:
    """Polls until ``wanted`` records arrived (explicit mode: accepting each if ``accept``); returns them."""
    got: list[ShareRecord] = []

    async def more() -> bool:
        records = list((await consumer.poll(200)).records())
        if accept:
            for record in records:
                consumer.acknowledge(record)
        got.extend(records)
        return len(got) >= wanted

    await wait_for_async(more, timeout, message=lambda: f"{len(got)} of {wanted} records")
    return got


@KAFKA_ONLY
async def test_three_members_accept_every_record_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    kafka = kafka_of(broker)
    name = topic(6)
    group = new_share_group(kafka)
    tally = Tally()
    first = AsyncShareConsumer(kafka.bootstrap_servers, group_id=group)
    second = ShareConsumer(kafka.bootstrap_servers, group_id=group)
    third = ShareMemberProcess(kafka.bootstrap_servers, group, name, tmp_path)
    stop = threading.Event()
    errors: list[BaseException] = []

    def blocking_member() -> None:
        try:
            second.subscribe([name])
            while not stop.is_set():
                tally.add("blocking", second.poll(200).records())
            second.close()
        except BaseException as exc:
            errors.append(exc)

    await first.subscribe([name])
    runner = threading.Thread(target=blocking_member, daemon=True)
    runner.start()
    try:

        async def assigned() -> bool:
            tally.add("async", (await first.poll(100)).records())
            third.check_alive()
            return bool(first.metrics().assignment and second.metrics().assignment and third.assigned())

        await wait_for_async(assigned, 60, message="every member has partitions")
        produce.values(name, 3_000, 6)

        async def all_in() -> bool:
            tally.add("async", (await first.poll(100)).records())
            tally.extend("process", third.deliveries())
            assert not errors, errors
            return len(tally.distinct()) >= 3_000

        await wait_for_async(all_in, 90, message=tally.summary)
    finally:
        stop.set()
        runner.join(60)
        await first.close()
        third.stop()
    tally.extend("process", third.deliveries())
    assert not errors, errors
    assert len(tally.distinct()) == 3_000
    assert tally.repeated() == []
    assert {n for _, _, n in tally.all()} == {1}
    assert all(tally.by_member.get(m) for m in ("async", "blocking", "process")), tally.summary()


@KAFKA_ONLY
async def test_release_delivers_again_and_reject_never(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 3, 1)
    group = new_share_group(kafka)
    async with AsyncShareConsumer(
        kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode="explicit"
    ) as consumer:
        await consumer.subscribe([name])
        first = await poll_until(consumer, 3)
        assert [(r.offset, r.delivery_count) for r in first] == [(0, 1), (1, 1), (2, 1)]
        consumer.acknowledge(first[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(first[1], AcknowledgeType.REJECT)
        consumer.acknowledge(first[2], AcknowledgeType.ACCEPT)
        results = await consumer.commit_sync()
        assert results == {TopicPartition(name, 0): None}
        again = await poll_until(consumer, 1, accept=True)
        assert [(r.offset, r.delivery_count) for r in again] == [(0, 2)]
        produce.values(name, 1, 1)  # offset 3: once it arrives, the broker has moved past the rejected offset 1
        later = await poll_until(consumer, 1, accept=True)
        assert [(r.offset, r.delivery_count) for r in later] == [(3, 1)]
        await consumer.commit_sync()


@KAFKA_ONLY
async def test_a_share_group_set_to_start_by_duration_reads_from_the_first_record_that_recent(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """KIP-1106 for share groups: ``share.auto.offset.reset=by_duration:PT65M`` (a group config) starts a new group at
    the first record of the last 65 minutes; records written 2 h ago and every 10 minutes since, the last 30 minutes
    ago, so at offset 6."""
    kafka = kafka_of(broker)
    name = topic(1)
    base = int(time.time() * 1000) - 2 * 3_600_000
    produce.batches(name, [[Record(b"r%d" % i, partition=0, timestamp_ms=base + i * 600_000)] for i in range(10)])
    group = new_share_group(kafka, share_auto_offset_reset="by_duration:PT65M")
    async with AsyncShareConsumer(kafka.bootstrap_servers, group_id=group) as consumer:
        await consumer.subscribe([name])
        got = await poll_until(consumer, 4)
    assert [(r.offset, r.value) for r in got] == [(6, b"r6"), (7, b"r7"), (8, b"r8"), (9, b"r9")]


@KAFKA_ONLY
async def test_delivery_limit_archives_the_record(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 1, 1)
    group = new_share_group(kafka, share_delivery_count_limit=2)
    async with AsyncShareConsumer(
        kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode="explicit"
    ) as consumer:
        await consumer.subscribe([name])
        for count in (1, 2):
            (record,) = await poll_until(consumer, 1)
            assert (record.offset, record.delivery_count) == (0, count)
            consumer.acknowledge(record, AcknowledgeType.RELEASE)
            await consumer.commit_sync()
        produce.values(name, 1, 1)
        (after,) = await poll_until(consumer, 1, accept=True)
        assert (after.offset, after.delivery_count) == (1, 1), "offset 0 came back past the delivery limit"


@KAFKA_ONLY
async def test_an_expired_lock_delivers_again_and_a_late_acknowledgement_is_refused(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 5, 1)
    group = new_share_group(kafka, share_record_lock_duration_ms=LOCK_MS)
    slow = AsyncShareConsumer(kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode="explicit")
    fast = AsyncShareConsumer(kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode="explicit")
    try:
        await slow.subscribe([name])
        held = await poll_until(slow, 5)
        assert slow.acquisition_lock_timeout_ms() == LOCK_MS
        await fast.subscribe([name])
        again = await poll_until(fast, 5)
        assert sorted((r.offset, r.delivery_count) for r in again) == [(o, 2) for o in range(5)]
        for record in held:  # too late: the records are the other member's now
            slow.acknowledge(record)
        results = await slow.commit_sync()
        assert isinstance(results[TopicPartition(name, 0)], InvalidRecordStateError), results
        assert slow.metrics().acknowledgement_errors == 1
        for record in again:
            fast.acknowledge(record)
        assert await fast.commit_sync() == {TopicPartition(name, 0): None}
    finally:
        await slow.close()
        await fast.close()


@KAFKA_ONLY
async def test_a_killed_member_s_records_go_to_the_others(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 20, 1)
    group = new_share_group(kafka, share_record_lock_duration_ms=LOCK_MS)
    doomed = ShareMemberProcess(kafka.bootstrap_servers, group, name, tmp_path, mode="explicit-hold")

    def holding() -> bool:
        doomed.check_alive()
        return len(doomed.deliveries()) == 20

    await wait_for_async(holding, 60, message=lambda: f"the member holds {len(doomed.deliveries())} of 20")
    doomed.kill()
    async with AsyncShareConsumer(kafka.bootstrap_servers, group_id=group) as survivor:
        await survivor.subscribe([name])
        got = await poll_until(survivor, 20)
        await survivor.commit_sync()
    assert sorted(r.offset for r in got) == list(range(20))
    assert {r.delivery_count for r in got} == {2}


@KAFKA_ONLY
async def test_renew_keeps_a_record_past_its_lock(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 1, 1)
    group = new_share_group(kafka, share_record_lock_duration_ms=LOCK_MS)
    worker = AsyncShareConsumer(kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode="explicit")
    rival = AsyncShareConsumer(kafka.bootstrap_servers, group_id=group)
    try:
        await worker.subscribe([name])
        (record,) = await poll_until(worker, 1)
        await rival.subscribe([name])
        loop = asyncio.get_running_loop()
        until = loop.time() + 3 * LOCK_MS / 1000
        stolen: list[ShareRecord] = []
        while loop.time() < until:  # three lock durations of work, renewing at a third of the lock
            worker.acknowledge(record, AcknowledgeType.RENEW)
            assert await worker.commit_sync() == {TopicPartition(name, 0): None}
            stolen += (await rival.poll(LOCK_MS / 3)).records()
        assert stolen == []
        worker.acknowledge(record, AcknowledgeType.ACCEPT)
        assert await worker.commit_sync() == {TopicPartition(name, 0): None}
        assert worker.metrics().acknowledgements["renew"] >= 3
    finally:
        await worker.close()
        await rival.close()


@KAFKA_ONLY
async def test_explicit_mode_poll_refuses_until_each_record_is_acknowledged(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 4, 1)
    group = new_share_group(kafka)
    async with AsyncShareConsumer(
        kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode="explicit"
    ) as consumer:
        await consumer.subscribe([name])
        records = await poll_until(consumer, 4)
        with pytest.raises(IllegalStateError, match="4 record"):
            await consumer.poll(0)
        for record in records[:3]:
            consumer.acknowledge(record)
        with pytest.raises(IllegalStateError, match="1 record"):
            await consumer.poll(0)
        with pytest.raises(IllegalStateError, match="not waiting for an acknowledgement"):
            consumer.acknowledge(records[0])
        consumer.acknowledge(records[3])
        assert (await consumer.poll(0)).count() == 0


@pytest.mark.parametrize("mode", ["implicit", "explicit"])
@KAFKA_ONLY
async def test_close_settles_what_the_last_poll_returned(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, mode: str
) -> None:
    """Implicit: close accepts (nobody gets the records again). Explicit: close releases what was not acknowledged,
    so the next member gets it at once with delivery count 2, long before the 30 s lock would expire."""
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 3, 1)
    group = new_share_group(kafka)
    first = AsyncShareConsumer(kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode=mode)
    await first.subscribe([name])
    got = await poll_until(first, 3)
    if mode == "explicit":
        first.acknowledge(got[0])
    await first.close()
    produce.values(name, 1, 1)  # offset 3
    async with AsyncShareConsumer(kafka.bootstrap_servers, group_id=group) as second:
        await second.subscribe([name])
        wanted = 1 if mode == "implicit" else 3
        later = await poll_until(second, wanted, timeout=15)
        await second.commit_sync()
    if mode == "implicit":
        assert [(r.offset, r.delivery_count) for r in later] == [(3, 1)]
    else:
        assert sorted((r.offset, r.delivery_count) for r in later) == [(1, 2), (2, 2), (3, 1)]


@KAFKA_ONLY
async def test_the_commit_callback_hears_every_acknowledgement(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    kafka = kafka_of(broker)
    name = topic(2)
    produce.values(name, 10, 2)
    group = new_share_group(kafka)
    heard: dict[TopicPartition, set[int]] = {}

    def callback(offsets: dict[TopicPartition, set[int]], error: object) -> None:
        assert error is None
        for tp, got in offsets.items():
            heard.setdefault(tp, set()).update(got)

    with ShareConsumer(kafka.bootstrap_servers, group_id=group) as consumer:
        consumer.set_acknowledgement_commit_callback(callback)
        consumer.subscribe([name])
        seen: set[tuple[int, int]] = set()
        while len(seen) < 10:
            seen |= {(r.partition, r.offset) for r in consumer.poll(500).records()}
        consumer.commit_async()
        while sum(len(o) for o in heard.values()) < 10:
            consumer.poll(100)
    assert {(tp.partition, o) for tp, offsets in heard.items() for o in offsets} == seen


@pytest.mark.tansu_only("the Kafka leg reads from share groups")
async def test_a_broker_without_share_groups_is_a_typed_error(broker: Broker, topic: TopicFactory) -> None:
    name = topic(1)
    async with AsyncShareConsumer(broker.bootstrap_servers, group_id=new_group_id()) as consumer:
        await consumer.subscribe([name])
        with pytest.raises(UnsupportedVersionError, match=r"SHARE_GROUP_HEARTBEAT \(API 76\)"):
            for _ in range(100):
                await consumer.poll(200)


@KAFKA_ONLY
async def test_record_limit_acquires_no_more_than_max_poll_records(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """``share.acquire.mode=record_limit`` (ShareFetch v2): a fetch acquires at most ``max_poll_records``, even
    inside one batch of 50, where batch-optimized acquisition takes the whole batch."""
    kafka = kafka_of(broker)
    name = topic(1)
    produce.batches(name, [[f"r{i}".encode() for i in range(50)]])
    group = new_share_group(kafka)
    async with AsyncShareConsumer(
        kafka.bootstrap_servers, group_id=group, max_poll_records=7, share_acquire_mode="record_limit"
    ) as consumer:
        await consumer.subscribe([name])
        (first,) = [await poll_until(consumer, 1)]
        assert len(first) == 7
        assert consumer.metrics().records_acquired == 7
        rest = await poll_until(consumer, 43)
    assert sorted(r.offset for r in first + rest) == list(range(50))


@KAFKA_ONLY
async def test_acknowledgements_are_confirmed_without_waiting_for_a_long_poll(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """The fetch that carries the last records' acknowledgements asks the broker not to wait for more: on a drained
    topic they are confirmed within a round trip, not after ``fetch_max_wait_ms`` (8 s here)."""
    kafka = kafka_of(broker)
    name = topic(1)
    produce.values(name, 10, 1)
    group = new_share_group(kafka)
    heard: list[int] = []
    async with AsyncShareConsumer(kafka.bootstrap_servers, group_id=group, fetch_max_wait_ms=8_000) as consumer:
        consumer.set_acknowledgement_commit_callback(
            lambda offsets, error: heard.extend(o for got in offsets.values() for o in got if error is None)
        )
        await consumer.subscribe([name])
        got = await poll_until(consumer, 10, timeout=60)

        async def confirmed() -> bool:
            await consumer.poll(100)  # the first sends the acknowledgements; the callback runs in a poll
            return len(heard) == 10

        await wait_for_async(confirmed, 4.0, message=lambda: f"{len(heard)} of 10 acknowledgements confirmed")
    assert sorted(heard) == sorted(r.offset for r in got) == list(range(10))


@KAFKA_ONLY
async def test_fetch_buffer_bytes_bounds_what_a_share_consumer_holds(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """``fetch_buffer_bytes`` means one thing in both consumers: what a fetch may bring for the caller. A share
    consumer used to ask every broker for ``fetch_max_bytes`` (50 MiB) and took the whole 2 MB topic into a 256 KiB
    buffer in one ShareFetch; now each ShareFetch is sized within the buffer's room, so none acquires more than the
    bound's worth of 1 KB records (plus one 32-record batch: a broker always returns whole batches)."""
    kafka = kafka_of(broker)
    name = topic(1)
    batch = [bytes([i % 251]) * 1_000 for i in range(32)]
    produce.batches(name, [batch] * 64)
    bound = 256 * 1024
    group = new_share_group(kafka)
    async with AsyncShareConsumer(
        kafka.bootstrap_servers, group_id=group, fetch_buffer_bytes=bound, max_poll_records=2_000
    ) as consumer:
        await consumer.subscribe([name])
        got, steps = 0, [(0, 0)]  # (ShareFetches answered, records acquired) after each poll

        async def more() -> bool:
            nonlocal got
            got += (await consumer.poll(200)).count()
            metrics = consumer.metrics()
            steps.append((metrics.share_fetches, metrics.records_acquired))
            assert metrics.buffered_bytes <= bound + 34_000
            return got >= 64 * 32

        await wait_for_async(more, 60, message=lambda: f"{got} of {64 * 32} records")
        assert consumer.metrics().fetch_buffer_limit_bytes <= bound
    one_fetch = [a2 - a1 for (f1, a1), (f2, a2) in itertools.pairwise(steps) if f2 - f1 == 1]
    assert one_fetch and max(one_fetch) <= (bound + 33_000) // 1_000, one_fetch
