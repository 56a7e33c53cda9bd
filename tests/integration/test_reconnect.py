"""Reconnecting against the real broker (Tansu) behind the fault proxy: a broker that refuses every connection is
retried with exponential backoff, not in a loop; a group member whose connections (its coordinator's among them) are
cut again and again looks its coordinator up again and keeps its membership, consuming every record."""

from __future__ import annotations

import asyncio
import time

import pytest

from asyncconsumer import AsyncConsumer, ConsumerRecord, OffsetAndMetadata, TopicPartition
from tests.conftest import ProxiedBroker
from tests.support.consume import by_partition, consume_until
from tests.support.faultproxy import API_FIND_COORDINATOR, API_HEARTBEAT
from tests.support.groups import (
    JOIN_TIMEOUT_S,
    Poller,
    all_partitions,
    group_consumer,
    merge,
    new_group_id,
    pairs,
    union_by_partition,
)
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


def attempts_allowed(window_ms: float, base_ms: int, max_ms: int, jitter: float = 0.2) -> int:
    """Connection attempts exponential backoff allows in ``window_ms``, counting each backoff at its shortest."""
    attempts, elapsed, backoff = 1, 0.0, float(base_ms)
    while True:
        elapsed += backoff * (1 - jitter)
        if elapsed > window_ms:
            return attempts
        attempts += 1
        backoff = min(backoff * 2, max_ms)


async def test_a_refusing_broker_is_retried_with_backoff_and_consumption_resumes(
    proxied_broker: ProxiedBroker,
) -> None:
    name = proxied_broker.create_topic(2)
    proxied_broker.produce.values(name, 200, 2)
    proxy = proxied_broker.proxy
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=1_000,
        fetch_max_wait_ms=100,
    ) as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(2)])
        got: list[ConsumerRecord] = await consume_until(consumer, 200)
        proxy.refuse_new_connections(True)
        refused_before = proxy.connections_refused
        proxy.drop_connections()
        window_s = 3.0
        started = time.monotonic()
        while time.monotonic() - started < window_s:
            assert (await consumer.poll(timeout_ms=200)).count() == 0
        refused = proxy.connections_refused - refused_before
        # 50 ms doubling to 1 s over 3 s: about 7 attempts per node; a tight loop would make thousands
        allowed = 2 * attempts_allowed(window_s * 1000, 50, 1_000)  # bootstrap and broker node may both retry
        print(f"refused connection attempts in {window_s:.0f} s: {refused} (backoff allows at most {allowed})")
        assert 2 <= refused <= allowed, refused
        proxy.refuse_new_connections(False)
        proxied_broker.produce.values(name, 200, 2, start=200)
        got += await consume_until(consumer, 200, timeout_s=10)  # the backoff is capped at 1 s: back quickly
    assert by_partition(got) == {0: list(range(200)), 1: list(range(200))}


# --- the coordinator's connection cut -------------------------------------------------------------------------


class CommittingPoller(Poller):
    """A :class:`Poller` that commits each batch's next offsets before the next poll."""

    async def _run(self) -> None:
        while not self._stopping:
            records = list((await self.consumer.poll(timeout_ms=100)).records())
            if not records:
                continue
            self.records.extend(records)
            offsets: dict[TopicPartition, OffsetAndMetadata | int] = {
                TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.offset + 1) for r in records
            }
            await self.consumer.commit(offsets)

    def seen(self) -> set[tuple[int, int]]:
        return {(r.partition, r.offset) for r in self.records}


async def test_a_member_rediscovers_its_coordinator_after_connections_are_cut(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(4)
    proxy = proxied_broker.proxy
    waves = [await proxied_broker.produce.values_async(name, 200, 4)]
    consumer = group_consumer(proxied_broker.bootstrap_servers, new_group_id())
    await consumer.start()
    poller: CommittingPoller | None = None
    try:
        await consumer.subscribe([name])
        poller = CommittingPoller(consumer)
        active = poller

        def caught_up() -> bool:
            active.check()
            return pairs(merge(*waves)) <= active.seen() and consumer.assignment() == all_partitions(name, 4)

        await wait_for_async(caught_up, timeout=JOIN_TIMEOUT_S, message=lambda: f"{len(active.seen())} records")
        meta = consumer.group_metadata()
        drops = 0
        for round_ in range(5):
            # Cut every connection (the coordinator's among them) while a wave is being produced and consumed.
            wave = asyncio.create_task(proxied_broker.produce.values_async(name, 100, 4, start=200 + 100 * round_))
            await asyncio.sleep(0.05)
            lookups, heartbeats = proxy.requests_by_api[API_FIND_COORDINATOR], proxy.requests_by_api[API_HEARTBEAT]
            assert proxy.drop_connections() > 0
            drops += 1
            waves.append(await wave)

            def rediscovered(lookups: int = lookups, heartbeats: int = heartbeats) -> bool:
                # It looked its coordinator up again and heartbeats to it (twice, so past the reconnection).
                active.check()
                return (
                    proxy.requests_by_api[API_FIND_COORDINATOR] > lookups
                    and proxy.requests_by_api[API_HEARTBEAT] >= heartbeats + 2
                )

            await wait_for_async(rediscovered, timeout=JOIN_TIMEOUT_S, message=lambda: f"{proxy.requests_by_api}")
            await wait_for_async(
                caught_up,
                timeout=JOIN_TIMEOUT_S,
                message=lambda: f"{len(active.seen())} of {len(pairs(merge(*waves)))} records after the cuts",
            )
        await poller.stop()
        # Cuts much shorter than the session cost no rebalance: same member, same generation, same partitions.
        assert consumer.group_metadata() == meta
        assert consumer.assignment() == all_partitions(name, 4)
        assert union_by_partition(poller.seen()) == merge(*waves)
        print(f"\n{len(poller.records) - len(poller.seen())} duplicate(s) over {drops} cuts")
    finally:
        if poller is not None:
            await poller.abandon()
        await consumer.close()
