"""Metadata (API key 3), versions 1-12: brokers, topics, partitions and their leaders.

Version history that matters on the wire (from Kafka's MetadataRequest/MetadataResponse.json):
v1 rack, controller id, is_internal and the null-array "all topics" request; v2 cluster id; v3 throttle time;
v4 AllowAutoTopicCreation; v5 offline replicas; v7 leader epoch; v8 authorized operations; v9 flexible;
v10 topic ids (request topics carry TopicId + Name); v11 drops the cluster authorized operations;
v12 topic names in the response may be null.
"""

from __future__ import annotations

import uuid
from typing import ClassVar, Self

import attrs

from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import ZERO_UUID, Reader, Writer

__all__ = [
    "MetadataBroker",
    "MetadataPartition",
    "MetadataRequest",
    "MetadataResponse",
    "MetadataTopic",
]

_FLEXIBLE_FROM = 9
_NO_AUTHORIZED_OPERATIONS = -2147483648  # INT32_MIN: "not requested"


@attrs.define(frozen=True, slots=True)
class MetadataBroker:
    """One broker of the cluster: its node id and where to reach it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int32(self.node_id)
        w.str_(self.host, flexible)
        w.int32(self.port)
        if version >= 1:
            w.nstr(self.rack, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        node_id = r.int32()
        host = r.str_(flexible)
        port = r.int32()
        rack = r.nstr(flexible) if version >= 1 else None
        r.end_struct(flexible)
        return cls(node_id, host, port, rack)


@attrs.define(frozen=True, slots=True)
class MetadataPartition:
    """One partition of a topic: its leader, leader epoch and replica sets."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int = -1
    replica_nodes: tuple[int, ...] = ()
    isr_nodes: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int16(self.error_code)
        w.int32(self.partition_index)
        w.int32(self.leader_id)
        if version >= 7:
            w.int32(self.leader_epoch)
        w.int32s(self.replica_nodes, flexible)
        w.int32s(self.isr_nodes, flexible)
        if version >= 5:
            w.int32s(self.offline_replicas, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        error_code = r.int16()
        partition_index = r.int32()
        leader_id = r.int32()
        leader_epoch = r.int32() if version >= 7 else -1
        replica_nodes = r.int32s(flexible)
        isr_nodes = r.int32s(flexible)
        offline_replicas = r.int32s(flexible) if version >= 5 else ()
        r.end_struct(flexible)
        return cls(error_code, partition_index, leader_id, leader_epoch, replica_nodes, isr_nodes, offline_replicas)


@attrs.define(frozen=True, slots=True)
class MetadataTopic:
    """One topic of a metadata response (``name`` may be null from v12 for topics asked for by id)."""

    error_code: int
    name: str | None
    partitions: tuple[MetadataPartition, ...]
    topic_id: uuid.UUID = ZERO_UUID
    is_internal: bool = False
    topic_authorized_operations: int = _NO_AUTHORIZED_OPERATIONS

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int16(self.error_code)
        w.nstr(self.name, flexible)  # null is only valid from v12; written as-is before (our decode accepts it)
        if version >= 10:
            w.uuid(self.topic_id)
        if version >= 1:
            w.boolean(self.is_internal)
        w.structs(self.partitions, version, flexible)
        if version >= 8:
            w.int32(self.topic_authorized_operations)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        error_code = r.int16()
        name = r.nstr(flexible)  # nullable only from v12, but a lenient read costs nothing
        topic_id = r.uuid() if version >= 10 else ZERO_UUID
        is_internal = r.boolean() if version >= 1 else False
        partitions = r.structs(MetadataPartition, version, flexible)
        authorized = r.int32() if version >= 8 else _NO_AUTHORIZED_OPERATIONS
        r.end_struct(flexible)
        return cls(error_code, name, partitions, topic_id, is_internal, authorized)


@attrs.define(frozen=True, slots=True)
class MetadataResponse:
    """The cluster's brokers and controller, and the requested topics with their partitions."""

    brokers: tuple[MetadataBroker, ...]
    topics: tuple[MetadataTopic, ...]
    cluster_id: str | None = None
    controller_id: int = -1
    throttle_time_ms: int = 0
    cluster_authorized_operations: int = _NO_AUTHORIZED_OPERATIONS

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        if version >= 3:
            w.int32(self.throttle_time_ms)
        w.structs(self.brokers, version, flexible)
        if version >= 2:
            w.nstr(self.cluster_id, flexible)
        if version >= 1:
            w.int32(self.controller_id)
        w.structs(self.topics, version, flexible)
        if 8 <= version <= 10:
            w.int32(self.cluster_authorized_operations)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        throttle_time_ms = r.int32() if version >= 3 else 0
        brokers = r.structs(MetadataBroker, version, flexible)
        cluster_id = r.nstr(flexible) if version >= 2 else None
        controller_id = r.int32() if version >= 1 else -1
        topics = r.structs(MetadataTopic, version, flexible)
        authorized = r.int32() if 8 <= version <= 10 else _NO_AUTHORIZED_OPERATIONS
        r.end_struct(flexible)
        return cls(brokers, topics, cluster_id, controller_id, throttle_time_ms, authorized)


@attrs.define(frozen=True, slots=True)
class MetadataRequest:
    """Asks for metadata of ``topics`` (``None``: every topic; ``()``: brokers only)."""

    API_KEY: ClassVar[ApiKey] = ApiKey.METADATA
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 12
    FLEXIBLE_FROM: ClassVar[int] = _FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = MetadataResponse

    topics: tuple[str, ...] | None
    allow_auto_topic_creation: bool = False
    include_topic_authorized_operations: bool = False

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        topics = self.topics
        w.array_len(None if topics is None else len(topics), flexible)
        for name in topics or ():
            if version >= 10:
                w.uuid(ZERO_UUID)  # TopicId: we always ask by name
            w.str_(name, flexible)
            w.end_struct(flexible)
        if version >= 4:
            w.boolean(self.allow_auto_topic_creation)
        if 8 <= version <= 10:
            w.boolean(False)  # IncludeClusterAuthorizedOperations: never asked for
        if version >= 8:
            w.boolean(self.include_topic_authorized_operations)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM

        def topic(rr: Reader) -> str:
            if version >= 10:
                rr.uuid()
            name = rr.str_(flexible)  # a null name (ask by id, v10+) is not something we model
            rr.end_struct(flexible)
            return name

        topics = r.nullable_array(flexible, topic)
        allow_auto = r.boolean() if version >= 4 else False
        if 8 <= version <= 10:
            r.boolean()
        include_topic_ops = r.boolean() if version >= 8 else False
        r.end_struct(flexible)
        return cls(None if topics is None else tuple(topics), allow_auto, include_topic_ops)
