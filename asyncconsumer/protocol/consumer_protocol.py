"""The "consumer" embedded protocol: what JoinGroup metadata and SyncGroup assignments carry as opaque bytes.

Both structures (ConsumerProtocolSubscription.json and ConsumerProtocolAssignment.json, versions 0-3, never
flexible) are written as an int16 version followed by the fields of that version, in classic encoding.
Subscription: v1 OwnedPartitions, v2 GenerationId, v3 RackId. Assignment: v1-3 change no field (they exist so
that the assignment version can follow the subscription version).

Decoding follows Kafka's ``ConsumerProtocol``: a version newer than ours is read as our newest (newer versions
only append fields), and bytes after the known fields are ignored. A negative version is corrupt. An empty
assignment (what a broker hands a member the leader left out) reads as an assignment of nothing.
"""

from __future__ import annotations

from typing import Self

import attrs

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = ["ASSIGNMENT_VERSION", "SUBSCRIPTION_VERSION", "Assignment", "Subscription", "TopicPartitions"]

SUBSCRIPTION_VERSION = 3  # the newest we know
ASSIGNMENT_VERSION = 3

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""(topic, partition indexes) pairs, in wire order."""


def _check_version(version: int, newest: int, what: str) -> None:
    if not 0 <= version <= newest:
        raise ValueError(f"{what} version {version} is outside 0..{newest}")


def _write_topic_partitions(w: Writer, pairs: TopicPartitions) -> None:
    w.array_len(len(pairs), flexible=False)
    for topic, partitions in pairs:
        w.str_(topic, flexible=False)
        w.int32s(partitions, flexible=False)


def _read_topic_partition(r: Reader) -> tuple[str, tuple[int, ...]]:
    topic = r.string()
    return topic, r.int32s(flexible=False)


def _read_version(r: Reader, newest: int, what: str) -> int:
    version = r.int16()
    if version < 0:
        raise CorruptResponseError(f"{what} with negative version {version}")
    return min(version, newest)


def _user_data(r: Reader) -> bytes | None:
    value = r.nullable_bytes()
    return None if value is None else bytes(value)


@attrs.define(frozen=True, slots=True)
class Subscription:
    """A member's subscription: its topics, assignor user data and (v1+) the partitions it owns now."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None

    def encode(self, version: int = SUBSCRIPTION_VERSION) -> bytes:
        """The version prefix and this version's fields; fields newer than ``version`` are dropped."""
        _check_version(version, SUBSCRIPTION_VERSION, "subscription")
        w = Writer()
        w.int16(version)
        w.strs(self.topics, flexible=False)
        w.nbytes(self.user_data, flexible=False)
        if version >= 1:
            _write_topic_partitions(w, self.owned_partitions)
        if version >= 2:
            w.int32(self.generation_id)
        if version >= 3:
            w.nstr(self.rack_id, flexible=False)
        return w.getvalue()

    @classmethod
    def decode(cls, data: bytes | memoryview) -> Self:
        """Raises ``CorruptResponseError`` for bytes that are not a subscription."""
        r = Reader(data)
        try:
            version = _read_version(r, SUBSCRIPTION_VERSION, "subscription")
            topics = r.strs(flexible=False)
            user_data = _user_data(r)
            owned = tuple(r.array(False, _read_topic_partition)) if version >= 1 else ()
            generation_id = r.int32() if version >= 2 else -1
            rack_id = r.nullable_string() if version >= 3 else None
        except UnicodeDecodeError as exc:
            raise CorruptResponseError(f"undecodable subscription: {exc}") from exc
        return cls(topics, user_data, owned, generation_id, rack_id)


@attrs.define(frozen=True, slots=True)
class Assignment:
    """The partitions the leader assigned to one member, with the assignor's user data."""

    partitions: TopicPartitions
    user_data: bytes | None = None

    def encode(self, version: int = ASSIGNMENT_VERSION) -> bytes:
        _check_version(version, ASSIGNMENT_VERSION, "assignment")
        w = Writer()
        w.int16(version)
        _write_topic_partitions(w, self.partitions)
        w.nbytes(self.user_data, flexible=False)
        return w.getvalue()

    @classmethod
    def decode(cls, data: bytes | memoryview) -> Self:
        """Raises ``CorruptResponseError`` for bytes that are not an assignment; empty bytes assign nothing."""
        if len(data) == 0:
            return cls(())
        r = Reader(data)
        try:
            _read_version(r, ASSIGNMENT_VERSION, "assignment")
            partitions = tuple(r.array(False, _read_topic_partition))
            user_data = _user_data(r)
        except UnicodeDecodeError as exc:
            raise CorruptResponseError(f"undecodable assignment: {exc}") from exc
        return cls(partitions, user_data)
