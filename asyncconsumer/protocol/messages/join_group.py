"""Generated from Apache Kafka's JoinGroupRequest.json/JoinGroupResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

JoinGroup (API key 11) at v2-9 of the v0-9 Kafka defines; flexible from v6.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer, blob_repr, not_null

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "JoinGroupRequest",
    "JoinGroupRequestProtocol",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
]

_ihi = struct.Struct(">ihi")
_ii = struct.Struct(">ii")


@attrs.define(frozen=True, slots=True)
class JoinGroupResponseMember:
    """The group members."""

    member_id: str = ""
    """The group member ID. (v0+)"""
    group_instance_id: str | None = None
    """The unique identifier of the consumer instance provided by end user. (v5+)"""
    metadata: bytes = attrs.field(default=b"", repr=blob_repr)
    """The group member metadata. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.string(self.member_id, flexible)
        if version >= 5:
            w.nullable_string(self.group_instance_id, flexible)
        w.bytes_(self.metadata, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible) if version >= 5 else None
        metadata = r.bytes_(flexible)
        if version >= 6:
            r.skip_tags()
        return cls(member_id, group_instance_id, metadata)


@attrs.define(frozen=True, slots=True)
class JoinGroupResponse:
    """The JoinGroup response (API key 11), v2-9."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v2+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    generation_id: int = -1
    """The generation ID of the group. (v0+)"""
    protocol_type: str | None = None
    """The group protocol name. (v7+)"""
    protocol_name: str | None = ""
    """The group protocol selected by the coordinator. (v0+)"""
    leader: str = ""
    """The leader of the group. (v0+)"""
    skip_assignment: bool = False
    """True if the leader must skip running the assignment. (v9+)"""
    member_id: str = ""
    """The member ID assigned by the group coordinator. (v0+)"""
    members: tuple[JoinGroupResponseMember, ...] = ()
    """The group members. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.pack(_ihi, self.throttle_time_ms, self.error_code, self.generation_id)
        if version >= 7:
            w.nullable_string(self.protocol_type, True)
        if version >= 7:
            w.nullable_string(self.protocol_name, True)
        else:
            w.string(not_null(self.protocol_name, "JoinGroupResponse.protocol_name", version, "7+"), flexible)
        w.string(self.leader, flexible)
        if version >= 9:
            w.boolean(self.skip_assignment)
        w.string(self.member_id, flexible)
        w.structs(self.members, version, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        throttle_time_ms, error_code, generation_id = r.unpack(_ihi)
        protocol_type = r.nullable_string(True) if version >= 7 else None
        protocol_name = r.nullable_string(flexible)
        leader = r.string(flexible)
        skip_assignment = r.boolean() if version >= 9 else False
        member_id = r.string(flexible)
        members = r.structs(JoinGroupResponseMember, version, flexible)
        if version >= 6:
            r.skip_tags()
        return cls(
            throttle_time_ms,
            error_code,
            generation_id,
            protocol_type,
            protocol_name,
            leader,
            skip_assignment,
            member_id,
            members,
        )


@attrs.define(frozen=True, slots=True)
class JoinGroupRequestProtocol:
    """The list of protocols that the member supports."""

    name: str = ""
    """The protocol name. (v0+)"""
    metadata: bytes = attrs.field(default=b"", repr=blob_repr)
    """The protocol metadata. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.string(self.name, flexible)
        w.bytes_(self.metadata, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        name = r.string(flexible)
        metadata = r.bytes_(flexible)
        if version >= 6:
            r.skip_tags()
        return cls(name, metadata)


@attrs.define(frozen=True, slots=True)
class JoinGroupRequest:
    """The JoinGroup request (API key 11), v2-9."""

    API_KEY: ClassVar[ApiKey] = ApiKey.JOIN_GROUP
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = 6
    RESPONSE: ClassVar[type[Response]] = JoinGroupResponse

    group_id: str = ""
    """The group identifier. (v0+)"""
    session_timeout_ms: int = 0
    """The coordinator considers the consumer dead if it receives no heartbeat after this timeout in milliseconds.
    (v0+)
    """
    rebalance_timeout_ms: int = -1
    """The maximum time in milliseconds that the coordinator will wait for each member to rejoin when rebalancing the
    group. (v1+)
    """
    member_id: str = ""
    """The member id assigned by the group coordinator. (v0+)"""
    group_instance_id: str | None = None
    """The unique identifier of the consumer instance provided by end user. (v5+)"""
    protocol_type: str = ""
    """The unique name the for class of protocols implemented by the group we want to join. (v0+)"""
    protocols: tuple[JoinGroupRequestProtocol, ...] = ()
    """The list of protocols that the member supports. (v0+)"""
    reason: str | None = None
    """The reason why the member (re-)joins the group. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.string(self.group_id, flexible)
        w.pack(_ii, self.session_timeout_ms, self.rebalance_timeout_ms)
        w.string(self.member_id, flexible)
        if version >= 5:
            w.nullable_string(self.group_instance_id, flexible)
        elif self.group_instance_id is not None:
            raise ValueError(f"JoinGroupRequest.group_instance_id needs v5+, not v{version}")
        w.string(self.protocol_type, flexible)
        w.structs(self.protocols, version, flexible)
        if version >= 8:
            w.nullable_string(self.reason, True)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        group_id = r.string(flexible)
        session_timeout_ms, rebalance_timeout_ms = r.unpack(_ii)
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible) if version >= 5 else None
        protocol_type = r.string(flexible)
        protocols = r.structs(JoinGroupRequestProtocol, version, flexible)
        reason = r.nullable_string(True) if version >= 8 else None
        if version >= 6:
            r.skip_tags()
        return cls(
            group_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            member_id,
            group_instance_id,
            protocol_type,
            protocols,
            reason,
        )

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
