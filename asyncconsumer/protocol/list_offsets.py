"""ListOffsets (API key 2), versions 1-9: the offset of a partition at a timestamp (or earliest/latest).

Wire changes in range: v2 isolation level (request) and throttle time (response); v4 leader epochs;
v6 flexible. v3, v5, v7, v8 and v9 change no field, only what the broker accepts: v7 allows ``MAX_TIMESTAMP``
(-3), v8 ``EARLIEST_LOCAL_TIMESTAMP`` (-4), v9 ``LATEST_TIERED_TIMESTAMP`` (-5).
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "ListOffsetsPartition",
    "ListOffsetsPartitionResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListOffsetsTopic",
    "ListOffsetsTopicResponse",
]

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3  # v7+
EARLIEST_LOCAL_TIMESTAMP = -4  # v8+
LATEST_TIERED_TIMESTAMP = -5  # v9+

_FLEXIBLE_FROM = 6


@attrs.define(frozen=True, slots=True)
class ListOffsetsPartition:
    """One partition to look up, at ``timestamp`` (or ``EARLIEST_TIMESTAMP``/``LATEST_TIMESTAMP``)."""

    partition_index: int
    timestamp: int
    current_leader_epoch: int = -1

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.partition_index)
        if version >= 4:
            w.int32(self.current_leader_epoch)
        w.int64(self.timestamp)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index = r.int32()
        current_leader_epoch = r.int32() if version >= 4 else -1
        timestamp = r.int64()
        r.end_struct(version >= _FLEXIBLE_FROM)
        return cls(partition_index, timestamp, current_leader_epoch)


@attrs.define(frozen=True, slots=True)
class ListOffsetsTopic:
    """The partitions of one topic to look up."""

    name: str
    partitions: tuple[ListOffsetsPartition, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.name, self.partitions, version, version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name, partitions = r.topic(ListOffsetsPartition, version, version >= _FLEXIBLE_FROM)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class ListOffsetsPartitionResponse:
    """The offset found for one partition, with its timestamp and leader epoch (-1 when unknown)."""

    partition_index: int
    error_code: int
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.partition_index)
        w.int16(self.error_code)
        w.int64(self.timestamp)
        w.int64(self.offset)
        if version >= 4:
            w.int32(self.leader_epoch)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index = r.int32()
        error_code = r.int16()
        timestamp = r.int64()
        offset = r.int64()
        leader_epoch = r.int32() if version >= 4 else -1
        r.end_struct(version >= _FLEXIBLE_FROM)
        return cls(partition_index, error_code, timestamp, offset, leader_epoch)


@attrs.define(frozen=True, slots=True)
class ListOffsetsTopicResponse:
    """The answers for the partitions of one topic."""

    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.name, self.partitions, version, version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name, partitions = r.topic(ListOffsetsPartitionResponse, version, version >= _FLEXIBLE_FROM)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class ListOffsetsResponse:
    """The offsets found, per topic and partition."""

    topics: tuple[ListOffsetsTopicResponse, ...]
    throttle_time_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        if version >= 2:
            w.int32(self.throttle_time_ms)
        w.structs(self.topics, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        throttle_time_ms = r.int32() if version >= 2 else 0
        topics = r.structs(ListOffsetsTopicResponse, version, flexible)
        r.end_struct(flexible)
        return cls(topics, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class ListOffsetsRequest:
    """Looks up offsets by timestamp for the given partitions (``replica_id`` -1: a consumer)."""

    API_KEY: ClassVar[ApiKey] = ApiKey.LIST_OFFSETS
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = _FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = ListOffsetsResponse

    topics: tuple[ListOffsetsTopic, ...]
    isolation_level: int = 0
    replica_id: int = -1

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int32(self.replica_id)
        if version >= 2:
            w.int8(self.isolation_level)
        w.structs(self.topics, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        replica_id = r.int32()
        isolation_level = r.int8() if version >= 2 else 0
        topics = r.structs(ListOffsetsTopic, version, flexible)
        r.end_struct(flexible)
        return cls(topics, isolation_level, replica_id)
