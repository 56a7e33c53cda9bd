"""Generated from Apache Kafka's LeaveGroupRequest.json/LeaveGroupResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

LeaveGroup (API key 13) at v1-5 of the v0-5 Kafka defines; flexible from v4.
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
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "MemberIdentity",
    "MemberResponse",
]

_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class MemberResponse:
    """List of leaving member responses."""

    member_id: str = ""
    """The member ID to remove from the group. (v3+)"""
    group_instance_id: str | None = ""
    """The group instance ID to remove from the group. (v3+)"""
    error_code: int = 0
    """The error code, or 0 if there was no error. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.member_id, flexible)
        w.nullable_string(self.group_instance_id, flexible)
        w.int16(self.error_code)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible)
        error_code = r.int16()
        if version >= 4:
            r.skip_tags()
        return cls(member_id, group_instance_id, error_code)


@attrs.define(frozen=True, slots=True)
class LeaveGroupResponse:
    """The LeaveGroup response (API key 13), v1-5."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    members: tuple[MemberResponse, ...] = ()
    """List of leaving member responses. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.pack(_ih, self.throttle_time_ms, self.error_code)
        if version >= 3:
            w.structs(self.members, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        throttle_time_ms, error_code = r.unpack(_ih)
        members = r.structs(MemberResponse, version, flexible) if version >= 3 else ()
        if version >= 4:
            r.skip_tags()
        return cls(throttle_time_ms, error_code, members)


@attrs.define(frozen=True, slots=True)
class MemberIdentity:
    """List of leaving member identities."""

    member_id: str = ""
    """The member ID to remove from the group. (v3+)"""
    group_instance_id: str | None = None
    """The group instance ID to remove from the group. (v3+)"""
    reason: str | None = None
    """The reason why the member left the group. (v5+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.member_id, flexible)
        w.nullable_string(self.group_instance_id, flexible)
        if version >= 5:
            w.nullable_string(self.reason, True)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible)
        reason = r.nullable_string(True) if version >= 5 else None
        if version >= 4:
            r.skip_tags()
        return cls(member_id, group_instance_id, reason)


@attrs.define(frozen=True, slots=True)
class LeaveGroupRequest:
    """The LeaveGroup request (API key 13), v1-5."""

    API_KEY: ClassVar[ApiKey] = ApiKey.LEAVE_GROUP
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 4
    RESPONSE: ClassVar[type[Response]] = LeaveGroupResponse

    group_id: str = ""
    """The ID of the group to leave. (v0+)"""
    member_id: str = ""
    """The member ID to remove from the group. (v0-2)"""
    members: tuple[MemberIdentity, ...] = ()
    """List of leaving member identities. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.group_id, flexible)
        if version >= 3:
            if self.member_id:
                raise ValueError(f"LeaveGroupRequest.member_id needs v0-2, not v{version}")
        else:
            w.string(self.member_id, False)
        if version >= 3:
            w.structs(self.members, version, flexible)
        elif self.members:
            raise ValueError(f"LeaveGroupRequest.members needs v3+, not v{version}")
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        group_id = r.string(flexible)
        member_id = "" if version >= 3 else r.string(False)
        members = r.structs(MemberIdentity, version, flexible) if version >= 3 else ()
        if version >= 4:
            r.skip_tags()
        return cls(group_id, member_id, members)

    def for_version(self, version: int) -> Self:
        """The request in the layout ``version`` has, built in either: ``member_id`` to v2, ``members`` from v3;
        ``ValueError`` when an older version cannot carry the batch (Kafka's builders' rule).
        """
        if version >= 3:
            if not self.members:
                return attrs.evolve(self, member_id="", members=(MemberIdentity(member_id=self.member_id),))
            return attrs.evolve(self, member_id="") if self.member_id else self
        if not self.members:
            return self
        if len(self.members) != 1:
            raise ValueError(f"LeaveGroupRequest v{version} takes one of members, not {len(self.members)}")
        (one,) = self.members
        return attrs.evolve(self, member_id=one.member_id, members=())
