"""Rack-aware fetching (KIP-392) on a 3-node Kafka cluster, one rack per node, with Kafka's rack-aware replica
selector: a consumer in a follower's rack reads from that follower, every record exactly once; when the follower is
SIGKILLed while records are produced, the consumer goes back to the leader and gets everything acknowledged,
exactly once and in order per partition.

Where each partition was read from is seen in ``metrics().partitions`` (``preferred_read_replica``,
``fetched_from``). acks=all with ``min.insync.replicas=2``: after the kill, the high watermark (and producing) waits
until the controller fences the dead broker (``broker.session.timeout.ms`` of 3 s here) and drops it from the ISR,
and until then the leader keeps naming the dead replica to a fetch that names the rack. So the follower is killed
with a backlog below the high watermark and the caller not polling (no fetch in flight to the follower): the
consumer must read that backlog from the leaders while the dead follower is still in the ISR.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from functools import partial

import attrs
import pytest
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka import Message, Producer

from asyncconsumer import Consumer, ConsumerRecord, TopicPartition
from tests.conftest import _run_broker, unique_topic_name
from tests.support.kafka_broker import KafkaCluster
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka_only("Tansu has one broker and no replicas to read from")

PARTITIONS = 2
VALUE_BYTES = 1_000
SETTINGS = {
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
RACKS = {node: {"broker.rack": f"r{node}"} for node in (1, 2, 3)}


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    """Three nodes (each broker and controller), node n in rack rn."""
    yield from _run_broker(lambda: KafkaCluster.start(3, settings=SETTINGS, node_settings=RACKS))


@attrs.frozen(order=True)
class Written:
    partition: int
    offset: int
    value: bytes


class Writer:
    """librdkafka's idempotent producer (acks=all: no record written twice, whatever the retries) writing numbered
    records round-robin over the partitions, either a fixed count (``write``) or continuously on a thread until
    ``stop``; ``written`` is what the cluster acknowledged, with offsets."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._topic = topic
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5, "log_level": 0}
        )
        self._next = 0
        self.written: list[Written] = []
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _delivered(self, error: ConfluentError | None, message: Message) -> None:
        if error is not None:
            self.failed.append(str(error))
            return
        partition, offset, value = message.partition(), message.offset(), message.value()
        assert partition is not None and offset is not None and isinstance(value, bytes)
        self.written.append(Written(partition, offset, value))

    def _produce(self, count: int) -> None:
        for _ in range(count):
            n = self._next
            self._next += 1
            value = f"r{n}-".encode().ljust(VALUE_BYTES, b".")
            self._producer.produce(self._topic, value, partition=n % PARTITIONS, on_delivery=self._delivered)
        self._producer.poll(0)

    def write(self, count: int) -> None:
        self._produce(count)
        self.flush()

    def start(self) -> None:
        def run() -> None:
            while not self._stop.is_set():
                self._produce(20)
                self._stop.wait(0.01)  # a steady rate (about 2,000 records or 2 MB/s), not a wait for anything

        self._thread = threading.Thread(target=run, name="rack-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops writing and waits until everything written is acknowledged."""
        self.close()
        self.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def flush(self) -> None:
        left = self._producer.flush(60)
        assert left == 0 and not self.failed, f"{left} records not acknowledged, errors {self.failed[:3]}"


def key(record: ConsumerRecord) -> Written:
    assert isinstance(record.value, bytes)
    return Written(record.partition, record.offset, record.value)


def check_exactly_once_in_order(got: list[ConsumerRecord], written: list[Written]) -> None:
    """Every acknowledged record exactly once, and per partition in offset order as ``poll`` returned them."""
    keys = [key(r) for r in got]
    assert len(keys) == len(set(keys)), "a record was returned twice"
    assert sorted(keys) == sorted(written)
    for p in range(PARTITIONS):
        offsets = [k.offset for k in keys if k.partition == p]
        assert offsets == sorted(offsets), f"partition {p} out of order"


def poll_until(
    consumer: Consumer,
    got: list[ConsumerRecord],
    done: Callable[[], bool],
    timeout_s: float,
    what: str | Callable[[], str],
) -> None:
    """Polls into ``got`` until ``done()`` holds; fails naming ``what`` (or what it returns then) at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            awaited = what() if callable(what) else what
            raise AssertionError(f"{awaited} not within {timeout_s} s ({len(got)} records so far)")
        got.extend(consumer.poll(timeout_ms=200).records())


def test_the_consumer_reads_from_its_racks_follower_and_falls_back_to_the_leader_when_it_dies(
    cluster: KafkaCluster,
) -> None:
    topic = unique_topic_name("rack")
    cluster.create_topic(topic, PARTITIONS, replication_factor=3, config={"min.insync.replicas": "2"})

    # create_topic saw a leader for each partition in one broker's metadata; the broker asked next may not have it yet
    def elected(partition: int) -> int | None:
        node = cluster.leader(topic, partition)
        return node if node >= 0 else None

    leaders = {p: wait_for(partial(elected, p), 30, message=f"a leader for partition {p}") for p in range(PARTITIONS)}
    # a node that leads neither partition: the consumer sits in its rack, and killing it moves no leader
    follower = min({1, 2, 3} - set(leaders.values()))
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    writer = Writer(cluster.bootstrap_servers, topic)
    consumer = Consumer(
        cluster.bootstrap_servers,
        client_rack=f"r{follower}",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        fetch_buffer_bytes=1 << 20,  # about 500 records buffered at first: the rest of a backlog stays on the brokers
    )
    try:
        writer.write(1_000)
        consumer.assign(tps)
        got: list[ConsumerRecord] = []
        poll_until(consumer, got, lambda: len(got) >= 1_000, 60, "the first 1,000 records")

        def read_from(node_of: dict[int, int]) -> bool:
            partitions = consumer.metrics().partitions
            return all(partitions[tp].fetched_from == node_of[tp.partition] for tp in tps)

        # the records came through the follower in the consumer's rack, not from the leaders
        metrics = consumer.metrics().partitions
        assert {tp.partition: metrics[tp].fetched_from for tp in tps} == {p: follower for p in range(PARTITIONS)}

        # and the lease on it stands; it may be briefly cleared (a follower a little behind the leader answers
        # OFFSET_OUT_OF_RANGE, which sends one fetch to the leader, and the leader names the follower again), so
        # the consumer is polled meanwhile, as an application would (no record is left to come)
        def leased() -> dict[int, int | None]:
            partitions = consumer.metrics().partitions
            return {tp.partition: partitions[tp].preferred_read_replica for tp in tps}

        poll_until(
            consumer,
            got,
            lambda: leased() == {p: follower for p in range(PARTITIONS)},
            30,
            lambda: f"node {follower} as every partition's read replica (they are {leased()})",
        )
        check_exactly_once_in_order(got, writer.written)

        writer.start()
        first_wave = len(got)
        poll_until(consumer, got, lambda: len(got) >= first_wave + 500, 60, "records produced while consuming")
        assert read_from({p: follower for p in range(PARTITIONS)})
        # not polling: the buffer fills (its fetches from the follower stop) and acknowledged records pile up
        killed_at = len(got)
        wait_for(lambda: len(writer.written) >= killed_at + 3_000, 60, message="a backlog of 3,000 records")
        cluster.kill(follower)
        poll_until(
            consumer,
            got,
            lambda: read_from(leaders) and len(got) >= killed_at + 1_500,
            60,
            f"records from the leaders {leaders} after node {follower} was killed",
        )
        described = cluster.admin().list_topics(topic=topic, timeout=10).topics[topic].partitions
        isr = {p: list(described[p].isrs) for p in range(PARTITIONS)}
        assert all(follower in nodes for nodes in isr.values()), (
            f"the consumer went back to the leaders only once node {follower} had left the ISR {isr}"
        )
        writer.stop()
        poll_until(consumer, got, lambda: len(got) >= len(writer.written), 60, "every acknowledged record")
        # a duplicate would arrive after the count was reached: three more polls find nothing
        for _ in range(3):
            got.extend(consumer.poll(timeout_ms=200).records())
        check_exactly_once_in_order(got, writer.written)
        metrics = consumer.metrics().partitions
        assert all(metrics[tp].preferred_read_replica is None for tp in tps)
    finally:
        writer.close()
        consumer.close()
