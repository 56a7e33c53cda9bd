"""Share groups (KIP-932) on the test broker: what the share-group tests stand on. A share group reads a topic from
the start once its ``share.auto.offset.reset`` group config says ``earliest``; librdkafka's ShareConsumer (preview in
confluent-kafka 2.16) gets every record once, in explicit and in implicit acknowledgement; a record it releases comes
back with its delivery count raised; and the group configs the tests lower are checked against the bounds the test
broker sets (``SHARE_GROUP_MINIMUMS``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, KafkaException, Message, ShareConsumer

from tests.conftest import Broker, TopicFactory
from tests.support.groups import new_group_id
from tests.support.kafka_broker import SHARE_GROUP_MINIMUMS, KafkaCluster
from tests.support.produce import ProduceHelper, value_for

pytestmark = pytest.mark.kafka_only("Tansu has no share groups (KIP-932)")

RECORDS = 40
PARTITIONS = 2
VALUE_BYTES = 32
DEADLINE_S = 60.0


def kafka_of(broker: Broker) -> KafkaCluster:
    assert isinstance(broker, KafkaCluster)
    return broker


def share_consumer(kafka: KafkaCluster, group: str, topic: str, **config: Any) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group, **config})
    consumer.subscribe([topic])
    return consumer


def consume(
    consumer: ShareConsumer,
    until: Callable[[list[Message]], bool],
    on_batch: Callable[[ShareConsumer, list[Message]], None] = lambda c, b: None,
) -> list[Message]:
    """Polls (1 s at a time) until ``until(everything so far)``; fails after DEADLINE_S with what came."""
    got: list[Message] = []
    deadline = time.monotonic() + DEADLINE_S
    while not until(got):
        assert time.monotonic() < deadline, f"{len(got)} records after {DEADLINE_S} s"
        batch = list(consumer.poll(1.0))
        for message in batch:
            assert message.error() is None, message.error()
        got += batch
        on_batch(consumer, batch)
    return got


def accept_all(consumer: ShareConsumer, batch: list[Message]) -> None:
    for message in batch:
        consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    if batch:
        failed = {tp: e for tp, e in consumer.commit_sync(30).items() if e is not None}
        assert not failed, failed


def coordinates(messages: list[Message]) -> dict[tuple[int, int], bytes | None]:
    out: dict[tuple[int, int], bytes | None] = {}
    for m in messages:
        partition, offset = m.partition(), m.offset()
        assert partition is not None and offset is not None
        key = (partition, offset)
        assert key not in out, f"{key} delivered twice"
        out[key] = m.value()
    return out


def expected(produced: Mapping[int, list[Any]]) -> dict[tuple[int, int], bytes | None]:
    return {(p, r.offset): r.value for p, records in produced.items() for r in records}


@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_share_consumer_reads_every_record_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, mode: str
) -> None:
    kafka = kafka_of(broker)
    name = topic(PARTITIONS)
    produced = produce.values(name, RECORDS, PARTITIONS, value_size=VALUE_BYTES)
    group = new_group_id()
    kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})
    assert kafka.group_config(group)["share.auto.offset.reset"] == "earliest"

    consumer = share_consumer(kafka, group, name, **{"share.acknowledgement.mode": mode})
    try:
        got = consume(
            consumer, lambda got: len(got) >= RECORDS, accept_all if mode == "explicit" else lambda c, b: None
        )
        if mode == "implicit":
            consumer.commit_sync(30)  # the last poll's records, accepted
        # nothing more comes: every record was accepted (a second delivery would show here)
        assert list(consumer.poll(2.0)) == []
    finally:
        consumer.close()
    assert coordinates(got) == expected(produced)
    assert {m.delivery_count() for m in got} == {1}
    assert sorted(m.value() or b"" for m in got) == sorted(value_for(i, VALUE_BYTES) for i in range(RECORDS))


def test_released_record_comes_back_with_a_higher_delivery_count(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    kafka = kafka_of(broker)
    name = topic(1)
    produced = produce.values(name, 5, 1, value_size=VALUE_BYTES)
    group = new_group_id()
    kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})
    consumer = share_consumer(kafka, group, name, **{"share.acknowledgement.mode": "explicit"})
    try:

        def release_offset_2(consumer: ShareConsumer, batch: list[Message]) -> None:
            for message in batch:  # offset 2 back to the group, the others accepted
                ack = AcknowledgeType.RELEASE if message.offset() == 2 else AcknowledgeType.ACCEPT
                consumer.acknowledge(message, ack)
            consumer.commit_sync(30)

        first = consume(consumer, lambda got: len(got) >= 5, release_offset_2)
        again = consume(consumer, lambda got: len(got) >= 1, accept_all)
    finally:
        consumer.close()
    assert [(m.offset(), m.delivery_count()) for m in first] == [(r.offset, 1) for r in produced[0]]
    assert [(m.offset(), m.delivery_count(), m.value()) for m in again] == [(2, 2, produced[0][2].value)]


def test_group_configs_are_bounded_as_the_tests_expect(broker: Broker) -> None:
    kafka = kafka_of(broker)
    group = new_group_id()
    kafka.set_group_config(group, {**SHARE_GROUP_MINIMUMS, "share.auto.offset.reset": "earliest"})
    described = kafka.group_config(group)
    assert {k: int(described[k]) for k in SHARE_GROUP_MINIMUMS} == dict(SHARE_GROUP_MINIMUMS)
    for name, least in SHARE_GROUP_MINIMUMS.items():
        with pytest.raises(KafkaException, match="INVALID_CONFIG"):
            kafka.set_group_config(group, {name: least - 1})
    with pytest.raises(KafkaException, match=r"greater than share\.heartbeat\.interval\.ms"):
        kafka.set_group_config(group, {"share.session.timeout.ms": 2000, "share.heartbeat.interval.ms": 2000})
