"""Generated from Apache Kafka's FetchRequest.json/FetchResponse.json (kafka-clients 4.4.0) by scripts/gen_protocol.py;
do not edit.

Fetch (API key 1) at v4-12 of the v4-18 Kafka defines; flexible from v12.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer, blob_repr, records_key

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "AbortedTransaction",
    "EpochEndOffset",
    "FetchPartition",
    "FetchRequest",
    "FetchResponse",
    "FetchTopic",
    "FetchableTopicResponse",
    "ForgottenTopic",
    "LeaderIdAndEpoch",
    "PartitionData",
    "SnapshotId",
]

_ihi = struct.Struct(">ihi")
_ihqq = struct.Struct(">ihqq")
_ihqqq = struct.Struct(">ihqqq")
_ii = struct.Struct(">ii")
_iiiib = struct.Struct(">iiiib")
_iiiibii = struct.Struct(">iiiibii")
_iiqiqi = struct.Struct(">iiqiqi")
_iiqqi = struct.Struct(">iiqqi")
_iq = struct.Struct(">iq")
_iqi = struct.Struct(">iqi")
_iqqi = struct.Struct(">iqqi")
_qi = struct.Struct(">qi")
_qq = struct.Struct(">qq")


@attrs.define(frozen=True, slots=True)
class EpochEndOffset:
    """In case divergence is detected based on the `LastFetchedEpoch` and `FetchOffset` in the request, this field
    indicates the largest epoch and its end offset such that subsequent records are known to diverge.
    """

    epoch: int = -1
    """The largest epoch. (v12+)"""
    end_offset: int = -1
    """The end offset of the epoch. (v12+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_iq, self.epoch, self.end_offset)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        epoch, end_offset = r.unpack(_iq)
        r.skip_tags()
        return cls(epoch, end_offset)


@attrs.define(frozen=True, slots=True)
class LeaderIdAndEpoch:
    """The current leader of the partition."""

    leader_id: int = -1
    """The ID of the current leader or -1 if the leader is unknown. (v12+)"""
    leader_epoch: int = -1
    """The latest known leader epoch. (v12+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ii, self.leader_id, self.leader_epoch)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        leader_id, leader_epoch = r.unpack(_ii)
        r.skip_tags()
        return cls(leader_id, leader_epoch)


@attrs.define(frozen=True, slots=True)
class SnapshotId:
    """In the case of fetching an offset less than the LogStartOffset, this is the end offset and epoch that should
    be used in the FetchSnapshot request.
    """

    end_offset: int = -1
    """The end offset of the epoch. (v0+)"""
    epoch: int = -1
    """The largest epoch. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_qi, self.end_offset, self.epoch)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        end_offset, epoch = r.unpack(_qi)
        r.skip_tags()
        return cls(end_offset, epoch)


@attrs.define(frozen=True, slots=True)
class AbortedTransaction:
    """The aborted transactions."""

    producer_id: int = 0
    """The producer id associated with the aborted transaction. (v4+)"""
    first_offset: int = 0
    """The first offset in the aborted transaction. (v4+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_qq, self.producer_id, self.first_offset)
        if version >= 12:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        producer_id, first_offset = r.unpack(_qq)
        if version >= 12:
            r.skip_tags()
        return cls(producer_id, first_offset)


@attrs.define(frozen=True, slots=True)
class PartitionData:
    """The topic partitions."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    error_code: int = 0
    """The error code, or 0 if there was no fetch error. (v0+)"""
    high_watermark: int = 0
    """The current high water mark. (v0+)"""
    last_stable_offset: int = -1
    """The last stable offset (or LSO) of the partition. This is the last offset such that the state of all
    transactional records prior to this offset have been decided (ABORTED or COMMITTED). (v4+)
    """
    log_start_offset: int = -1
    """The current log start offset. (v5+)"""
    diverging_epoch: EpochEndOffset | None = None
    """In case divergence is detected based on the `LastFetchedEpoch` and `FetchOffset` in the request, this field
    indicates the largest epoch and its end offset such that subsequent records are known to diverge. (v12+, tag
    0)
    """
    current_leader: LeaderIdAndEpoch | None = None
    """The current leader of the partition. (v12+, tag 1)"""
    snapshot_id: SnapshotId | None = None
    """In the case of fetching an offset less than the LogStartOffset, this is the end offset and epoch that should
    be used in the FetchSnapshot request. (v12+, tag 2)
    """
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    """The aborted transactions. (v4+)"""
    preferred_read_replica: int = -1
    """The preferred read replica for the consumer to use on its next fetch request. (v11+)"""
    records: memoryview | None = attrs.field(default=None, eq=records_key, repr=blob_repr)
    """The record data. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 12
        if version >= 5:
            w.pack(
                _ihqqq,
                self.partition_index,
                self.error_code,
                self.high_watermark,
                self.last_stable_offset,
                self.log_start_offset,
            )
        else:
            w.pack(_ihqq, self.partition_index, self.error_code, self.high_watermark, self.last_stable_offset)
        w.structs(self.aborted_transactions, version, flexible)
        if version >= 11:
            w.int32(self.preferred_read_replica)
        w.nullable_bytes(self.records, flexible)
        if version >= 12:
            tags: dict[int, bytes] = {}
            if self.diverging_epoch is not None:
                t = Writer()
                self.diverging_epoch.encode(t, version)
                tags[0] = t.getvalue()
            if self.current_leader is not None:
                t = Writer()
                self.current_leader.encode(t, version)
                tags[1] = t.getvalue()
            if self.snapshot_id is not None:
                t = Writer()
                self.snapshot_id.encode(t, version)
                tags[2] = t.getvalue()
            w.tagged_fields(tags)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 12
        if version >= 5:
            partition_index, error_code, high_watermark, last_stable_offset, log_start_offset = r.unpack(_ihqqq)
        else:
            partition_index, error_code, high_watermark, last_stable_offset = r.unpack(_ihqq)
            log_start_offset = -1
        diverging_epoch: EpochEndOffset | None = None
        current_leader: LeaderIdAndEpoch | None = None
        snapshot_id: SnapshotId | None = None
        aborted_transactions = r.nullable_structs(AbortedTransaction, version, flexible)
        preferred_read_replica = r.int32() if version >= 11 else -1
        records = r.nullable_view(flexible)
        if version >= 12:
            for _ in range(r.uvarint()):
                tag, end = r.tag()
                if tag == 0:
                    diverging_epoch = EpochEndOffset.decode(r, version)
                elif tag == 1:
                    current_leader = LeaderIdAndEpoch.decode(r, version)
                elif tag == 2:
                    snapshot_id = SnapshotId.decode(r, version)
                r.skip_to(end)
        return cls(
            partition_index,
            error_code,
            high_watermark,
            last_stable_offset,
            log_start_offset,
            diverging_epoch,
            current_leader,
            snapshot_id,
            aborted_transactions,
            preferred_read_replica,
            records,
        )


@attrs.define(frozen=True, slots=True)
class FetchableTopicResponse:
    """The response topics."""

    topic: str = ""
    """The topic name. (v0-12)"""
    partitions: tuple[PartitionData, ...] = ()
    """The topic partitions. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 12
        w.string(self.topic, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 12:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 12
        topic = r.string(flexible)
        partitions = r.structs(PartitionData, version, flexible)
        if version >= 12:
            r.skip_tags()
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class FetchResponse:
    """The Fetch response (API key 1), v4-12."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    error_code: int = 0
    """The top level response error code. (v7+)"""
    session_id: int = 0
    """The fetch session ID, or 0 if this is not part of a fetch session. (v7+)"""
    responses: tuple[FetchableTopicResponse, ...] = ()
    """The response topics. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 12
        if version >= 7:
            w.pack(_ihi, self.throttle_time_ms, self.error_code, self.session_id)
        else:
            w.int32(self.throttle_time_ms)
        w.structs(self.responses, version, flexible)
        if version >= 12:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 12
        if version >= 7:
            throttle_time_ms, error_code, session_id = r.unpack(_ihi)
        else:
            throttle_time_ms = r.int32()
            error_code = 0
            session_id = 0
        responses = r.structs(FetchableTopicResponse, version, flexible)
        if version >= 12:
            r.skip_tags()
        return cls(throttle_time_ms, error_code, session_id, responses)


@attrs.define(frozen=True, slots=True)
class FetchPartition:
    """The partitions to fetch."""

    partition: int = 0
    """The partition index. (v0+)"""
    current_leader_epoch: int = -1
    """The current leader epoch of the partition. (v9+)"""
    fetch_offset: int = 0
    """The message offset. (v0+)"""
    last_fetched_epoch: int = -1
    """The epoch of the last fetched record or -1 if there is none. (v12+)"""
    log_start_offset: int = -1
    """The earliest available offset of the follower replica. The field is only used when the request is sent by the
    follower. (v5+)
    """
    partition_max_bytes: int = 0
    """The maximum bytes to fetch from this partition. See KIP-74 for cases where this limit may not be honored.
    (v0+)
    """

    def encode(self, w: Writer, version: int) -> None:
        if version >= 12:
            w.pack(
                _iiqiqi,
                self.partition,
                self.current_leader_epoch,
                self.fetch_offset,
                self.last_fetched_epoch,
                self.log_start_offset,
                self.partition_max_bytes,
            )
        elif 9 <= version <= 11:
            if self.last_fetched_epoch != -1:
                raise ValueError(f"FetchPartition.last_fetched_epoch needs v12+, not v{version}")
            w.pack(
                _iiqqi,
                self.partition,
                self.current_leader_epoch,
                self.fetch_offset,
                self.log_start_offset,
                self.partition_max_bytes,
            )
        elif 5 <= version <= 8:
            if self.last_fetched_epoch != -1:
                raise ValueError(f"FetchPartition.last_fetched_epoch needs v12+, not v{version}")
            w.pack(_iqqi, self.partition, self.fetch_offset, self.log_start_offset, self.partition_max_bytes)
        else:
            if self.last_fetched_epoch != -1:
                raise ValueError(f"FetchPartition.last_fetched_epoch needs v12+, not v{version}")
            w.pack(_iqi, self.partition, self.fetch_offset, self.partition_max_bytes)
        if version >= 12:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        if version >= 12:
            partition, current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset, partition_max_bytes = (
                r.unpack(_iiqiqi)
            )
        elif 9 <= version <= 11:
            partition, current_leader_epoch, fetch_offset, log_start_offset, partition_max_bytes = r.unpack(_iiqqi)
            last_fetched_epoch = -1
        elif 5 <= version <= 8:
            partition, fetch_offset, log_start_offset, partition_max_bytes = r.unpack(_iqqi)
            current_leader_epoch = -1
            last_fetched_epoch = -1
        else:
            partition, fetch_offset, partition_max_bytes = r.unpack(_iqi)
            current_leader_epoch = -1
            last_fetched_epoch = -1
            log_start_offset = -1
        if version >= 12:
            r.skip_tags()
        return cls(
            partition, current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset, partition_max_bytes
        )


@attrs.define(frozen=True, slots=True)
class FetchTopic:
    """The topics to fetch."""

    topic: str = ""
    """The name of the topic to fetch. (v0-12)"""
    partitions: tuple[FetchPartition, ...] = ()
    """The partitions to fetch. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 12
        w.string(self.topic, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 12:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 12
        topic = r.string(flexible)
        partitions = r.structs(FetchPartition, version, flexible)
        if version >= 12:
            r.skip_tags()
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class ForgottenTopic:
    """In an incremental fetch request, the partitions to remove."""

    topic: str = ""
    """The topic name. (v7-12)"""
    partitions: tuple[int, ...] = ()
    """The partitions indexes to forget. (v7+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 12
        w.string(self.topic, flexible)
        w.int32s(self.partitions, flexible)
        if version >= 12:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 12
        topic = r.string(flexible)
        partitions = r.int32s(flexible)
        if version >= 12:
            r.skip_tags()
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class FetchRequest:
    """The Fetch request (API key 1), v4-12."""

    API_KEY: ClassVar[ApiKey] = ApiKey.FETCH
    MIN_VERSION: ClassVar[int] = 4
    MAX_VERSION: ClassVar[int] = 12
    FLEXIBLE_FROM: ClassVar[int] = 12
    RESPONSE: ClassVar[type[Response]] = FetchResponse

    cluster_id: str | None = None
    """The clusterId if known. This is used to validate metadata fetches prior to broker registration. (v12+, tag 0)"""
    replica_id: int = -1
    """The broker ID of the follower, of -1 if this request is from a consumer. (v0-14)"""
    max_wait_ms: int = 0
    """The maximum time in milliseconds to wait for the response. (v0+)"""
    min_bytes: int = 0
    """The minimum bytes to accumulate in the response. (v0+)"""
    max_bytes: int = 2147483647
    """The maximum bytes to fetch. See KIP-74 for cases where this limit may not be honored. (v3+)"""
    isolation_level: int = 0
    """This setting controls the visibility of transactional records. Using READ_UNCOMMITTED (isolation_level = 0)
    makes all records visible. With READ_COMMITTED (isolation_level = 1), non-transactional and COMMITTED
    transactional records are visible. To be more concrete, READ_COMMITTED returns all data from offsets smaller
    than the current LSO (last stable offset), and enables the inclusion of the list of aborted transactions in
    the result, which allows consumers to discard ABORTED transactional records. (v4+)
    """
    session_id: int = 0
    """The fetch session ID. (v7+)"""
    session_epoch: int = -1
    """The fetch session epoch, which is used for ordering requests in a session. (v7+)"""
    topics: tuple[FetchTopic, ...] = ()
    """The topics to fetch. (v0+)"""
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()
    """In an incremental fetch request, the partitions to remove. (v7+)"""
    rack_id: str = ""
    """Rack ID of the consumer making this request. (v11+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 12
        if version >= 7:
            w.pack(
                _iiiibii,
                self.replica_id,
                self.max_wait_ms,
                self.min_bytes,
                self.max_bytes,
                self.isolation_level,
                self.session_id,
                self.session_epoch,
            )
        else:
            w.pack(_iiiib, self.replica_id, self.max_wait_ms, self.min_bytes, self.max_bytes, self.isolation_level)
        w.structs(self.topics, version, flexible)
        if version >= 7:
            w.structs(self.forgotten_topics_data, version, flexible)
        elif self.forgotten_topics_data:
            raise ValueError(f"FetchRequest.forgotten_topics_data needs v7+, not v{version}")
        if version >= 11:
            w.string(self.rack_id, flexible)
        if version >= 12:
            tags: dict[int, bytes] = {}
            if self.cluster_id is not None:
                t = Writer()
                t.string(self.cluster_id, True)
                tags[0] = t.getvalue()
            w.tagged_fields(tags)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 12
        cluster_id: str | None = None
        if version >= 7:
            replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch = r.unpack(
                _iiiibii
            )
        else:
            replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = r.unpack(_iiiib)
            session_id = 0
            session_epoch = -1
        topics = r.structs(FetchTopic, version, flexible)
        forgotten_topics_data = r.structs(ForgottenTopic, version, flexible) if version >= 7 else ()
        rack_id = r.string(flexible) if version >= 11 else ""
        if version >= 12:
            for _ in range(r.uvarint()):
                tag, end = r.tag()
                if tag == 0:
                    cluster_id = r.nullable_string(True)
                r.skip_to(end)
        return cls(
            cluster_id,
            replica_id,
            max_wait_ms,
            min_bytes,
            max_bytes,
            isolation_level,
            session_id,
            session_epoch,
            topics,
            forgotten_topics_data,
            rack_id,
        )

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
