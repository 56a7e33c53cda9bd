"""Reconnect storms: a broker that refuses every connection is retried with exponential backoff, not in a loop."""

from __future__ import annotations

import time

import pytest

from asyncconsumer import AsyncConsumer, ConsumerRecord, TopicPartition
from tests.conftest import ProxiedBroker
from tests.integration.test_consumer import by_partition, consume_until

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
