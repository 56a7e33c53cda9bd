"""FindCoordinator (API key 10), versions 1-4: which broker coordinates a group (or transaction) id.

Wire changes in range (FindCoordinatorRequest/Response.json): v1 KeyType, throttle time and error message;
v2 changes nothing; v3 flexible; v4 (KIP-699) batches: the request sends CoordinatorKeys instead of Key and the
response answers with a Coordinators array instead of the single top-level node. v5 and v6 keep v4's layout
(they only add error codes and share-group keys) and are not implemented.

``FindCoordinatorRequest.keys`` and ``FindCoordinatorResponse.for_key`` give one view over both layouts.
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.errors import ErrorCode
from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "KEY_TYPE_GROUP",
    "KEY_TYPE_TRANSACTION",
    "Coordinator",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
]

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1

_FLEXIBLE_FROM = 3
_BATCHED_FROM = 4


@attrs.define(frozen=True, slots=True)
class Coordinator:
    """The coordinator found for one key (v4+ responses; ``FindCoordinatorResponse.for_key`` for any version)."""

    key: str
    node_id: int
    host: str
    port: int
    error_code: int = 0
    error_message: str | None = None

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.str_(self.key, flexible)
        w.int32(self.node_id)
        w.str_(self.host, flexible)
        w.int32(self.port)
        w.int16(self.error_code)
        w.nstr(self.error_message, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        key = r.str_(flexible)
        node_id = r.int32()
        host = r.str_(flexible)
        port = r.int32()
        error_code = r.int16()
        error_message = r.nstr(flexible)
        r.end_struct(flexible)
        return cls(key, node_id, host, port, error_code, error_message)


@attrs.define(frozen=True, slots=True)
class FindCoordinatorResponse:
    """The coordinator: top-level fields up to v3, ``coordinators`` from v4 (the other side keeps its defaults)."""

    error_code: int = 0
    node_id: int = -1
    host: str = ""
    port: int = -1
    error_message: str | None = None
    coordinators: tuple[Coordinator, ...] = ()
    throttle_time_ms: int = 0

    def for_key(self, key: str) -> Coordinator:
        """The answer for ``key`` whatever the version.

        A batched answer that lacks ``key``, or a success without a node (a v4 answer with no coordinators at
        all), reads as COORDINATOR_NOT_AVAILABLE, which is retriable.
        """
        if self.coordinators:
            for coordinator in self.coordinators:
                if coordinator.key == key:
                    return coordinator
            return Coordinator(
                key, -1, "", -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no coordinator for {key!r} in response"
            )
        if self.error_code == ErrorCode.NONE and self.node_id < 0:
            return Coordinator(key, -1, "", -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator in response")
        return Coordinator(key, self.node_id, self.host, self.port, self.error_code, self.error_message)

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int32(self.throttle_time_ms)
        if version >= _BATCHED_FROM:
            w.structs(self.coordinators, version, flexible)
        else:
            w.int16(self.error_code)
            w.nstr(self.error_message, flexible)
            w.int32(self.node_id)
            w.str_(self.host, flexible)
            w.int32(self.port)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        throttle_time_ms = r.int32()
        if version >= _BATCHED_FROM:
            coordinators = r.structs(Coordinator, version, flexible)
            r.end_struct(flexible)
            return cls(coordinators=coordinators, throttle_time_ms=throttle_time_ms)
        error_code = r.int16()
        error_message = r.nstr(flexible)
        node_id = r.int32()
        host = r.str_(flexible)
        port = r.int32()
        r.end_struct(flexible)
        return cls(error_code, node_id, host, port, error_message, (), throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class FindCoordinatorRequest:
    """Finds the coordinator of ``key`` (a group id for ``KEY_TYPE_GROUP``).

    ``coordinator_keys``, when given, win over ``key``; v1-3 carry exactly one key. Decoding v4 gives the
    batched form (``key`` empty), decoding v1-3 the single form.
    """

    API_KEY: ClassVar[ApiKey] = ApiKey.FIND_COORDINATOR
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = _FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = FindCoordinatorResponse

    key: str
    key_type: int = KEY_TYPE_GROUP
    coordinator_keys: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return self.coordinator_keys or (self.key,)

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        keys = self.keys
        if version >= _BATCHED_FROM:
            w.int8(self.key_type)  # KeyType precedes CoordinatorKeys: fields keep their declaration order
            w.strs(keys, flexible)
        else:
            if len(keys) != 1:
                raise ValueError(f"FindCoordinator v{version} looks up one key, not {len(keys)}")
            w.str_(keys[0], flexible)
            w.int8(self.key_type)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        if version >= _BATCHED_FROM:
            key_type = r.int8()
            keys = r.strs(flexible)
            r.end_struct(flexible)
            return cls("", key_type, keys)
        key = r.str_(flexible)
        key_type = r.int8()
        r.end_struct(flexible)
        return cls(key, key_type)
