"""Leadership and failure on a 3-node Apache Kafka cluster (issue 21), every record counted.

A topic of 6 partitions, replication factor 3 and ``min.insync.replicas=2`` is produced to continuously (acks=all,
idempotent: offsets are contiguous from 0 in every partition) while consumers read it, and the cluster is disturbed
in sequence: the leader of some partitions is SIGKILLed and later restarted; another broker is shut down (a
controlled shutdown) and restarted; a preferred-leader election moves leadership back. After each step every
consumer must go on consuming records produced after it, on every partition.

* assign mode (``AsyncConsumer`` and the blocking ``Consumer``): every acknowledged record exactly once, in order,
  offsets contiguous from 0;
* groups of both protocols, two members each, the coordinator's broker being the one killed: nothing lost, a
  record consumed twice only at or after the last offset committed for its partition before it was consumed again;
  every member consumes again after the coordinator moved;
* leader changes measured (a SIGKILL, then a preferred-leader election): the partitions whose leader did not change
  keep their rate while the moved ones wait for their new leader;
* the admin client (issue 49) on three nodes: each request where it belongs (a partition's leader, a broker's own
  configs, a group's coordinator).

Every wait is a condition with a deadline; the whole module takes about 2 minutes on 2 cores (``-m cluster`` selects
it, ``-s`` shows the figures).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

import attrs
import pytest

from asyncconsumer import AsyncConsumer, KafkaError, TopicPartition
from tests.conftest import unique_topic_name
from tests.support.cluster_load import (
    Acked,
    AckedProducer,
    AsyncReader,
    BlockingReader,
    GroupMember,
    Reader,
    Seen,
    agreed_partition_states,
    check_acknowledged,
    check_exactly_once,
    coordinator_of,
    create_placed_topic,
    led_by,
    offsets_partition,
    partition_states,
    wait_in_sync,
    wait_leaders_moved,
    wait_preferred_leaders,
)
from tests.support.groups import new_group_id
from tests.support.kafka_broker import TEST_SETTINGS, KafkaCluster
from tests.support.waiting import wait_for_async, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.cluster]

PARTITIONS = 6
RATE = 300
"""Records/s over the topic's partitions: enough to see every partition move, light on a 2-core machine."""
TOPIC_CONFIG = {"min.insync.replicas": "2"}
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = int(TEST_SETTINGS["offsets.topic.num.partitions"])
MOVE_S = 30.0
"""A killed node is fenced 3 s after its last heartbeat and its partitions get new leaders."""
SYNC_S = 90.0
"""A restarted node catches up and rejoins every in-sync set."""
PROGRESS_S = 60.0
"""Every consumer reads records produced after a disruption (a group may rebalance meanwhile)."""

T = TypeVar("T")


async def in_thread(call: Callable[..., T], *args: Any) -> T:
    """Blocking cluster operations run off the loop, so the consumers' tasks go on polling meanwhile."""
    return await asyncio.to_thread(call, *args)


@pytest.fixture
def cluster(kafka_cluster: KafkaCluster) -> Iterator[KafkaCluster]:
    """The module's cluster; a node a failed test left down is restarted, so the next test starts whole."""
    yield kafka_cluster
    down = [node.node_id for node in kafka_cluster.nodes if not node.alive]
    for node_id in down:
        kafka_cluster.restart(node_id)
    if down:
        wait_in_sync(kafka_cluster, [OFFSETS_TOPIC], SYNC_S)


class Together:
    """The members of one group as one reader: what the group consumed."""

    def __init__(self, name: str, members: list[GroupMember]) -> None:
        self.name = name
        self.members = members

    def check(self) -> None:
        for m in self.members:
            m.check()

    def consumed_since(self, index: int, partitions: Iterable[int] | None = None) -> bool:
        wanted = range(PARTITIONS) if partitions is None else partitions
        return all(any(m.newest.get(p, -1) >= index for m in self.members) for p in wanted)

    @property
    def indices(self) -> set[int]:
        return set().union(*(m.indices for m in self.members))

    def stable(self) -> bool:
        """Each member owns partitions, no partition twice, every partition owned."""
        owned = [m.owned() for m in self.members]
        return all(owned) and sum(map(len, owned)) == PARTITIONS and set().union(*owned) == set(range(PARTITIONS))


Leg = Reader | Together


class Scenario:
    """The producer, the consumers (legs) and the cluster of one test, with a timeline of what happened."""

    def __init__(self, cluster: KafkaCluster, topic: str, producer: AckedProducer, legs: list[Leg]) -> None:
        self.cluster = cluster
        self.topic = topic
        self.producer = producer
        self.legs = legs
        self.started = time.monotonic()
        self.timeline: list[str] = []

    def note(self, what: str) -> None:
        self.timeline.append(f"{time.monotonic() - self.started:6.1f} s  {what}")

    def describe(self) -> str:
        return "\n".join(self.timeline)

    def failed(self) -> None:
        """On the way out of a failed test: the timeline and the nodes' logs, while they are still there."""
        sys.stderr.write(f"\ntimeline:\n{self.describe()}\nthe nodes' last log lines:\n{self.cluster.log_tail(20)}\n")

    async def progressed(self, after: str, individually: Iterable[Reader] = ()) -> None:
        """Until every leg consumed, from every partition, a record produced from now on (and each reader of
        ``individually`` one from any of its partitions)."""
        mark = self.producer.sent
        singles = list(individually)

        def all_progressed() -> bool:
            self.producer.check()
            for leg in self.legs:
                leg.check()
            return all(leg.consumed_since(mark, range(PARTITIONS)) for leg in self.legs) and all(
                r.consumed_since(mark) for r in singles
            )

        def detail() -> str:
            newest = {leg.name: getattr(leg, "newest", None) for leg in [*self.legs, *singles]}
            return (
                f"after {after}: not every consumer read a record produced at or after #{mark} "
                f"(newest per partition: {newest})\n{self.describe()}\n{partition_states(self.cluster, self.topic)}"
            )

        await wait_for_async(all_progressed, PROGRESS_S, interval=0.05, message=detail)
        self.note(f"every consumer read records produced after {after}")

    async def disrupt(
        self,
        first: int,
        *,
        individually: Iterable[Reader] = (),
        after_kill: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """SIGKILL ``first`` (which leads partitions) and restart it; a controlled shutdown of another leader and
        its restart; a preferred-leader election. Waits for consumers to progress after each step."""
        cluster, topic = self.cluster, self.topic
        singles = list(individually)
        moved = await in_thread(led_by, cluster, topic, first)
        assert moved, f"node {first} leads no partition of {topic}: {partition_states(cluster, topic)}"
        await in_thread(cluster.kill, first)
        self.note(f"SIGKILLed node {first}, leader of partitions {moved}")
        await in_thread(wait_leaders_moved, cluster, topic, moved, first, MOVE_S)
        self.note(f"partitions {moved} have new leaders")
        if after_kill is not None:
            await after_kill()
        await self.progressed(f"node {first} was killed", singles)
        await in_thread(cluster.restart, first)
        await in_thread(wait_in_sync, cluster, [topic, OFFSETS_TOPIC], SYNC_S)
        self.note(f"node {first} restarted and back in every in-sync set")

        # the next node to stop leads partitions it is the preferred leader of, so the election at the end has
        # something to move back to it (the controlled shutdown may hand the first node's partitions back to it)
        states = await in_thread(partition_states, cluster, topic)
        preferred = Counter(s.leader for s in states.values() if s.leader == s.replicas[0] and s.leader != first)
        assert preferred, f"no node but {first} leads a partition it prefers: {states}"
        second = preferred.most_common(1)[0][0]
        led = sorted(p for p, s in states.items() if s.leader == second)
        await in_thread(cluster.shut_down, second)
        self.note(f"controlled shutdown of node {second}, leader of partitions {led}")
        await in_thread(wait_leaders_moved, cluster, topic, led, second, MOVE_S)
        await self.progressed(f"node {second} was shut down", singles)
        await in_thread(cluster.restart, second)
        await in_thread(wait_in_sync, cluster, [topic, OFFSETS_TOPIC], SYNC_S)
        self.note(f"node {second} restarted and back in every in-sync set")

        # every node's metadata, agreed: an admin client's answer may come from a node just restarted, whose
        # image can lag (it once showed the election done before it ran)
        before = {p: s.leader for p, s in (await in_thread(agreed_partition_states, cluster, topic, MOVE_S)).items()}
        await in_thread(cluster.elect_leaders, [(topic, p) for p in range(PARTITIONS)])
        await in_thread(wait_preferred_leaders, cluster, topic, MOVE_S)
        after = {p: s.leader for p, s in (await in_thread(agreed_partition_states, cluster, topic, MOVE_S)).items()}
        changed = sorted(p for p in after if after[p] != before[p])
        assert changed, f"the preferred-leader election moved nothing: {after}"
        self.note(f"preferred-leader election moved partitions {changed}")
        await self.progressed("the election", singles)

    async def finish(self) -> list[Acked]:
        """Stops producing; waits until every leg consumed every acknowledged record."""
        acked = await in_thread(self.producer.stop)
        assert not self.producer.failed, f"the producer gave up on records: {self.producer.failed[:5]}"
        unplaced = sum(1 for a in acked if a.offset is None)
        self.note(f"producer stopped: {len(acked)} records acknowledged ({unplaced} without an offset)")
        wanted = {a.index for a in acked}

        def all_reached() -> bool:
            for leg in self.legs:
                leg.check()
            return all(wanted <= leg.indices for leg in self.legs)

        def missing() -> str:
            return f"{[(leg.name, len(wanted - leg.indices)) for leg in self.legs]} records missing\n{self.describe()}"

        await wait_for_async(all_reached, PROGRESS_S, interval=0.05, message=missing)
        self.note("every consumer reached the end of every partition")
        # a few more polls each, so a record delivered twice after the end was reached would be seen
        readers = [r for leg in self.legs for r in (leg.members if isinstance(leg, Together) else [leg])]
        polled = [r.polls for r in readers]

        def polled_more() -> bool:
            for leg in self.legs:
                leg.check()
            return all(r.polls >= before + 3 for r, before in zip(readers, polled, strict=True))

        await wait_for_async(polled_more, PROGRESS_S, interval=0.05, message=self.describe)
        return acked


async def new_topic(cluster: KafkaCluster, hint: str) -> str:
    name = unique_topic_name(hint)
    await in_thread(lambda: cluster.create_topic(name, PARTITIONS, replication_factor=3, config=TOPIC_CONFIG))
    return name


def report(what: str) -> None:
    """Figures for docs/reliability.md (shown with ``-s``)."""
    sys.stdout.write(f"\n[cluster] {what}\n")


def written_twice(seen: Iterable[Seen]) -> int:
    """Values the log holds at two offsets: librdkafka's idempotent producer can write a retried batch again after
    bumping its epoch around a leader change (confluentinc/librdkafka#4953). The consumer is held to offsets."""
    offsets: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for s in seen:
        offsets[s.index].add((s.partition, s.offset))
    return sum(len(where) - 1 for where in offsets.values())


async def test_assigned_consumers_read_every_acknowledged_record_once_in_order_as_leaders_move(
    cluster: KafkaCluster,
) -> None:
    topic = await new_topic(cluster, "cluster-assign")
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    settings: dict[str, Any] = {"bootstrap_servers": cluster.bootstrap_servers, "auto_offset_reset": "earliest"}
    producer = AckedProducer(cluster.bootstrap_servers, topic, PARTITIONS, RATE).start()
    asynchronous = AsyncReader("AsyncConsumer", AsyncConsumer(**settings))
    blocking = BlockingReader("Consumer", settings, partitions)
    scenario = Scenario(cluster, topic, producer, [asynchronous, blocking])
    finished = False
    try:
        await asynchronous.consumer.assign(partitions)
        asynchronous.start()
        blocking.start()
        await scenario.progressed("the start")
        await scenario.disrupt(await in_thread(cluster.leader, topic, 0))
        acked = await scenario.finish()
        await asynchronous.stop()
        await in_thread(blocking.stop)
        finished = True
    finally:
        if not finished:
            scenario.failed()
            await asynchronous.abandon()
            await in_thread(blocking.stop)
            await in_thread(producer.stop)
    for reader in (asynchronous, blocking):
        check_exactly_once(reader, acked)
    report(
        f"assign mode: {len(acked)} acknowledged; AsyncConsumer consumed {len(asynchronous.seen)}, "
        f"Consumer {len(blocking.seen)}; 0 duplicates; {written_twice(asynchronous.seen)} values written twice by "
        f"the producer\n{scenario.describe()}"
    )


def group_pair() -> tuple[str, str]:
    """Two group ids whose coordinator is the same (the same ``__consumer_offsets`` partition)."""
    classic = new_group_id()
    while True:
        other = new_group_id()
        if offsets_partition(other, OFFSETS_PARTITIONS) == offsets_partition(classic, OFFSETS_PARTITIONS):
            return classic, other


def group_member(cluster: KafkaCluster, name: str, group_id: str, protocol: str) -> GroupMember:
    settings: dict[str, Any] = {
        "group_id": group_id,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "group_protocol": protocol,
    }
    if protocol == "classic":
        settings |= {"session_timeout_ms": 6_000, "heartbeat_interval_ms": 500}
    return GroupMember(name, AsyncConsumer(cluster.bootstrap_servers, **settings))


def check_group(group: Together, acked: list[Acked]) -> int:
    """Nothing lost; a record consumed again only at or after the highest offset committed for its partition before
    (a commit the new owner could not have seen would be two owners at once). Returns the duplicates: offsets
    consumed more than once (a value the producer wrote twice is two offsets, see ``written_twice``)."""
    check_acknowledged(group.name, [s for m in group.members for s in m.seen], acked)
    reads = sorted((s.at, s.partition, s.offset, s.index, m.name) for m in group.members for s in m.seen)
    commits = sorted((c.at, p, o) for m in group.members for c in m.commits for p, o in c.offsets.items())
    committed: dict[int, int] = {}
    seen: dict[tuple[int, int], int] = {}
    duplicates: list[tuple[int, int, str]] = []
    early: list[str] = []
    next_commit = 0
    for at, p, offset, index, name in reads:
        while next_commit < len(commits) and commits[next_commit][0] < at:
            _, cp, co = commits[next_commit]
            committed[cp] = max(committed.get(cp, 0), co)
            next_commit += 1
        if (p, offset) in seen:
            assert seen[p, offset] == index, f"{group.name}: {p}/{offset} read with two values"
            duplicates.append((p, offset, name))
            if offset < committed.get(p, 0):
                early.append(f"{name} read {p}/{offset} again after {committed[p]} was committed")
        seen[p, offset] = index
    assert not early, f"{group.name}: records consumed again before the committed offset: {early[:5]}"
    return len(duplicates)


async def test_groups_of_both_protocols_lose_nothing_as_brokers_die_and_their_coordinator_moves(
    cluster: KafkaCluster,
) -> None:
    topic = await new_topic(cluster, "cluster-groups")
    classic_id, consumer_id = group_pair()
    producer = AckedProducer(cluster.bootstrap_servers, topic, PARTITIONS, RATE).start()
    classic = [group_member(cluster, f"classic-{i}", classic_id, "classic") for i in (1, 2)]
    modern = [group_member(cluster, f"consumer-{i}", consumer_id, "consumer") for i in (1, 2)]
    members = classic + modern
    groups = [Together("classic group", classic), Together("consumer-protocol group", modern)]
    scenario = Scenario(cluster, topic, producer, list(groups))
    finished = False
    try:
        for m in members:
            await m.consumer.subscribe([topic], listener=m.listener)
            m.start()

        def both_stable() -> bool:
            for m in members:
                m.check()
            return all(g.stable() for g in groups)

        await wait_for_async(both_stable, PROGRESS_S, interval=0.05, message=lambda: f"{[m.owned() for m in members]}")
        await scenario.progressed("the groups formed", members)
        coordinator = await coordinator_of(cluster, classic_id)
        assert await coordinator_of(cluster, consumer_id) == coordinator
        scenario.note(f"both groups' coordinator is node {coordinator}")

        async def coordinator_moved() -> None:
            now: list[object] = []

            async def moved() -> bool:
                try:
                    now[:] = [await coordinator_of(cluster, classic_id), await coordinator_of(cluster, consumer_id)]
                except KafkaError as exc:  # e.g. COORDINATOR_NOT_AVAILABLE while it moves
                    now[:] = [exc]
                    return False
                return coordinator not in now

            await wait_until(moved, MOVE_S, lambda: f"coordinators now: {now}\n{scenario.describe()}")
            scenario.note(f"the coordinator moved from node {coordinator} to node {now[0]}")
            await scenario.progressed("the coordinator moved", members)

        await scenario.disrupt(coordinator, individually=members, after_kill=coordinator_moved)
        acked = await scenario.finish()
        await wait_for_async(both_stable, PROGRESS_S, interval=0.05, message=lambda: f"{[m.owned() for m in members]}")
        for m in members:
            await m.stop()
        finished = True
    finally:
        if not finished:
            scenario.failed()
            for m in members:
                await m.abandon()
            await in_thread(producer.stop)
    lines = []
    for group in groups:
        duplicates = check_group(group, acked)
        consumed = sum(len(m.seen) for m in group.members)
        failed = sum(len(m.commit_errors) for m in group.members)
        assignments = sum(1 for m in group.members for _, kind, parts in m.events if kind == "assigned" and parts)
        lost = sum(1 for m in group.members for _, kind, parts in m.events if kind == "lost" and parts)
        twice = written_twice(s for m in group.members for s in m.seen)
        lines.append(
            f"{group.name}: consumed {consumed}, {duplicates} duplicates, {failed} failed commits, "
            f"{assignments} assignments, {lost} losses, {twice} values written twice by the producer"
        )
    report(f"groups: {len(acked)} acknowledged; " + "; ".join(lines) + f"\n{scenario.describe()}")


def longest_gap(times: list[float], start: float, end: float) -> float:
    """The longest time without an arrival between ``start`` and ``end`` (``times`` sorted, within them)."""
    edges = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(edges))


STEADY_S = 3.0
"""Consumption measured before a leader change, as the rate to keep during it."""
MOVED, STAYED = [0, 1], [2, 3, 4, 5]


@attrs.frozen
class LeaderMove:
    """A leader change as the consumer saw it: when it began (monotonic) and the first record index produced after."""

    what: str
    began: float
    mark: int
    announced: float
    """When the cluster's metadata named the new leaders."""

    def measure(self, reader: Reader, acked: list[Acked]) -> tuple[str, float, float, float, float]:
        """A line for the report, the moved partitions' common stall (s), the other partitions' records/s before and
        during it, and the longest any of their records acknowledged during it took to be consumed (s): what the
        consumer can be held to, since it cannot read faster than the producer writes."""
        arrivals = {p: [s.at for s in reader.seen if s.partition == p] for p in range(PARTITIONS)}
        # each moved partition's stall: its longest time without records from the change to its first record
        # produced after it (records produced before, retried by the producer, may come just before those)
        stalls: dict[int, tuple[float, float]] = {}
        for p in MOVED:
            until = next(s.at for s in reader.seen if s.partition == p and s.index >= self.mark)
            times = sorted({self.began, *(t for t in arrivals[p] if self.began < t <= until)})
            stalls[p] = max(itertools.pairwise(times), key=lambda pair: pair[1] - pair[0])
        window = (max(a for a, _ in stalls.values()), min(b for _, b in stalls.values()))
        length = max(window[1] - window[0], 0.0)

        def rate(start: float, end: float) -> float:
            return sum(1 for p in STAYED for t in arrivals[p] if start <= t < end) / max(end - start, 1e-9)

        steady = (self.began - STEADY_S, self.began)
        before, during = rate(*steady), rate(*window) if length else 0.0
        gap = max(longest_gap([t for t in arrivals[p] if window[0] < t < window[1]], *window) for p in STAYED)
        gap_before = max(longest_gap([t for t in arrivals[p] if steady[0] < t < steady[1]], *steady) for p in STAYED)
        acks = {p: min(a.at for a in acked if a.partition == p and int(a.value) >= self.mark) for p in MOVED}
        produced = sum(1 for a in acked if a.partition in STAYED and window[0] <= a.at < window[1])
        consumed_at = {s.index: s.at for s in reader.seen}

        def delay(start: float, end: float) -> float:
            """The longest from an acknowledgement to the record's consumption, over records acknowledged between."""
            late = [consumed_at[a.index] - a.at for a in acked if a.partition in STAYED and start <= a.at < end]
            return max(late, default=0.0)

        latency, latency_before = delay(*window), delay(*steady)

        def at(times: dict[int, float]) -> str:
            return ", ".join(f"{times[p] - self.began:.2f}" for p in MOVED)

        line = (
            f"{self.what}: partitions 0-1 stalled {', '.join(f'{b - a:.2f}' for a, b in stalls.values())} s (after "
            f"it: the metadata named their new leaders at {self.announced - self.began:.2f} s, the producer's first "
            f"acknowledgements came at {at(acks)} s, they were consumed again at "
            f"{at({p: b for p, (_, b) in stalls.items()})} s); partitions 2-5 consumed {before:.0f} records/s "
            f"before, {during:.0f} records/s during the common stall of {length:.2f} s (acknowledged "
            f"{produced / max(length, 1e-9):.0f}/s then), longest gap {gap:.2f} s (before: {gap_before:.2f} s), "
            f"consumed at most {latency:.2f} s after their acknowledgement (before: {latency_before:.2f} s)"
        )
        return line, length, before, during, latency


async def test_a_leader_change_does_not_stall_the_partitions_whose_leader_stays(
    cluster: KafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Partitions 0 and 1 live on nodes {1, 2} and {1, 3}, led by node 1; partitions 2-5 on nodes 2 and 3 only, so
    killing node 1 changes the leader of 0 and 1 and nothing else, not even an in-sync set of 2-5 (acks=all would
    otherwise hold their high watermark until node 1 is fenced). The other partitions must keep their rate while
    0 and 1 wait for their new leader: after the kill (connection loss, then the new leader), and after node 1 is
    back and a preferred-leader election moves them back to it (their fetches from the old leader are answered
    FENCED_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER)."""
    caplog.set_level(logging.DEBUG, logger="asyncconsumer.fetch")
    topic = unique_topic_name("cluster-stall")
    placement = [[1, 2], [1, 3], [2, 3], [3, 2], [2, 3], [3, 2]]
    await in_thread(create_placed_topic, cluster, topic, placement, {"min.insync.replicas": "1"})
    producer = AckedProducer(cluster.bootstrap_servers, topic, PARTITIONS, RATE).start()
    reader = AsyncReader("AsyncConsumer", AsyncConsumer(cluster.bootstrap_servers, auto_offset_reset="earliest"))
    scenario = Scenario(cluster, topic, producer, [reader])
    moves: list[LeaderMove] = []

    async def steady() -> None:
        """Until every partition has been consumed for ``STEADY_S`` from now."""
        warm = producer.sent + int(RATE * STEADY_S)
        await wait_for_async(
            lambda: reader.consumed_since(warm, range(PARTITIONS)), PROGRESS_S, message=scenario.describe
        )

    async def move(what: str, change: Callable[[], object], leaders_moved: Callable[[], None]) -> None:
        await steady()
        began = time.monotonic()
        await in_thread(change)
        mark = producer.sent  # records from here on were produced after the change
        scenario.note(what)

        async def announced() -> float:
            await in_thread(leaders_moved)
            scenario.note("the metadata names the new leaders of partitions 0 and 1")
            return time.monotonic()

        announcing = asyncio.create_task(announced())

        def moved_resumed() -> bool:
            reader.check()
            producer.check()
            return reader.consumed_since(mark, MOVED)

        await wait_for_async(moved_resumed, PROGRESS_S, interval=0.05, message=scenario.describe)
        scenario.note("partitions 0 and 1 consumed again")
        moves.append(LeaderMove(what, began, mark, await announcing))

    finished = False
    try:
        await reader.consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        reader.start()
        await scenario.progressed("the start")
        await move(
            "SIGKILLed node 1, leader of partitions 0 and 1",
            lambda: cluster.kill(1),
            lambda: wait_leaders_moved(cluster, topic, MOVED, 1, MOVE_S),
        )
        await in_thread(cluster.restart, 1)
        await in_thread(wait_in_sync, cluster, [topic, OFFSETS_TOPIC], SYNC_S)
        scenario.note("node 1 restarted and back in every in-sync set")
        await move(
            "preferred-leader election of partitions 0 and 1 (back to node 1)",
            lambda: cluster.elect_leaders([(topic, p) for p in MOVED]),
            lambda: wait_preferred_leaders(cluster, topic, MOVE_S),
        )
        acked = await scenario.finish()
        await reader.stop()
        finished = True
    finally:
        if not finished:
            scenario.failed()
            await reader.abandon()
            await in_thread(producer.stop)

    check_exactly_once(reader, acked)
    answers = Counter(
        code
        for r in caplog.records
        if "fetch.partition_retry" in r.getMessage() or "fetch.failed" in r.getMessage()
        for code in ("NOT_LEADER_OR_FOLLOWER", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "lost the connection")
        if code in r.getMessage()
    )
    (kill_line, stalled, before, during, latency), (elect_line, *elected) = (m.measure(reader, acked) for m in moves)
    report(f"{kill_line}\n{elect_line}\nfetch errors seen: {dict(answers)}\n{scenario.describe()}")
    assert stalled >= 1.0, f"the moved partitions stalled only {stalled:.2f} s after the kill: {kill_line}"
    assert during >= 0.5 * before, f"partitions 2-5 slowed down while 0-1 waited for a new leader: {kill_line}"
    assert latency < 1.5, f"partitions 2-5 stalled while 0-1 waited for a new leader: {kill_line}"
    assert elected[3] < 1.5, f"partitions 2-5 stalled while 0-1 moved back to node 1: {elect_line}"


async def _is(sources: Awaitable[list[Any]], dynamic: list[bool]) -> bool:
    return [s.name == "DYNAMIC_BROKER_CONFIG" for s in await sources] == dynamic


async def test_the_admin_client_sends_each_request_where_it_belongs_on_three_nodes(cluster: KafkaCluster) -> None:
    """Issue 49 on the cluster: brokers and controller described; a topic created with 3 replicas, each partition
    in sync on all three; each partition's end asked of its leader; each broker's configs asked of that broker
    (its ``node.id`` says so), one broker's dynamic config set and deleted there alone; a group's coordinator and
    lag."""
    from asyncconsumer.admin import AlterConfigOp, AsyncAdmin, ConfigResource, ConfigSource, NewTopic
    from asyncconsumer.errors import UnknownTopicOrPartitionError
    from asyncconsumer.sync import Consumer
    from tests.support.produce import ProduceHelper, Record

    name = unique_topic_name("admin-cluster")
    nodes = sorted(node.node_id for node in cluster.nodes)
    async with AsyncAdmin(cluster.bootstrap_servers) as admin:
        described = await admin.describe_cluster()
        assert sorted(b.id for b in described.brokers) == nodes and described.controller in nodes
        await admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=3)])

        async def in_sync() -> bool:
            try:  # a broker learns of the new topic from the metadata log a moment after the controller created it
                parts = (await admin.describe_topics([name]))[name].partitions
            except UnknownTopicOrPartitionError:
                return False
            return len(parts) == 3 and all(sorted(p.isr) == nodes and p.leader in nodes for p in parts)

        await wait_for_async(in_sync, 60, message=lambda: f"{name}'s partitions in sync on {nodes}")
        leaders = {p.partition: p.leader for p in (await admin.describe_topics([name]))[name].partitions}
        producer = ProduceHelper(cluster.bootstrap_servers)
        for p in range(3):
            await asyncio.to_thread(producer.batches, name, [[Record(b"r%d" % i)] for i in range(p + 1)], partition=p)
        ends = await admin.list_offsets({TopicPartition(name, p): "latest" for p in range(3)})
        assert ends == {TopicPartition(name, p): p + 1 for p in range(3)}, leaders

        brokers = [ConfigResource("broker", str(n)) for n in nodes]
        configs = await admin.describe_configs(brokers)
        assert [configs[r]["node.id"].value for r in brokers] == [str(n) for n in nodes]
        chosen = brokers[1]
        await admin.incremental_alter_configs({chosen: [AlterConfigOp("max.connections", "5000")]})

        async def sources() -> list[ConfigSource]:  # the controller's record reaches each broker in its own time
            found = await admin.describe_configs(brokers)
            return [found[r]["max.connections"].source for r in brokers]

        dynamic = ConfigSource.DYNAMIC_BROKER_CONFIG
        await wait_for_async(lambda: _is(sources(), [False, True, False]), 30, message="set on that broker alone")
        assert [s is dynamic for s in await sources()] == [False, True, False]
        await admin.incremental_alter_configs({chosen: [AlterConfigOp("max.connections", op="delete")]})
        await wait_for_async(lambda: _is(sources(), [False, False, False]), 30, message="deleted")

        group = new_group_id()
        with Consumer(cluster.bootstrap_servers, group_id=group, enable_auto_commit=False) as consumer:
            await asyncio.to_thread(consumer.commit, {TopicPartition(name, 2): 1})
        group_described = (await admin.describe_consumer_groups([group]))[group]
        assert group_described.coordinator == await coordinator_of(cluster, group)
        lag = await admin.list_consumer_group_lag(group)
        assert [(r.partition.partition, r.committed, r.log_end_offset, r.lag) for r in lag] == [(2, 1, 3, 2)]
        await admin.delete_topics([name])
