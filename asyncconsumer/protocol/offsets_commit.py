"""OffsetCommit (API key 8), versions 2-9, and OffsetFetch (API key 9), versions 1-9: committed offsets.

OffsetCommit (OffsetCommitRequest/Response.json), flexible from v8: v2-4 RetentionTimeMs (v5 drops it again);
v3 throttle time; v6 CommittedLeaderEpoch; v7 GroupInstanceId. v9 is byte-for-byte v8: it only tells the broker
that ``generation_id_or_member_epoch`` may be a KIP-848 member epoch. (v1's per-partition CommitTimestamp is
outside our range.)

OffsetFetch (OffsetFetchRequest/Response.json), flexible from v6: v2 null topics ("all") and the top-level error
code; v3 throttle time; v5 CommittedLeaderEpoch; v7 RequireStable; v8 batches groups: the request carries a
Groups array and the response answers per group, the group error code moving into each group; v9 adds the
KIP-848 MemberId and MemberEpoch to each requested group (the response is v8's). We always ask for one group;
``OffsetFetchResponse.partitions_for`` reads either response layout.
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.errors import CorruptResponseError, ErrorCode
from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "OffsetCommitPartition",
    "OffsetCommitPartitionResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetCommitTopic",
    "OffsetCommitTopicResponse",
    "OffsetFetchGroupResponse",
    "OffsetFetchPartitionResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetFetchTopic",
    "OffsetFetchTopicResponse",
]

_COMMIT_FLEXIBLE_FROM = 8
_FETCH_FLEXIBLE_FROM = 6
_FETCH_BATCHED_FROM = 8


# --- OffsetCommit ---------------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class OffsetCommitPartition:
    """The offset to commit for one partition (the next offset to consume), with its leader epoch."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _COMMIT_FLEXIBLE_FROM
        w.int32(self.partition_index)
        w.int64(self.committed_offset)
        if version >= 6:
            w.int32(self.committed_leader_epoch)
        w.nstr(self.committed_metadata, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _COMMIT_FLEXIBLE_FROM
        partition_index = r.int32()
        committed_offset = r.int64()
        committed_leader_epoch = r.int32() if version >= 6 else -1
        committed_metadata = r.nstr(flexible)
        r.end_struct(flexible)
        return cls(partition_index, committed_offset, committed_leader_epoch, committed_metadata)


@attrs.define(frozen=True, slots=True)
class OffsetCommitTopic:
    """The partitions of one topic to commit."""

    name: str
    partitions: tuple[OffsetCommitPartition, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.name, self.partitions, version, version >= _COMMIT_FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name, partitions = r.topic(OffsetCommitPartition, version, version >= _COMMIT_FLEXIBLE_FROM)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetCommitPartitionResponse:
    """Whether one partition's commit succeeded."""

    partition_index: int
    error_code: int

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.partition_index)
        w.int16(self.error_code)
        w.end_struct(version >= _COMMIT_FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index = r.int32()
        error_code = r.int16()
        r.end_struct(version >= _COMMIT_FLEXIBLE_FROM)
        return cls(partition_index, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetCommitTopicResponse:
    """The commit outcomes for the partitions of one topic."""

    name: str
    partitions: tuple[OffsetCommitPartitionResponse, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.name, self.partitions, version, version >= _COMMIT_FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name, partitions = r.topic(OffsetCommitPartitionResponse, version, version >= _COMMIT_FLEXIBLE_FROM)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetCommitResponse:
    """The commit outcome per topic and partition (there is no top-level error code)."""

    topics: tuple[OffsetCommitTopicResponse, ...]
    throttle_time_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _COMMIT_FLEXIBLE_FROM
        if version >= 3:
            w.int32(self.throttle_time_ms)
        w.structs(self.topics, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _COMMIT_FLEXIBLE_FROM
        throttle_time_ms = r.int32() if version >= 3 else 0
        topics = r.structs(OffsetCommitTopicResponse, version, flexible)
        r.end_struct(flexible)
        return cls(topics, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class OffsetCommitRequest:
    """Commits offsets for ``group_id`` as member ``member_id`` of a generation (or, v9+, at a member epoch).

    ``retention_time_ms`` is only sent by v2-4; -1 leaves retention to the broker.
    """

    API_KEY: ClassVar[ApiKey] = ApiKey.OFFSET_COMMIT
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = _COMMIT_FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = OffsetCommitResponse

    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    topics: tuple[OffsetCommitTopic, ...]
    group_instance_id: str | None = None
    retention_time_ms: int = -1

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _COMMIT_FLEXIBLE_FROM
        w.str_(self.group_id, flexible)
        w.int32(self.generation_id_or_member_epoch)
        w.str_(self.member_id, flexible)
        if version >= 7:
            w.nstr(self.group_instance_id, flexible)
        if version <= 4:
            w.int64(self.retention_time_ms)
        w.structs(self.topics, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _COMMIT_FLEXIBLE_FROM
        group_id = r.str_(flexible)
        generation_id_or_member_epoch = r.int32()
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible) if version >= 7 else None
        retention_time_ms = r.int64() if version <= 4 else -1
        topics = r.structs(OffsetCommitTopic, version, flexible)
        r.end_struct(flexible)
        return cls(group_id, generation_id_or_member_epoch, member_id, topics, group_instance_id, retention_time_ms)


# --- OffsetFetch ----------------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class OffsetFetchTopic:
    """The partitions of one topic whose committed offsets are wanted."""

    name: str
    partition_indexes: tuple[int, ...]

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        w.str_(self.name, flexible)
        w.int32s(self.partition_indexes, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        name = r.str_(flexible)
        partition_indexes = r.int32s(flexible)
        r.end_struct(flexible)
        return cls(name, partition_indexes)


@attrs.define(frozen=True, slots=True)
class OffsetFetchPartitionResponse:
    """The committed offset of one partition (-1 when nothing is committed), its leader epoch and metadata."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        w.int32(self.partition_index)
        w.int64(self.committed_offset)
        if version >= 5:
            w.int32(self.committed_leader_epoch)
        w.nstr(self.metadata, flexible)
        w.int16(self.error_code)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        partition_index = r.int32()
        committed_offset = r.int64()
        committed_leader_epoch = r.int32() if version >= 5 else -1
        metadata = r.nstr(flexible)
        error_code = r.int16()
        r.end_struct(flexible)
        return cls(partition_index, committed_offset, committed_leader_epoch, metadata, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetFetchTopicResponse:
    """The committed offsets of the partitions of one topic."""

    name: str
    partitions: tuple[OffsetFetchPartitionResponse, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.name, self.partitions, version, version >= _FETCH_FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name, partitions = r.topic(OffsetFetchPartitionResponse, version, version >= _FETCH_FLEXIBLE_FROM)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetFetchGroupResponse:
    """The committed offsets of one group and its group-level error (v8+ on the wire; any version through
    ``OffsetFetchResponse.partitions_for``)."""

    group_id: str
    topics: tuple[OffsetFetchTopicResponse, ...]
    error_code: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        w.str_(self.group_id, flexible)
        w.structs(self.topics, version, flexible)
        w.int16(self.error_code)  # after the topics, as in the pre-v8 top level
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        group_id = r.str_(flexible)
        topics = r.structs(OffsetFetchTopicResponse, version, flexible)
        error_code = r.int16()
        r.end_struct(flexible)
        return cls(group_id, topics, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetFetchResponse:
    """Committed offsets: ``topics`` and ``error_code`` up to v7, ``groups`` from v8 (the rest at defaults).

    ``error_code`` exists on the wire from v2; it reads 0 for v1.
    """

    topics: tuple[OffsetFetchTopicResponse, ...] = ()
    error_code: int = 0
    throttle_time_ms: int = 0
    groups: tuple[OffsetFetchGroupResponse, ...] = ()

    def partitions_for(self, group_id: str) -> OffsetFetchGroupResponse:
        """The answer for ``group_id`` whatever the version; a batched answer that lacks the group reads as
        COORDINATOR_NOT_AVAILABLE (retriable)."""
        if self.groups:
            for group in self.groups:
                if group.group_id == group_id:
                    return group
            return OffsetFetchGroupResponse(group_id, (), ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return OffsetFetchGroupResponse(group_id, self.topics, self.error_code)

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        if version >= 3:
            w.int32(self.throttle_time_ms)
        if version >= _FETCH_BATCHED_FROM:
            w.structs(self.groups, version, flexible)
        else:
            w.structs(self.topics, version, flexible)
            if version >= 2:
                w.int16(self.error_code)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        throttle_time_ms = r.int32() if version >= 3 else 0
        if version >= _FETCH_BATCHED_FROM:
            groups = r.structs(OffsetFetchGroupResponse, version, flexible)
            r.end_struct(flexible)
            return cls(throttle_time_ms=throttle_time_ms, groups=groups)
        topics = r.structs(OffsetFetchTopicResponse, version, flexible)
        error_code = r.int16() if version >= 2 else 0
        r.end_struct(flexible)
        return cls(topics, error_code, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class OffsetFetchRequest:
    """Fetches the committed offsets of ``group_id`` for ``topics`` (``None``: every topic, v2+).

    From v8 the group travels in a one-element Groups array; ``member_id`` and ``member_epoch`` are sent from
    v9 only (KIP-848 groups; null and -1 for classic groups).
    """

    API_KEY: ClassVar[ApiKey] = ApiKey.OFFSET_FETCH
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = _FETCH_FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = OffsetFetchResponse

    group_id: str
    topics: tuple[OffsetFetchTopic, ...] | None
    require_stable: bool = False
    member_id: str | None = None
    member_epoch: int = -1

    def _encode_topics(self, w: Writer, version: int) -> None:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        topics = self.topics
        if topics is None and version < 2:
            raise ValueError("OffsetFetch v1 cannot ask for every topic (null topics need v2+)")
        w.structs(topics, version, flexible)

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FETCH_FLEXIBLE_FROM
        if version >= _FETCH_BATCHED_FROM:
            w.array_len(1, flexible)
            w.str_(self.group_id, flexible)
            if version >= 9:
                w.nstr(self.member_id, flexible)
                w.int32(self.member_epoch)
            self._encode_topics(w, version)
            w.end_struct(flexible)  # the group's (v8+ is flexible)
        else:
            w.str_(self.group_id, flexible)
            self._encode_topics(w, version)
        if version >= 7:
            w.boolean(self.require_stable)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FETCH_FLEXIBLE_FROM

        member_id: str | None = None
        member_epoch = -1
        if version >= _FETCH_BATCHED_FROM:
            count = r.uvarint() - 1
            if count != 1:
                raise CorruptResponseError(f"OffsetFetch v{version} request with {count} groups: we model one")
            group_id = r.str_(flexible)
            if version >= 9:
                member_id = r.nstr(flexible)
                member_epoch = r.int32()
            group_topics = r.nullable_structs(OffsetFetchTopic, version, flexible)
            r.end_struct(flexible)  # the group's (v8+ is flexible)
        else:
            group_id = r.str_(flexible)
            group_topics = r.nullable_structs(OffsetFetchTopic, version, flexible)
        require_stable = r.boolean() if version >= 7 else False
        r.end_struct(flexible)
        return cls(group_id, group_topics, require_stable, member_id, member_epoch)
