"""KIP-714 client telemetry against Apache Kafka 4.4 with a receiver (``tests/support/kafka/TelemetryRecorder.java``):
the consumer subscribes, pushes the standard metrics with the values ``metrics()`` has, honours a prefix filter,
pushes once more when it closes, and pushes nothing with ``enable_metrics_push=False``; a share consumer pushes its
own. Brokers without a receiver
(Kafka's default, and Tansu) get no telemetry request, and the consumer logs nothing about it above debug.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncconsumer import AsyncConsumer, AsyncShareConsumer
from asyncconsumer.errors import IllegalStateError
from asyncconsumer.managers.telemetry import TelemetryState
from asyncconsumer.managers.telemetry_metrics import NAMES, SHARE_NAMES
from asyncconsumer.protocol.codecs import COMPRESSIBLE
from tests.conftest import Broker, TopicFactory, _run_broker, unique_topic_name
from tests.support.kafka_broker import KafkaCluster
from tests.support.produce import produce_values
from tests.support.share import new_share_group
from tests.support.telemetry import read_pushes, set_subscription, start_kafka_with_recorder, values
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.anyio]

INTERVAL_MS = 500
FM = "org.apache.kafka.consumer.fetch.manager."
CO = "org.apache.kafka.consumer.coordinator."
SF = "org.apache.kafka.consumer.share.fetch.manager."


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the receiver writes every push it gets."""
    return tmp_path_factory.mktemp("telemetry") / "pushes.jsonl"


@pytest.fixture(scope="module")
def kafka(path: Path) -> Iterator[KafkaCluster]:
    """One Kafka node with the telemetry receiver."""
    yield from _run_broker(lambda: start_kafka_with_recorder(path))


async def subscribed(
    kafka: KafkaCluster, hint: str, partitions: int, records: int, metrics: str = "*"
) -> tuple[str, str]:
    """A client id subscribed to ``metrics`` (a prefix, or ``*``) every ``INTERVAL_MS``, and a topic of
    ``partitions`` holding ``records`` values."""
    client_id = unique_topic_name(hint)
    await set_subscription(
        kafka.bootstrap_servers, client_id, metrics=[metrics], interval_ms=INTERVAL_MS, client_id=client_id
    )
    topic = unique_topic_name(hint)
    kafka.create_topic(topic, partitions)
    produce_values(kafka.bootstrap_servers, topic, records, partitions)
    return client_id, topic


async def consume(consumer: AsyncConsumer, topic: str, count: int) -> None:
    got = 0
    await consumer.subscribe([topic])
    while got < count:
        got += (await consumer.poll(1_000)).count()


def kafka_uuid(value: uuid.UUID) -> str:
    """``value`` as Kafka's ``Uuid.toString()`` writes it (the recorder's form): URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def reading(pushes: list[dict[str, Any]], name: str) -> float | None:
    """What the pushes say metric ``name`` is now (summed over its series): a delta sum's pushes added up (Kafka's
    brokers ask for delta temporality), else the last pushed value; None if no push carried it."""
    found = [points for push in pushes if (points := values(push).get(name))]
    if not found:
        return None
    if found[-1][0]["kind"] == "sum" and found[-1][0]["temporality"] == 1:
        return float(sum(p["value"] for points in found for p in points))
    return float(sum(p["value"] for p in found[-1]))


async def test_a_consumer_pushes_its_standard_metrics_then_a_terminating_push(kafka: KafkaCluster, path: Path) -> None:
    client_id, topic = await subscribed(kafka, "telemetry-all", 3, 60)
    group = unique_topic_name("g-telemetry")
    async with AsyncConsumer(
        kafka.bootstrap_servers,
        group_id=group,
        client_id=client_id,
        client_rack="rack-a",
        auto_offset_reset="earliest",
    ) as consumer:
        await consume(consumer, topic, 60)

        def caught_up() -> bool:
            pushes = read_pushes(path, client_id)
            return (
                reading(pushes, FM + "records.consumed.total") == 60
                and reading(pushes, CO + "assigned.partitions") == 3
            )

        await wait_for_async(caught_up, 30, message=lambda: f"pushes: {read_pushes(path, client_id)[-1:]}")
        pushes = read_pushes(path, client_id)
        last = pushes[-1]
        names = set(values(last))
        assert names <= set(NAMES), names - set(NAMES)
        assert {FM + "records.consumed.total", FM + "bytes.consumed.total", FM + "fetch.latency.avg"} <= names
        assert CO + "assigned.partitions" in names and FM + "records.lag.max" in names
        assert reading(pushes, FM + "bytes.consumed.total") == consumer.metrics().bytes_consumed_total
        total = values(last)[FM + "records.consumed.total"][0]
        assert total["kind"] == "sum" and total["monotonic"] and total["temporality"] == 1  # the broker's delta
        assert total["start"] < total["time"]
        starts = [values(p)[FM + "records.consumed.total"][0]["start"] for p in pushes]
        ends = [values(p)[FM + "records.consumed.total"][0]["time"] for p in pushes]
        assert starts[1:] == ends[:-1]  # each delta starts where the one before ended
        lag = values(last)[FM + "records.lag"]
        assert sorted(p["attributes"]["partition"] for p in lag) == ["0", "1", "2"]
        assert {p["attributes"]["topic"] for p in lag} == {topic}
        resource = last["resource"]
        assert resource["client_id"] == client_id and resource["group_id"] == group
        assert resource["client_rack"] == "rack-a" and resource["group_member_id"]
        assert all(p["scope"] == "org.apache.kafka" for p in last["metrics"])
        assert not any(p["terminating"] for p in pushes)
        instance = last["client_instance_id"]
        assert kafka_uuid(await consumer.client_instance_id(5_000)) == instance  # the id the broker got pushes from
        telemetry = consumer._core.parts.owned.telemetry
        assert telemetry is not None and telemetry.subscription is not None
        compression = telemetry.subscription.compression  # the payloads the receiver decoded were compressed so
        assert compression in COMPRESSIBLE and compression in telemetry.subscription.accepted_compression_types
    closing = await wait_for_async(
        lambda: [p for p in read_pushes(path, client_id) if p["terminating"]], 10, message="no terminating push"
    )
    assert [p["client_instance_id"] for p in closing] == [instance]
    assert reading(read_pushes(path, client_id), FM + "records.consumed.total") == 60  # the last delta included


async def test_a_share_consumer_pushes_its_share_metrics_then_a_terminating_push(
    kafka: KafkaCluster, path: Path
) -> None:
    """A share group's member pushes under Java's ``KafkaShareConsumer`` names, from its own ``metrics()``: the
    records it returned, the acknowledgements it sent, its ShareFetch requests and its connections."""
    client_id, topic = await subscribed(kafka, "telemetry-share", 2, 40)
    group = new_share_group(kafka)
    async with AsyncShareConsumer(kafka.bootstrap_servers, group_id=group, client_id=client_id) as consumer:
        await consumer.subscribe([topic])
        got = 0

        async def all_in() -> bool:
            nonlocal got
            got += (await consumer.poll(500)).count()
            return got >= 40

        await wait_for_async(all_in, 60, message=lambda: f"{got} of 40 records")
        assert got == 40
        await consumer.commit_sync()  # implicit mode: the last poll's records are accepted now

        def caught_up() -> bool:
            pushes = read_pushes(path, client_id)
            now = consumer.metrics()
            return (
                now.acknowledgements_sent == 40
                and reading(pushes, SF + "records.consumed.total") == 40
                and reading(pushes, SF + "acknowledgements.send.total") == 40
                and reading(pushes, SF + "fetch.total") == now.share_fetches
            )

        await wait_for_async(caught_up, 30, message=lambda: f"pushes: {read_pushes(path, client_id)[-1:]}")
        pushes = read_pushes(path, client_id)
        names = {name for push in pushes for name in values(push)}
        assert names == set(SHARE_NAMES), names ^ set(SHARE_NAMES)
        assert reading(pushes, SF + "bytes.consumed.total") == consumer.metrics().bytes_consumed_total > 0
        created = consumer.metrics().connections_created
        assert created >= 2 and reading(pushes, "org.apache.kafka.consumer.connection.creation.total") == created
        resource = pushes[-1]["resource"]
        assert resource["client_id"] == client_id and resource["group_id"] == group
        assert resource["group_member_id"] == consumer.metrics().member_id
        assert kafka_uuid(await consumer.client_instance_id(5_000)) == pushes[-1]["client_instance_id"]
        assert not any(p["terminating"] for p in pushes)
    closing = await wait_for_async(
        lambda: [p for p in read_pushes(path, client_id) if p["terminating"]], 10, message="no terminating push"
    )
    assert len(closing) == 1


async def test_a_prefix_subscription_gets_only_matching_names(kafka: KafkaCluster, path: Path) -> None:
    prefix = FM + "records."
    client_id, topic = await subscribed(kafka, "telemetry-prefix", 1, 10, prefix)
    async with AsyncConsumer(
        kafka.bootstrap_servers, group_id=unique_topic_name("g"), client_id=client_id, auto_offset_reset="earliest"
    ) as consumer:
        await consume(consumer, topic, 10)
        await wait_for_async(
            lambda: reading(read_pushes(path, client_id), FM + "records.consumed.total") == 10,
            30,
            message=lambda: f"pushes: {read_pushes(path, client_id)[-1:]}",
        )
    names = {name for push in read_pushes(path, client_id) for name in values(push)}
    assert names and all(name.startswith(prefix) for name in names), names
    assert FM + "records.lag" in names and FM + "bytes.consumed.total" not in names


async def test_enable_metrics_push_false_sends_nothing(kafka: KafkaCluster, path: Path) -> None:
    quiet, control = unique_topic_name("telemetry-off"), unique_topic_name("telemetry-on")
    for client_id in (quiet, control):
        await set_subscription(
            kafka.bootstrap_servers, client_id, metrics=["*"], interval_ms=INTERVAL_MS, client_id=client_id
        )
    topic = unique_topic_name("telemetry-off")
    kafka.create_topic(topic, 1)
    produce_values(kafka.bootstrap_servers, topic, 5, 1)
    async with (
        AsyncConsumer(kafka.bootstrap_servers, client_id=quiet, enable_metrics_push=False) as off,
        AsyncConsumer(kafka.bootstrap_servers, client_id=control) as on,
    ):
        for consumer in (off, on):
            await consumer.assign([(topic, 0)])
            await consumer.seek((topic, 0), 0)
        got = {id(off): 0, id(on): 0}
        while min(got.values()) < 5:
            for consumer in (off, on):
                got[id(consumer)] += (await consumer.poll(200)).count()
        # the control consumer, asked for the same metrics at the same interval, pushes twice meanwhile
        await wait_for_async(lambda: len(read_pushes(path, control)) >= 2, 30, message="the control pushed nothing")
        with pytest.raises(IllegalStateError, match="enable_metrics_push is False"):
            await off.client_instance_id(1_000)
    assert read_pushes(path, quiet) == []


@pytest.mark.broker
async def test_brokers_without_a_receiver_get_no_telemetry_and_nothing_is_logged_above_debug(
    broker: Broker, topic: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    name = topic(1)
    produce_values(broker.bootstrap_servers, name, 5, 1)
    caplog.set_level(logging.DEBUG, logger="asyncconsumer.telemetry")
    async with AsyncConsumer(
        broker.bootstrap_servers, group_id=unique_topic_name("g"), auto_offset_reset="earliest"
    ) as consumer:
        await consume(consumer, name, 5)
        telemetry = consumer._core.parts.owned.telemetry
        assert telemetry is not None

        def answered() -> bool:
            # Kafka without a receiver does not offer the API; Tansu offers it and subscribes nobody
            subscription = telemetry.subscription
            return telemetry._unsupported_logged or (subscription is not None and not subscription.requested_metrics)

        await wait_for_async(answered, 10, message="the manager never looked")
        if broker.kind == "kafka":  # not even asked: the API is not offered
            assert telemetry._unsupported_logged and telemetry.subscription is None
            with pytest.raises(IllegalStateError, match="offer no client telemetry"):
                await consumer.client_instance_id(1_000)
        else:  # Tansu subscribes nobody, but gives an id
            assert (await consumer.client_instance_id(1_000)).int != 0
    records = [r for r in caplog.records if r.name == "asyncconsumer.telemetry"]
    assert [r.getMessage() for r in records if r.levelno > logging.DEBUG] == []
    assert telemetry.pushes_sent == 0 and telemetry.state is TelemetryState.TERMINATED
