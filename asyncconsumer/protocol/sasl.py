"""SaslHandshake (API key 17, v0-1) and SaslAuthenticate (API key 36, v0-2): SASL inside Kafka frames.

Handshake v1 announces that the SASL tokens travel in SaslAuthenticate requests (KIP-152) rather than as raw
bytes; this client only speaks that form. SaslAuthenticate v2 is the first flexible version.
"""

from __future__ import annotations

from typing import ClassVar, Self

import attrs

from asyncconsumer.protocol.base import ApiKey, Response
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
]

_AUTHENTICATE_FLEXIBLE_FROM = 2
_NEVER = 1 << 15


@attrs.define(frozen=True, slots=True)
class SaslHandshakeResponse:
    """The broker's verdict on the mechanism and the mechanisms it has enabled."""

    error_code: int
    mechanisms: tuple[str, ...]

    def encode(self, w: Writer, version: int) -> None:
        w.int16(self.error_code)
        w.strs(self.mechanisms, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        return cls(r.int16(), r.strs(False))


@attrs.define(frozen=True, slots=True)
class SaslHandshakeRequest:
    """Chooses the SASL mechanism for this connection."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SASL_HANDSHAKE
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 1
    FLEXIBLE_FROM: ClassVar[int] = _NEVER
    RESPONSE: ClassVar[type[Response]] = SaslHandshakeResponse

    mechanism: str

    def encode(self, w: Writer, version: int) -> None:
        w.str_(self.mechanism, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        return cls(r.str_(False))


@attrs.define(frozen=True, slots=True)
class SaslAuthenticateResponse:
    """The broker's SASL token, or an error with the broker's reason."""

    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int = 0

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _AUTHENTICATE_FLEXIBLE_FROM
        w.int16(self.error_code)
        w.nstr(self.error_message, flexible)
        w.nbytes(self.auth_bytes, flexible)
        if version >= 1:
            w.int64(self.session_lifetime_ms)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _AUTHENTICATE_FLEXIBLE_FROM
        error_code = r.int16()
        error_message = r.nstr(flexible)
        auth_bytes = r.bytes_(flexible)
        lifetime = r.int64() if version >= 1 else 0
        r.end_struct(flexible)
        return cls(error_code, error_message, auth_bytes, lifetime)


@attrs.define(frozen=True, slots=True)
class SaslAuthenticateRequest:
    """One SASL token from the client; its repr never shows the token (it may hold a password)."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SASL_AUTHENTICATE
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 2
    FLEXIBLE_FROM: ClassVar[int] = _AUTHENTICATE_FLEXIBLE_FROM
    RESPONSE: ClassVar[type[Response]] = SaslAuthenticateResponse

    auth_bytes: bytes = attrs.field(repr=lambda b: f"<{len(b)} bytes>")

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= _AUTHENTICATE_FLEXIBLE_FROM
        w.nbytes(self.auth_bytes, flexible)
        w.end_struct(flexible)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= _AUTHENTICATE_FLEXIBLE_FROM
        auth_bytes = r.bytes_(flexible)
        r.end_struct(flexible)
        return cls(auth_bytes)
