"""Generated from Apache Kafka's DeleteGroupsRequest.json/DeleteGroupsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

DeleteGroups (API key 42) at v0-3 of the v0-3 Kafka defines; flexible from v2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "DeletableGroupResult",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
]


@attrs.define(frozen=True, slots=True)
class DeletableGroupResult:
    """The deletion results."""

    group_id: str = ""
    """The group id. (v0+)"""
    error_code: int = 0
    """The deletion error, or 0 if the deletion succeeded. (v0+)"""
    error_message: str | None = None
    """The error message, or null if there was no error. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.string(self.group_id, flexible)
        w.int16(self.error_code)
        if version >= 3:
            w.nullable_string(self.error_message, True)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        group_id = r.string(flexible)
        error_code = r.int16()
        error_message = r.nullable_string(True) if version >= 3 else None
        if version >= 2:
            r.skip_tags()
        return cls(group_id, error_code, error_message)


@attrs.define(frozen=True, slots=True)
class DeleteGroupsResponse:
    """The DeleteGroups response (API key 42), v0-3."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    results: tuple[DeletableGroupResult, ...] = ()
    """The deletion results. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.int32(self.throttle_time_ms)
        w.structs(self.results, version, flexible)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        throttle_time_ms = r.int32()
        results = r.structs(DeletableGroupResult, version, flexible)
        if version >= 2:
            r.skip_tags()
        return cls(throttle_time_ms, results)


@attrs.define(frozen=True, slots=True)
class DeleteGroupsRequest:
    """The DeleteGroups request (API key 42), v0-3."""

    API_KEY: ClassVar[ApiKey] = ApiKey.DELETE_GROUPS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 3
    FLEXIBLE_FROM: ClassVar[int] = 2
    RESPONSE: ClassVar[type[Response]] = DeleteGroupsResponse

    groups_names: tuple[str, ...] = ()
    """The group names to delete. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.strings(self.groups_names, flexible)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        groups_names = r.strings(flexible)
        if version >= 2:
            r.skip_tags()
        return cls(groups_names)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
