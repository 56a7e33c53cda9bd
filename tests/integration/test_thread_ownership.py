"""The thread rule, checked on a real broker: the caller's side never touches what the background thread owns.

Every consumer here is built in the thread-ownership debug mode (``_background/owned.py``): once its background
thread runs, a read or write of a manager, the delegate, the processor or the group wiring from any other thread
raises and is recorded. Each test drives the public API through a whole workload (manual assignment, a classic
group with a rebalance, KIP-848 on Kafka, the blocking consumer) and then asserts that nothing was recorded.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncconsumer import AsyncConsumer, Consumer, TopicPartition
from asyncconsumer._background import owned
from tests.conftest import Broker, TopicFactory
from tests.support.consume import consume_until
from tests.support.groups import (
    GROUP_SETTINGS,
    JOIN_TIMEOUT_S,
    Poller,
    all_partitions,
    consumed,
    group_consumer,
    new_group_id,
    stable_pair,
)
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for, wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


@pytest.fixture(autouse=True)
def guarded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every consumer the test builds is guarded; the test fails if anything was recorded, even a swallowed error."""
    monkeypatch.setenv(owned.ENV, "1")
    owned.violations.clear()
    yield
    assert owned.violations == []


def assert_guarded(consumer: AsyncConsumer | Consumer) -> None:
    """The debug mode is on for this consumer: the test would notice a violation."""
    assert type(consumer._core.parts.owned.fetch).__name__ == "OwnedFetchManager"


async def test_manual_assignment_positions_offsets_and_metrics(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    await produce.values_async(name, 200, 2)
    tps = [TopicPartition(name, 0), TopicPartition(name, 1)]
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        assert_guarded(consumer)
        await consumer.assign(tps)
        got = await consume_until(consumer, 200)
        assert len(got) == 200
        metrics = consumer.metrics()
        assert metrics.records_consumed_total == 200
        assert metrics.connection_count >= 1
        await wait_for_async(lambda: consumer.metrics().fetch_latency_avg_ms is not None, message="no fetch latency")
        assert sum(p.lag or 0 for p in metrics.partitions.values()) == 0
        assert await consumer.position(tps[0]) + await consumer.position(tps[1]) == 200
        assert set((await consumer.beginning_offsets(tps)).values()) == {0}
        await consumer.pause(tps[0])
        await consumer.seek(tps[1], 0)
        again = await consume_until(consumer, 100)
        assert {r.partition for r in again} == {1}
        await consumer.resume(tps[0])
        table = await consumer.poll_arrow(timeout_ms=300)
        assert table.num_rows == 0  # nothing left
        assert await consumer.partitions_for(name) != []


async def test_a_classic_group_rebalancing_committing_and_leaving(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    await produce.values_async(name, 400, 4)
    group_id = new_group_id()
    first = group_consumer(broker.bootstrap_servers, group_id)
    second = group_consumer(broker.bootstrap_servers, group_id)
    assert_guarded(first)
    pollers: list[Poller] = []
    try:
        await first.subscribe([name])
        pollers.append(Poller(first))
        await wait_for_async(lambda: len(first.assignment()) == 4, JOIN_TIMEOUT_S, message="first member never joined")
        await second.subscribe([name])
        pollers.append(Poller(second))
        await wait_for_async(
            lambda: stable_pair(first, second, all_partitions(name, 4), *pollers),
            JOIN_TIMEOUT_S * 2,
            message="the pair never settled",
        )
        await wait_for_async(lambda: len(consumed(*pollers)) == 400, JOIN_TIMEOUT_S, message="not all consumed")
        for poller in pollers:
            await poller.stop()
        pollers.clear()
        for member in (first, second):
            metadata = member.group_metadata()
            assert metadata.group_id == group_id and metadata.generation_id >= 0 and metadata.member_id
            assert member.metrics().rebalances >= 1
            assert member.metrics().coordinator_id is not None
            await member.commit()
            committed = await member.committed(sorted(member.assignment()))
            assert all(c is not None for c in committed.values())
    finally:
        for poller in pollers:
            await poller.abandon()
        await first.close()
        await second.close()


@pytest.mark.kafka_only("Tansu has no ConsumerGroupHeartbeat (API 68)")
async def test_a_kip848_member_and_its_pattern_subscription(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2, name=f"owned-{new_group_id()}")
    await produce.values_async(name, 100, 2)
    consumer = AsyncConsumer(
        broker.bootstrap_servers, group_id=new_group_id(), group_protocol="consumer", auto_offset_reset="earliest"
    )
    assert_guarded(consumer)
    try:
        await consumer.subscribe(pattern=f"{name}$")
        got = await consume_until(consumer, 100, JOIN_TIMEOUT_S)
        assert len(got) == 100
        assert consumer.group_metadata().generation_id > 0  # the member epoch
        assert consumer.metrics().last_heartbeat_age_ms is not None
        await consumer.commit()
        consumer.enforce_rebalance()  # ignored under KIP-848, as in Java
    finally:
        await consumer.close()


def test_the_blocking_consumer_in_a_group(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(2)
    produce.values(name, 100, 2)
    consumer = Consumer(broker.bootstrap_servers, group_id=new_group_id(), **GROUP_SETTINGS)
    assert_guarded(consumer)
    try:
        consumer.subscribe([name])
        seen = wait_for(lambda: consumer.poll(timeout_ms=500).count() or None, JOIN_TIMEOUT_S, message="no records")
        assert seen > 0
        consumer.commit()
        metadata = consumer.group_metadata()
        assert metadata.generation_id >= 0 and metadata.member_id  # Tansu's first generation is 0, Kafka's 1
        assert consumer.metrics().partitions
    finally:
        consumer.close()
