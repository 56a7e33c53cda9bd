"""Generated from Apache Kafka's SaslHandshakeRequest.json/SaslHandshakeResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

SaslHandshake (API key 17) at v1 of the v0-1 Kafka defines; never flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
]


@attrs.define(frozen=True, slots=True)
class SaslHandshakeResponse:
    """The SaslHandshake response (API key 17), v1."""

    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    mechanisms: tuple[str, ...] = ()
    """The mechanisms enabled in the server. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int16(self.error_code)
        w.strings(self.mechanisms, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        error_code = r.int16()
        mechanisms = r.strings(False)
        return cls(error_code, mechanisms)


@attrs.define(frozen=True, slots=True)
class SaslHandshakeRequest:
    """The SaslHandshake request (API key 17), v1."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SASL_HANDSHAKE
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 1
    FLEXIBLE_FROM: ClassVar[int] = 32768
    RESPONSE: ClassVar[type[Response]] = SaslHandshakeResponse

    mechanism: str = ""
    """The SASL mechanism chosen by the client. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.mechanism, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        mechanism = r.string(False)
        return cls(mechanism)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
