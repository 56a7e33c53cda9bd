"""What a share consumer owes the broker: acknowledgements by partition, turned into the wire's batches.

Sans-I/O bookkeeping for the share consume manager. An acknowledgement is (offset, type); the wire groups runs of
consecutive offsets into batches, with one type for the run when all agree and one per offset otherwise, as Kafka's
clients send them. ``GAP`` (0) marks offsets that were acquired but held no record (compacted away, or a
transaction's marker): they must be acknowledged too, or the broker would deliver them again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import attrs

from asyncconsumer.records import TopicPartition

GAP = 0
"""The wire's acknowledge type for an acquired offset that held no record."""
RENEW = 4
"""The wire's acknowledge type that extends a record's lock (it must still be acknowledged with another)."""


@attrs.define(frozen=True, slots=True)
class AckRun:
    """Consecutive offsets ``first``..``last`` (inclusive) and their types: one for all, or one per offset."""

    first: int
    last: int
    types: tuple[int, ...]


class Acknowledgements:
    """One partition's acknowledgements waiting to be sent: offset -> type. A later type for an offset replaces
    an earlier one only while neither has been sent (what the caller may still change)."""

    __slots__ = ("_types",)

    def __init__(self, types: Mapping[int, int] | None = None) -> None:
        self._types: dict[int, int] = dict(types) if types else {}

    def add(self, offset: int, ack_type: int) -> None:
        self._types[offset] = ack_type

    def merge(self, other: Acknowledgements) -> None:
        self._types.update(other._types)

    def split(self, offsets: Iterable[int]) -> Acknowledgements:
        """Removes the acknowledgements of ``offsets`` (those it has) and returns them."""
        taken = Acknowledgements()
        for offset in offsets:
            ack_type = self._types.pop(offset, None)
            if ack_type is not None:
                taken._types[offset] = ack_type
        return taken

    def types(self) -> Mapping[int, int]:
        """Offset -> type (read only)."""
        return self._types

    def settled(self) -> Iterable[int]:
        """The offsets whose records this settles: all but those renewed (a renewed record still waits for its
        acknowledgement)."""
        if not self.has_renew():
            return self._types.keys()
        return [offset for offset, ack_type in self._types.items() if ack_type != RENEW]

    def offsets(self) -> frozenset[int]:
        return frozenset(self._types)

    def has_renew(self) -> bool:
        return RENEW in self._types.values()

    def __len__(self) -> int:
        return len(self._types)

    def __bool__(self) -> bool:
        return bool(self._types)

    def runs(self) -> tuple[AckRun, ...]:
        """The wire's batches, in offset order."""
        runs: list[AckRun] = []
        offsets = sorted(self._types)
        if offsets and offsets[-1] - offsets[0] + 1 == len(offsets):
            kinds = set(self._types.values())
            if len(kinds) == 1:  # the usual case: one poll's records, all of one type
                return (AckRun(offsets[0], offsets[-1], (kinds.pop(),)),)
        start = 0
        for i in range(1, len(offsets) + 1):
            if i == len(offsets) or offsets[i] != offsets[i - 1] + 1:
                types = [self._types[o] for o in offsets[start:i]]
                same = all(t == types[0] for t in types)
                runs.append(AckRun(offsets[start], offsets[i - 1], (types[0],) if same else tuple(types)))
                start = i
        return tuple(runs)


class PendingAcknowledgements:
    """Acknowledgements by partition, waiting for a request to carry them."""

    __slots__ = ("_by_partition",)

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, Acknowledgements] = {}

    def add_all(self, acks: Mapping[TopicPartition, Mapping[int, int]]) -> None:
        for tp, types in acks.items():
            if types:
                waiting = self._by_partition.get(tp)
                if waiting is None:
                    self._by_partition[tp] = Acknowledgements(types)
                else:
                    waiting.merge(Acknowledgements(types))

    def merge(self, tp: TopicPartition, acks: Acknowledgements) -> None:
        self._by_partition.setdefault(tp, Acknowledgements()).merge(acks)

    def take(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Acknowledgements]:
        """Removes and returns the acknowledgements of ``partitions`` (those that have some)."""
        taken: dict[TopicPartition, Acknowledgements] = {}
        for tp in partitions:
            acks = self._by_partition.pop(tp, None)
            if acks:
                taken[tp] = acks
        return taken

    def partitions(self) -> list[TopicPartition]:
        return list(self._by_partition)

    def peek(self, tp: TopicPartition) -> Acknowledgements:
        """``tp``'s acknowledgements, left waiting (``tp`` must have some)."""
        return self._by_partition[tp]

    def __bool__(self) -> bool:
        return bool(self._by_partition)

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._by_partition)
