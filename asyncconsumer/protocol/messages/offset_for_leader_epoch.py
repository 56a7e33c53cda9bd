"""Generated from Apache Kafka's OffsetForLeaderEpochRequest.json/OffsetForLeaderEpochResponse.json (kafka-clients
4.4.0) by scripts/gen_protocol.py; do not edit.

OffsetForLeaderEpoch (API key 23) at v2-4 of the v2-4 Kafka defines; flexible from v4.
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
    "EpochEndOffset",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "OffsetForLeaderPartition",
    "OffsetForLeaderTopic",
    "OffsetForLeaderTopicResult",
]

_hiiq = struct.Struct(">hiiq")
_iii = struct.Struct(">iii")


@attrs.define(frozen=True, slots=True)
class EpochEndOffset:
    """Each partition in the topic we fetched offsets for."""

    error_code: int = 0
    """The error code 0, or if there was no error. (v0+)"""
    partition: int = 0
    """The partition index. (v0+)"""
    leader_epoch: int = -1
    """The leader epoch of the partition. (v1+)"""
    end_offset: int = -1
    """The end offset of the epoch. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_hiiq, self.error_code, self.partition, self.leader_epoch, self.end_offset)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        error_code, partition, leader_epoch, end_offset = r.unpack(_hiiq)
        if version >= 4:
            r.skip_tags()
        return cls(error_code, partition, leader_epoch, end_offset)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderTopicResult:
    """Each topic we fetched offsets for."""

    topic: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[EpochEndOffset, ...] = ()
    """Each partition in the topic we fetched offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.topic, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        topic = r.string(flexible)
        partitions = r.structs(EpochEndOffset, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderEpochResponse:
    """The OffsetForLeaderEpoch response (API key 23), v2-4."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v2+)
    """
    topics: tuple[OffsetForLeaderTopicResult, ...] = ()
    """Each topic we fetched offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.int32(self.throttle_time_ms)
        w.structs(self.topics, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        throttle_time_ms = r.int32()
        topics = r.structs(OffsetForLeaderTopicResult, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(throttle_time_ms, topics)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderPartition:
    """Each partition to get offsets for."""

    partition: int = 0
    """The partition index. (v0+)"""
    current_leader_epoch: int = -1
    """An epoch used to fence consumers/replicas with old metadata. If the epoch provided by the client is larger
    than the current epoch known to the broker, then the UNKNOWN_LEADER_EPOCH error code will be returned. If the
    provided epoch is smaller, then the FENCED_LEADER_EPOCH error code will be returned. (v2+)
    """
    leader_epoch: int = 0
    """The epoch to look up an offset for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_iii, self.partition, self.current_leader_epoch, self.leader_epoch)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition, current_leader_epoch, leader_epoch = r.unpack(_iii)
        if version >= 4:
            r.skip_tags()
        return cls(partition, current_leader_epoch, leader_epoch)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderTopic:
    """Each topic to get offsets for."""

    topic: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[OffsetForLeaderPartition, ...] = ()
    """Each partition to get offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.topic, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        topic = r.string(flexible)
        partitions = r.structs(OffsetForLeaderPartition, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderEpochRequest:
    """The OffsetForLeaderEpoch request (API key 23), v2-4."""

    API_KEY: ClassVar[ApiKey] = ApiKey.OFFSET_FOR_LEADER_EPOCH
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = 4
    RESPONSE: ClassVar[type[Response]] = OffsetForLeaderEpochResponse

    replica_id: int = -2
    """The broker ID of the follower, of -1 if this request is from a consumer. (v3+)"""
    topics: tuple[OffsetForLeaderTopic, ...] = ()
    """Each topic to get offsets for. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        if version >= 3:
            w.int32(self.replica_id)
        w.structs(self.topics, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        replica_id = r.int32() if version >= 3 else -2
        topics = r.structs(OffsetForLeaderTopic, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(replica_id, topics)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
