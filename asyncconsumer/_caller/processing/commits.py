"""What ``process`` commits and when (a policy, sans-I/O), and where the commit goes (a sink, the driver's I/O).

The core asks its ``CommitPolicy`` when a commit is due and which offsets are worth one; the driver hands them to an
``OffsetSink`` and tells the policy how it went. ``IntervalCommits`` is the policy of ``process``: every
``commit_interval_ms``, the finished prefix of every partition whose prefix or metadata moved since its last
successful commit. The sink of ``process`` is the group's committed offsets (``port.GroupOffsets``). A transactional
sink (offsets written in the handler's own database transaction, issue 47) plugs in beside it: the offsets a unit
makes committable go into that unit's transaction, and an ``IntervalCommits`` over the group can mirror them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Protocol

import attrs

from asyncconsumer._caller.processing.progress import PartitionProgress
from asyncconsumer.records import OffsetAndMetadata, TopicPartition


class OffsetSink(Protocol):
    """Where committed offsets live: read when a partition's first records arrive, written by the driver."""

    async def load(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, OffsetAndMetadata | None]:
        """Each partition's stored offset (None: nothing stored), with the metadata ``store`` wrote."""
        ...

    async def store(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Stores ``offsets`` or raises (``CommitFailedError`` when the member no longer owns them)."""
        ...


@attrs.frozen
class CommitBatch:
    """Offsets to store, and the progress each was read from: a success counts only for a partition still held by
    that same progress (not revoked, lost or assigned again meanwhile)."""

    offsets: dict[TopicPartition, OffsetAndMetadata]
    sources: dict[TopicPartition, PartitionProgress]


class CommitPolicy(Protocol):
    """When to commit, and what is worth committing; it never reads a clock (``now_ms`` is given)."""

    def start(self, now_ms: int) -> None: ...

    def next_due_ms(self) -> int | None:
        """When the next timed commit is due; None: never by time."""
        ...

    def due(self, now_ms: int) -> bool:
        """Whether a timed commit is due; a True moves the next one an interval on."""
        ...

    def pick(
        self, held: Mapping[TopicPartition, PartitionProgress], partitions: Iterable[TopicPartition] | None
    ) -> CommitBatch | None:
        """What to store of ``partitions`` (None: every one held) now; None when nothing moved."""
        ...

    def stored(self, batch: CommitBatch, held: Mapping[TopicPartition, PartitionProgress]) -> None:
        """The sink stored ``batch``."""
        ...

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """The partitions are gone (revoked, lost): what was stored for them means nothing any more."""
        ...


class IntervalCommits:
    """Every ``interval_ms``, and whenever asked (revocation, stop): each held partition's finished prefix and the
    finished offsets past it, unless the last successful commit stored exactly that. A failed commit changes nothing,
    so the next one carries the same offsets again."""

    __slots__ = ("_due_ms", "_interval_ms", "_stored")

    def __init__(self, interval_ms: int) -> None:
        if interval_ms < 1:
            raise ValueError(f"interval_ms must be at least 1, got {interval_ms!r}")
        self._interval_ms = interval_ms
        self._due_ms: int | None = None
        self._stored: dict[TopicPartition, tuple[int, str]] = {}
        """Per partition, the offset and metadata of its last successful commit."""

    def start(self, now_ms: int) -> None:
        self._due_ms = now_ms + self._interval_ms

    def next_due_ms(self) -> int | None:
        return self._due_ms

    def due(self, now_ms: int) -> bool:
        if self._due_ms is None or now_ms < self._due_ms:
            return False
        self._due_ms = now_ms + self._interval_ms
        return True

    def pick(
        self, held: Mapping[TopicPartition, PartitionProgress], partitions: Iterable[TopicPartition] | None
    ) -> CommitBatch | None:
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        sources: dict[TopicPartition, PartitionProgress] = {}
        for tp in held if partitions is None else partitions:
            progress = held.get(tp)
            if progress is None:
                continue
            now = (progress.committable, progress.metadata())
            if self._stored.get(tp) != now:
                offsets[tp] = OffsetAndMetadata(*now)
                sources[tp] = progress
        return CommitBatch(offsets, sources) if offsets else None

    def stored(self, batch: CommitBatch, held: Mapping[TopicPartition, PartitionProgress]) -> None:
        for tp, committed in batch.offsets.items():
            if held.get(tp) is batch.sources[tp]:
                self._stored[tp] = (committed.offset, committed.metadata)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._stored.pop(tp, None)


class NoCommits:
    """Without a consumer group there is nowhere to commit: never due, nothing to pick."""

    __slots__ = ()

    def start(self, now_ms: int) -> None:
        pass

    def next_due_ms(self) -> int | None:
        return None

    def due(self, now_ms: int) -> bool:
        return False

    def pick(
        self, held: Mapping[TopicPartition, PartitionProgress], partitions: Iterable[TopicPartition] | None
    ) -> CommitBatch | None:
        return None

    def stored(self, batch: CommitBatch, held: Mapping[TopicPartition, PartitionProgress]) -> None:
        pass

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        pass
