"""Generated from Apache Kafka's OffsetDeleteRequest.json/OffsetDeleteResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

OffsetDelete (API key 47) at v0 of the v0 Kafka defines; never flexible.
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
    "OffsetDeleteRequest",
    "OffsetDeleteRequestPartition",
    "OffsetDeleteRequestTopic",
    "OffsetDeleteResponse",
    "OffsetDeleteResponsePartition",
    "OffsetDeleteResponseTopic",
]

_hi = struct.Struct(">hi")
_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class OffsetDeleteResponsePartition:
    """The responses for each partition in the topic."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.partition_index, self.error_code)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index, error_code = r.unpack(_ih)
        return cls(partition_index, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetDeleteResponseTopic:
    """The responses for each topic."""

    name: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[OffsetDeleteResponsePartition, ...] = ()
    """The responses for each partition in the topic. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.name, False)
        w.structs(self.partitions, version, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name = r.string(False)
        partitions = r.structs(OffsetDeleteResponsePartition, version, False)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetDeleteResponse:
    """The OffsetDelete response (API key 47), v0."""

    error_code: int = 0
    """The top-level error code, or 0 if there was no error. (v0+)"""
    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    topics: tuple[OffsetDeleteResponseTopic, ...] = ()
    """The responses for each topic. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_hi, self.error_code, self.throttle_time_ms)
        w.structs(self.topics, version, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        error_code, throttle_time_ms = r.unpack(_hi)
        topics = r.structs(OffsetDeleteResponseTopic, version, False)
        return cls(error_code, throttle_time_ms, topics)


@attrs.define(frozen=True, slots=True)
class OffsetDeleteRequestPartition:
    """Each partition to delete offsets for."""

    partition_index: int = 0
    """The partition index. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.partition_index)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index = r.int32()
        return cls(partition_index)


@attrs.define(frozen=True, slots=True)
class OffsetDeleteRequestTopic:
    """The topics to delete offsets for."""

    name: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[OffsetDeleteRequestPartition, ...] = ()
    """Each partition to delete offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.name, False)
        w.structs(self.partitions, version, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name = r.string(False)
        partitions = r.structs(OffsetDeleteRequestPartition, version, False)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetDeleteRequest:
    """The OffsetDelete request (API key 47), v0."""

    API_KEY: ClassVar[ApiKey] = ApiKey.OFFSET_DELETE
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    FLEXIBLE_FROM: ClassVar[int] = 32768
    RESPONSE: ClassVar[type[Response]] = OffsetDeleteResponse

    group_id: str = ""
    """The unique group identifier. (v0+)"""
    topics: tuple[OffsetDeleteRequestTopic, ...] = ()
    """The topics to delete offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.group_id, False)
        w.structs(self.topics, version, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_id = r.string(False)
        topics = r.structs(OffsetDeleteRequestTopic, version, False)
        return cls(group_id, topics)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
