"""Generated from Apache Kafka's SaslAuthenticateRequest.json/SaslAuthenticateResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

SaslAuthenticate (API key 36) at v0-2 of the v0-2 Kafka defines; flexible from v2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer, blob_repr

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
]


@attrs.define(frozen=True, slots=True)
class SaslAuthenticateResponse:
    """The SaslAuthenticate response (API key 36), v0-2."""

    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    error_message: str | None = ""
    """The error message, or null if there was no error. (v0+)"""
    auth_bytes: bytes = attrs.field(default=b"", repr=blob_repr)
    """The SASL authentication bytes from the server, as defined by the SASL mechanism. (v0+)"""
    session_lifetime_ms: int = 0
    """Number of milliseconds after which only re-authentication over the existing connection to create a new session
    can occur. (v1+)
    """

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.int16(self.error_code)
        w.nullable_string(self.error_message, flexible)
        w.bytes_(self.auth_bytes, flexible)
        if version >= 1:
            w.int64(self.session_lifetime_ms)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        error_code = r.int16()
        error_message = r.nullable_string(flexible)
        auth_bytes = r.bytes_(flexible)
        session_lifetime_ms = r.int64() if version >= 1 else 0
        if version >= 2:
            r.skip_tags()
        return cls(error_code, error_message, auth_bytes, session_lifetime_ms)


@attrs.define(frozen=True, slots=True)
class SaslAuthenticateRequest:
    """The SaslAuthenticate request (API key 36), v0-2."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SASL_AUTHENTICATE
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 2
    FLEXIBLE_FROM: ClassVar[int] = 2
    RESPONSE: ClassVar[type[Response]] = SaslAuthenticateResponse

    auth_bytes: bytes = attrs.field(default=b"", repr=blob_repr)
    """The SASL authentication bytes from the client, as defined by the SASL mechanism. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.bytes_(self.auth_bytes, flexible)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        auth_bytes = r.bytes_(flexible)
        if version >= 2:
            r.skip_tags()
        return cls(auth_bytes)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
