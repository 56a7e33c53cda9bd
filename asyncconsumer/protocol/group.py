"""The classic group membership protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

Versions implemented and what changes on the wire within them (Kafka's *Request/*Response.json):

- JoinGroup (API key 11), v2-9, flexible from v6: v5 GroupInstanceId (request and response members); v7 the
  response's ProtocolType, and ProtocolName becomes nullable; v8 the request's Reason; v9 the response's
  SkipAssignment (between Leader and MemberId). v3 and v4 change no field (from v4 the broker answers a first
  join with an empty member id by MEMBER_ID_REQUIRED and a member id to rejoin with); the v7 and v9 requests
  are the same as v6 and v8.
- SyncGroup (14), v1-5, flexible from v4: v3 GroupInstanceId; v5 ProtocolType and ProtocolName both ways.
- Heartbeat (12), v1-4, flexible from v4: v3 GroupInstanceId.
- LeaveGroup (13), v1-5, flexible from v4: v3 replaces the request's MemberId by a Members batch and adds the
  per-member answers; v5 a per-member Reason.

The member metadata and assignments these carry are opaque bytes here; ``consumer_protocol`` reads them.
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupMember",
    "JoinGroupProtocol",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupMember",
    "LeaveGroupMemberResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "SyncGroupAssignment",
    "SyncGroupRequest",
    "SyncGroupResponse",
]

_JOIN_FLEXIBLE_FROM = 6
_SYNC_FLEXIBLE_FROM = 4
_HEARTBEAT_FLEXIBLE_FROM = 4
_LEAVE_FLEXIBLE_FROM = 4
_LEAVE_BATCHED_FROM = 3


# --- JoinGroup ------------------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class JoinGroupProtocol:
    """One protocol (assignor) the joining member supports, with its metadata for that protocol."""

    name: str
    metadata: bytes

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        w.str_(self.name, flexible)
        w.nbytes(self.metadata, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        name = r.str_(flexible)
        metadata = r.bytes_(flexible)
        r.end_struct(flexible)
        return cls(name, metadata)


@attrs.define(frozen=True, slots=True)
class JoinGroupMember:
    """One member of the group as the leader sees it in the JoinGroup answer."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        w.str_(self.member_id, flexible)
        if version >= 5:
            w.nstr(self.group_instance_id, flexible)
        w.nbytes(self.metadata, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible) if version >= 5 else None
        metadata = r.bytes_(flexible)
        r.end_struct(flexible)
        return cls(member_id, group_instance_id, metadata)


@attrs.define(frozen=True, slots=True)
class JoinGroupResponse:
    """The generation joined; ``members`` is filled for the leader only.

    ``protocol_name`` is non-nullable before v7 on the wire; it is read leniently.
    """

    error_code: int
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    member_id: str
    members: tuple[JoinGroupMember, ...]
    throttle_time_ms: int = 0
    skip_assignment: bool = False

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        w.int32(self.throttle_time_ms)
        w.int16(self.error_code)
        w.int32(self.generation_id)
        if version >= 7:
            w.nstr(self.protocol_type, flexible)
        w.nstr(self.protocol_name, flexible)
        w.str_(self.leader, flexible)
        if version >= 9:
            w.boolean(self.skip_assignment)
        w.str_(self.member_id, flexible)
        w.structs(self.members, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        throttle_time_ms = r.int32()
        error_code = r.int16()
        generation_id = r.int32()
        protocol_type = r.nstr(flexible) if version >= 7 else None
        protocol_name = r.nstr(flexible)
        leader = r.str_(flexible)
        skip_assignment = r.boolean() if version >= 9 else False
        member_id = r.str_(flexible)
        members = r.structs(JoinGroupMember, version, flexible)
        r.end_struct(flexible)
        return cls(
            error_code,
            generation_id,
            protocol_type,
            protocol_name,
            leader,
            member_id,
            members,
            throttle_time_ms,
            skip_assignment,
        )


@attrs.define(frozen=True, slots=True)
class JoinGroupRequest:
    """Joins (or rejoins) ``group_id``, offering ``protocols`` in order of preference."""

    API_KEY: ClassVar[ApiKey] = ApiKey.JOIN_GROUP
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = _JOIN_FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = JoinGroupResponse

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    protocol_type: str
    protocols: tuple[JoinGroupProtocol, ...]
    group_instance_id: str | None = None
    reason: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        w.str_(self.group_id, flexible)
        w.int32(self.session_timeout_ms)
        w.int32(self.rebalance_timeout_ms)
        w.str_(self.member_id, flexible)
        if version >= 5:
            w.nstr(self.group_instance_id, flexible)
        w.str_(self.protocol_type, flexible)
        w.structs(self.protocols, version, flexible)
        if version >= 8:
            w.nstr(self.reason, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _JOIN_FLEXIBLE_FROM
        group_id = r.str_(flexible)
        session_timeout_ms = r.int32()
        rebalance_timeout_ms = r.int32()
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible) if version >= 5 else None
        protocol_type = r.str_(flexible)
        protocols = r.structs(JoinGroupProtocol, version, flexible)
        reason = r.nstr(flexible) if version >= 8 else None
        r.end_struct(flexible)
        return cls(
            group_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            member_id,
            protocol_type,
            protocols,
            group_instance_id,
            reason,
        )


# --- SyncGroup ------------------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class SyncGroupAssignment:
    """The leader's assignment for one member."""

    member_id: str
    assignment: bytes

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _SYNC_FLEXIBLE_FROM
        w.str_(self.member_id, flexible)
        w.nbytes(self.assignment, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _SYNC_FLEXIBLE_FROM
        member_id = r.str_(flexible)
        assignment = r.bytes_(flexible)
        r.end_struct(flexible)
        return cls(member_id, assignment)


@attrs.define(frozen=True, slots=True)
class SyncGroupResponse:
    """This member's assignment for the generation (empty bytes when the leader gave it none)."""

    error_code: int
    assignment: bytes
    throttle_time_ms: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _SYNC_FLEXIBLE_FROM
        w.int32(self.throttle_time_ms)
        w.int16(self.error_code)
        if version >= 5:
            w.nstr(self.protocol_type, flexible)
            w.nstr(self.protocol_name, flexible)
        w.nbytes(self.assignment, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _SYNC_FLEXIBLE_FROM
        throttle_time_ms = r.int32()
        error_code = r.int16()
        protocol_type = r.nstr(flexible) if version >= 5 else None
        protocol_name = r.nstr(flexible) if version >= 5 else None
        assignment = r.bytes_(flexible)
        r.end_struct(flexible)
        return cls(error_code, assignment, throttle_time_ms, protocol_type, protocol_name)


@attrs.define(frozen=True, slots=True)
class SyncGroupRequest:
    """Completes a join: the leader sends every member's assignment, followers send none."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SYNC_GROUP
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = _SYNC_FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = SyncGroupResponse

    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[SyncGroupAssignment, ...]
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _SYNC_FLEXIBLE_FROM
        w.str_(self.group_id, flexible)
        w.int32(self.generation_id)
        w.str_(self.member_id, flexible)
        if version >= 3:
            w.nstr(self.group_instance_id, flexible)
        if version >= 5:
            w.nstr(self.protocol_type, flexible)
            w.nstr(self.protocol_name, flexible)
        w.structs(self.assignments, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _SYNC_FLEXIBLE_FROM
        group_id = r.str_(flexible)
        generation_id = r.int32()
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible) if version >= 3 else None
        protocol_type = r.nstr(flexible) if version >= 5 else None
        protocol_name = r.nstr(flexible) if version >= 5 else None
        assignments = r.structs(SyncGroupAssignment, version, flexible)
        r.end_struct(flexible)
        return cls(group_id, generation_id, member_id, assignments, group_instance_id, protocol_type, protocol_name)


# --- Heartbeat ------------------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class HeartbeatResponse:
    """Whether the member is still in the generation (REBALANCE_IN_PROGRESS asks it to rejoin)."""

    error_code: int
    throttle_time_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.int16(self.error_code)
        w.end_struct(version >= _HEARTBEAT_FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()
        error_code = r.int16()
        r.end_struct(version >= _HEARTBEAT_FLEXIBLE_FROM)
        return cls(error_code, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class HeartbeatRequest:
    """Keeps the membership of ``member_id`` in generation ``generation_id`` alive."""

    API_KEY: ClassVar[ApiKey] = ApiKey.HEARTBEAT
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = _HEARTBEAT_FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = HeartbeatResponse

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _HEARTBEAT_FLEXIBLE_FROM
        w.str_(self.group_id, flexible)
        w.int32(self.generation_id)
        w.str_(self.member_id, flexible)
        if version >= 3:
            w.nstr(self.group_instance_id, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _HEARTBEAT_FLEXIBLE_FROM
        group_id = r.str_(flexible)
        generation_id = r.int32()
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible) if version >= 3 else None
        r.end_struct(flexible)
        return cls(group_id, generation_id, member_id, group_instance_id)


# --- LeaveGroup -----------------------------------------------------------------------------------------------


@attrs.define(frozen=True, slots=True)
class LeaveGroupMember:
    """One member leaving (v3+), identified by member id and/or group instance id."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        w.str_(self.member_id, flexible)
        w.nstr(self.group_instance_id, flexible)
        if version >= 5:
            w.nstr(self.reason, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible)
        reason = r.nstr(flexible) if version >= 5 else None
        r.end_struct(flexible)
        return cls(member_id, group_instance_id, reason)


@attrs.define(frozen=True, slots=True)
class LeaveGroupMemberResponse:
    """The outcome for one leaving member (v3+)."""

    member_id: str
    group_instance_id: str | None
    error_code: int

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        w.str_(self.member_id, flexible)
        w.nstr(self.group_instance_id, flexible)
        w.int16(self.error_code)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible)
        error_code = r.int16()
        r.end_struct(flexible)
        return cls(member_id, group_instance_id, error_code)


@attrs.define(frozen=True, slots=True)
class LeaveGroupResponse:
    """The group-level outcome, and per member from v3."""

    error_code: int
    members: tuple[LeaveGroupMemberResponse, ...] = ()
    throttle_time_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        w.int32(self.throttle_time_ms)
        w.int16(self.error_code)
        if version >= _LEAVE_BATCHED_FROM:
            w.structs(self.members, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        throttle_time_ms = r.int32()
        error_code = r.int16()
        members: tuple[LeaveGroupMemberResponse, ...] = ()
        if version >= _LEAVE_BATCHED_FROM:
            members = r.structs(LeaveGroupMemberResponse, version, flexible)
        r.end_struct(flexible)
        return cls(error_code, members, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class LeaveGroupRequest:
    """Leaves ``group_id``.

    ``members``, when given, win over ``member_id`` (which stands for ``(LeaveGroupMember(member_id),)``);
    v1-2 carry exactly one member id. Decoding v3+ gives the batched form (``member_id`` empty), decoding
    v1-2 the single form.
    """

    API_KEY: ClassVar[ApiKey] = ApiKey.LEAVE_GROUP
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = _LEAVE_FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = LeaveGroupResponse

    group_id: str
    member_id: str = ""
    members: tuple[LeaveGroupMember, ...] = ()

    @property
    def leaving(self) -> tuple[LeaveGroupMember, ...]:
        return self.members or (LeaveGroupMember(self.member_id),)

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        w.str_(self.group_id, flexible)
        leaving = self.leaving
        if version >= _LEAVE_BATCHED_FROM:
            w.structs(leaving, version, flexible)
        else:
            if len(leaving) != 1:
                raise ValueError(f"LeaveGroup v{version} removes one member, not {len(leaving)}")
            w.str_(leaving[0].member_id, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _LEAVE_FLEXIBLE_FROM
        group_id = r.str_(flexible)
        if version >= _LEAVE_BATCHED_FROM:
            members = r.structs(LeaveGroupMember, version, flexible)
            r.end_struct(flexible)
            return cls(group_id, "", members)
        member_id = r.str_(flexible)
        r.end_struct(flexible)
        return cls(group_id, member_id)
