"""ApiVersions (API key 18), versions 0-3: the API version ranges a broker supports.

Version 3 is the first flexible version and adds the client software name and version to the request. The
response header stays v0 at every version (handled in ``base``), and a broker that does not support the
requested version answers with a v0 body; ``ApiVersionsResponse.decode`` falls back to v0 like Kafka's client.
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = ["ApiVersionRange", "ApiVersionsRequest", "ApiVersionsResponse"]

_FLEXIBLE_FROM = 3


@attrs.define(frozen=True, slots=True)
class ApiVersionRange:
    """One API the broker supports and its inclusive version range."""

    api_key: int
    min_version: int
    max_version: int

    def encode(self, w: Writer, version: int) -> None:
        w.int16(self.api_key)
        w.int16(self.min_version)
        w.int16(self.max_version)
        w.end_struct(version >= _FLEXIBLE_FROM)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        item = cls(r.int16(), r.int16(), r.int16())
        r.end_struct(version >= _FLEXIBLE_FROM)
        return item


@attrs.define(frozen=True, slots=True)
class ApiVersionsResponse:
    """The broker's error code and supported API version ranges (feature tagged fields are ignored)."""

    error_code: int
    api_keys: tuple[ApiVersionRange, ...]
    throttle_time_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        w.int16(self.error_code)
        w.structs(self.api_keys, version, flexible)
        if version >= 1:
            w.int32(self.throttle_time_ms)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        start = r.pos
        try:
            return cls._decode(r, version)
        except CorruptResponseError:
            if version == 0:
                raise
            # A broker that does not support ``version`` answers UNSUPPORTED_VERSION with a v0 body.
            r.pos = start
            return cls._decode(r, 0)

    @classmethod
    def _decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _FLEXIBLE_FROM
        error_code = r.int16()
        api_keys = r.nullable_structs(ApiVersionRange, version, flexible)
        if api_keys is None:
            raise CorruptResponseError("null ApiKeys array in ApiVersions response")
        throttle_time_ms = r.int32() if version >= 1 else 0
        r.end_struct(flexible)  # SupportedFeatures, FinalizedFeaturesEpoch, FinalizedFeatures, ...: not needed
        return cls(error_code, api_keys, throttle_time_ms)


@attrs.define(frozen=True, slots=True)
class ApiVersionsRequest:
    """Asks a broker which API versions it supports; v3+ also names the client software."""

    API_KEY: ClassVar[ApiKey] = ApiKey.API_VERSIONS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 3
    FLEXIBLE_FROM: ClassVar[int] = _FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = ApiVersionsResponse

    client_software_name: str = "asyncconsumer"
    client_software_version: str = "0.1.0"

    def encode(self, w: Writer, version: int) -> None:
        if version >= _FLEXIBLE_FROM:
            w.str_(self.client_software_name, True)
            w.str_(self.client_software_version, True)
            w.tagged_fields()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        if version < _FLEXIBLE_FROM:
            return cls()
        name = r.compact_string()
        software_version = r.compact_string()
        r.tagged_fields()
        return cls(name, software_version)
