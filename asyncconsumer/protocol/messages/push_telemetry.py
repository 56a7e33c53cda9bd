"""Generated from Apache Kafka's PushTelemetryRequest.json/PushTelemetryResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

PushTelemetry (API key 72) at v0 of the v0 Kafka defines; flexible from v0.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import ZERO_UUID, Reader, Writer, blob_repr

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "PushTelemetryRequest",
    "PushTelemetryResponse",
]

_iob = struct.Struct(">i?b")
_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class PushTelemetryResponse:
    """The PushTelemetry response (API key 72), v0."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code = r.unpack(_ih)
        r.skip_tags()
        return cls(throttle_time_ms, error_code)


@attrs.define(frozen=True, slots=True)
class PushTelemetryRequest:
    """The PushTelemetry request (API key 72), v0."""

    API_KEY: ClassVar[ApiKey] = ApiKey.PUSH_TELEMETRY
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    FLEXIBLE_FROM: ClassVar[int] = 0
    RESPONSE: ClassVar[type[Response]] = PushTelemetryResponse

    client_instance_id: uuid.UUID = ZERO_UUID
    """Unique id for this client instance. (v0+)"""
    subscription_id: int = 0
    """Unique identifier for the current subscription. (v0+)"""
    terminating: bool = False
    """Client is terminating the connection. (v0+)"""
    compression_type: int = 0
    """Compression codec used to compress the metrics. (v0+)"""
    metrics: bytes = attrs.field(default=b"", repr=blob_repr)
    """Metrics encoded in OpenTelemetry MetricsData v1 protobuf format. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.uuid(self.client_instance_id)
        w.pack(_iob, self.subscription_id, self.terminating, self.compression_type)
        w.bytes_(self.metrics, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        client_instance_id = r.uuid()
        subscription_id, terminating, compression_type = r.unpack(_iob)
        metrics = r.bytes_(True)
        r.skip_tags()
        return cls(client_instance_id, subscription_id, terminating, compression_type, metrics)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
