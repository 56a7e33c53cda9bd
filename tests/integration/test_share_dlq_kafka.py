"""Share groups' dead-letter queue (KIP-1191, Kafka 4.4 with ``share.version`` 2, which 4.4.0 formats by default):
a record our share consumer REJECTs, and one RELEASEd until it reaches the group's delivery limit, are written by
the share partition's leader to the group's DLQ topic, where our ``AsyncConsumer`` reads them with the headers
Kafka adds (``__dlq.errors.{topic,partition,offset,group,delivery.count,message}``).

What a DLQ needs on these brokers' defaults: the group config ``errors.deadletterqueue.topic.name``; a topic of that
name starting with ``dlq.`` (the broker's ``errors.deadletterqueue.topic.name.prefix``) and created with
``errors.deadletterqueue.group.enable=true`` (the broker creates none itself:
``errors.deadletterqueue.auto.create.topics.enable`` is false). With the group config
``errors.deadletterqueue.copy.record.enable=true`` the DLQ record carries the original key and value too; without it
only the headers. Either way the DLQ record has Kafka's six headers and not the original's."""

from __future__ import annotations

import pytest

from asyncconsumer import AcknowledgeType, AsyncConsumer, AsyncShareConsumer, ConsumerRecord, TopicPartition
from tests.conftest import Broker, unique_topic_name
from tests.support.kafka_broker import KafkaCluster
from tests.support.produce import ProduceHelper, Record
from tests.support.share import new_share_group
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.anyio, pytest.mark.kafka_only("Tansu has no share groups (APIs 76-79)")]

REJECTED = "Offset rejected by client."
EXCEEDED = "Offset delivery count exceeded the threshold."
"""The causes Kafka 4.4.0 writes in ``__dlq.errors.message`` (``ShareGroupDLQManager``)."""
FATE = {0: AcknowledgeType.REJECT, 1: AcknowledgeType.RELEASE}
"""How the test acknowledges offsets 0 and 1 at every delivery (the others it accepts)."""


def kafka_of(broker: Broker) -> KafkaCluster:
    assert isinstance(broker, KafkaCluster)
    return broker


async def read_all(bootstrap: str, topic: str, wanted: int, timeout: float = 30.0) -> list[ConsumerRecord]:
    """``wanted`` records of ``topic``'s partition 0 from the start, then one more poll that must bring no more."""
    got: list[ConsumerRecord] = []
    async with AsyncConsumer(bootstrap, auto_offset_reset="earliest") as reader:
        await reader.assign([TopicPartition(topic, 0)])

        async def enough() -> bool:
            got.extend((await reader.poll(200)).records())
            return len(got) >= wanted

        await wait_for_async(enough, timeout, message=lambda: f"{len(got)} of {wanted} records on {topic}")
        got.extend((await reader.poll(500)).records())
    return got


@pytest.mark.parametrize("copy", [False, True], ids=["headers-only", "copy-record"])
async def test_rejected_and_exhausted_records_land_on_the_dead_letter_queue(
    broker: Broker, produce: ProduceHelper, copy: bool
) -> None:
    kafka = kafka_of(broker)
    name = unique_topic_name("share-dlq")
    dlq = unique_topic_name("dlq.share")
    kafka.create_topic(name, 1)
    kafka.create_topic(dlq, 1, config={"errors.deadletterqueue.group.enable": "true"})
    produce(name, [Record(b"v%d" % i, key=b"k%d" % i, headers=(("h", b"%d" % i),), partition=0) for i in range(3)])
    group = new_share_group(
        kafka,
        share_delivery_count_limit=2,
        errors_deadletterqueue_topic_name=dlq,
        errors_deadletterqueue_copy_record_enable=str(copy).lower(),
    )
    async with AsyncShareConsumer(
        kafka.bootstrap_servers, group_id=group, share_acknowledgement_mode="explicit"
    ) as consumer:
        await consumer.subscribe([name])
        got: list[tuple[int, int]] = []

        async def settled() -> bool:
            """Offset 0 rejected, 1 released at each delivery (past the limit of 2 it is archived), 2 accepted."""
            for record in (await consumer.poll(200)).records():
                got.append((record.offset, record.delivery_count))
                consumer.acknowledge(record, FATE.get(record.offset, AcknowledgeType.ACCEPT))
            assert all(r is None for r in (await consumer.commit_sync()).values())
            return sorted(got) == [(0, 1), (1, 1), (1, 2), (2, 1)]

        await wait_for_async(settled, 30, message=lambda: f"deliveries (offset, count): {sorted(got)}")
        produce(name, [Record(b"v3", partition=0)])  # offset 3 comes next: offset 1 did not come back a third time
        later: list[tuple[int, int]] = []

        async def next_one() -> bool:
            for record in (await consumer.poll(200)).records():
                later.append((record.offset, record.delivery_count))
                consumer.acknowledge(record)
            return bool(later)

        await wait_for_async(next_one, 30, message="offset 3 delivered")
        assert later == [(3, 1)]
        await consumer.commit_sync()

    dead = await read_all(kafka.bootstrap_servers, dlq, 2)
    by_offset = {int(dict(r.headers)["__dlq.errors.offset"] or b"-1"): r for r in dead}
    assert len(dead) == 2 and sorted(by_offset) == [0, 1], [r.headers for r in dead]
    for offset, cause, count in ((0, REJECTED, b"1"), (1, EXCEEDED, b"2")):
        record = by_offset[offset]
        # the original record's headers are not copied, even with copy.record.enable
        assert record.headers == (
            ("__dlq.errors.topic", name.encode()),
            ("__dlq.errors.partition", b"0"),
            ("__dlq.errors.offset", b"%d" % offset),
            ("__dlq.errors.group", group.encode()),
            ("__dlq.errors.delivery.count", count),
            ("__dlq.errors.message", cause.encode()),
        )
        if copy:
            assert (record.key, record.value) == (b"k%d" % offset, b"v%d" % offset)
        else:
            assert (record.key, record.value) == (None, None)
