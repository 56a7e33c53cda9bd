"""Load and observation for the 3-broker cluster tests: a producer that keeps every acknowledged record, consumers
that keep every record with when it arrived, and what the cluster's metadata says about leaders, replicas and the
in-sync set.

Values are a record's index over the whole run (``b"000000042"``), unique, produced round-robin over the partitions,
so a consumed value says when it was produced relative to any moment the test noted (``AckedProducer.sent``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

import attrs

from asyncconsumer import AsyncConsumer, Consumer, ConsumerRebalanceListener, ConsumerRecord, KafkaError, TopicPartition
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from asyncconsumer.tools.admin import AdminClient
from tests.support.kafka_broker import HOST, KafkaCluster
from tests.support.raw_client import RawClient
from tests.support.waiting import wait_for


def value_of(index: int) -> bytes:
    return b"%09d" % index


def index_of(value: bytes) -> int:
    return int(value)


@attrs.frozen
class Acked:
    """A record the cluster acknowledged: where it went, its value, and when the acknowledgement came (monotonic)."""

    partition: int
    offset: int | None
    """None when the producer did not learn it: librdkafka acknowledges without an offset a retried batch the
    broker says it had already written (DUPLICATE_SEQUENCE_NUMBER, seen after a leader change)."""
    value: bytes
    at: float

    @property
    def index(self) -> int:
        return index_of(self.value)


class AckedProducer:
    """confluent-kafka's producer in a thread, producing ``rate`` records/s round-robin over ``partitions`` partitions
    (explicit partitions, unique values) until ``stop()``; keeps what the delivery callbacks acknowledged.

    Idempotent with ``acks=all`` by default (retries never duplicate or reorder, so a partition's offsets are
    contiguous); ``idempotent=False`` for a test that measures the consumer, not the producer's recovery.
    """

    def __init__(
        self, bootstrap: str, topic: str, partitions: int, rate: int = 300, *, idempotent: bool = True
    ) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.acked: list[Acked] = []
        """Appended by the delivery callbacks (the producing thread); read by the test (appends are atomic)."""
        self.failed: list[tuple[int, bytes, str]] = []
        """(partition, value, error) of every record the producer gave up on."""
        self.fatal: list[str] = []
        self.sent = 0
        """Records handed to the producer so far: the index the next one gets."""
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": idempotent,
                "acks": "all",
                "linger.ms": 5,
                "delivery.timeout.ms": 120_000,
                "error_cb": self._on_error,
                "log_level": 0,
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)
        self._error: BaseException | None = None

    def start(self) -> Self:
        self._thread.start()
        return self

    def _on_error(self, error: Any) -> None:
        if error.fatal():
            self.fatal.append(str(error))

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failed.append((message.partition(), message.value(), str(error)))
        else:
            offset = message.offset()
            known = offset if offset is not None and offset >= 0 else None
            self.acked.append(Acked(message.partition(), known, message.value(), time.monotonic()))

    def _run(self) -> None:
        tick = 0.02
        per_tick = max(1, round(self.rate * tick))
        due = time.monotonic()
        try:
            while not self._stop.is_set():
                for _ in range(per_tick):
                    index = self.sent
                    self._producer.produce(
                        self.topic, value_of(index), partition=index % self.partitions, on_delivery=self._on_delivery
                    )
                    self.sent = index + 1
                self._producer.poll(0)
                due += tick
                self._stop.wait(max(0.0, due - time.monotonic()))  # pacing, not waiting for a condition
            remaining = self._producer.flush(90)
            if remaining:
                raise AssertionError(f"{remaining} records still undelivered 90 s after the producer stopped")
        except BaseException as exc:  # reported by check() and stop()
            self._error = exc

    def check(self) -> None:
        if self._error is not None:
            raise self._error
        assert not self.fatal, f"the producer hit a fatal error: {self.fatal}"

    def stop(self) -> list[Acked]:
        """Stops producing, waits for every outstanding acknowledgement, and returns what was acknowledged."""
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive(), "the producer thread did not end"
        self.check()
        return list(self.acked)


@attrs.frozen
class Seen:
    """A consumed record: when ``poll`` returned it (monotonic), partition, offset, value's index."""

    at: float
    partition: int
    offset: int
    index: int


class Reader:
    """What one consumer (a leg of a test) consumed, with the newest index seen per partition."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[Seen] = []
        self.newest: dict[int, int] = {}
        """Partition -> the highest value index consumed from it."""
        self.indices: set[int] = set()
        """Every value index consumed."""
        self.polls = 0

    def note(self, records: Iterable[ConsumerRecord]) -> None:
        """What one ``poll`` returned."""
        self.polls += 1
        now = time.monotonic()
        for r in records:
            index = index_of(r.value)
            self.seen.append(Seen(now, r.partition, r.offset, index))
            self.indices.add(index)
            if index > self.newest.get(r.partition, -1):
                self.newest[r.partition] = index

    def consumed_since(self, index: int, partitions: Iterable[int] | None = None) -> bool:
        """A record produced at or after ``index`` was consumed from each of ``partitions`` (None: from any)."""
        if partitions is None:
            return any(i >= index for i in self.newest.values())
        return all(self.newest.get(p, -1) >= index for p in partitions)

    def offsets(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        for s in self.seen:
            out[s.partition].append(s.offset)
        return dict(out)

    def check(self) -> None:
        """Raise what the consuming task or thread raised (overridden)."""


class AsyncReader(Reader):
    """An ``AsyncConsumer`` polled by a task of the test's loop until ``stop()``."""

    def __init__(self, name: str, consumer: AsyncConsumer) -> None:
        super().__init__(name)
        self.consumer = consumer
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Self:
        self._task = asyncio.create_task(self._run(), name=self.name)
        return self

    async def _run(self) -> None:
        while not self._stopping:
            self.note((await self.consumer.poll(timeout_ms=200)).records())
            await self.after_poll()

    async def after_poll(self) -> None:
        """What a subclass does after each poll (a member commits)."""

    def check(self) -> None:
        assert self._task is not None
        if self._task.done():
            self._task.result()
            raise AssertionError(f"{self.name}: the polling task ended without being stopped")

    async def stop(self) -> None:
        """Lets the current poll finish (its records are kept), ends the task, closes the consumer."""
        self._stopping = True
        try:
            if self._task is not None:
                await asyncio.wait_for(self._task, 30)
        finally:
            await self.consumer.close()

    async def abandon(self) -> None:
        """On the way out of a failed test: cancel the task, close the consumer."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.close(timeout_ms=5_000)


class BlockingReader(Reader):
    """A blocking ``Consumer`` assigned ``partitions`` and polled by its own thread until ``stop()``."""

    def __init__(self, name: str, settings: Mapping[str, Any], partitions: Sequence[TopicPartition]) -> None:
        super().__init__(name)
        self._settings = dict(settings)
        self._partitions = list(partitions)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            with Consumer(**self._settings) as consumer:
                consumer.assign(self._partitions)
                while not self._stop.is_set():
                    self.note(consumer.poll(timeout_ms=200).records())
        except BaseException as exc:
            self._error = exc

    def check(self) -> None:
        if self._error is not None:
            raise self._error
        if not self._thread.is_alive() and not self._stop.is_set():
            raise AssertionError(f"{self.name}: the polling thread ended without being stopped")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.name}: the polling thread did not end"
        self.check()


@attrs.frozen
class Commit:
    """A commit that succeeded: when it completed (monotonic) and the offsets it committed per partition."""

    at: float
    offsets: Mapping[int, int]


class _MemberListener(ConsumerRebalanceListener):
    def __init__(self, member: GroupMember) -> None:
        self.member = member

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.member.released("revoked", partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.member.released("lost", partitions)

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.member.events.append((time.monotonic(), "assigned", frozenset(tp.partition for tp in partitions)))


class GroupMember(AsyncReader):
    """A group member that commits what it consumed after every poll that returned records (no auto-commit), and
    keeps its successful commits, failed commits and rebalance callbacks with their times."""

    def __init__(self, name: str, consumer: AsyncConsumer) -> None:
        super().__init__(name, consumer)
        self.commits: list[Commit] = []
        self.commit_errors: list[tuple[float, str]] = []
        self.events: list[tuple[float, str, frozenset[int]]] = []
        self._uncommitted: dict[int, int] = {}
        """Partition -> the next offset to commit, for what this member consumed and has not committed yet."""

    @property
    def listener(self) -> ConsumerRebalanceListener:
        return _MemberListener(self)

    def released(self, kind: str, partitions: set[TopicPartition]) -> None:
        numbers = frozenset(tp.partition for tp in partitions)
        self.events.append((time.monotonic(), kind, numbers))
        for p in numbers:
            self._uncommitted.pop(p, None)

    def note(self, records: Iterable[ConsumerRecord]) -> None:
        batch = list(records)
        super().note(batch)
        for r in batch:
            self._uncommitted[r.partition] = r.offset + 1

    async def after_poll(self) -> None:
        if not self._uncommitted:
            return
        offsets = dict(self._uncommitted)
        try:
            await self.consumer.commit(timeout_ms=10_000)  # the current positions: what was consumed
        except KafkaError as exc:  # e.g. the coordinator moving: the work stays uncommitted, as at-least-once allows
            self.commit_errors.append((time.monotonic(), f"{type(exc).__name__}: {exc}"))
            return
        self.commits.append(Commit(time.monotonic(), offsets))
        for p, offset in offsets.items():
            if self._uncommitted.get(p) == offset:
                del self._uncommitted[p]

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


# --- the cluster as its metadata says ----------------------------------------------------------------------------


@attrs.frozen
class PartitionState:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def partition_states(cluster: KafkaCluster, topic: str) -> dict[int, PartitionState]:
    described = cluster.admin().list_topics(topic=topic, timeout=10).topics.get(topic)
    if described is None or described.error is not None:
        return {}
    return {p: PartitionState(int(m.leader), tuple(m.replicas), tuple(m.isrs)) for p, m in described.partitions.items()}


def led_by(cluster: KafkaCluster, topic: str, node_id: int) -> list[int]:
    return sorted(p for p, s in partition_states(cluster, topic).items() if s.leader == node_id)


def wait_leaders_moved(
    cluster: KafkaCluster, topic: str, partitions: Iterable[int], away_from: int, timeout: float
) -> None:
    """Until every one of ``partitions`` has a leader other than ``away_from``."""
    wanted = set(partitions)

    def moved() -> bool:
        states = partition_states(cluster, topic)
        return all(p in states and states[p].leader not in (-1, away_from) for p in wanted)

    wait_for(moved, timeout, interval=0.1, message=lambda: f"leaders of {topic}: {partition_states(cluster, topic)}")


def wait_in_sync(cluster: KafkaCluster, topics: Iterable[str], timeout: float) -> None:
    """Until every partition of ``topics`` has a leader and all its replicas in sync."""
    names = list(topics)

    def in_sync() -> bool:
        for topic in names:
            states = partition_states(cluster, topic)
            if not states or any(s.leader < 0 or set(s.isr) != set(s.replicas) for s in states.values()):
                return False
        return True

    wait_for(in_sync, timeout, interval=0.2, message=lambda: f"{[partition_states(cluster, t) for t in names]}")


def node_partition_states(cluster: KafkaCluster, node_id: int, topic: str) -> dict[int, PartitionState]:
    """``topic``'s partitions as one node's metadata says (an admin client asks whichever node it likes, and a node
    just restarted may still answer from the image it had)."""
    client = RawClient(f"{HOST}:{cluster.node(node_id).internal_port}", "cluster-load")
    try:
        response = client.call(MetadataRequest(topics=(MetadataRequestTopic(name=topic),)), 12)
    finally:
        client.close()
    assert isinstance(response, MetadataResponse)
    return {
        p.partition_index: PartitionState(p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
        for t in response.topics
        if t.name == topic and not t.error_code
        for p in t.partitions
    }


def agreed_partition_states(cluster: KafkaCluster, topic: str, timeout: float) -> dict[int, PartitionState]:
    """``topic``'s partitions once every live node's metadata says the same."""
    seen: list[dict[int, PartitionState]] = []

    def agreed() -> bool:
        seen[:] = [node_partition_states(cluster, n.node_id, topic) for n in cluster.nodes if n.alive]
        return bool(seen) and bool(seen[0]) and all(v == seen[0] for v in seen)

    wait_for(agreed, timeout, interval=0.1, message=lambda: f"the nodes' views of {topic} differ: {seen}")
    return seen[0]


def wait_preferred_leaders(cluster: KafkaCluster, topic: str, timeout: float) -> None:
    """Until every live node's metadata has every partition led by its preferred (first) replica."""
    views: list[dict[int, PartitionState]] = []

    def preferred() -> bool:
        views[:] = [node_partition_states(cluster, n.node_id, topic) for n in cluster.nodes if n.alive]
        return all(v and all(s.leader == s.replicas[0] for s in v.values()) for v in views)

    wait_for(preferred, timeout, interval=0.1, message=lambda: f"the nodes' views of {topic}: {views}")


async def coordinator_of(cluster: KafkaCluster, group_id: str) -> int:
    """The node hosting ``group_id``'s coordinator, as FindCoordinator answers now (our admin client: librdkafka's
    DescribeGroups kept timing out for a while after the coordinator's node was killed)."""
    async with AdminClient(cluster.bootstrap_servers, timeout_ms=10_000) as admin:
        return await admin.find_coordinator(group_id)


def offsets_partition(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition (so the coordinator) of a group: Java's ``String.hashCode``, Kafka's
    ``Utils.abs`` (``Integer.MIN_VALUE`` is 0), modulo the partition count."""
    h = 0
    units = group_id.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


def create_placed_topic(
    cluster: KafkaCluster,
    name: str,
    replicas: Sequence[Sequence[int]],
    config: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> None:
    """Creates a topic whose partition ``i`` lives on the nodes ``replicas[i]`` (the first one its preferred
    leader), and waits until each partition is led by that node."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    topic = NewTopic(
        name,
        num_partitions=len(replicas),
        replication_factor=-1,
        replica_assignment=[list(r) for r in replicas],
        config=dict(config or {}),
    )
    cluster.admin().create_topics([topic], request_timeout=timeout)[name].result(timeout=timeout)
    wait_preferred_leaders(cluster, name, timeout)


def check_exactly_once(reader: Reader, acked: list[Acked]) -> None:
    """Every offset exactly once, in order per partition, contiguous from 0; every acknowledged record among them."""
    for p, offsets in sorted(reader.offsets().items()):
        wrong = next((i for i, o in enumerate(offsets) if o != i), None)
        assert wrong is None, (
            f"{reader.name}: partition {p} read offset {offsets[wrong]} where {wrong} was next "
            f"(around: {offsets[max(0, wrong - 3) : wrong + 4]})"
        )
    check_acknowledged(reader.name, reader.seen, acked)
    extra = sorted(reader.indices - {a.index for a in acked})
    assert not extra, f"{reader.name}: consumed records that were never acknowledged: {extra[:5]}"


def check_acknowledged(name: str, seen: Iterable[Seen], acked: list[Acked]) -> None:
    """Every acknowledged record was consumed, from its partition, at its offset when the producer learned it."""
    where: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for s in seen:
        where[s.index].add((s.partition, s.offset))
    missing = sorted(a.index for a in acked if a.index not in where)
    assert not missing, f"{name}: {len(missing)} acknowledged records never consumed, e.g. {missing[:5]}"
    misplaced = [
        (a.index, a.partition, a.offset, sorted(where[a.index]))
        for a in acked
        if not any(p == a.partition and a.offset in (None, o) for p, o in where[a.index])
    ]
    assert not misplaced, (
        f"{name}: consumed elsewhere than acknowledged (value, partition, offset, read): {misplaced[:5]}"
    )
