"""Generated from Apache Kafka's GetTelemetrySubscriptionsRequest.json/GetTelemetrySubscriptionsResponse.json
(kafka-clients 4.4.0) by scripts/gen_protocol.py; do not edit.

GetTelemetrySubscriptions (API key 71) at v0 of the v0 Kafka defines; flexible from v0.
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
    "GetTelemetrySubscriptionsRequest",
    "GetTelemetrySubscriptionsResponse",
]

_ih = struct.Struct(">ih")
_iio = struct.Struct(">ii?")


@attrs.define(frozen=True, slots=True)
class GetTelemetrySubscriptionsResponse:
    """The GetTelemetrySubscriptions response (API key 71), v0."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    client_instance_id: uuid.UUID = ZERO_UUID
    """Assigned client instance id if ClientInstanceId was 0 in the request, else 0. (v0+)"""
    subscription_id: int = 0
    """Unique identifier for the current subscription set for this client instance. (v0+)"""
    accepted_compression_types: tuple[int, ...] = ()
    """Compression types that broker accepts for the PushTelemetryRequest. (v0+)"""
    push_interval_ms: int = 0
    """Configured push interval, which is the lowest configured interval in the current subscription set. (v0+)"""
    telemetry_max_bytes: int = 0
    """The maximum bytes of binary data the broker accepts in PushTelemetryRequest. (v0+)"""
    delta_temporality: bool = False
    """Flag to indicate monotonic/counter metrics are to be emitted as deltas or cumulative values. (v0+)"""
    requested_metrics: tuple[str, ...] = ()
    """Requested metrics prefix string match. Empty array: No metrics subscribed, Array[0] empty string: All metrics
    subscribed. (v0+)
    """

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        w.uuid(self.client_instance_id)
        w.int32(self.subscription_id)
        w.array(self.accepted_compression_types, True, Writer.int8)
        w.pack(_iio, self.push_interval_ms, self.telemetry_max_bytes, self.delta_temporality)
        w.strings(self.requested_metrics, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code = r.unpack(_ih)
        client_instance_id = r.uuid()
        subscription_id = r.int32()
        accepted_compression_types = r.array(True, Reader.int8)
        push_interval_ms, telemetry_max_bytes, delta_temporality = r.unpack(_iio)
        requested_metrics = r.strings(True)
        r.skip_tags()
        return cls(
            throttle_time_ms,
            error_code,
            client_instance_id,
            subscription_id,
            accepted_compression_types,
            push_interval_ms,
            telemetry_max_bytes,
            delta_temporality,
            requested_metrics,
        )


@attrs.define(frozen=True, slots=True)
class GetTelemetrySubscriptionsRequest:
    """The GetTelemetrySubscriptions request (API key 71), v0."""

    API_KEY: ClassVar[ApiKey] = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    FLEXIBLE_FROM: ClassVar[int] = 0
    RESPONSE: ClassVar[type[Response]] = GetTelemetrySubscriptionsResponse

    client_instance_id: uuid.UUID = ZERO_UUID
    """Unique id for this client instance, must be set to 0 on the first request. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.uuid(self.client_instance_id)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        client_instance_id = r.uuid()
        r.skip_tags()
        return cls(client_instance_id)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
