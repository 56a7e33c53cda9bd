"""Generated from Apache Kafka's FindCoordinatorRequest.json/FindCoordinatorResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

FindCoordinator (API key 10) at v1-4 of the v0-6 Kafka defines; flexible from v3.
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
    "Coordinator",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
]

_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class Coordinator:
    """Each coordinator result in the response."""

    key: str = ""
    """The coordinator key. (v4+)"""
    node_id: int = 0
    """The node id. (v4+)"""
    host: str = ""
    """The host name. (v4+)"""
    port: int = 0
    """The port. (v4+)"""
    error_code: int = 0
    """The error code, or 0 if there was no error. (v4+)"""
    error_message: str | None = ""
    """The error message, or null if there was no error. (v4+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.key, True)
        w.int32(self.node_id)
        w.string(self.host, True)
        w.pack(_ih, self.port, self.error_code)
        w.nullable_string(self.error_message, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        key = r.string(True)
        node_id = r.int32()
        host = r.string(True)
        port, error_code = r.unpack(_ih)
        error_message = r.nullable_string(True)
        r.skip_tags()
        return cls(key, node_id, host, port, error_code, error_message)


@attrs.define(frozen=True, slots=True)
class FindCoordinatorResponse:
    """The FindCoordinator response (API key 10), v1-4."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0-3)"""
    error_message: str | None = ""
    """The error message, or null if there was no error. (v1-3)"""
    node_id: int = 0
    """The node id. (v0-3)"""
    host: str = ""
    """The host name. (v0-3)"""
    port: int = 0
    """The port. (v0-3)"""
    coordinators: tuple[Coordinator, ...] = ()
    """Each coordinator result in the response. (v4+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 3
        if version >= 4:
            w.int32(self.throttle_time_ms)
        else:
            w.pack(_ih, self.throttle_time_ms, self.error_code)
        if version <= 3:
            w.nullable_string(self.error_message, flexible)
            w.int32(self.node_id)
            w.string(self.host, flexible)
            w.int32(self.port)
        if version >= 4:
            w.structs(self.coordinators, version, True)
        if version >= 3:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 3
        if version >= 4:
            throttle_time_ms = r.int32()
            error_code = 0
        else:
            throttle_time_ms, error_code = r.unpack(_ih)
        error_message = "" if version >= 4 else r.nullable_string(flexible)
        node_id = 0 if version >= 4 else r.int32()
        host = "" if version >= 4 else r.string(flexible)
        port = 0 if version >= 4 else r.int32()
        coordinators = r.structs(Coordinator, version, True) if version >= 4 else ()
        if version >= 3:
            r.skip_tags()
        return cls(throttle_time_ms, error_code, error_message, node_id, host, port, coordinators)


@attrs.define(frozen=True, slots=True)
class FindCoordinatorRequest:
    """The FindCoordinator request (API key 10), v1-4."""

    API_KEY: ClassVar[ApiKey] = ApiKey.FIND_COORDINATOR
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = 3
    RESPONSE: ClassVar[type[Response]] = FindCoordinatorResponse

    key: str = ""
    """The coordinator key. (v0-3)"""
    key_type: int = 0
    """The coordinator key type. (group, transaction, share). (v1+)"""
    coordinator_keys: tuple[str, ...] = ()
    """The coordinator keys. (v4+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 3
        if version >= 4:
            if self.key:
                raise ValueError(f"FindCoordinatorRequest.key needs v0-3, not v{version}")
        else:
            w.string(self.key, flexible)
        w.int8(self.key_type)
        if version >= 4:
            w.strings(self.coordinator_keys, True)
        elif self.coordinator_keys:
            raise ValueError(f"FindCoordinatorRequest.coordinator_keys needs v4+, not v{version}")
        if version >= 3:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 3
        key = "" if version >= 4 else r.string(flexible)
        key_type = r.int8()
        coordinator_keys = r.strings(True) if version >= 4 else ()
        if version >= 3:
            r.skip_tags()
        return cls(key, key_type, coordinator_keys)

    def for_version(self, version: int) -> Self:
        """The request in the layout ``version`` has, built in either: ``key`` to v3, ``coordinator_keys`` from v4;
        ``ValueError`` when an older version cannot carry the batch (Kafka's builders' rule).
        """
        if version >= 4:
            if not self.coordinator_keys:
                return attrs.evolve(self, key="", coordinator_keys=(self.key,))
            return attrs.evolve(self, key="") if self.key else self
        if not self.coordinator_keys:
            return self
        if len(self.coordinator_keys) != 1:
            raise ValueError(
                f"FindCoordinatorRequest v{version} takes one of coordinator_keys, not {len(self.coordinator_keys)}"
            )
        (one,) = self.coordinator_keys
        return attrs.evolve(self, key=one, coordinator_keys=())
