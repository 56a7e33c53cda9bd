"""The contract every protocol message of ours follows, and request/response framing.

A request class names its API key, the versions we implement and the version where flexible encoding starts;
its ``RESPONSE`` class decodes the answer, and its ``for_version`` gives it in the layout of the version it is sent
at. The classes are generated (``protocol/messages/``); both directions are implemented for every message so that
tests and test brokers can speak the protocol too.
"""

from __future__ import annotations

import struct
from typing import ClassVar, Protocol, Self

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer

__all__ = [
    "ApiKey",
    "Message",
    "Request",
    "Response",
    "decode_request_frame",
    "decode_response",
    "encode_request",
    "encode_response",
    "is_flexible",
    "peek_correlation_id",
    "response_header_is_flexible",
]


class Message(Protocol):
    """Anything encodable both ways at a given version."""

    def encode(self, w: Writer, version: int) -> None: ...

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self: ...


class Response(Message, Protocol):
    """A decoded response."""


class Request(Message, Protocol):
    API_KEY: ClassVar[ApiKey]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    FLEXIBLE_FROM: ClassVar[int]
    RESPONSE: ClassVar[type[Response]]

    def for_version(self, version: int) -> Self:
        """This request in the layout ``version`` has: itself, but where one-item fields became a batch inside
        the versions we speak (FindCoordinator, LeaveGroup, OffsetFetch), so users build one value for all."""
        ...


_SIZE = struct.Struct(">i")
_HEADER_V1 = struct.Struct(">hhi")


def is_flexible(request_type: type[Request], version: int) -> bool:
    return version >= request_type.FLEXIBLE_FROM


def encode_request(request: Request, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """The whole frame (size prefix, header v1 or v2, body) for ``request`` at ``version``, written in the layout
    ``version`` has (``Request.for_version``)."""
    w = Writer()
    w.raw(b"\x00\x00\x00\x00")
    w.raw(_HEADER_V1.pack(int(request.API_KEY), version, correlation_id))
    w.nullable_string(client_id, flexible=False)  # the client id stays a classic string even in header v2
    if is_flexible(type(request), version):
        w.empty_tags()
    request.for_version(version).encode(w, version)
    _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


def response_header_is_flexible(request_type: type[Request], version: int) -> bool:
    # ApiVersions answers with header v0 at every version, so that any client can read the version list.
    return is_flexible(request_type, version) and request_type.API_KEY != ApiKey.API_VERSIONS


def peek_correlation_id(frame: bytes | memoryview) -> int:
    """The correlation id of a response frame (without its size prefix)."""
    if len(frame) < 4:
        raise CorruptResponseError("response frame shorter than its header")
    return int(_SIZE.unpack_from(frame, 0)[0])


def decode_response(frame: bytes | memoryview, request_type: type[Request], version: int) -> Response:
    """Decodes a response frame (without its size prefix) for a request of ``request_type`` at ``version``."""
    r = Reader(frame, 4)
    if response_header_is_flexible(request_type, version):
        r.skip_tags()
    start = r.pos
    try:
        return _decode(r, request_type, version)
    except CorruptResponseError:
        if request_type.API_KEY != ApiKey.API_VERSIONS or version == 0:
            raise
    # A broker that does not support ``version`` answers UNSUPPORTED_VERSION with a v0 body (Kafka's client reads
    # it so too).
    r.pos = start
    return _decode(r, request_type, 0)


def _decode(r: Reader, request_type: type[Request], version: int) -> Response:
    try:
        return request_type.RESPONSE.decode(r, version)
    except CorruptResponseError:
        raise
    except (ValueError, IndexError, UnicodeDecodeError, OverflowError) as exc:
        raise CorruptResponseError(f"undecodable {request_type.API_KEY.name} v{version} response: {exc}") from exc


def decode_request_frame(
    frame: bytes | memoryview, types: dict[int, type[Request]]
) -> tuple[int, int, int, str | None, Request]:
    """For test brokers: (api_key, version, correlation_id, client_id, request) from a frame without its size."""
    r = Reader(frame)
    api_key, version, correlation_id = r.int16(), r.int16(), r.int32()
    client_id = r.nullable_string(flexible=False)
    request_type = types[api_key]
    if is_flexible(request_type, version):
        r.skip_tags()
    return api_key, version, correlation_id, client_id, request_type.decode(r, version)


def encode_response(response: Response, request_type: type[Request], version: int, correlation_id: int) -> bytes:
    """For test brokers: the whole response frame, size prefix included."""
    w = Writer()
    w.raw(b"\x00\x00\x00\x00")
    w.int32(correlation_id)
    if response_header_is_flexible(request_type, version):
        w.empty_tags()
    response.encode(w, version)
    _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)
