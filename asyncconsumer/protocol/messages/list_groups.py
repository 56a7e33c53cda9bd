"""Generated from Apache Kafka's ListGroupsRequest.json/ListGroupsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

ListGroups (API key 16) at v0-5 of the v0-5 Kafka defines; flexible from v3.
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
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
]

_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class ListedGroup:
    """Each group in the response."""

    group_id: str = ""
    """The group ID. (v0+)"""
    protocol_type: str = ""
    """The group protocol type. (v0+)"""
    group_state: str = ""
    """The group state name. (v4+)"""
    group_type: str = ""
    """The group type name. (v5+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 3
        w.string(self.group_id, flexible)
        w.string(self.protocol_type, flexible)
        if version >= 4:
            w.string(self.group_state, True)
        if version >= 5:
            w.string(self.group_type, True)
        if version >= 3:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 3
        group_id = r.string(flexible)
        protocol_type = r.string(flexible)
        group_state = r.string(True) if version >= 4 else ""
        group_type = r.string(True) if version >= 5 else ""
        if version >= 3:
            r.skip_tags()
        return cls(group_id, protocol_type, group_state, group_type)


@attrs.define(frozen=True, slots=True)
class ListGroupsResponse:
    """The ListGroups response (API key 16), v0-5."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    groups: tuple[ListedGroup, ...] = ()
    """Each group in the response. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 3
        if version >= 1:
            w.pack(_ih, self.throttle_time_ms, self.error_code)
        else:
            w.int16(self.error_code)
        w.structs(self.groups, version, flexible)
        if version >= 3:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 3
        if version >= 1:
            throttle_time_ms, error_code = r.unpack(_ih)
        else:
            error_code = r.int16()
            throttle_time_ms = 0
        groups = r.structs(ListedGroup, version, flexible)
        if version >= 3:
            r.skip_tags()
        return cls(throttle_time_ms, error_code, groups)


@attrs.define(frozen=True, slots=True)
class ListGroupsRequest:
    """The ListGroups request (API key 16), v0-5."""

    API_KEY: ClassVar[ApiKey] = ApiKey.LIST_GROUPS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 3
    RESPONSE: ClassVar[type[Response]] = ListGroupsResponse

    states_filter: tuple[str, ...] = ()
    """The states of the groups we want to list. If empty, all groups are returned with their state. (v4+)"""
    types_filter: tuple[str, ...] = ()
    """The types of the groups we want to list. If empty, all groups are returned with their type. (v5+)"""

    def encode(self, w: Writer, version: int) -> None:
        if version >= 4:
            w.strings(self.states_filter, True)
        elif self.states_filter:
            raise ValueError(f"ListGroupsRequest.states_filter needs v4+, not v{version}")
        if version >= 5:
            w.strings(self.types_filter, True)
        elif self.types_filter:
            raise ValueError(f"ListGroupsRequest.types_filter needs v5+, not v{version}")
        if version >= 3:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        states_filter = r.strings(True) if version >= 4 else ()
        types_filter = r.strings(True) if version >= 5 else ()
        if version >= 3:
            r.skip_tags()
        return cls(states_filter, types_filter)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
