"""Generated from Apache Kafka's OffsetCommitRequest.json/OffsetCommitResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

OffsetCommit (API key 8) at v2-9 of the v2-10 Kafka defines; flexible from v8.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "OffsetCommitRequest",
    "OffsetCommitRequestPartition",
    "OffsetCommitRequestTopic",
    "OffsetCommitResponse",
    "OffsetCommitResponsePartition",
    "OffsetCommitResponseTopic",
]

_ih = struct.Struct(">ih")
_iq = struct.Struct(">iq")
_iqi = struct.Struct(">iqi")


@attrs.define(frozen=True, slots=True)
class OffsetCommitResponsePartition:
    """The responses for each partition in the topic."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.partition_index, self.error_code)
        if version >= 8:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index, error_code = r.unpack(_ih)
        if version >= 8:
            r.skip_tags()
        return cls(partition_index, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetCommitResponseTopic:
    """The responses for each topic."""

    name: str = ""
    """The topic name. (v0-9)"""
    partitions: tuple[OffsetCommitResponsePartition, ...] = ()
    """The responses for each partition in the topic. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 8
        w.string(self.name, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 8:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 8
        name = r.string(flexible)
        partitions = r.structs(OffsetCommitResponsePartition, version, flexible)
        if version >= 8:
            r.skip_tags()
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetCommitResponse:
    """The OffsetCommit response (API key 8), v2-9."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v3+)
    """
    topics: tuple[OffsetCommitResponseTopic, ...] = ()
    """The responses for each topic. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 8
        if version >= 3:
            w.int32(self.throttle_time_ms)
        w.structs(self.topics, version, flexible)
        if version >= 8:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 8
        throttle_time_ms = r.int32() if version >= 3 else 0
        topics = r.structs(OffsetCommitResponseTopic, version, flexible)
        if version >= 8:
            r.skip_tags()
        return cls(throttle_time_ms, topics)


@attrs.define(frozen=True, slots=True)
class OffsetCommitRequestPartition:
    """Each partition to commit offsets for."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    committed_offset: int = 0
    """The message offset to be committed. (v0+)"""
    committed_leader_epoch: int = -1
    """The leader epoch of this partition. (v6+)"""
    committed_metadata: str | None = ""
    """Any associated metadata the client wants to keep. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 8
        if version >= 6:
            w.pack(_iqi, self.partition_index, self.committed_offset, self.committed_leader_epoch)
        else:
            w.pack(_iq, self.partition_index, self.committed_offset)
        w.nullable_string(self.committed_metadata, flexible)
        if version >= 8:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 8
        if version >= 6:
            partition_index, committed_offset, committed_leader_epoch = r.unpack(_iqi)
        else:
            partition_index, committed_offset = r.unpack(_iq)
            committed_leader_epoch = -1
        committed_metadata = r.nullable_string(flexible)
        if version >= 8:
            r.skip_tags()
        return cls(partition_index, committed_offset, committed_leader_epoch, committed_metadata)


@attrs.define(frozen=True, slots=True)
class OffsetCommitRequestTopic:
    """The topics to commit offsets for."""

    name: str = ""
    """The topic name. (v0-9)"""
    partitions: tuple[OffsetCommitRequestPartition, ...] = ()
    """Each partition to commit offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 8
        w.string(self.name, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 8:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 8
        name = r.string(flexible)
        partitions = r.structs(OffsetCommitRequestPartition, version, flexible)
        if version >= 8:
            r.skip_tags()
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetCommitRequest:
    """The OffsetCommit request (API key 8), v2-9."""

    API_KEY: ClassVar[ApiKey] = ApiKey.OFFSET_COMMIT
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = 8
    RESPONSE: ClassVar[type[Response]] = OffsetCommitResponse

    group_id: str = ""
    """The unique group identifier. (v0+)"""
    generation_id_or_member_epoch: int = -1
    """The generation of the group if using the classic group protocol or the member epoch if using the consumer
    protocol. (v1+)
    """
    member_id: str = ""
    """The member ID assigned by the group coordinator. (v1+)"""
    group_instance_id: str | None = None
    """The unique identifier of the consumer instance provided by end user. (v7+)"""
    retention_time_ms: int = -1
    """The time period in ms to retain the offset. (v2-4)"""
    topics: tuple[OffsetCommitRequestTopic, ...] = ()
    """The topics to commit offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 8
        w.string(self.group_id, flexible)
        w.int32(self.generation_id_or_member_epoch)
        w.string(self.member_id, flexible)
        if version >= 7:
            w.nullable_string(self.group_instance_id, flexible)
        elif self.group_instance_id is not None:
            raise ValueError(f"OffsetCommitRequest.group_instance_id needs v7+, not v{version}")
        if version <= 4:
            w.int64(self.retention_time_ms)
        w.structs(self.topics, version, flexible)
        if version >= 8:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 8
        group_id = r.string(flexible)
        generation_id_or_member_epoch = r.int32()
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible) if version >= 7 else None
        retention_time_ms = -1 if version >= 5 else r.int64()
        topics = r.structs(OffsetCommitRequestTopic, version, flexible)
        if version >= 8:
            r.skip_tags()
        return cls(group_id, generation_id_or_member_epoch, member_id, group_instance_id, retention_time_ms, topics)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
