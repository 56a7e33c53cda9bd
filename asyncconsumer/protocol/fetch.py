"""Fetch (API key 1), versions 4-12, topics by name (v13+ uses topic ids and is out of scope).

This is the hot path: ``FetchResponse.decode`` only walks the topic and partition headers and hands each
partition's record set on as a ``memoryview`` slice of the response buffer, never a copy.

Wire changes in range: v5 log start offsets; v7 fetch sessions (session id/epoch, forgotten topics,
top-level error code); v9 current leader epoch; v11 rack id and preferred read replica; v12 flexible,
LastFetchedEpoch and the tagged fields DivergingEpoch (0), CurrentLeader (1) and SnapshotId (2) per partition.
Of those tagged fields only CurrentLeader is decoded; the request's ClusterId tag (0) is never sent.
"""

from __future__ import annotations

import struct
from typing import ClassVar, Self

import attrs

from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "AbortedTransaction",
    "FetchPartition",
    "FetchPartitionData",
    "FetchRequest",
    "FetchResponse",
    "FetchTopic",
    "FetchableTopicResponse",
    "ForgottenTopic",
    "LeaderIdAndEpoch",
]

_FLEXIBLE_FROM = 12
_CURRENT_LEADER_TAG = 1
# PartitionIndex int32, ErrorCode int16, HighWatermark int64, LastStableOffset int64 (v4+), LogStartOffset (v5+)
_PARTITION_HEAD_V4 = struct.Struct(">ihqq")
_PARTITION_HEAD_V5 = struct.Struct(">ihqqq")


# --- request ------------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class FetchPartition:
    """One partition to fetch from ``fetch_offset``, at most ``partition_max_bytes``."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.partition)
        if version >= 9:
            w.int32(self.current_leader_epoch)
        w.int64(self.fetch_offset)
        if version >= 12:
            w.int32(self.last_fetched_epoch)
        if version >= 5:
            w.int64(self.log_start_offset)
        w.int32(self.partition_max_bytes)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition = r.int32()
        current_leader_epoch = r.int32() if version >= 9 else -1
        fetch_offset = r.int64()
        last_fetched_epoch = r.int32() if version >= 12 else -1
        log_start_offset = r.int64() if version >= 5 else -1
        partition_max_bytes = r.int32()
        r.end_struct(version >= _FLEXIBLE_FROM)
        return cls(
            partition,
            fetch_offset,
            partition_max_bytes,
            current_leader_epoch,
            last_fetched_epoch,
            log_start_offset,
        )


@attrs.define(frozen=True, slots=True)
class FetchTopic:
    """The partitions to fetch from one topic."""

    topic: str
    partitions: tuple[FetchPartition, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.topic, self.partitions, version, version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic, partitions = r.topic(FetchPartition, version, version >= _FLEXIBLE_FROM)
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class ForgottenTopic:
    """Partitions of one topic to drop from an incremental fetch session (v7+)."""

    topic: str
    partitions: tuple[int, ...]

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.str_(self.topic, flexible)
        w.int32s(self.partitions, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        topic = r.str_(flexible)
        partitions = r.int32s(flexible)
        r.end_struct(flexible)
        return cls(topic, partitions)


# --- response -----------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class AbortedTransaction:
    """An aborted transaction of ``producer_id`` whose first record is at ``first_offset``."""

    producer_id: int
    first_offset: int

    def encode(self, w: Writer, version: int) -> None:
        w.int64(self.producer_id)
        w.int64(self.first_offset)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        item = cls(r.int64(), r.int64())
        r.end_struct(version >= _FLEXIBLE_FROM)
        return item


@attrs.define(frozen=True, slots=True)
class LeaderIdAndEpoch:
    """The partition's current leader as the broker knows it (tagged field CurrentLeader, v12+)."""

    leader_id: int = -1
    leader_epoch: int = -1

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.leader_id)
        w.int32(self.leader_epoch)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        item = cls(r.int32(), r.int32())
        r.end_struct(version >= _FLEXIBLE_FROM)
        return item


def _records_key(records: memoryview | bytes | None) -> bytes | None:
    return None if records is None else bytes(records)


@attrs.define(frozen=True, slots=True)
class FetchPartitionData:
    """One partition's fetch result; ``records`` is the raw record-batch data, a view into the response."""

    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    preferred_read_replica: int = -1
    records: memoryview | bytes | None = attrs.field(default=None, eq=_records_key, repr=False)
    current_leader: LeaderIdAndEpoch | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int32(self.partition_index)
        w.int16(self.error_code)
        w.int64(self.high_watermark)
        w.int64(self.last_stable_offset)  # v4+
        if version >= 5:
            w.int64(self.log_start_offset)
        w.structs(self.aborted_transactions, version, flexible)
        if version >= 11:
            w.int32(self.preferred_read_replica)
        w.nbytes(self.records, flexible)
        if flexible:
            if self.current_leader is None:
                w.tagged_fields()
            else:
                leader = Writer()
                self.current_leader.encode(leader, version)
                w.tagged_fields({_CURRENT_LEADER_TAG: leader.getvalue()})

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        # The fixed-size head of the partition in one unpack: this runs once per partition per fetch.
        if version >= 5:
            partition_index, error_code, high_watermark, last_stable_offset, log_start_offset = (
                _PARTITION_HEAD_V5.unpack(r.raw(_PARTITION_HEAD_V5.size))
            )
        else:
            partition_index, error_code, high_watermark, last_stable_offset = _PARTITION_HEAD_V4.unpack(
                r.raw(_PARTITION_HEAD_V4.size)
            )
            log_start_offset = -1
        aborted = r.nullable_structs(AbortedTransaction, version, flexible)
        preferred_read_replica = r.int32() if version >= 11 else -1
        records = r.nbytes(flexible)  # a memoryview slice of the response: no copy
        current_leader = None
        if flexible:
            tags = r.tagged_fields()
            if tags:
                raw = tags.get(_CURRENT_LEADER_TAG)
                if raw is not None:
                    current_leader = LeaderIdAndEpoch.decode(Reader(raw), version)
        return cls(
            partition_index,
            error_code,
            high_watermark,
            last_stable_offset,
            log_start_offset,
            aborted,
            preferred_read_replica,
            records,
            current_leader,
        )


@attrs.define(frozen=True, slots=True)
class FetchableTopicResponse:
    """The fetch results for the partitions of one topic."""

    topic: str
    partitions: tuple[FetchPartitionData, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.topic(self.topic, self.partitions, version, version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic, partitions = r.topic(FetchPartitionData, version, version >= _FLEXIBLE_FROM)
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class FetchResponse:
    """A fetch response: session id, top-level error (v7+) and per-topic, per-partition results."""

    responses: tuple[FetchableTopicResponse, ...]
    throttle_time_ms: int = 0
    error_code: int = 0
    session_id: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int32(self.throttle_time_ms)  # v1+
        if version >= 7:
            w.int16(self.error_code)
            w.int32(self.session_id)
        w.structs(self.responses, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        throttle_time_ms = r.int32()
        if version >= 7:
            error_code = r.int16()
            session_id = r.int32()
        else:
            error_code = session_id = 0
        responses = r.structs(FetchableTopicResponse, version, flexible)
        r.end_struct(flexible)  # NodeEndpoints (tag 0) only exists from v16
        return cls(responses, throttle_time_ms, error_code, session_id)


@attrs.define(frozen=True, slots=True)
class FetchRequest:
    """Fetches record data from the partitions led by one broker, optionally within a fetch session."""

    API_KEY: ClassVar[ApiKey] = ApiKey.FETCH
    MIN_VERSION: ClassVar[int] = 4
    MAX_VERSION: ClassVar[int] = 12
    FLEXIBLE_FROM: ClassVar[int] = _FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = FetchResponse

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: tuple[FetchTopic, ...]
    isolation_level: int = 0
    session_id: int = 0
    session_epoch: int = -1
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()
    rack_id: str = ""
    replica_id: int = -1

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int32(self.replica_id)
        w.int32(self.max_wait_ms)
        w.int32(self.min_bytes)
        w.int32(self.max_bytes)  # v3+
        w.int8(self.isolation_level)  # v4+
        if version >= 7:
            w.int32(self.session_id)
            w.int32(self.session_epoch)
        w.structs(self.topics, version, flexible)
        if version >= 7:
            w.structs(self.forgotten_topics_data, version, flexible)
        if version >= 11:
            w.str_(self.rack_id, flexible)
        w.end_struct(flexible)  # ClusterId (tag 0) is for brokers fetching metadata; never sent

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        replica_id = r.int32()
        max_wait_ms = r.int32()
        min_bytes = r.int32()
        max_bytes = r.int32()
        isolation_level = r.int8()
        if version >= 7:
            session_id = r.int32()
            session_epoch = r.int32()
        else:
            session_id, session_epoch = 0, -1
        topics = r.structs(FetchTopic, version, flexible)
        forgotten = r.structs(ForgottenTopic, version, flexible) if version >= 7 else ()
        rack_id = r.str_(flexible) if version >= 11 else ""
        r.end_struct(flexible)
        return cls(
            max_wait_ms,
            min_bytes,
            max_bytes,
            topics,
            isolation_level,
            session_id,
            session_epoch,
            forgotten,
            rack_id,
            replica_id,
        )
