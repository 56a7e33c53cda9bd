"""Generated from Apache Kafka's HeartbeatRequest.json/HeartbeatResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

Heartbeat (API key 12) at v1-4 of the v0-4 Kafka defines; flexible from v4.
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
    "HeartbeatRequest",
    "HeartbeatResponse",
]

_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class HeartbeatResponse:
    """The Heartbeat response (API key 12), v1-4."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code = r.unpack(_ih)
        if version >= 4:
            r.skip_tags()
        return cls(throttle_time_ms, error_code)


@attrs.define(frozen=True, slots=True)
class HeartbeatRequest:
    """The Heartbeat request (API key 12), v1-4."""

    API_KEY: ClassVar[ApiKey] = ApiKey.HEARTBEAT
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = 4
    RESPONSE: ClassVar[type[Response]] = HeartbeatResponse

    group_id: str = ""
    """The group id. (v0+)"""
    generation_id: int = 0
    """The generation of the group. (v0+)"""
    member_id: str = ""
    """The member ID. (v0+)"""
    group_instance_id: str | None = None
    """The unique identifier of the consumer instance provided by end user. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.group_id, flexible)
        w.int32(self.generation_id)
        w.string(self.member_id, flexible)
        if version >= 3:
            w.nullable_string(self.group_instance_id, flexible)
        elif self.group_instance_id is not None:
            raise ValueError(f"HeartbeatRequest.group_instance_id needs v3+, not v{version}")
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        group_id = r.string(flexible)
        generation_id = r.int32()
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible) if version >= 3 else None
        if version >= 4:
            r.skip_tags()
        return cls(group_id, generation_id, member_id, group_instance_id)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
