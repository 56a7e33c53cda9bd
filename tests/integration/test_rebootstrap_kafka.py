"""Rebootstrap (KIP-899): every broker the consumer knew goes away, and the cluster comes back at another address,
reachable only through the bootstrap server (a proxy in front of it, as a load balancer or a DNS name would be).
The consumer finds it again without a restart, in assign mode and in both group protocols, and reads every record
once. With ``metadata_recovery_strategy="none"`` it keeps asking the old address and reads nothing more."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from asyncconsumer import AsyncConsumer, ConsumerRecord, TopicPartition
from tests.conftest import _run_broker, unique_topic_name
from tests.support.consume import consume_until
from tests.support.faultproxy import FaultProxy
from tests.support.kafka_broker import HOST, KafkaCluster
from tests.support.produce import ProduceHelper

pytestmark = [pytest.mark.anyio, pytest.mark.kafka_only("the cluster moves to another port: a Kafka node restarted")]

QUICK: dict[str, Any] = {"reconnect_backoff_ms": 20, "reconnect_backoff_max_ms": 200, "retry_backoff_max_ms": 200}


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    """One node of its own: the tests move it."""
    yield from _run_broker(KafkaCluster.start)


@pytest.fixture
def proxy(kafka: KafkaCluster) -> Iterator[FaultProxy]:
    """The consumer's only bootstrap server: forwards to wherever the node is now."""
    front = FaultProxy(HOST, kafka.port).start()
    yield front
    front.stop()


def offsets(records: list[ConsumerRecord]) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in records)


@pytest.mark.parametrize("mode", ["assign", "classic", "consumer"])
async def test_a_consumer_finds_the_moved_cluster_through_its_bootstrap_server(
    kafka: KafkaCluster, proxy: FaultProxy, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="asyncconsumer")
    topic = unique_topic_name(f"rebootstrap-{mode}")
    kafka.create_topic(topic, 2)
    await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 20, 2)
    settings: dict[str, Any] = {"auto_offset_reset": "earliest", **QUICK}
    if mode != "assign":
        settings.update(group_id=unique_topic_name(f"g-{mode}"), group_protocol=mode)
    got: list[ConsumerRecord] = []
    async with AsyncConsumer(proxy.address, **settings) as consumer:
        if mode == "assign":
            await consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        else:
            await consumer.subscribe([topic])
        got += await consume_until(consumer, 20, timeout_s=60)
        if mode != "assign":
            await consumer.commit()
        old = kafka.port
        kafka.move(1)
        proxy.set_target(HOST, kafka.port)
        assert kafka.port != old
        await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 20, 2)
        started = time.monotonic()
        got += await consume_until(consumer, 20, timeout_s=90)
        recovered_s = time.monotonic() - started
        metrics = consumer.metrics()
    assert offsets(got) == [(p, o) for p in (0, 1) for o in range(20)], offsets(got)
    assert "metadata.rebootstrap" in caplog.text
    assert metrics.rebootstraps >= 1 and not metrics.rebootstrapping
    assert recovered_s < 60


async def test_without_rebootstrap_the_consumer_keeps_asking_the_old_address(
    kafka: KafkaCluster, proxy: FaultProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="asyncconsumer")
    topic = unique_topic_name("rebootstrap-none")
    kafka.create_topic(topic, 1)
    await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 5, 1)
    settings: dict[str, Any] = {"auto_offset_reset": "earliest", "metadata_recovery_strategy": "none", **QUICK}
    async with AsyncConsumer(proxy.address, **settings) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        assert len(await consume_until(consumer, 5, timeout_s=60)) == 5
        kafka.move(1)
        proxy.set_target(HOST, kafka.port)
        await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 5, 1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # a quiet spell: nothing may arrive from the old address
            assert (await consumer.poll(timeout_ms=200)).count() == 0
        assert consumer.metrics().rebootstraps == 0
    assert "metadata.rebootstrap" not in caplog.text
