"""Consumer groups in integration tests: the members' settings, AsyncConsumer members, listeners that record their
callbacks, a poller task per member, and what a group consumed compared with what was produced.

Tansu holds a new classic group's first JoinGroup (and every rejoin of a rebalance) for about half the member's
session timeout, where Kafka waits group.initial.rebalance.delay.ms: with ``session_timeout_ms=6000`` a join takes
about 3 s, so every member uses that and tests wait on conditions with deadlines well above it (``JOIN_TIMEOUT_S``).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from asyncconsumer import AsyncConsumer, ConsumerRebalanceListener, ConsumerRecord, OffsetAndMetadata, TopicPartition
from tests.support import consume
from tests.support.produce import ProducedRecord

SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_INTERVAL_MS = 500
GROUP_SETTINGS: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "session_timeout_ms": SESSION_TIMEOUT_MS,
    "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
    "enable_auto_commit": False,
    "partition_assignment_strategy": ("range",),
}
JOIN_TIMEOUT_S = 20.0
"""A (re)join takes ~3 s on Tansu with a 6 s session; a rebalance with two members up to ~5 s."""
SESSION_S = SESSION_TIMEOUT_MS / 1000


def new_group_id() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def group_consumer(bootstrap: str, group_id: str, **overrides: Any) -> AsyncConsumer:
    return AsyncConsumer(bootstrap, group_id=group_id, **{**GROUP_SETTINGS, **overrides})


def all_partitions(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


def produced_offsets(produced: dict[int, list[ProducedRecord]]) -> dict[int, list[int]]:
    return {p: [r.offset for r in recs] for p, recs in produced.items() if recs}


def owners_disjoint(*consumers: AsyncConsumer) -> bool:
    """No partition is assigned to two of the consumers at this moment."""
    seen: set[TopicPartition] = set()
    for c in consumers:
        if seen & c.assignment():
            return False
        seen |= c.assignment()
    return True


def describe(tps: Iterable[TopicPartition]) -> list[int]:
    return sorted(tp.partition for tp in tps)


class _Recorder:
    """Keeps every callback as ``(kind, partitions)`` and the threads they ran on (list appends are thread-safe)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []
        self.threads: set[str] = set()

    def _note(self, kind: str, partitions: Iterable[TopicPartition]) -> None:
        self.threads.add(threading.current_thread().name)
        self.events.append((kind, frozenset(partitions)))

    def of(self, kind: str, since: int = 0) -> list[frozenset[TopicPartition]]:
        return [parts for k, parts in self.events[since:] if k == kind]

    def held(self) -> frozenset[TopicPartition]:
        """The partitions the callbacks so far leave owned (assigned, minus revoked or lost)."""
        owned: set[TopicPartition] = set()
        for kind, parts in self.events:
            if kind == "assigned":
                owned |= parts
            else:
                owned -= parts
        return frozenset(owned)

    def nonempty(self, since: int = 0) -> list[tuple[str, list[int]]]:
        """The callbacks since ``since`` that carried partitions (an empty revocation at the first join is
        allowed: Kafka's classic consumer makes one), readable in an assertion message."""
        return [(k, describe(parts)) for k, parts in self.events[since:] if parts]


class RecordingListener(_Recorder, ConsumerRebalanceListener):
    """A listener with plain callbacks."""

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self._note("revoked", partitions)

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._note("assigned", partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._note("lost", partitions)


class AsyncRecordingListener(_Recorder, ConsumerRebalanceListener):
    """A listener with coroutine callbacks (the consumer awaits them inside ``poll``)."""

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self._note("revoked", partitions)

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self._note("assigned", partitions)

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self._note("lost", partitions)


class Revocation:
    """What a ``CommittingHook`` saw when a revocation reached it: the partitions, who held what at that moment, the
    group's committed offsets of those partitions then, and whether its own commit from inside the callback
    succeeded."""

    def __init__(self, partitions: frozenset[TopicPartition]) -> None:
        self.partitions = partitions
        self.held_by_member: frozenset[TopicPartition] = frozenset()
        self.held_by_others: frozenset[TopicPartition] = frozenset()
        self.committed_before: dict[TopicPartition, OffsetAndMetadata | None] = {}
        self.commit_error: BaseException | None = None


class CommittingHook(ConsumerRebalanceListener):
    """A rebalance hook (``ConsumerCore.set_rebalance_hook``, the caller's engine's view of rebalances) for one
    member: records each callback in ``calls`` (shared with a listener, so their order shows), and on a revocation
    looks up what is committed and commits ``commit_at`` (metadata ``"hook"``) for each revoked partition, from
    inside the callback."""

    def __init__(
        self, member: AsyncConsumer, others: list[AsyncConsumer], commit_at: int, calls: list[tuple[str, str]]
    ) -> None:
        self.member = member
        self.others = others
        self.commit_at = commit_at
        self.calls = calls
        self.revocations: list[Revocation] = []
        self.assigned: list[frozenset[TopicPartition]] = []

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("hook", "revoked"))
        if not partitions:
            return
        seen = Revocation(frozenset(partitions))
        self.revocations.append(seen)
        seen.held_by_member = frozenset(self.member.assignment())
        seen.held_by_others = frozenset(tp for other in self.others for tp in other.assignment())
        try:
            seen.committed_before = await self.member.committed(partitions)
            await self.member.commit({tp: OffsetAndMetadata(self.commit_at, "hook") for tp in partitions})
        except BaseException as exc:
            seen.commit_error = exc

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("hook", "assigned"))
        self.assigned.append(frozenset(partitions))

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("hook", "lost"))


class OrderListener(ConsumerRebalanceListener):
    """A user's listener that only records its calls, in the list a ``CommittingHook`` shares."""

    def __init__(self, calls: list[tuple[str, str]]) -> None:
        self.calls = calls

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("listener", "revoked"))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("listener", "assigned"))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("listener", "lost"))


async def consume_until(
    consumer: AsyncConsumer, count: int, timeout_s: float = JOIN_TIMEOUT_S, max_records: int | None = None
) -> list[ConsumerRecord]:
    """``tests.support.consume.consume_until`` for a group member: the join timeout, polls of at most 0.5 s."""
    return await consume.consume_until(consumer, count, timeout_s, max_records, poll_s=0.5)


class Poller:
    """Polls one AsyncConsumer in a task of the test's loop, collecting records, until ``stop()``."""

    def __init__(self, consumer: AsyncConsumer) -> None:
        self.consumer = consumer
        self.records: list[ConsumerRecord] = []
        self._stopping = False
        self._task: asyncio.Task[None] = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while not self._stopping:
            self.records.extend((await self.consumer.poll(timeout_ms=100)).records())

    def check(self) -> None:
        """Raise what the polling task raised, if it ended."""
        if self._task.done():
            self._task.result()
            raise AssertionError("the polling task ended without being stopped")

    async def stop(self) -> None:
        """Let the current poll finish (its records are kept), then end the task."""
        self._stopping = True
        await asyncio.wait_for(self._task, 10)

    async def abandon(self) -> None:
        """On the way out of a failed test: cancel the task, whatever it was doing."""
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


def offsets_of(*pollers: Poller) -> dict[int, list[int]]:
    """The offsets the pollers returned, per partition, in the order returned (duplicates kept)."""
    out: dict[int, list[int]] = defaultdict(list)
    for poller in pollers:
        for r in poller.records:
            out[r.partition].append(r.offset)
    return dict(out)


async def committed_offsets(consumer: AsyncConsumer, partitions: Iterable[TopicPartition]) -> dict[int, int | None]:
    """The group's committed offset of each partition, by partition number (None where nothing is committed)."""
    committed = await consumer.committed(sorted(partitions))
    return {tp.partition: (c.offset if c else None) for tp, c in committed.items()}


def consumed(*pollers: Poller) -> set[tuple[int, int]]:
    """(partition, offset) of every record the pollers returned, duplicates folded."""
    return {(r.partition, r.offset) for poller in pollers for r in poller.records}


def stable_pair(c1: AsyncConsumer, c2: AsyncConsumer, partitions: set[TopicPartition], *pollers: Poller) -> bool:
    """Both in the same generation, each owning something, the two owning every partition exactly once."""
    for poller in pollers:
        poller.check()
    a1, a2 = c1.assignment(), c2.assignment()
    return (
        bool(a1)
        and bool(a2)
        and not (a1 & a2)
        and a1 | a2 == partitions
        and c1.group_metadata().generation_id == c2.group_metadata().generation_id
    )


def merge(*waves: dict[int, list[ProducedRecord]]) -> dict[int, list[int]]:
    """Offsets per partition over several ``produce.values`` calls, in offset order."""
    out: dict[int, list[int]] = defaultdict(list)
    for wave in waves:
        for partition, offsets in produced_offsets(wave).items():
            out[partition].extend(offsets)
    return {p: sorted(offsets) for p, offsets in out.items()}


def pairs(offsets: dict[int, list[int]]) -> set[tuple[int, int]]:
    return {(p, o) for p, os in offsets.items() for o in os}


def union_by_partition(seen: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for partition, offset in sorted(set(seen)):
        out[partition].append(offset)
    return dict(out)
