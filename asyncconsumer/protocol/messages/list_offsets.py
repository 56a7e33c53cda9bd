"""Generated from Apache Kafka's ListOffsetsRequest.json/ListOffsetsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

ListOffsets (API key 2) at v1-9 of the v1-11 Kafka defines; flexible from v6.
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
    "ListOffsetsPartition",
    "ListOffsetsPartitionResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListOffsetsTopic",
    "ListOffsetsTopicResponse",
]

_ib = struct.Struct(">ib")
_ihqq = struct.Struct(">ihqq")
_ihqqi = struct.Struct(">ihqqi")
_iiq = struct.Struct(">iiq")
_iq = struct.Struct(">iq")


@attrs.define(frozen=True, slots=True)
class ListOffsetsPartitionResponse:
    """Each partition in the response."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    error_code: int = 0
    """The partition error code, or 0 if there was no error. (v0+)"""
    timestamp: int = -1
    """The timestamp associated with the returned offset. (v1+)"""
    offset: int = -1
    """The returned offset. (v1+)"""
    leader_epoch: int = -1
    """The leader epoch associated with the returned offset. (v4+)"""

    def encode(self, w: Writer, version: int) -> None:
        if version >= 4:
            w.pack(_ihqqi, self.partition_index, self.error_code, self.timestamp, self.offset, self.leader_epoch)
        else:
            w.pack(_ihqq, self.partition_index, self.error_code, self.timestamp, self.offset)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        if version >= 4:
            partition_index, error_code, timestamp, offset, leader_epoch = r.unpack(_ihqqi)
        else:
            partition_index, error_code, timestamp, offset = r.unpack(_ihqq)
            leader_epoch = -1
        if version >= 6:
            r.skip_tags()
        return cls(partition_index, error_code, timestamp, offset, leader_epoch)


@attrs.define(frozen=True, slots=True)
class ListOffsetsTopicResponse:
    """Each topic in the response."""

    name: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[ListOffsetsPartitionResponse, ...] = ()
    """Each partition in the response. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.string(self.name, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        name = r.string(flexible)
        partitions = r.structs(ListOffsetsPartitionResponse, version, flexible)
        if version >= 6:
            r.skip_tags()
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class ListOffsetsResponse:
    """The ListOffsets response (API key 2), v1-9."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v2+)
    """
    topics: tuple[ListOffsetsTopicResponse, ...] = ()
    """Each topic in the response. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        if version >= 2:
            w.int32(self.throttle_time_ms)
        w.structs(self.topics, version, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        throttle_time_ms = r.int32() if version >= 2 else 0
        topics = r.structs(ListOffsetsTopicResponse, version, flexible)
        if version >= 6:
            r.skip_tags()
        return cls(throttle_time_ms, topics)


@attrs.define(frozen=True, slots=True)
class ListOffsetsPartition:
    """Each partition in the request."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    current_leader_epoch: int = -1
    """The current leader epoch. (v4+)"""
    timestamp: int = 0
    """The current timestamp. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        if version >= 4:
            w.pack(_iiq, self.partition_index, self.current_leader_epoch, self.timestamp)
        else:
            w.pack(_iq, self.partition_index, self.timestamp)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        if version >= 4:
            partition_index, current_leader_epoch, timestamp = r.unpack(_iiq)
        else:
            partition_index, timestamp = r.unpack(_iq)
            current_leader_epoch = -1
        if version >= 6:
            r.skip_tags()
        return cls(partition_index, current_leader_epoch, timestamp)


@attrs.define(frozen=True, slots=True)
class ListOffsetsTopic:
    """Each topic in the request."""

    name: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[ListOffsetsPartition, ...] = ()
    """Each partition in the request. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.string(self.name, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        name = r.string(flexible)
        partitions = r.structs(ListOffsetsPartition, version, flexible)
        if version >= 6:
            r.skip_tags()
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class ListOffsetsRequest:
    """The ListOffsets request (API key 2), v1-9."""

    API_KEY: ClassVar[ApiKey] = ApiKey.LIST_OFFSETS
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = 6
    RESPONSE: ClassVar[type[Response]] = ListOffsetsResponse

    replica_id: int = 0
    """The broker ID of the requester, or -1 if this request is being made by a normal consumer. (v0+)"""
    isolation_level: int = 0
    """This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0)
    makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED
    transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller
    than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in
    the result, which allows consumers to discard ABORTED transactional records. (v2+)
    """
    topics: tuple[ListOffsetsTopic, ...] = ()
    """Each topic in the request. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        if version >= 2:
            w.pack(_ib, self.replica_id, self.isolation_level)
        else:
            if self.isolation_level:
                raise ValueError(f"ListOffsetsRequest.isolation_level needs v2+, not v{version}")
            w.int32(self.replica_id)
        w.structs(self.topics, version, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        if version >= 2:
            replica_id, isolation_level = r.unpack(_ib)
        else:
            replica_id = r.int32()
            isolation_level = 0
        topics = r.structs(ListOffsetsTopic, version, flexible)
        if version >= 6:
            r.skip_tags()
        return cls(replica_id, isolation_level, topics)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
