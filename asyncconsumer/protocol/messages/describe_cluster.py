"""Generated from Apache Kafka's DescribeClusterRequest.json/DescribeClusterResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

DescribeCluster (API key 60) at v0-2 of the v0-2 Kafka defines; flexible from v0.
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
    "DescribeClusterBroker",
    "DescribeClusterRequest",
    "DescribeClusterResponse",
]

_ob = struct.Struct(">?b")
_obo = struct.Struct(">?b?")
_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class DescribeClusterBroker:
    """Each broker in the response."""

    broker_id: int = 0
    """The broker ID. (v0+)"""
    host: str = ""
    """The broker hostname. (v0+)"""
    port: int = 0
    """The broker port. (v0+)"""
    rack: str | None = None
    """The rack of the broker, or null if it has not been assigned to a rack. (v0+)"""
    is_fenced: bool = False
    """Whether the broker is fenced (v2+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.broker_id)
        w.string(self.host, True)
        w.int32(self.port)
        w.nullable_string(self.rack, True)
        if version >= 2:
            w.boolean(self.is_fenced)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        broker_id = r.int32()
        host = r.string(True)
        port = r.int32()
        rack = r.nullable_string(True)
        is_fenced = r.boolean() if version >= 2 else False
        r.skip_tags()
        return cls(broker_id, host, port, rack, is_fenced)


@attrs.define(frozen=True, slots=True)
class DescribeClusterResponse:
    """The DescribeCluster response (API key 60), v0-2."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    error_code: int = 0
    """The top-level error code, or 0 if there was no error. (v0+)"""
    error_message: str | None = None
    """The top-level error message, or null if there was no error. (v0+)"""
    endpoint_type: int = 1
    """The endpoint type that was described. 1=brokers, 2=controllers. (v1+)"""
    cluster_id: str = ""
    """The cluster ID that responding broker belongs to. (v0+)"""
    controller_id: int = -1
    """The ID of the controller. When handled by a controller, returns the current voter leader ID. When handled by a
    broker, returns a random alive broker ID as a fallback. (v0+)
    """
    brokers: tuple[DescribeClusterBroker, ...] = ()
    """Each broker in the response. (v0+)"""
    cluster_authorized_operations: int = -2147483648
    """32-bit bitfield to represent authorized operations for this cluster. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        w.nullable_string(self.error_message, True)
        if version >= 1:
            w.int8(self.endpoint_type)
        w.string(self.cluster_id, True)
        w.int32(self.controller_id)
        w.structs(self.brokers, version, True)
        w.int32(self.cluster_authorized_operations)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code = r.unpack(_ih)
        error_message = r.nullable_string(True)
        endpoint_type = r.int8() if version >= 1 else 1
        cluster_id = r.string(True)
        controller_id = r.int32()
        brokers = r.structs(DescribeClusterBroker, version, True)
        cluster_authorized_operations = r.int32()
        r.skip_tags()
        return cls(
            throttle_time_ms,
            error_code,
            error_message,
            endpoint_type,
            cluster_id,
            controller_id,
            brokers,
            cluster_authorized_operations,
        )


@attrs.define(frozen=True, slots=True)
class DescribeClusterRequest:
    """The DescribeCluster request (API key 60), v0-2."""

    API_KEY: ClassVar[ApiKey] = ApiKey.DESCRIBE_CLUSTER
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 2
    FLEXIBLE_FROM: ClassVar[int] = 0
    RESPONSE: ClassVar[type[Response]] = DescribeClusterResponse

    include_cluster_authorized_operations: bool = False
    """Whether to include cluster authorized operations. (v0+)"""
    endpoint_type: int = 1
    """The endpoint type to describe. 1=brokers, 2=controllers. (v1+)"""
    include_fenced_brokers: bool = False
    """Whether to include fenced brokers when listing brokers. (v2+)"""

    def encode(self, w: Writer, version: int) -> None:
        if version >= 2:
            w.pack(_obo, self.include_cluster_authorized_operations, self.endpoint_type, self.include_fenced_brokers)
        elif version == 1:
            if self.include_fenced_brokers:
                raise ValueError(f"DescribeClusterRequest.include_fenced_brokers needs v2+, not v{version}")
            w.pack(_ob, self.include_cluster_authorized_operations, self.endpoint_type)
        else:
            if self.endpoint_type != 1:
                raise ValueError(f"DescribeClusterRequest.endpoint_type needs v1+, not v{version}")
            if self.include_fenced_brokers:
                raise ValueError(f"DescribeClusterRequest.include_fenced_brokers needs v2+, not v{version}")
            w.boolean(self.include_cluster_authorized_operations)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        if version >= 2:
            include_cluster_authorized_operations, endpoint_type, include_fenced_brokers = r.unpack(_obo)
        elif version == 1:
            include_cluster_authorized_operations, endpoint_type = r.unpack(_ob)
            include_fenced_brokers = False
        else:
            include_cluster_authorized_operations = r.boolean()
            endpoint_type = 1
            include_fenced_brokers = False
        r.skip_tags()
        return cls(include_cluster_authorized_operations, endpoint_type, include_fenced_brokers)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
