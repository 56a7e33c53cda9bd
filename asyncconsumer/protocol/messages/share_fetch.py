"""Generated from Apache Kafka's ShareFetchRequest.json/ShareFetchResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

ShareFetch (API key 78) at v1-2 of the v1-2 Kafka defines; flexible from v0.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import EMPTY_VIEW, ZERO_UUID, Reader, Writer, blob_repr, records_key

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "AcknowledgementBatch",
    "AcquiredRecords",
    "FetchPartition",
    "FetchTopic",
    "ForgottenTopic",
    "LeaderIdAndEpoch",
    "NodeEndpoint",
    "PartitionData",
    "ShareFetchRequest",
    "ShareFetchResponse",
    "ShareFetchableTopicResponse",
]

_ih = struct.Struct(">ih")
_ii = struct.Struct(">ii")
_iiiiii = struct.Struct(">iiiiii")
_iiiiiibo = struct.Struct(">iiiiiib?")
_qq = struct.Struct(">qq")
_qqh = struct.Struct(">qqh")


@attrs.define(frozen=True, slots=True)
class LeaderIdAndEpoch:
    """The current leader of the partition."""

    leader_id: int = 0
    """The ID of the current leader or -1 if the leader is unknown. (v0+)"""
    leader_epoch: int = 0
    """The latest known leader epoch. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ii, self.leader_id, self.leader_epoch)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        leader_id, leader_epoch = r.unpack(_ii)
        r.skip_tags()
        return cls(leader_id, leader_epoch)


@attrs.define(frozen=True, slots=True)
class AcquiredRecords:
    """The acquired records."""

    first_offset: int = 0
    """The earliest offset in this batch of acquired records. (v0+)"""
    last_offset: int = 0
    """The last offset of this batch of acquired records. (v0+)"""
    delivery_count: int = 0
    """The delivery count of this batch of acquired records. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_qqh, self.first_offset, self.last_offset, self.delivery_count)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        first_offset, last_offset, delivery_count = r.unpack(_qqh)
        r.skip_tags()
        return cls(first_offset, last_offset, delivery_count)


@attrs.define(frozen=True, slots=True)
class PartitionData:
    """The topic partitions."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    error_code: int = 0
    """The fetch error code, or 0 if there was no fetch error. (v0+)"""
    error_message: str | None = None
    """The fetch error message, or null if there was no fetch error. (v0+)"""
    acknowledge_error_code: int = 0
    """The acknowledge error code, or 0 if there was no acknowledge error. (v0+)"""
    acknowledge_error_message: str | None = None
    """The acknowledge error message, or null if there was no acknowledge error. (v0+)"""
    current_leader: LeaderIdAndEpoch = attrs.field(factory=LeaderIdAndEpoch)
    """The current leader of the partition. (v0+)"""
    records: memoryview = attrs.field(default=EMPTY_VIEW, eq=records_key, repr=blob_repr)
    """The record data. (v0+)"""
    acquired_records: tuple[AcquiredRecords, ...] = ()
    """The acquired records. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.partition_index, self.error_code)
        w.nullable_string(self.error_message, True)
        w.int16(self.acknowledge_error_code)
        w.nullable_string(self.acknowledge_error_message, True)
        self.current_leader.encode(w, version)
        w.bytes_(self.records, True)
        w.structs(self.acquired_records, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index, error_code = r.unpack(_ih)
        error_message = r.nullable_string(True)
        acknowledge_error_code = r.int16()
        acknowledge_error_message = r.nullable_string(True)
        current_leader = LeaderIdAndEpoch.decode(r, version)
        records = r.view(True)
        acquired_records = r.structs(AcquiredRecords, version, True)
        r.skip_tags()
        return cls(
            partition_index,
            error_code,
            error_message,
            acknowledge_error_code,
            acknowledge_error_message,
            current_leader,
            records,
            acquired_records,
        )


@attrs.define(frozen=True, slots=True)
class ShareFetchableTopicResponse:
    """The response topics."""

    topic_id: uuid.UUID = ZERO_UUID
    """The unique topic ID. (v0+)"""
    partitions: tuple[PartitionData, ...] = ()
    """The topic partitions. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.uuid(self.topic_id)
        w.structs(self.partitions, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_id = r.uuid()
        partitions = r.structs(PartitionData, version, True)
        r.skip_tags()
        return cls(topic_id, partitions)


@attrs.define(frozen=True, slots=True)
class NodeEndpoint:
    """Endpoints for all current leaders enumerated in PartitionData with error NOT_LEADER_OR_FOLLOWER."""

    node_id: int = 0
    """The ID of the associated node. (v0+)"""
    host: str = ""
    """The node's hostname. (v0+)"""
    port: int = 0
    """The node's port. (v0+)"""
    rack: str | None = None
    """The rack of the node, or null if it has not been assigned to a rack. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.node_id)
        w.string(self.host, True)
        w.int32(self.port)
        w.nullable_string(self.rack, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        node_id = r.int32()
        host = r.string(True)
        port = r.int32()
        rack = r.nullable_string(True)
        r.skip_tags()
        return cls(node_id, host, port, rack)


@attrs.define(frozen=True, slots=True)
class ShareFetchResponse:
    """The ShareFetch response (API key 78), v1-2."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    error_code: int = 0
    """The top-level response error code. (v0+)"""
    error_message: str | None = None
    """The top-level error message, or null if there was no error. (v0+)"""
    acquisition_lock_timeout_ms: int = 0
    """The time in milliseconds for which the acquired records are locked. (v1+)"""
    responses: tuple[ShareFetchableTopicResponse, ...] = ()
    """The response topics. (v0+)"""
    node_endpoints: tuple[NodeEndpoint, ...] = ()
    """Endpoints for all current leaders enumerated in PartitionData with error NOT_LEADER_OR_FOLLOWER. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        w.nullable_string(self.error_message, True)
        w.int32(self.acquisition_lock_timeout_ms)
        w.structs(self.responses, version, True)
        w.structs(self.node_endpoints, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code = r.unpack(_ih)
        error_message = r.nullable_string(True)
        acquisition_lock_timeout_ms = r.int32()
        responses = r.structs(ShareFetchableTopicResponse, version, True)
        node_endpoints = r.structs(NodeEndpoint, version, True)
        r.skip_tags()
        return cls(throttle_time_ms, error_code, error_message, acquisition_lock_timeout_ms, responses, node_endpoints)


@attrs.define(frozen=True, slots=True)
class AcknowledgementBatch:
    """Record batches to acknowledge."""

    first_offset: int = 0
    """First offset of batch of records to acknowledge. (v0+)"""
    last_offset: int = 0
    """Last offset (inclusive) of batch of records to acknowledge. (v0+)"""
    acknowledge_types: tuple[int, ...] = ()
    """Array of acknowledge types - 0:Gap,1:Accept,2:Release,3:Reject,4:Renew. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_qq, self.first_offset, self.last_offset)
        w.array(self.acknowledge_types, True, Writer.int8)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        first_offset, last_offset = r.unpack(_qq)
        acknowledge_types = r.array(True, Reader.int8)
        r.skip_tags()
        return cls(first_offset, last_offset, acknowledge_types)


@attrs.define(frozen=True, slots=True)
class FetchPartition:
    """The partitions to fetch."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    acknowledgement_batches: tuple[AcknowledgementBatch, ...] = ()
    """Record batches to acknowledge. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.partition_index)
        w.structs(self.acknowledgement_batches, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index = r.int32()
        acknowledgement_batches = r.structs(AcknowledgementBatch, version, True)
        r.skip_tags()
        return cls(partition_index, acknowledgement_batches)


@attrs.define(frozen=True, slots=True)
class FetchTopic:
    """The topics to fetch."""

    topic_id: uuid.UUID = ZERO_UUID
    """The unique topic ID. (v0+)"""
    partitions: tuple[FetchPartition, ...] = ()
    """The partitions to fetch. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.uuid(self.topic_id)
        w.structs(self.partitions, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_id = r.uuid()
        partitions = r.structs(FetchPartition, version, True)
        r.skip_tags()
        return cls(topic_id, partitions)


@attrs.define(frozen=True, slots=True)
class ForgottenTopic:
    """The partitions to remove from this share session."""

    topic_id: uuid.UUID = ZERO_UUID
    """The unique topic ID. (v0+)"""
    partitions: tuple[int, ...] = ()
    """The partitions indexes to forget. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.uuid(self.topic_id)
        w.int32s(self.partitions, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_id = r.uuid()
        partitions = r.int32s(True)
        r.skip_tags()
        return cls(topic_id, partitions)


@attrs.define(frozen=True, slots=True)
class ShareFetchRequest:
    """The ShareFetch request (API key 78), v1-2."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SHARE_FETCH
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 2
    FLEXIBLE_FROM: ClassVar[int] = 0
    RESPONSE: ClassVar[type[Response]] = ShareFetchResponse

    group_id: str | None = None
    """The group identifier. (v0+)"""
    member_id: str | None = ""
    """The member ID. (v0+)"""
    share_session_epoch: int = 0
    """The current share session epoch: 0 to open a share session; -1 to close it; otherwise increments for
    consecutive requests. (v0+)
    """
    max_wait_ms: int = 0
    """The maximum time in milliseconds to wait for the response. (v0+)"""
    min_bytes: int = 0
    """The minimum bytes to accumulate in the response. (v0+)"""
    max_bytes: int = 2147483647
    """The maximum bytes to fetch. See KIP-74 for cases where this limit may not be honored. (v0+)"""
    max_records: int = 0
    """The maximum number of records to fetch. This limit can be exceeded for alignment of batch boundaries. (v1+)"""
    batch_size: int = 0
    """The optimal number of records for batches of acquired records and acknowledgements. (v1+)"""
    share_acquire_mode: int = 0
    """The acquire mode to control the fetch behavior - 0:batch-optimized,1:record-limit. (v2+)"""
    is_renew_ack: bool = False
    """Whether Renew type acknowledgements present in AcknowledgementBatches. (v2+)"""
    topics: tuple[FetchTopic, ...] = ()
    """The topics to fetch. (v0+)"""
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()
    """The partitions to remove from this share session. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.nullable_string(self.group_id, True)
        w.nullable_string(self.member_id, True)
        if version >= 2:
            w.pack(
                _iiiiiibo,
                self.share_session_epoch,
                self.max_wait_ms,
                self.min_bytes,
                self.max_bytes,
                self.max_records,
                self.batch_size,
                self.share_acquire_mode,
                self.is_renew_ack,
            )
        else:
            if self.is_renew_ack:
                raise ValueError(f"ShareFetchRequest.is_renew_ack needs v2+, not v{version}")
            w.pack(
                _iiiiii,
                self.share_session_epoch,
                self.max_wait_ms,
                self.min_bytes,
                self.max_bytes,
                self.max_records,
                self.batch_size,
            )
        w.structs(self.topics, version, True)
        w.structs(self.forgotten_topics_data, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_id = r.nullable_string(True)
        member_id = r.nullable_string(True)
        if version >= 2:
            (
                share_session_epoch,
                max_wait_ms,
                min_bytes,
                max_bytes,
                max_records,
                batch_size,
                share_acquire_mode,
                is_renew_ack,
            ) = r.unpack(_iiiiiibo)
        else:
            share_session_epoch, max_wait_ms, min_bytes, max_bytes, max_records, batch_size = r.unpack(_iiiiii)
            share_acquire_mode = 0
            is_renew_ack = False
        topics = r.structs(FetchTopic, version, True)
        forgotten_topics_data = r.structs(ForgottenTopic, version, True)
        r.skip_tags()
        return cls(
            group_id,
            member_id,
            share_session_epoch,
            max_wait_ms,
            min_bytes,
            max_bytes,
            max_records,
            batch_size,
            share_acquire_mode,
            is_renew_ack,
            topics,
            forgotten_topics_data,
        )

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
