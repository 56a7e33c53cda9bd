"""Generated from Apache Kafka's DescribeGroupsRequest.json/DescribeGroupsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

DescribeGroups (API key 15) at v0-5 of the v0-6 Kafka defines; flexible from v5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer, blob_repr

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedGroupMember",
]


@attrs.define(frozen=True, slots=True)
class DescribedGroupMember:
    """The group members."""

    member_id: str = ""
    """The member id. (v0+)"""
    group_instance_id: str | None = None
    """The unique identifier of the consumer instance provided by end user. (v4+)"""
    client_id: str = ""
    """The client ID used in the member's latest join group request. (v0+)"""
    client_host: str = ""
    """The client host. (v0+)"""
    member_metadata: bytes = attrs.field(default=b"", repr=blob_repr)
    """The metadata corresponding to the current group protocol in use. (v0+)"""
    member_assignment: bytes = attrs.field(default=b"", repr=blob_repr)
    """The current assignment provided by the group leader. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.string(self.member_id, flexible)
        if version >= 4:
            w.nullable_string(self.group_instance_id, flexible)
        w.string(self.client_id, flexible)
        w.string(self.client_host, flexible)
        w.bytes_(self.member_metadata, flexible)
        w.bytes_(self.member_assignment, flexible)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible) if version >= 4 else None
        client_id = r.string(flexible)
        client_host = r.string(flexible)
        member_metadata = r.bytes_(flexible)
        member_assignment = r.bytes_(flexible)
        if version >= 5:
            r.skip_tags()
        return cls(member_id, group_instance_id, client_id, client_host, member_metadata, member_assignment)


@attrs.define(frozen=True, slots=True)
class DescribedGroup:
    """Each described group."""

    error_code: int = 0
    """The describe error, or 0 if there was no error. (v0+)"""
    group_id: str = ""
    """The group ID string. (v0+)"""
    group_state: str = ""
    """The group state string, or the empty string. (v0+)"""
    protocol_type: str = ""
    """The group protocol type, or the empty string. (v0+)"""
    protocol_data: str = ""
    """The group protocol data, or the empty string. (v0+)"""
    members: tuple[DescribedGroupMember, ...] = ()
    """The group members. (v0+)"""
    authorized_operations: int = -2147483648
    """32-bit bitfield to represent authorized operations for this group. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.int16(self.error_code)
        w.string(self.group_id, flexible)
        w.string(self.group_state, flexible)
        w.string(self.protocol_type, flexible)
        w.string(self.protocol_data, flexible)
        w.structs(self.members, version, flexible)
        if version >= 3:
            w.int32(self.authorized_operations)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        error_code = r.int16()
        group_id = r.string(flexible)
        group_state = r.string(flexible)
        protocol_type = r.string(flexible)
        protocol_data = r.string(flexible)
        members = r.structs(DescribedGroupMember, version, flexible)
        authorized_operations = r.int32() if version >= 3 else -2147483648
        if version >= 5:
            r.skip_tags()
        return cls(error_code, group_id, group_state, protocol_type, protocol_data, members, authorized_operations)


@attrs.define(frozen=True, slots=True)
class DescribeGroupsResponse:
    """The DescribeGroups response (API key 15), v0-5."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    groups: tuple[DescribedGroup, ...] = ()
    """Each described group. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        if version >= 1:
            w.int32(self.throttle_time_ms)
        w.structs(self.groups, version, flexible)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        throttle_time_ms = r.int32() if version >= 1 else 0
        groups = r.structs(DescribedGroup, version, flexible)
        if version >= 5:
            r.skip_tags()
        return cls(throttle_time_ms, groups)


@attrs.define(frozen=True, slots=True)
class DescribeGroupsRequest:
    """The DescribeGroups request (API key 15), v0-5."""

    API_KEY: ClassVar[ApiKey] = ApiKey.DESCRIBE_GROUPS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 5
    RESPONSE: ClassVar[type[Response]] = DescribeGroupsResponse

    groups: tuple[str, ...] = ()
    """The names of the groups to describe. (v0+)"""
    include_authorized_operations: bool = False
    """Whether to include authorized operations. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.strings(self.groups, flexible)
        if version >= 3:
            w.boolean(self.include_authorized_operations)
        elif self.include_authorized_operations:
            raise ValueError(f"DescribeGroupsRequest.include_authorized_operations needs v3+, not v{version}")
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        groups = r.strings(flexible)
        include_authorized_operations = r.boolean() if version >= 3 else False
        if version >= 5:
            r.skip_tags()
        return cls(groups, include_authorized_operations)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
