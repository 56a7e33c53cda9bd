"""Generated from Apache Kafka's MetadataRequest.json/MetadataResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

Metadata (API key 3) at v1-13 of the v0-13 Kafka defines; flexible from v9.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import ZERO_UUID, Reader, Writer, not_null

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "MetadataRequest",
    "MetadataRequestTopic",
    "MetadataResponse",
    "MetadataResponseBroker",
    "MetadataResponsePartition",
    "MetadataResponseTopic",
]

_oo = struct.Struct(">??")
_ooo = struct.Struct(">???")
_hii = struct.Struct(">hii")
_hiii = struct.Struct(">hiii")


@attrs.define(frozen=True, slots=True)
class MetadataResponseBroker:
    """A list of brokers present in the cluster."""

    node_id: int = 0
    """The broker ID. (v0+)"""
    host: str = ""
    """The broker hostname. (v0+)"""
    port: int = 0
    """The broker port. (v0+)"""
    rack: str | None = None
    """The rack of the broker, or null if it has not been assigned to a rack. (v1+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 9
        w.int32(self.node_id)
        w.string(self.host, flexible)
        w.int32(self.port)
        w.nullable_string(self.rack, flexible)
        if version >= 9:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 9
        node_id = r.int32()
        host = r.string(flexible)
        port = r.int32()
        rack = r.nullable_string(flexible)
        if version >= 9:
            r.skip_tags()
        return cls(node_id, host, port, rack)


@attrs.define(frozen=True, slots=True)
class MetadataResponsePartition:
    """Each partition in the topic."""

    error_code: int = 0
    """The partition error, or 0 if there was no error. (v0+)"""
    partition_index: int = 0
    """The partition index. (v0+)"""
    leader_id: int = 0
    """The ID of the leader broker. (v0+)"""
    leader_epoch: int = -1
    """The leader epoch of this partition. (v7+)"""
    replica_nodes: tuple[int, ...] = ()
    """The set of all nodes that host this partition. (v0+)"""
    isr_nodes: tuple[int, ...] = ()
    """The set of nodes that are in sync with the leader for this partition. (v0+)"""
    offline_replicas: tuple[int, ...] = ()
    """The set of offline replicas of this partition. (v5+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 9
        if version >= 7:
            w.pack(_hiii, self.error_code, self.partition_index, self.leader_id, self.leader_epoch)
        else:
            w.pack(_hii, self.error_code, self.partition_index, self.leader_id)
        w.int32s(self.replica_nodes, flexible)
        w.int32s(self.isr_nodes, flexible)
        if version >= 5:
            w.int32s(self.offline_replicas, flexible)
        if version >= 9:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 9
        if version >= 7:
            error_code, partition_index, leader_id, leader_epoch = r.unpack(_hiii)
        else:
            error_code, partition_index, leader_id = r.unpack(_hii)
            leader_epoch = -1
        replica_nodes = r.int32s(flexible)
        isr_nodes = r.int32s(flexible)
        offline_replicas = r.int32s(flexible) if version >= 5 else ()
        if version >= 9:
            r.skip_tags()
        return cls(error_code, partition_index, leader_id, leader_epoch, replica_nodes, isr_nodes, offline_replicas)


@attrs.define(frozen=True, slots=True)
class MetadataResponseTopic:
    """Each topic in the response."""

    error_code: int = 0
    """The topic error, or 0 if there was no error. (v0+)"""
    name: str | None = ""
    """The topic name. Null for non-existing topics queried by ID. This is never null when ErrorCode is zero. One of
    Name and TopicId is always populated. (v0+)
    """
    topic_id: uuid.UUID = ZERO_UUID
    """The topic id. Zero for non-existing topics queried by name. This is never zero when ErrorCode is zero. One of
    Name and TopicId is always populated. (v10+)
    """
    is_internal: bool = False
    """True if the topic is internal. (v1+)"""
    partitions: tuple[MetadataResponsePartition, ...] = ()
    """Each partition in the topic. (v0+)"""
    topic_authorized_operations: int = -2147483648
    """32-bit bitfield to represent authorized operations for this topic. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 9
        w.int16(self.error_code)
        if version >= 12:
            w.nullable_string(self.name, True)
        else:
            w.string(not_null(self.name, "MetadataResponseTopic.name", version, "12+"), flexible)
        if version >= 10:
            w.uuid(self.topic_id)
        w.boolean(self.is_internal)
        w.structs(self.partitions, version, flexible)
        if version >= 8:
            w.int32(self.topic_authorized_operations)
        if version >= 9:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 9
        error_code = r.int16()
        name = r.nullable_string(flexible)
        topic_id = r.uuid() if version >= 10 else ZERO_UUID
        is_internal = r.boolean()
        partitions = r.structs(MetadataResponsePartition, version, flexible)
        topic_authorized_operations = r.int32() if version >= 8 else -2147483648
        if version >= 9:
            r.skip_tags()
        return cls(error_code, name, topic_id, is_internal, partitions, topic_authorized_operations)


@attrs.define(frozen=True, slots=True)
class MetadataResponse:
    """The Metadata response (API key 3), v1-13."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v3+)
    """
    brokers: tuple[MetadataResponseBroker, ...] = ()
    """A list of brokers present in the cluster. (v0+)"""
    cluster_id: str | None = None
    """The cluster ID that responding broker belongs to. (v2+)"""
    controller_id: int = -1
    """The ID of the controller broker. (v1+)"""
    topics: tuple[MetadataResponseTopic, ...] = ()
    """Each topic in the response. (v0+)"""
    cluster_authorized_operations: int = -2147483648
    """32-bit bitfield to represent authorized operations for this cluster. (v8-10)"""
    error_code: int = 0
    """The top-level error code, or 0 if there was no error. (v13+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 9
        if version >= 3:
            w.int32(self.throttle_time_ms)
        w.structs(self.brokers, version, flexible)
        if version >= 2:
            w.nullable_string(self.cluster_id, flexible)
        w.int32(self.controller_id)
        w.structs(self.topics, version, flexible)
        if version >= 13:
            w.int16(self.error_code)
        elif 8 <= version <= 10:
            w.int32(self.cluster_authorized_operations)
        if version >= 9:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 9
        throttle_time_ms = r.int32() if version >= 3 else 0
        brokers = r.structs(MetadataResponseBroker, version, flexible)
        cluster_id = r.nullable_string(flexible) if version >= 2 else None
        controller_id = r.int32()
        topics = r.structs(MetadataResponseTopic, version, flexible)
        if version >= 13:
            error_code = r.int16()
            cluster_authorized_operations = -2147483648
        elif version <= 7 or 11 <= version <= 12:
            cluster_authorized_operations = -2147483648
            error_code = 0
        else:
            cluster_authorized_operations = r.int32()
            error_code = 0
        if version >= 9:
            r.skip_tags()
        return cls(
            throttle_time_ms, brokers, cluster_id, controller_id, topics, cluster_authorized_operations, error_code
        )


@attrs.define(frozen=True, slots=True)
class MetadataRequestTopic:
    """The topics to fetch metadata for."""

    topic_id: uuid.UUID = ZERO_UUID
    """The topic id. (v10+)"""
    name: str | None = ""
    """The topic name. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 9
        if version >= 10:
            w.uuid(self.topic_id)
        if version >= 10:
            w.nullable_string(self.name, True)
        else:
            w.string(not_null(self.name, "MetadataRequestTopic.name", version, "10+"), flexible)
        if version >= 9:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 9
        topic_id = r.uuid() if version >= 10 else ZERO_UUID
        name = r.nullable_string(flexible)
        if version >= 9:
            r.skip_tags()
        return cls(topic_id, name)


@attrs.define(frozen=True, slots=True)
class MetadataRequest:
    """The Metadata request (API key 3), v1-13."""

    API_KEY: ClassVar[ApiKey] = ApiKey.METADATA
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 13
    FLEXIBLE_FROM: ClassVar[int] = 9
    RESPONSE: ClassVar[type[Response]] = MetadataResponse

    topics: tuple[MetadataRequestTopic, ...] | None = None
    """The topics to fetch metadata for. (v0+)"""
    allow_auto_topic_creation: bool = True
    """If this is true, the broker may auto-create topics that we requested which do not already exist, if it is
    configured to do so. (v4+)
    """
    include_cluster_authorized_operations: bool = False
    """Whether to include cluster authorized operations. (v8-10)"""
    include_topic_authorized_operations: bool = False
    """Whether to include topic authorized operations. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 9
        w.structs(self.topics, version, flexible)
        if version >= 11:
            if self.include_cluster_authorized_operations:
                raise ValueError(f"MetadataRequest.include_cluster_authorized_operations needs v8-10, not v{version}")
            w.pack(_oo, self.allow_auto_topic_creation, self.include_topic_authorized_operations)
        elif 8 <= version <= 10:
            w.pack(
                _ooo,
                self.allow_auto_topic_creation,
                self.include_cluster_authorized_operations,
                self.include_topic_authorized_operations,
            )
        elif 4 <= version <= 7:
            if self.include_cluster_authorized_operations:
                raise ValueError(f"MetadataRequest.include_cluster_authorized_operations needs v8-10, not v{version}")
            if self.include_topic_authorized_operations:
                raise ValueError(f"MetadataRequest.include_topic_authorized_operations needs v8+, not v{version}")
            w.boolean(self.allow_auto_topic_creation)
        else:
            if not self.allow_auto_topic_creation:
                raise ValueError(f"MetadataRequest.allow_auto_topic_creation needs v4+, not v{version}")
            if self.include_cluster_authorized_operations:
                raise ValueError(f"MetadataRequest.include_cluster_authorized_operations needs v8-10, not v{version}")
            if self.include_topic_authorized_operations:
                raise ValueError(f"MetadataRequest.include_topic_authorized_operations needs v8+, not v{version}")
        if version >= 9:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 9
        topics = r.nullable_structs(MetadataRequestTopic, version, flexible)
        if version >= 11:
            allow_auto_topic_creation, include_topic_authorized_operations = r.unpack(_oo)
            include_cluster_authorized_operations = False
        elif 8 <= version <= 10:
            allow_auto_topic_creation, include_cluster_authorized_operations, include_topic_authorized_operations = (
                r.unpack(_ooo)
            )
        elif 4 <= version <= 7:
            allow_auto_topic_creation = r.boolean()
            include_cluster_authorized_operations = False
            include_topic_authorized_operations = False
        else:
            allow_auto_topic_creation = True
            include_cluster_authorized_operations = False
            include_topic_authorized_operations = False
        if version >= 9:
            r.skip_tags()
        return cls(
            topics,
            allow_auto_topic_creation,
            include_cluster_authorized_operations,
            include_topic_authorized_operations,
        )

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
