"""What the network-fault tests share: their consumers' short timeouts, a fault applied through Toxiproxy and healed,
a timeline of what happened, the checks every fault must pass, and Kafka's own record of the commits that landed.

The cluster is ``tests/support/toxi_cluster.py``'s; the producer (``cluster_load.AckedProducer``) and every check reach
the brokers directly, so a fault only ever stands between the consumers under test and the broker it targets.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from asyncconsumer import (
    AsyncConsumer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    KafkaError,
    OffsetAndMetadata,
    TopicPartition,
)
from tests.support.cluster_load import (
    AckedProducer,
    GroupMember,
    Reader,
    coordinator_of,
    offsets_partition,
    partition_states,
)
from tests.support.groups import new_group_id
from tests.support.kafka_broker import TEST_SETTINGS
from tests.support.toxi_cluster import ProxiedCluster
from tests.support.toxiproxy import Proxy, Stream
from tests.support.waiting import wait_for

T = TypeVar("T")

REQUEST_TIMEOUT_MS = 4_000
"""The consumers' request timeout: a black-holed request fails after this. Below the 6 s sessions by more than a
heartbeat interval, so a heartbeat lost in a black hole is retried on a new connection before the session ends
(a lost heartbeat leaves the broker without one for up to an interval plus this)."""
SESSION_TIMEOUT_MS = 6_000
"""Every member's session: the classic members set it, the brokers give it to KIP-848 and share members."""
SETUP_TIMEOUT_MS = 3_000
"""socket_connection_setup_timeout_ms: a connection opened into a black hole (its ApiVersions never answered) is given
up after this, so the stall after a heal is short."""
CONSUMER_SETTINGS: Mapping[str, Any] = {
    "auto_offset_reset": "earliest",
    "request_timeout_ms": REQUEST_TIMEOUT_MS,
    "socket_connection_setup_timeout_ms": SETUP_TIMEOUT_MS,
}
CLASSIC_SETTINGS: Mapping[str, Any] = {"session_timeout_ms": SESSION_TIMEOUT_MS, "heartbeat_interval_ms": 500}
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = int(TEST_SETTINGS["offsets.topic.num.partitions"])
PARTITIONS = 6
PLACEMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 3, 2], [2, 1, 3], [3, 2, 1]]
"""Partition ``i``'s replicas, its leader first: each node leads two partitions (``led_by``)."""
RATE = 150
"""Records/s over the six partitions: every partition moves several times a second, light on two cores."""
RECOVER_S = 45.0
"""Every consumer reads, from every partition, records produced after a heal (a loaded CI included)."""


def led_by(node_id: int) -> list[int]:
    return [p for p, replicas in enumerate(PLACEMENT) if replicas[0] == node_id]


def not_led_by(node_id: int) -> list[int]:
    return [p for p, replicas in enumerate(PLACEMENT) if replicas[0] != node_id]


async def in_thread(call: Callable[..., T], *args: Any) -> T:
    """Blocking calls (the cluster's admin client, Toxiproxy's API) off the loop, so the consumers keep polling."""
    return await asyncio.to_thread(call, *args)


# --- the timeline and the findings ----------------------------------------------------------------------------------
class Timeline:
    """What happened when, for a failure's message and the report (``-s`` shows it)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.lines: list[str] = []

    def at(self, moment: float) -> float:
        return moment - self.started

    def note(self, what: str) -> None:
        self.lines.append(f"{time.monotonic() - self.started:6.1f} s  {what}")

    def describe(self) -> str:
        return "\n".join(self.lines)


class Findings:
    """Every check's failure, kept so one broken property does not hide the others; ``assert_none`` fails with all."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.failures: list[str] = []

    def add(self, what: str) -> None:
        self.failures.append(what)
        self.timeline.note(f"FAILED: {what.splitlines()[0][:160]}")

    def check(self, name: str, call: Callable[[], object]) -> None:
        """Runs ``call``; its AssertionError is a finding."""
        try:
            call()
        except AssertionError as exc:
            self.add(f"{name}: {exc}")

    def holds(self, name: str, condition: bool, message: str = "") -> None:
        if not condition:
            self.add(f"{name}: {message}" if message else name)

    async def awaits(self, name: str, awaitable: Awaitable[object]) -> None:
        """Awaits ``awaitable`` (a wait with a deadline); its AssertionError is a finding."""
        try:
            await awaitable
        except AssertionError as exc:
            self.add(f"{name}: {exc}")

    def assert_none(self) -> None:
        assert not self.failures, (
            f"{len(self.failures)} check(s) failed:\n- " + "\n- ".join(self.failures) + f"\n{self.timeline.describe()}"
        )


def report(what: str) -> None:
    """Figures for the report (shown with ``-s``)."""
    sys.stdout.write(f"\n[faults] {what}\n")


# --- faults ---------------------------------------------------------------------------------------------------------
@attrs.define(frozen=True, slots=True)
class Toxin:
    """One toxic to add to each target's proxy: its type, its stream, its attributes."""

    kind: str
    stream: Stream
    attributes: Mapping[str, int] = attrs.field(factory=dict)

    def describe(self) -> str:
        shown = ",".join(f"{k}={v}" for k, v in self.attributes.items())
        return f"{self.kind}[{self.stream}]({shown})"


def both(kind: str, **attributes: int) -> list[Toxin]:
    """The toxic on both streams."""
    return [Toxin(kind, "upstream", attributes), Toxin(kind, "downstream", attributes)]


@attrs.define(frozen=True, slots=True)
class Fault:
    """What a fault does to its targets: toxics, or the proxies disabled (``refused``)."""

    name: str
    toxins: Sequence[Toxin] = ()
    refused: bool = False
    silent_heal: bool = False
    """Healed as a real network heals: the toxics pass everything from then on and the connections stay open
    (Toxiproxy closes a ``timeout`` toxic's connections when it is removed, which tells the client at once). What was
    dropped meanwhile stays dropped: a request lost in a black hole is only ever answered by its timeout. The toxics
    are removed by the next ``ProxiedCluster.heal``."""

    def describe(self) -> str:
        what = "refused (proxy disabled)" if self.refused else " + ".join(t.describe() for t in self.toxins)
        return f"{self.name}: {what}" + (", healed silently" if self.silent_heal else "")


@contextlib.contextmanager
def applied(cluster: ProxiedCluster, fault: Fault, targets: Iterable[int]) -> Iterator[None]:
    """``fault`` on the proxies of ``targets`` for the block; healed at its end whatever happens."""
    proxies = [cluster.proxy(node) for node in targets]
    added: list[tuple[Proxy, str]] = []
    try:
        for proxy in proxies:
            if fault.refused:
                proxy.disable()
            for toxin in fault.toxins:
                added.append((proxy, proxy.add(toxin.kind, toxin.stream, toxin.attributes).name))
        yield
    finally:
        if fault.silent_heal and not fault.refused:
            for proxy, name in added:
                proxy.update_toxic(name, toxicity=0.0)
        else:
            cluster.heal()


@contextlib.asynccontextmanager
async def fault_on(cluster: ProxiedCluster, fault: Fault, targets: Iterable[int], timeline: Timeline) -> Any:
    """``applied`` from a coroutine: Toxiproxy's API is called off the loop. Yields when the fault started."""
    chosen = sorted(targets)
    manager = applied(cluster, fault, chosen)
    await in_thread(manager.__enter__)
    began = time.monotonic()
    timeline.note(f"{fault.describe()} on node(s) {chosen}")
    try:
        yield began
    finally:
        await in_thread(manager.__exit__, None, None, None)
        timeline.note(f"healed after {time.monotonic() - began:.1f} s")


async def lasting(seconds: float, began: float) -> None:
    """Until ``seconds`` after ``began``: how long a fault is kept, a schedule, not a wait for a condition."""
    await asyncio.sleep(max(0.0, began + seconds - time.monotonic()))


# --- progress --------------------------------------------------------------------------------------------------------
class Leg:
    """One consumer under test (or a group of them) as the schedule sees it: what it read from each partition."""

    def __init__(self, name: str, readers: Sequence[Reader]) -> None:
        self.name = name
        self.readers = list(readers)

    def check(self) -> None:
        for reader in self.readers:
            reader.check()

    def newest(self, partition: int) -> int:
        return max((r.newest.get(partition, -1) for r in self.readers), default=-1)

    def consumed_since(self, index: int, partitions: Iterable[int]) -> bool:
        return all(self.newest(p) >= index for p in partitions)

    def first_since(self, index: int, partition: int) -> float | None:
        """When a record of ``partition`` produced at or after ``index`` first arrived (None: none yet)."""
        times = [s.at for r in self.readers for s in r.seen if s.partition == partition and s.index >= index]
        return min(times, default=None)


async def wait_progress(
    legs: Sequence[Leg], producer: AckedProducer, mark: int, partitions: Iterable[int], timeout: float, what: str
) -> None:
    """Until every leg read, from each of ``partitions``, a record produced at or after ``mark``; AssertionError
    naming the partitions that did not within ``timeout``."""
    wanted = list(partitions)
    deadline = time.monotonic() + timeout
    while True:
        producer.check()
        for leg in legs:
            leg.check()
        if all(leg.consumed_since(mark, wanted) for leg in legs):
            return
        if time.monotonic() >= deadline:
            behind = {leg.name: [p for p in wanted if leg.newest(p) < mark] for leg in legs}
            raise AssertionError(
                f"{what}: within {timeout:.1f} s not every consumer read a record produced at or after #{mark} "
                f"from partitions {wanted}; behind: { {k: v for k, v in behind.items() if v} }"
            )
        await asyncio.sleep(0.05)


def stall_after(leg: Leg, mark: int, healed: float) -> float:
    """How long after the heal the leg's last partition first brought a record produced after it."""
    firsts = [leg.first_since(mark, p) for p in range(PARTITIONS)]
    return max((f - healed for f in firsts if f is not None), default=float("nan"))


# --- groups ---------------------------------------------------------------------------------------------------------
async def group_led_by(cluster: ProxiedCluster, node_id: int, avoid: Iterable[str] = ()) -> str:
    """A fresh group id whose coordinator is ``node_id`` (its ``__consumer_offsets`` partition's leader)."""
    await coordinator_of(cluster.kafka, new_group_id())  # the offsets topic is made by the first lookup

    def leaders() -> dict[int, int]:
        states = partition_states(cluster.kafka, OFFSETS_TOPIC)
        return {p: s.leader for p, s in states.items() if s.leader >= 0}

    led = await in_thread(wait_for, lambda: len(found := leaders()) == OFFSETS_PARTITIONS and found, 60.0)
    taken = set(avoid)
    for _ in range(10_000):
        group = new_group_id()
        if group not in taken and led.get(offsets_partition(group, OFFSETS_PARTITIONS)) == node_id:
            return group
    raise AssertionError(f"no group id found whose coordinator is node {node_id}: {led}")


def group_member(cluster: ProxiedCluster, name: str, group_id: str, protocol: str) -> GroupMember:
    settings: dict[str, Any] = {
        **CONSUMER_SETTINGS,
        "group_id": group_id,
        "enable_auto_commit": False,
        "group_protocol": protocol,
    }
    if protocol == "classic":
        settings |= CLASSIC_SETTINGS
    return GroupMember(name, AsyncConsumer(cluster.bootstrap_servers, **settings))


def releases(member: GroupMember, since: float, until: float) -> list[tuple[float, str, frozenset[int]]]:
    """The member's rebalance callbacks (revoked, lost, assigned) between ``since`` and ``until``."""
    return [e for e in member.events if since <= e[0] <= until]


def check_order(member: Reader, events: Sequence[tuple[float, str, frozenset[int]]] = ()) -> None:
    """Within each stretch of owning a partition, the member read its offsets one after another: each the one after
    the last, never back, never past one. A stretch ends at a revocation or a loss of the partition."""
    ends = sorted((at, p) for at, kind, parts in events if kind in ("revoked", "lost") for p in parts)
    last: dict[int, int] = {}
    wrong: list[str] = []
    i = 0
    for seen in member.seen:
        while i < len(ends) and ends[i][0] <= seen.at:
            last.pop(ends[i][1], None)
            i += 1
        before = last.get(seen.partition)
        if before is not None and seen.offset != before + 1:
            wrong.append(f"partition {seen.partition}: offset {seen.offset} after {before}")
        last[seen.partition] = seen.offset
    assert not wrong, f"{member.name} read out of order: {wrong[:5]}"


class ProcessReader(Reader):
    """An ``AsyncConsumer`` running ``process()`` in a group: each record its handler got (``seen``), its rebalance
    callbacks (``events``) and, through ``RecordingCommits``, what each of its commits reported."""

    def __init__(self, name: str, consumer: AsyncConsumer, topic: str) -> None:
        super().__init__(name)
        self.consumer = consumer
        self.topic = topic
        self.events: list[tuple[float, str, frozenset[int]]] = []
        self.commits = RecordingCommits(consumer, topic)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> ProcessReader:
        reader = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
                reader.events.append((time.monotonic(), "revoked", frozenset(tp.partition for tp in partitions)))

            def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
                reader.events.append((time.monotonic(), "lost", frozenset(tp.partition for tp in partitions)))

            def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
                reader.events.append((time.monotonic(), "assigned", frozenset(tp.partition for tp in partitions)))

        async def handle(record: ConsumerRecord) -> None:
            self.note([record])

        await self.consumer.subscribe([self.topic], listener=Listener())
        self._task = asyncio.create_task(
            self.consumer.process(handle, ordering="partition", commit_interval_ms=1_000), name=self.name
        )
        return self

    def note(self, records: Iterable[ConsumerRecord]) -> None:
        super().note(records)
        self.polls = len(self.seen)  # a record handled counts as a poll, for the settling polls at the end

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def check(self) -> None:
        """AssertionError (a finding, beside the others) if ``process()`` ended: what it raised, or that it ended."""
        assert self._task is not None
        if self._task.done():
            error = None if self._task.cancelled() else self._task.exception()
            if error is not None:
                raise AssertionError(f"{self.name}: process() raised {type(error).__name__}: {error}") from error
            raise AssertionError(f"{self.name}: process() ended without being stopped")

    async def stop(self) -> None:
        """Stops processing and closes the consumer; an error ``process()`` raised before was a finding already."""
        self.consumer.stop_processing()
        try:
            if self._task is not None:
                await asyncio.wait([self._task], timeout=30)
        finally:
            await self.consumer.close()

    async def abandon(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.close(timeout_ms=5_000)


class RecordingCommits:
    """Wraps a consumer's ``commit`` (the one ``process()`` calls) to keep each commit that reported success, with
    its offsets, and each failure: what ``commit()`` told its caller, to be held against what Kafka wrote."""

    def __init__(self, consumer: AsyncConsumer, topic: str) -> None:
        self.topic = topic
        self.succeeded: list[tuple[float, dict[int, int]]] = []
        self.failed: list[tuple[float, str]] = []
        original = consumer.commit

        async def commit(
            offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout_ms: int | None = None
        ) -> None:
            try:
                await original(offsets, timeout_ms)
            except KafkaError as exc:
                self.failed.append((time.monotonic(), f"{type(exc).__name__}: {exc}"))
                raise
            if offsets is not None:
                plain = {
                    tp.partition: o.offset if isinstance(o, OffsetAndMetadata) else int(o)
                    for tp, o in offsets.items()
                    if tp.topic == topic
                }
                self.succeeded.append((time.monotonic(), plain))

        consumer.commit = commit  # type: ignore[method-assign]


# --- what Kafka says was committed ------------------------------------------------------------------------------
_KEY_HEAD = struct.Struct(">h")
_OFFSET = struct.Struct(">hq")


def decode_offset_commit(key: bytes | None, value: bytes | None) -> tuple[str, str, int, int] | None:
    """(group, topic, partition, offset) of an offset commit record of ``__consumer_offsets`` (key versions 0 and 1;
    the value's version, then its int64 offset); None for the topic's other records and for tombstones."""
    if key is None or value is None or len(key) < 2:
        return None
    (version,) = _KEY_HEAD.unpack_from(key)
    if version not in (0, 1):
        return None
    pos = 2
    names: list[str] = []
    for _ in range(2):
        (length,) = _KEY_HEAD.unpack_from(key, pos)
        names.append(key[pos + 2 : pos + 2 + length].decode())
        pos += 2 + length
    (partition,) = struct.unpack_from(">i", key, pos)
    _, offset = _OFFSET.unpack_from(value)
    return names[0], names[1], partition, offset


def landed_commits(
    cluster: ProxiedCluster, groups: Iterable[str], timeout_s: float = 60.0
) -> dict[tuple[str, int], list[int]]:
    """Every offset committed for each (group, partition) of ``groups``, in the order Kafka wrote them, as
    ``__consumer_offsets`` holds them (one of its partitions holds all of a group's commits): read directly, past
    the proxies, from the start of each of its partitions to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as ConfluentPartition

    wanted = set(groups)
    reader = Consumer(
        {
            "bootstrap.servers": cluster.direct_servers,
            "group.id": f"offsets-reader-{new_group_id()}",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    found: dict[tuple[str, int], list[int]] = defaultdict(list)
    try:
        ends = {
            p: reader.get_watermark_offsets(ConfluentPartition(OFFSETS_TOPIC, p), timeout=10)[1]
            for p in range(OFFSETS_PARTITIONS)
        }
        reader.assign([ConfluentPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p, end in ends.items() if end > 0])
        remaining = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + timeout_s
        while remaining:
            assert time.monotonic() < deadline, f"__consumer_offsets partitions {sorted(remaining)} not read to the end"
            message = reader.poll(0.5)
            if message is None or message.error() is not None:
                continue
            partition, offset = int(message.partition() or 0), int(message.offset() or 0)
            if offset + 1 >= ends[partition]:
                remaining.discard(partition)
            decoded = decode_offset_commit(message.key(), message.value())
            if decoded is not None and decoded[0] in wanted:
                group, _, committed_partition, committed = decoded
                found[group, committed_partition].append(committed)
    finally:
        reader.close()
    return dict(found)


def check_never_back(group: str, landed: Mapping[tuple[str, int], Sequence[int]]) -> None:
    """A group's committed offset never moves back: a commit that lands from a member the group has fenced (its
    partitions read on by their new owner meanwhile) would move it back, and its new owner would read again what
    it had committed."""
    back = [
        (p, offsets[i - 1], offsets[i])
        for (g, p), offsets in sorted(landed.items())
        if g == group
        for i in range(1, len(offsets))
        if offsets[i] < offsets[i - 1]
    ]
    assert not back, f"group {group}: committed offsets moved back (partition, from, to): {back[:8]}"


FENCING_ERRORS = ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_MEMBER_EPOCH", "FENCED_INSTANCE_ID")
"""The answers by which a group fences a member: a commit rejected with one of them means its partitions are lost."""


def check_fenced_stops(member: GroupMember, origin: float = 0.0) -> None:
    """After a commit the group rejected as from a fenced member, the member's next ``poll`` runs the lost-partitions
    callback before it hands out another record (records handed out meanwhile are read twice for nothing)."""
    releases_at = sorted(at for at, kind, parts in member.events if kind in ("lost", "revoked") and parts)
    wrong: list[str] = []
    for failed_at, error in member.commit_errors:
        if not any(code in error for code in FENCING_ERRORS):
            continue
        until = next((at for at in releases_at if at > failed_at), float("inf"))
        after = [s for s in member.seen if failed_at < s.at < until]
        if after:
            wrong.append(f"{len(after)} record(s) handed out after, at {failed_at - origin:.1f} s, {error[:110]!r}")
    assert not wrong, f"{member.name}: {wrong[:3]}"


def check_commits_landed(
    name: str,
    group: str,
    succeeded: Iterable[tuple[float, Mapping[int, int]]],
    landed: Mapping[tuple[str, int], Sequence[int]],
    origin: float = 0.0,
) -> None:
    """Every commit ``commit()`` reported successful is in ``__consumer_offsets``: a success for a commit that did
    not land would be a lie. ``origin``: the time the messages count from (a timeline's start)."""
    missing = [
        (round(at - origin, 1), p, offset)
        for at, offsets in succeeded
        for p, offset in offsets.items()
        if offset not in landed.get((group, p), ())
    ]
    assert not missing, (
        f"{name}: commit() reported success for {len(missing)} offset(s) Kafka never wrote "
        f"(time, partition, offset): {missing[:8]}"
    )


def check_redelivery_covered(
    name: str, reads: Iterable[tuple[float, int, int]], commits: Iterable[tuple[float, Mapping[int, int]]]
) -> int:
    """A record read again (its partition and offset) only if no commit that reported success before covered it
    (a committed offset above it). Returns the records read twice."""
    committed: dict[int, int] = {}
    ordered = sorted((at, p, o) for at, offsets in commits for p, o in offsets.items())
    seen: set[tuple[int, int]] = set()
    twice = 0
    covered: list[str] = []
    j = 0
    for at, p, offset in sorted(reads):
        while j < len(ordered) and ordered[j][0] < at:
            _, cp, co = ordered[j]
            committed[cp] = max(committed.get(cp, 0), co)
            j += 1
        if (p, offset) in seen:
            twice += 1
            if offset < committed.get(p, 0):
                covered.append(f"{p}/{offset} again after {committed[p]} was committed")
        seen.add((p, offset))
    assert not covered, f"{name}: records read again though a successful commit covered them: {covered[:5]}"
    return twice


def check_no_success_while_expelled(
    name: str, succeeded: Iterable[tuple[float, Mapping[int, int]]], healed: float, back: float, origin: float = 0.0
) -> None:
    """Between the heal of a fault that outlasted the session (the group expelled the member meanwhile) and the
    member's next assignment, no commit of the member succeeds: it was not in the group. One reported successful
    then either committed nothing or was accepted from a member the group had fenced."""
    wrong = [(round(at - origin, 2), dict(offsets)) for at, offsets in succeeded if healed < at < back]
    assert not wrong, (
        f"{name}: commit() reported success while the member was out of the group (between {healed - origin:.1f} s "
        f"and {back - origin:.1f} s): {wrong[:3]}"
    )


def unreachable_node(consumer: Any, node_id: int) -> Any:
    """The consumer's ``metrics().unreachable_nodes`` entry of ``node_id`` (None while it is reachable)."""
    return consumer.metrics().unreachable_nodes.get(node_id)
