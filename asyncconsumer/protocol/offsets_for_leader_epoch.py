"""OffsetForLeaderEpoch (API key 23), versions 2-4: where a leader epoch ends in the current leader's log.

A consumer asks it after a leader change (KIP-320): the end offset of the epoch of the last records it fetched
tells whether the new leader's log still holds them. Wire changes in range: v3 replica id (-1: a consumer);
v4 flexible.
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "EpochEndOffset",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "OffsetForLeaderPartition",
    "OffsetForLeaderTopic",
    "OffsetForLeaderTopicResult",
]

_FLEXIBLE_FROM = 4


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderPartition:
    """Asks for the end of ``leader_epoch``; ``current_leader_epoch`` fences a leader older or newer than ours."""

    partition: int
    leader_epoch: int
    current_leader_epoch: int = -1

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.partition)
        w.int32(self.current_leader_epoch)
        w.int32(self.leader_epoch)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition = r.int32()
        current_leader_epoch = r.int32()
        leader_epoch = r.int32()
        r.end_struct(version >= _FLEXIBLE_FROM)
        return cls(partition, leader_epoch, current_leader_epoch)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderTopic:
    name: str
    partitions: tuple[OffsetForLeaderPartition, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.name, self.partitions, version, version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name, partitions = r.topic(OffsetForLeaderPartition, version, version >= _FLEXIBLE_FROM)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class EpochEndOffset:
    """The largest epoch at or below the one asked for, and its end offset (-1 and -1: the log has none)."""

    error_code: int
    partition: int
    leader_epoch: int = -1
    end_offset: int = -1

    def encode(self, w: Writer, version: int) -> None:
        w.int16(self.error_code)
        w.int32(self.partition)
        w.int32(self.leader_epoch)
        w.int64(self.end_offset)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        error_code = r.int16()
        partition = r.int32()
        leader_epoch = r.int32()
        end_offset = r.int64()
        r.end_struct(version >= _FLEXIBLE_FROM)
        return cls(error_code, partition, leader_epoch, end_offset)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderTopicResult:
    name: str
    partitions: tuple[EpochEndOffset, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.name, self.partitions, version, version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name, partitions = r.topic(EpochEndOffset, version, version >= _FLEXIBLE_FROM)
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderEpochResponse:
    topics: tuple[OffsetForLeaderTopicResult, ...]
    throttle_time_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int32(self.throttle_time_ms)
        w.structs(self.topics, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        throttle_time_ms = r.int32()
        topics = r.structs(OffsetForLeaderTopicResult, version, flexible)
        r.end_struct(flexible)
        return cls(topics, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class OffsetForLeaderEpochRequest:
    """End offsets of leader epochs for the given partitions (``replica_id`` -1: a consumer)."""

    API_KEY: ClassVar[ApiKey] = ApiKey.OFFSET_FOR_LEADER_EPOCH
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = _FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = OffsetForLeaderEpochResponse

    topics: tuple[OffsetForLeaderTopic, ...]
    replica_id: int = -1

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        if version >= 3:
            w.int32(self.replica_id)
        w.structs(self.topics, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        replica_id = r.int32() if version >= 3 else -1
        topics = r.structs(OffsetForLeaderTopic, version, flexible)
        r.end_struct(flexible)
        return cls(topics, replica_id)
