"""Generated from Apache Kafka's DescribeShareGroupOffsetsRequest.json/DescribeShareGroupOffsetsResponse.json
(kafka-clients 4.4.0) by scripts/gen_protocol.py; do not edit.

DescribeShareGroupOffsets (API key 90) at v0-1 of the v0-1 Kafka defines; flexible from v0.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import ZERO_UUID, Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsRequestGroup",
    "DescribeShareGroupOffsetsRequestTopic",
    "DescribeShareGroupOffsetsResponse",
    "DescribeShareGroupOffsetsResponseGroup",
    "DescribeShareGroupOffsetsResponsePartition",
    "DescribeShareGroupOffsetsResponseTopic",
]

_iqih = struct.Struct(">iqih")
_iqiqh = struct.Struct(">iqiqh")


@attrs.define(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponsePartition:
    """Kafka's DescribeShareGroupOffsetsResponsePartition."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    start_offset: int = 0
    """The share-partition start offset. (v0+)"""
    leader_epoch: int = 0
    """The leader epoch of the partition. (v0+)"""
    lag: int = -1
    """The share-partition lag. (v1+)"""
    error_code: int = 0
    """The partition-level error code, or 0 if there was no error. (v0+)"""
    error_message: str | None = None
    """The partition-level error message, or null if there was no error. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        if version >= 1:
            w.pack(_iqiqh, self.partition_index, self.start_offset, self.leader_epoch, self.lag, self.error_code)
        else:
            w.pack(_iqih, self.partition_index, self.start_offset, self.leader_epoch, self.error_code)
        w.nullable_string(self.error_message, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        if version >= 1:
            partition_index, start_offset, leader_epoch, lag, error_code = r.unpack(_iqiqh)
        else:
            partition_index, start_offset, leader_epoch, error_code = r.unpack(_iqih)
            lag = -1
        error_message = r.nullable_string(True)
        r.skip_tags()
        return cls(partition_index, start_offset, leader_epoch, lag, error_code, error_message)


@attrs.define(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponseTopic:
    """The results for each topic."""

    topic_name: str = ""
    """The topic name. (v0+)"""
    topic_id: uuid.UUID = ZERO_UUID
    """The unique topic ID. (v0+)"""
    partitions: tuple[DescribeShareGroupOffsetsResponsePartition, ...] = ()
    """(v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.topic_name, True)
        w.uuid(self.topic_id)
        w.structs(self.partitions, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_name = r.string(True)
        topic_id = r.uuid()
        partitions = r.structs(DescribeShareGroupOffsetsResponsePartition, version, True)
        r.skip_tags()
        return cls(topic_name, topic_id, partitions)


@attrs.define(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponseGroup:
    """The results for each group."""

    group_id: str = ""
    """The group identifier. (v0+)"""
    topics: tuple[DescribeShareGroupOffsetsResponseTopic, ...] = ()
    """The results for each topic. (v0+)"""
    error_code: int = 0
    """The group-level error code, or 0 if there was no error. (v0+)"""
    error_message: str | None = None
    """The group-level error message, or null if there was no error. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.group_id, True)
        w.structs(self.topics, version, True)
        w.int16(self.error_code)
        w.nullable_string(self.error_message, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_id = r.string(True)
        topics = r.structs(DescribeShareGroupOffsetsResponseTopic, version, True)
        error_code = r.int16()
        error_message = r.nullable_string(True)
        r.skip_tags()
        return cls(group_id, topics, error_code, error_message)


@attrs.define(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponse:
    """The DescribeShareGroupOffsets response (API key 90), v0-1."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    groups: tuple[DescribeShareGroupOffsetsResponseGroup, ...] = ()
    """The results for each group. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.structs(self.groups, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()
        groups = r.structs(DescribeShareGroupOffsetsResponseGroup, version, True)
        r.skip_tags()
        return cls(throttle_time_ms, groups)


@attrs.define(frozen=True, slots=True)
class DescribeShareGroupOffsetsRequestTopic:
    """The topics to describe offsets for, or null for all topic-partitions."""

    topic_name: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[int, ...] = ()
    """The partitions. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.topic_name, True)
        w.int32s(self.partitions, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_name = r.string(True)
        partitions = r.int32s(True)
        r.skip_tags()
        return cls(topic_name, partitions)


@attrs.define(frozen=True, slots=True)
class DescribeShareGroupOffsetsRequestGroup:
    """The groups to describe offsets for."""

    group_id: str = ""
    """The group identifier. (v0+)"""
    topics: tuple[DescribeShareGroupOffsetsRequestTopic, ...] | None = None
    """The topics to describe offsets for, or null for all topic-partitions. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.group_id, True)
        w.structs(self.topics, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_id = r.string(True)
        topics = r.nullable_structs(DescribeShareGroupOffsetsRequestTopic, version, True)
        r.skip_tags()
        return cls(group_id, topics)


@attrs.define(frozen=True, slots=True)
class DescribeShareGroupOffsetsRequest:
    """The DescribeShareGroupOffsets request (API key 90), v0-1."""

    API_KEY: ClassVar[ApiKey] = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 1
    FLEXIBLE_FROM: ClassVar[int] = 0
    RESPONSE: ClassVar[type[Response]] = DescribeShareGroupOffsetsResponse

    groups: tuple[DescribeShareGroupOffsetsRequestGroup, ...] = ()
    """The groups to describe offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.structs(self.groups, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        groups = r.structs(DescribeShareGroupOffsetsRequestGroup, version, True)
        r.skip_tags()
        return cls(groups)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
