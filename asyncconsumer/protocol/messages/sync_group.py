"""Generated from Apache Kafka's SyncGroupRequest.json/SyncGroupResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

SyncGroup (API key 14) at v1-5 of the v0-5 Kafka defines; flexible from v4.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer, blob_repr

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "SyncGroupRequest",
    "SyncGroupRequestAssignment",
    "SyncGroupResponse",
]

_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class SyncGroupResponse:
    """The SyncGroup response (API key 14), v1-5."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    protocol_type: str | None = None
    """The group protocol type. (v5+)"""
    protocol_name: str | None = None
    """The group protocol name. (v5+)"""
    assignment: bytes = attrs.field(default=b"", repr=blob_repr)
    """The member assignment. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        if version >= 5:
            w.nullable_string(self.protocol_type, True)
            w.nullable_string(self.protocol_name, True)
        w.bytes_(self.assignment, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        throttle_time_ms, error_code = r.unpack(_ih)
        protocol_type = r.nullable_string(True) if version >= 5 else None
        protocol_name = r.nullable_string(True) if version >= 5 else None
        assignment = r.bytes_(flexible)
        if version >= 4:
            r.skip_tags()
        return cls(throttle_time_ms, error_code, protocol_type, protocol_name, assignment)


@attrs.define(frozen=True, slots=True)
class SyncGroupRequestAssignment:
    """Each assignment."""

    member_id: str = ""
    """The ID of the member to assign. (v0+)"""
    assignment: bytes = attrs.field(default=b"", repr=blob_repr)
    """The member assignment. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.member_id, flexible)
        w.bytes_(self.assignment, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        member_id = r.string(flexible)
        assignment = r.bytes_(flexible)
        if version >= 4:
            r.skip_tags()
        return cls(member_id, assignment)


@attrs.define(frozen=True, slots=True)
class SyncGroupRequest:
    """The SyncGroup request (API key 14), v1-5."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SYNC_GROUP
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 4
    RESPONSE: ClassVar[type[Response]] = SyncGroupResponse

    group_id: str = ""
    """The unique group identifier. (v0+)"""
    generation_id: int = 0
    """The generation of the group. (v0+)"""
    member_id: str = ""
    """The member ID assigned by the group. (v0+)"""
    group_instance_id: str | None = None
    """The unique identifier of the consumer instance provided by end user. (v3+)"""
    protocol_type: str | None = None
    """The group protocol type. (v5+)"""
    protocol_name: str | None = None
    """The group protocol name. (v5+)"""
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()
    """Each assignment. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.group_id, flexible)
        w.int32(self.generation_id)
        w.string(self.member_id, flexible)
        if version >= 3:
            w.nullable_string(self.group_instance_id, flexible)
        elif self.group_instance_id is not None:
            raise ValueError(f"SyncGroupRequest.group_instance_id needs v3+, not v{version}")
        if version >= 5:
            w.nullable_string(self.protocol_type, True)
            w.nullable_string(self.protocol_name, True)
        w.structs(self.assignments, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        group_id = r.string(flexible)
        generation_id = r.int32()
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible) if version >= 3 else None
        protocol_type = r.nullable_string(True) if version >= 5 else None
        protocol_name = r.nullable_string(True) if version >= 5 else None
        assignments = r.structs(SyncGroupRequestAssignment, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(group_id, generation_id, member_id, group_instance_id, protocol_type, protocol_name, assignments)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
