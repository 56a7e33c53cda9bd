"""Generated from Apache Kafka's ShareAcknowledgeRequest.json/ShareAcknowledgeResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

ShareAcknowledge (API key 79) at v1-2 of the v1-2 Kafka defines; flexible from v0.
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
    "AcknowledgePartition",
    "AcknowledgeTopic",
    "AcknowledgementBatch",
    "LeaderIdAndEpoch",
    "NodeEndpoint",
    "PartitionData",
    "ShareAcknowledgeRequest",
    "ShareAcknowledgeResponse",
    "ShareAcknowledgeTopicResponse",
]

_io = struct.Struct(">i?")
_ih = struct.Struct(">ih")
_ii = struct.Struct(">ii")
_qq = struct.Struct(">qq")


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
class PartitionData:
    """The topic partitions."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    error_message: str | None = None
    """The error message, or null if there was no error. (v0+)"""
    current_leader: LeaderIdAndEpoch = attrs.field(factory=LeaderIdAndEpoch)
    """The current leader of the partition. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.partition_index, self.error_code)
        w.nullable_string(self.error_message, True)
        self.current_leader.encode(w, version)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index, error_code = r.unpack(_ih)
        error_message = r.nullable_string(True)
        current_leader = LeaderIdAndEpoch.decode(r, version)
        r.skip_tags()
        return cls(partition_index, error_code, error_message, current_leader)


@attrs.define(frozen=True, slots=True)
class ShareAcknowledgeTopicResponse:
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
class ShareAcknowledgeResponse:
    """The ShareAcknowledge response (API key 79), v1-2."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    error_code: int = 0
    """The top level response error code. (v0+)"""
    error_message: str | None = None
    """The top-level error message, or null if there was no error. (v0+)"""
    acquisition_lock_timeout_ms: int = 0
    """The time in milliseconds for which the acquired records are locked. (v2+)"""
    responses: tuple[ShareAcknowledgeTopicResponse, ...] = ()
    """The response topics. (v0+)"""
    node_endpoints: tuple[NodeEndpoint, ...] = ()
    """Endpoints for all current leaders enumerated in PartitionData with error NOT_LEADER_OR_FOLLOWER. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        w.nullable_string(self.error_message, True)
        if version >= 2:
            w.int32(self.acquisition_lock_timeout_ms)
        w.structs(self.responses, version, True)
        w.structs(self.node_endpoints, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code = r.unpack(_ih)
        error_message = r.nullable_string(True)
        acquisition_lock_timeout_ms = r.int32() if version >= 2 else 0
        responses = r.structs(ShareAcknowledgeTopicResponse, version, True)
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
class AcknowledgePartition:
    """The partitions containing records to acknowledge."""

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
class AcknowledgeTopic:
    """The topics containing records to acknowledge."""

    topic_id: uuid.UUID = ZERO_UUID
    """The unique topic ID. (v0+)"""
    partitions: tuple[AcknowledgePartition, ...] = ()
    """The partitions containing records to acknowledge. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.uuid(self.topic_id)
        w.structs(self.partitions, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_id = r.uuid()
        partitions = r.structs(AcknowledgePartition, version, True)
        r.skip_tags()
        return cls(topic_id, partitions)


@attrs.define(frozen=True, slots=True)
class ShareAcknowledgeRequest:
    """The ShareAcknowledge request (API key 79), v1-2."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SHARE_ACKNOWLEDGE
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 2
    FLEXIBLE_FROM: ClassVar[int] = 0
    RESPONSE: ClassVar[type[Response]] = ShareAcknowledgeResponse

    group_id: str | None = None
    """The group identifier. (v0+)"""
    member_id: str | None = ""
    """The member ID. (v0+)"""
    share_session_epoch: int = 0
    """The current share session epoch: 0 to open a share session; -1 to close it; otherwise increments for
    consecutive requests. (v0+)
    """
    is_renew_ack: bool = False
    """Whether Renew type acknowledgements present in AcknowledgementBatches. (v2+)"""
    topics: tuple[AcknowledgeTopic, ...] = ()
    """The topics containing records to acknowledge. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.nullable_string(self.group_id, True)
        w.nullable_string(self.member_id, True)
        if version >= 2:
            w.pack(_io, self.share_session_epoch, self.is_renew_ack)
        else:
            if self.is_renew_ack:
                raise ValueError(f"ShareAcknowledgeRequest.is_renew_ack needs v2+, not v{version}")
            w.int32(self.share_session_epoch)
        w.structs(self.topics, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_id = r.nullable_string(True)
        member_id = r.nullable_string(True)
        if version >= 2:
            share_session_epoch, is_renew_ack = r.unpack(_io)
        else:
            share_session_epoch = r.int32()
            is_renew_ack = False
        topics = r.structs(AcknowledgeTopic, version, True)
        r.skip_tags()
        return cls(group_id, member_id, share_session_epoch, is_renew_ack, topics)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
