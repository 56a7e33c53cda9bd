"""A share group (KIP-932) on the 3-node Apache Kafka cluster while records are produced: a leader change and a
coordinator move mid-stream. Nothing accepted is lost, and a record is delivered again only with a higher delivery
count.

A topic of 3 partitions (replication factor 3, ``min.insync.replicas=2``, each node the preferred leader of one) is
produced to continuously (acks=all, idempotent) while three members read it: an ``AsyncShareConsumer`` in implicit
mode, one in explicit mode that accepts each record and commits after each poll, and a blocking ``ShareConsumer`` in
implicit mode on its own thread. The cluster is disturbed in sequence, and after each step every partition must be
consumed again (records produced after the step):

1. a node that is not the group's coordinator, and leads a partition, is SIGKILLed (its partition gets a new
   leader, which loads the share partition's state from ``__share_group_state``), then restarted;
2. a preferred-leader election moves that partition back to it;
3. the node of the group's coordinator (the members' ``metrics().coordinator_id``) is shut down (a controlled
   shutdown: the coordinator moves, and so does the leadership it had), then restarted.

Then: every record the producer had acknowledged was accepted by some member (the broker confirmed the member's
ACCEPT; or the answer was lost with its connection and the broker never delivered the record again, though a lock's
time passed: it had applied the ACCEPT); no record's acceptance was confirmed to two members; a record delivered
again came with a higher delivery count, except right after a leader change of its partition.

What Kafka 4.4 does there: a share partition's leader persists its state (to the share coordinator, in
``__share_group_state``) when records are acknowledged, released or their locks expire, never when it hands records
out. A new leader starts from the last state persisted, so what the old leader had handed out and not had
acknowledged is handed out again with the same delivery count (1 if the record was never released). The test allows
that, and only that: the same count again for a record of a partition whose leader the test began moving between
the two deliveries, and before any ACCEPT of the record was confirmed. ``-m cluster`` selects the module (about
70 s on 2 cores, 15 of them starting the cluster), ``-s`` shows the figures.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import attrs
import pytest

from asyncconsumer import (
    AsyncShareConsumer,
    KafkaConnectionError,
    KafkaError,
    ShareConsumer,
    ShareRecord,
    TopicPartition,
)
from tests.conftest import unique_topic_name
from tests.support.cluster_load import (
    Acked,
    AckedProducer,
    create_placed_topic,
    index_of,
    led_by,
    partition_states,
    wait_in_sync,
    wait_leaders_moved,
    wait_preferred_leaders,
)
from tests.support.kafka_broker import KafkaCluster
from tests.support.share import new_share_group
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.anyio, pytest.mark.cluster]

PARTITIONS = 3
PLACEMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
"""Partition i's replicas, its preferred leader first: each node leads one partition."""
RATE = 150
"""Records/s over the partitions."""
LOCK_MS = 15_000
"""The group's acquisition lock: a record whose acknowledgement was lost comes back within this."""
INTERNAL_TOPICS = ["__consumer_offsets", "__share_group_state"]
MOVE_S = 30.0
SYNC_S = 90.0
ACQUIRED_WITHIN_S = 5.0
"""A record a member's ``poll`` returns was acquired (its fetch answered) at most this long before."""
PROGRESS_S = 60.0
"""Every partition consumed again after a disruption (a lost acknowledgement waits for its lock to expire)."""

T = TypeVar("T")


async def in_thread(call: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(call, *args)


@pytest.fixture
def cluster(kafka_cluster: KafkaCluster) -> Iterator[KafkaCluster]:
    """The module's cluster; a node a failed test left down is restarted, so the next test starts whole."""
    yield kafka_cluster
    down = [node.node_id for node in kafka_cluster.nodes if not node.alive]
    for node_id in down:
        kafka_cluster.restart(node_id)
    if down:
        wait_in_sync(kafka_cluster, INTERNAL_TOPICS, SYNC_S)


@attrs.frozen
class Delivery:
    """A record as a member's ``poll`` returned it (``at``: monotonic)."""

    at: float
    member: str
    partition: int
    offset: int
    count: int
    index: int


class Member:
    """One share-group member's deliveries and the offsets the broker confirmed it accepted (any thread)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self.deliveries: list[Delivery] = []
        self.returned: set[tuple[int, int]] = set()
        self.accepted: dict[tuple[int, int], float] = {}
        """(partition, offset) of records this member returned whose ACCEPT the broker confirmed, and when first."""
        self.refused: list[tuple[float, int, int, str]] = []
        """(when, partition, offsets, error) of acknowledgements the broker refused or never answered."""
        self.in_doubt: dict[tuple[int, int], float] = {}
        """(partition, offset) of records whose ACCEPT was lost with its connection: the broker may have applied it
        (then it never delivers the record again) or not (then it does, when the lock expires or the partition's
        new leader starts from the persisted state)."""
        self.newest: dict[int, int] = {}
        self.polls = 0
        self.error: BaseException | None = None

    def note(self, records: Iterable[ShareRecord]) -> None:
        now = time.monotonic()
        with self._lock:
            self.polls += 1
            for r in records:
                index = index_of(r.value)
                self.deliveries.append(Delivery(now, self.name, r.partition, r.offset, r.delivery_count, index))
                self.returned.add((r.partition, r.offset))
                self.newest[r.partition] = max(self.newest.get(r.partition, -1), index)

    def heard(self, offsets: dict[TopicPartition, set[int]], error: KafkaError | None) -> None:
        """The acknowledgement commit callback: one partition's acknowledgements, confirmed or refused."""
        now = time.monotonic()
        with self._lock:
            for tp, got in offsets.items():
                mine = [(tp.partition, o) for o in got if (tp.partition, o) in self.returned]
                if error is None:
                    for where in mine:
                        self.accepted.setdefault(where, now)
                else:
                    self.refused.append((now, tp.partition, len(got), f"{type(error).__name__}"))
                    if isinstance(error, KafkaConnectionError):
                        self.in_doubt.update((where, now) for where in mine)

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"{self.name} failed: {self.error!r}") from self.error


class AsyncMember(Member):
    """An ``AsyncShareConsumer`` polled by a task of the test's loop; in explicit mode it accepts every record and
    commits after each poll."""

    def __init__(self, name: str, consumer: AsyncShareConsumer, *, explicit: bool = False) -> None:
        super().__init__(name)
        self.consumer = consumer
        self.explicit = explicit
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    async def start(self, topic: str) -> None:
        self.consumer.set_acknowledgement_commit_callback(self.heard)
        await self.consumer.subscribe([topic])
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def _run(self) -> None:
        try:
            while not self._stopping:
                records = list((await self.consumer.poll(200)).records())
                self.note(records)
                if self.explicit and records:
                    for record in records:
                        self.consumer.acknowledge(record)
                    try:
                        await self.consumer.commit_sync(10_000)
                    except KafkaError as exc:  # e.g. a timeout while the partition has no leader
                        self.refused.append((time.monotonic(), -1, len(records), f"commit: {exc!r}"))
        except BaseException as exc:
            self.error = exc
            raise

    def coordinator(self) -> int | None:
        return self.consumer.metrics().coordinator_id

    def check(self) -> None:
        super().check()
        if self._task is not None and self._task.done() and not self._stopping:
            raise AssertionError(f"{self.name}: the polling task ended without being stopped")

    async def stop(self) -> None:
        """Ends the polling task; closing accepts (implicit) what the last poll returned."""
        self._stopping = True
        try:
            if self._task is not None:
                await asyncio.wait_for(self._task, 30)
        finally:
            await self.consumer.close()

    async def abandon(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.close(timeout_ms=5_000)


class BlockingMember(Member):
    """A ``ShareConsumer`` in implicit mode, polled by its own thread."""

    def __init__(self, name: str, consumer: ShareConsumer) -> None:
        super().__init__(name)
        self.consumer = consumer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    async def start(self, topic: str) -> None:
        self.consumer.set_acknowledgement_commit_callback(self.heard)
        await in_thread(self.consumer.subscribe, [topic])
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.note(self.consumer.poll(200).records())
            self.consumer.close()
        except BaseException as exc:
            self.error = exc

    def coordinator(self) -> int | None:
        return self.consumer.metrics().coordinator_id

    def check(self) -> None:
        super().check()
        if not self._thread.is_alive() and not self._stop.is_set():
            raise AssertionError(f"{self.name}: the polling thread ended without being stopped")

    async def stop(self) -> None:
        self._stop.set()
        await in_thread(self._thread.join, 60)
        assert not self._thread.is_alive(), f"{self.name}: the polling thread did not end"

    async def abandon(self) -> None:
        await self.stop()


AnyMember = AsyncMember | BlockingMember


class Scenario:
    """The cluster, the producer and the members of the test, with a timeline."""

    def __init__(self, cluster: KafkaCluster, topic: str, producer: AckedProducer, members: list[AnyMember]) -> None:
        self.cluster = cluster
        self.topic = topic
        self.producer = producer
        self.members = members
        self.started = time.monotonic()
        self.timeline: list[str] = []
        self.leader_changes: list[tuple[float, frozenset[int]]] = []
        """When the test began moving the leadership of which partitions (monotonic)."""

    def leaders_change(self, partitions: Iterable[int]) -> None:
        """The test is about to move the leadership of ``partitions``."""
        self.leader_changes.append((time.monotonic(), frozenset(partitions)))

    def note(self, what: str) -> None:
        self.timeline.append(f"{time.monotonic() - self.started:6.1f} s ({time.strftime('%H:%M:%S')})  {what}")

    def describe(self) -> str:
        counts = ", ".join(
            f"{m.name}: {len(m.deliveries)} delivered, {len(m.accepted)} accepted, {len(m.refused)} refused"
            for m in self.members
        )
        return "\n".join([*self.timeline, counts])

    def check(self) -> None:
        self.producer.check()
        for m in self.members:
            m.check()

    async def progressed(self, after: str) -> None:
        """Until every partition was consumed (by any member) from a record produced from now on."""
        mark = self.producer.sent

        def all_progressed() -> bool:
            self.check()
            return all(any(m.newest.get(p, -1) >= mark for m in self.members) for p in range(PARTITIONS))

        def detail() -> str:
            newest = {m.name: dict(m.newest) for m in self.members}
            return (
                f"after {after}: not every partition consumed from #{mark} on (newest: {newest})\n{self.describe()}\n"
                f"{partition_states(self.cluster, self.topic)}"
            )

        await wait_for_async(all_progressed, PROGRESS_S, interval=0.05, message=detail)
        self.note(f"every partition consumed again after {after}")

    async def restart(self, node_id: int) -> None:
        await in_thread(self.cluster.restart, node_id)
        await in_thread(wait_in_sync, self.cluster, [self.topic, *INTERNAL_TOPICS], SYNC_S)
        self.note(f"node {node_id} restarted and back in every in-sync set")

    def failed(self) -> None:
        sys.stderr.write(f"\ntimeline:\n{self.describe()}\nthe nodes' last log lines:\n{self.cluster.log_tail(20)}\n")


def check_deliveries(
    members: list[AnyMember], acked: list[Acked], leader_changes: list[tuple[float, frozenset[int]]], started: float
) -> tuple[int, int, int]:
    """Every acknowledged record accepted by some member; a record delivered again came with a higher delivery
    count, or with the same count only from a new leader of its partition (Kafka persists a share partition's state
    when records are acknowledged, released or their locks expire, never when they are acquired: a new leader
    starts from the last state persisted, and hands out again, with the count that state had plus one, what the old
    one had handed out and not had acknowledged), and only if no ACCEPT of it was confirmed before that change.
    Returns the records delivered more than once, those delivered again with the same count by a new leader, and
    those accepted though their ACCEPT's answer was lost with its connection. A record accepted by two members (both
    confirmed) fails too."""
    deliveries = sorted((d for m in members for d in m.deliveries), key=lambda d: d.at)
    by_record: dict[tuple[int, int], list[Delivery]] = defaultdict(list)
    for d in deliveries:
        by_record[d.partition, d.offset].append(d)
    confirmed: dict[tuple[int, int], float] = {}
    for m in members:
        for where, at in m.accepted.items():
            confirmed[where] = min(at, confirmed.get(where, at))

    def new_leader_between(a: Delivery, b: Delivery) -> bool:
        """A change of the partition's leader began between the two deliveries (the first acquired before it, up to
        ``ACQUIRED_WITHIN_S`` before its ``poll`` returned it), before any ACCEPT of the record was confirmed."""
        accepted_at = confirmed.get((a.partition, a.offset), float("inf"))
        return any(
            a.at - ACQUIRED_WITHIN_S < at < b.at and at < accepted_at and a.partition in moved
            for at, moved in leader_changes
        )

    def shown(got: list[Delivery]) -> list[tuple[str, int, float]]:
        return [(d.member, d.count, round(d.at - started, 1)) for d in got]

    lower = [
        (where, shown(got))
        for where, got in by_record.items()
        if any(
            b.count < a.count or (b.count == a.count and not new_leader_between(a, b))
            for a, b in itertools.pairwise(got)
        )
    ]
    assert not lower, (
        f"{len(lower)} records delivered again without a higher delivery count (member, count, s), e.g. {lower[:5]}; "
        f"leaders moved at {[(round(at - started, 1), sorted(p)) for at, p in leader_changes]} s"
    )
    same = sum(1 for got in by_record.values() if any(a.count == b.count for a, b in itertools.pairwise(got)))
    index_at = {where: got[0].index for where, got in by_record.items()}
    accepted = Counter(where for m in members for where in m.accepted)
    # the records whose only delivery's ACCEPT was lost with its connection: the broker applied it, since it never
    # delivered them again though a lock's time passed
    in_doubt = {where for m in members for where in m.in_doubt if len(by_record[where]) == 1}
    settled = {index_at[where] for where in [*accepted, *in_doubt]}
    missing = sorted((a.partition, a.offset, a.index) for a in acked if a.index not in settled)
    delivered = {d.index for d in deliveries}
    never = [m for m in missing if m[2] not in delivered]
    assert not missing, (
        f"{len(missing)} acknowledged records never accepted, {len(never)} of them never delivered, e.g. (partition, "
        f"offset, index) {missing[:5]}"
    )
    twice = sorted(where for where, n in accepted.items() if n > 1)
    assert not twice, f"records whose acceptance the broker confirmed to two members: {twice[:5]}"
    return sum(1 for got in by_record.values() if len(got) > 1), same, len(in_doubt)


async def test_a_share_group_loses_nothing_as_a_leader_and_its_coordinator_move(
    cluster: KafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="asyncconsumer.share")
    topic = unique_topic_name("share-cluster")
    await in_thread(create_placed_topic, cluster, topic, PLACEMENT, {"min.insync.replicas": "2"})
    group = await in_thread(lambda: new_share_group(cluster, share_record_lock_duration_ms=LOCK_MS))
    bootstrap = cluster.bootstrap_servers
    members: list[AnyMember] = [
        AsyncMember("implicit", AsyncShareConsumer(bootstrap, group_id=group)),
        AsyncMember(
            "explicit",
            AsyncShareConsumer(bootstrap, group_id=group, share_acknowledgement_mode="explicit"),
            explicit=True,
        ),
        BlockingMember("blocking", ShareConsumer(bootstrap, group_id=group)),
    ]
    producer = AckedProducer(bootstrap, topic, PARTITIONS, RATE).start()
    scenario = Scenario(cluster, topic, producer, members)
    finished = False
    try:
        for m in members:
            await m.start(topic)
        await scenario.progressed("the start")
        state = await in_thread(partition_states, cluster, "__share_group_state")
        assert state and all(len(s.replicas) == 3 for s in state.values()), f"__share_group_state: {state}"

        def coordinators() -> set[int | None]:
            return {m.coordinator() for m in members}

        def one_coordinator() -> bool:
            found = coordinators()
            return len(found) == 1 and None not in found

        await wait_for_async(
            one_coordinator, PROGRESS_S, message=lambda: f"the members' coordinators: {coordinators()}"
        )
        coordinator = members[0].coordinator()
        assert coordinator is not None
        scenario.note(f"the group's coordinator is node {coordinator}")

        # (1) a leader that is not the coordinator is SIGKILLed, (2) an election gives its partition back to it
        victim = next(n for n in (1, 2, 3) if n != coordinator)
        moved = [p for p, replicas in enumerate(PLACEMENT) if replicas[0] == victim]
        scenario.leaders_change(moved)
        await in_thread(cluster.kill, victim)
        scenario.note(f"SIGKILLed node {victim}, leader of partitions {moved}")
        await in_thread(wait_leaders_moved, cluster, topic, moved, victim, MOVE_S)
        scenario.note(f"partitions {moved} have new leaders")
        await scenario.progressed(f"node {victim} was killed")
        await scenario.restart(victim)
        scenario.leaders_change(moved)
        await in_thread(cluster.elect_leaders, [(topic, p) for p in moved])
        await in_thread(wait_preferred_leaders, cluster, topic, MOVE_S)
        scenario.note(f"preferred-leader election: partitions {moved} led by node {victim} again")
        await scenario.progressed("the election")

        # (3) the coordinator's node is shut down: the coordinator moves (with the leadership that node had)
        led = await in_thread(led_by, cluster, topic, coordinator)
        scenario.leaders_change(led)
        await in_thread(cluster.shut_down, coordinator)
        scenario.note(f"controlled shutdown of node {coordinator}, the group's coordinator, leader of partitions {led}")
        await wait_for_async(
            lambda: coordinator not in coordinators() and None not in coordinators(),
            MOVE_S,
            message=lambda: f"the members' coordinators: {coordinators()}\n{scenario.describe()}",
        )
        scenario.note(f"the members' coordinator moved to node(s) {coordinators()}")
        await scenario.progressed(f"node {coordinator} was shut down")
        await scenario.restart(coordinator)
        await scenario.progressed(f"node {coordinator} restarted")

        acked = await in_thread(producer.stop)
        assert not producer.failed, f"the producer gave up on records: {producer.failed[:5]}"
        scenario.note(f"producer stopped: {len(acked)} records acknowledged")
        wanted = {(a.partition, a.offset) for a in acked if a.offset is not None}

        def unsettled() -> set[tuple[int, int]]:
            return wanted - set().union(*(m.accepted for m in members), *(m.in_doubt for m in members))

        def all_settled() -> bool:
            scenario.check()
            return not unsettled()

        await wait_for_async(
            all_settled,
            PROGRESS_S + LOCK_MS / 1000,
            interval=0.05,
            message=lambda: (
                f"{len(unsettled())} records not accepted yet, e.g. {sorted(unsettled())[:5]}\n{scenario.describe()}"
            ),
        )
        doubted = max((t for m in members for t in m.in_doubt.values()), default=0.0)
        await wait_for_async(  # a record whose lost ACCEPT the broker did not apply is delivered again by then
            lambda: time.monotonic() > doubted + LOCK_MS / 1000 + 2, LOCK_MS / 1000 + 3, interval=0.2
        )
        scenario.note("every acknowledged record accepted (or its acceptance in doubt), and a lock's time passed")
        polled = [m.polls for m in members]
        await wait_for_async(  # a few more polls each: a record delivered again after the end would show
            lambda: all(m.polls >= n + 3 for m, n in zip(members, polled, strict=True)), PROGRESS_S
        )
        for m in members:
            await m.stop()
        finished = True
    finally:
        if not finished:
            scenario.failed()
            for m in members:
                await m.abandon()
            await in_thread(producer.stop)

    events = Counter(
        name
        for r in caplog.records
        for name in (
            "share.request_failed",
            "share.request_error",
            "share.partition_moved",
            "share.acknowledge_failed",
            "share.heartbeat_failed",
            "share.fenced",
        )
        if name in r.getMessage()
    )
    sys.stdout.write(
        f"\n[share cluster] {len(acked)} acknowledged; client events: {dict(events)}\n{scenario.describe()}\n"
    )
    redelivered, same, doubted = check_deliveries(members, acked, scenario.leader_changes, scenario.started)
    sys.stdout.write(
        f"[share cluster] {redelivered} records delivered more than once: {same} of them again with the same count "
        f"by a new leader, the others with a higher count; {doubted} accepted though the answer to their ACCEPT was "
        "lost with its connection\n"
    )
