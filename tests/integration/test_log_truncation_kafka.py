"""Log truncation detection (KIP-320) against a real unclean leader election on a 3-node Apache Kafka.

Node 3 is the only controller, so the test can stop both replicas of a topic (nodes 1 and 2) without losing the
quorum. Records 0-9 reach both replicas; with node 2 down, records 10-19 reach node 1 only and are consumed; then
node 1 dies, node 2 comes back and is elected leader uncleanly: its log ends at 10, and new records take offsets
10-14 again. A consumer whose position is 20 must notice that the log it read is gone: with no reset policy its
``poll`` raises ``LogTruncationError`` naming the partition and both offsets; with one, it moves back to offset 10
and reads the new records, neither skipping them nor reading offsets 0-9 again (which an out-of-range reset to
earliest would do).
"""

from __future__ import annotations

import time

import pytest

from asyncconsumer import AsyncConsumer, ConsumerRecord, LogTruncationError, TopicPartition
from tests.conftest import unique_topic_name
from tests.support.kafka_broker import KafkaCluster
from tests.support.waiting import wait_for

pytestmark = pytest.mark.anyio

FAST_FAILURE_DETECTION = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def cluster() -> KafkaCluster:  # type: ignore[misc]
    kafka = KafkaCluster.start(3, controllers=[3], settings=FAST_FAILURE_DETECTION)
    try:
        yield kafka
    finally:
        kafka.stop()


def produce(kafka: KafkaCluster, topic: str, values: list[bytes]) -> list[int]:
    """Produces with acks=all and returns the offsets the leader gave."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all", "log_level": 0})
    offsets: list[int] = []
    failures: list[object] = []

    def delivered(error: object, message: object) -> None:
        if error is not None:
            failures.append(error)
        else:
            offsets.append(message.offset())  # type: ignore[attr-defined]

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0, "records not delivered within 60 s"
    assert not failures, failures
    return offsets


async def consume(consumer: AsyncConsumer, count: int, timeout_s: float = 60) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count:
        assert time.monotonic() < deadline, f"consumed {len(records)} of {count} records"
        for batch in (await consumer.poll(timeout_ms=200)).values():
            records.extend(batch)
    return records


async def test_an_unclean_leader_election_is_detected_as_log_truncation(cluster: KafkaCluster) -> None:
    from confluent_kafka.admin import NewTopic

    topic = unique_topic_name("truncated")
    new = NewTopic(topic, 1, replica_assignment=[[1, 2]], config={"min.insync.replicas": "1"})
    cluster.admin().create_topics([new])[topic].result(timeout=30)
    wait_for(lambda: cluster.leader(topic, 0) == 1, 30, message="node 1 never led the new topic")
    tp = TopicPartition(topic, 0)
    assert produce(cluster, topic, [b"a%d" % i for i in range(10)]) == list(range(10))

    strict = AsyncConsumer(cluster.bootstrap_servers, auto_offset_reset="none", request_timeout_ms=5_000)
    lenient = AsyncConsumer(cluster.bootstrap_servers, auto_offset_reset="earliest", request_timeout_ms=5_000)
    try:
        for consumer in (strict, lenient):
            await consumer.assign([tp])
            await consumer.seek(tp, 0)
            assert [r.value for r in await consume(consumer, 10)] == [b"a%d" % i for i in range(10)]

        cluster.kill(2)  # the follower: what comes next reaches node 1 only
        assert produce(cluster, topic, [b"b%d" % i for i in range(10)]) == list(range(10, 20))
        for consumer in (strict, lenient):
            assert [r.offset for r in await consume(consumer, 10)] == list(range(10, 20))

        cluster.kill(1)  # the leader, with the only copy of offsets 10-19
        cluster.restart(2)
        wait_for(lambda: cluster.leader(topic, 0) == -1, 30, message="the partition kept a leader")
        cluster.elect_leaders([(topic, 0)], unclean=True)
        wait_for(lambda: cluster.leader(topic, 0) == 2, 30, message="node 2 was not elected")
        assert produce(cluster, topic, [b"c%d" % i for i in range(5)]) == list(range(10, 15))

        # reset policy: back to where the logs diverge, and the new records from there
        records = await consume(lenient, 5)
        assert [(r.offset, r.value) for r in records] == [(10 + i, b"c%d" % i) for i in range(5)]
        assert await lenient.position(tp) == 15

        # no reset policy: raised once, naming the partition and both offsets; the partition waits for a seek
        deadline = time.monotonic() + 60
        with pytest.raises(LogTruncationError) as raised:
            while time.monotonic() < deadline:
                assert not await strict.poll(timeout_ms=200), "records fetched past a truncation"
        error = raised.value
        assert (error.topic, error.partition, error.offset, error.divergent_offset) == (topic, 0, 20, 10)
        assert f"{topic}-0" in str(error)
        assert not await strict.poll(timeout_ms=500)  # reported once; nothing fetched until the caller seeks
        assert await strict.position(tp) == 20
        await strict.seek(tp, error.divergent_offset)
        records = await consume(strict, 5)
        assert [(r.offset, r.value) for r in records] == [(10 + i, b"c%d" % i) for i in range(5)]
    finally:
        await strict.close()
        await lenient.close()
