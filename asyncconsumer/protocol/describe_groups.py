"""DescribeGroups (API key 15): a group's state, protocol and members with their metadata and assignments.

Versions implemented and what changes on the wire within them (Kafka's DescribeGroups*.json), v0-5, flexible
from v5: v1 the response's ThrottleTimeMs; v3 the request's IncludeAuthorizedOperations and the response's
AuthorizedOperations per group; v4 the members' nullable GroupInstanceId. v2 changes no field.

The members' metadata and assignments are opaque bytes here; ``consumer_protocol`` reads them.
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = ["DescribeGroupsRequest", "DescribeGroupsResponse", "DescribedGroup", "DescribedGroupMember"]

_FLEXIBLE_FROM = 5
_NO_AUTHORIZED_OPERATIONS = -(2**31)


@attrs.define(frozen=True, slots=True)
class DescribedGroupMember:
    """One member as the coordinator knows it."""

    member_id: str
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes
    group_instance_id: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.str_(self.member_id, flexible)
        if version >= 4:
            w.nstr(self.group_instance_id, flexible)
        w.str_(self.client_id, flexible)
        w.str_(self.client_host, flexible)
        w.nbytes(self.member_metadata, flexible)
        w.nbytes(self.member_assignment, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        member_id = r.str_(flexible)
        group_instance_id = r.nstr(flexible) if version >= 4 else None
        client_id = r.str_(flexible)
        client_host = r.str_(flexible)
        metadata = r.bytes_(flexible)
        assignment = r.bytes_(flexible)
        r.end_struct(flexible)
        return cls(member_id, client_id, client_host, metadata, assignment, group_instance_id)


@attrs.define(frozen=True, slots=True)
class DescribedGroup:
    """One described group; ``group_state`` is e.g. ``Stable``, ``Empty``, ``Dead`` (unknown groups)."""

    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedGroupMember, ...]
    authorized_operations: int = _NO_AUTHORIZED_OPERATIONS

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int16(self.error_code)
        w.str_(self.group_id, flexible)
        w.str_(self.group_state, flexible)
        w.str_(self.protocol_type, flexible)
        w.str_(self.protocol_data, flexible)
        w.structs(self.members, version, flexible)
        if version >= 3:
            w.int32(self.authorized_operations)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        error_code = r.int16()
        group_id = r.str_(flexible)
        group_state = r.str_(flexible)
        protocol_type = r.str_(flexible)
        protocol_data = r.str_(flexible)
        members = r.structs(DescribedGroupMember, version, flexible)
        authorized_operations = r.int32() if version >= 3 else _NO_AUTHORIZED_OPERATIONS
        r.end_struct(flexible)
        return cls(error_code, group_id, group_state, protocol_type, protocol_data, members, authorized_operations)


@attrs.define(frozen=True, slots=True)
class DescribeGroupsResponse:
    """One entry per group asked about, each with its own error code."""

    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        if version >= 1:
            w.int32(self.throttle_time_ms)
        w.structs(self.groups, version, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        throttle_time_ms = r.int32() if version >= 1 else 0
        groups = r.structs(DescribedGroup, version, flexible)
        r.end_struct(flexible)
        return cls(groups, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class DescribeGroupsRequest:
    """Describe ``groups``; sent to their coordinator (a group another broker coordinates answers NOT_COORDINATOR)."""

    API_KEY: ClassVar[ApiKey] = ApiKey.DESCRIBE_GROUPS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = _FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = DescribeGroupsResponse

    groups: tuple[str, ...]
    include_authorized_operations: bool = False

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.strs(self.groups, flexible)
        if version >= 3:
            w.boolean(self.include_authorized_operations)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        groups = r.strs(flexible)
        include = r.boolean() if version >= 3 else False
        r.end_struct(flexible)
        return cls(groups, include)
