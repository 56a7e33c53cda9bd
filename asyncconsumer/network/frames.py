"""Size-prefixed frames over a connection: sent whole, received whole, each response in one buffer of its size.

Two readers with one interface (``FrameStream``). A plaintext connection (``open_plain``) is an asyncio transport
whose protocol has the socket read straight into the frame being filled (``recv_into``): a 1 MiB fetch response
costs a few reads and one wake-up of the reader. A TLS connection keeps anyio's stream (``StreamFrames``): there
each ``receive()`` costs a task wake-up, two selector changes and a new ``bytes`` of at most 256 KiB, copied into
the frame, about 5 for a 1 MiB response (measured: the plaintext reader cut the background thread's CPU by about a
quarter on 100-byte records).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import deque
from typing import Protocol

import anyio
import anyio.abc

_SIZE = struct.Struct(">i")
MAX_FRAME_BYTES = (1 << 31) - 1
"""The largest size a frame's int32 prefix can state; a connection holds frames to its own, lower limit."""
_MAX_RECEIVE = 4 << 20


class FrameSizeError(Exception):
    """The peer announced a frame of an impossible size, or one above the limit (``receive_message_max_bytes``);
    the connection names the broker in the error it raises."""

    def __init__(self, size: int) -> None:
        super().__init__(f"a frame of {size} bytes")
        self.size = size


def _checked_size(header: bytes | bytearray | memoryview, limit: int) -> int:
    size = int(_SIZE.unpack(header)[0])
    if size < 4 or size > min(limit, MAX_FRAME_BYTES):
        raise FrameSizeError(size)
    return size


class FrameStream(Protocol):
    """What a broker connection needs of its socket."""

    async def send(self, data: bytes) -> None:
        """Writes one request; raises ``OSError`` or anyio's stream errors when the connection is gone."""

    async def receive_frame(self) -> memoryview:
        """The next response, without its size prefix; ``FrameSizeError``, ``OSError`` or anyio's stream errors
        (``EndOfStream``, ``IncompleteRead``...) when it cannot be read."""

    async def aclose(self) -> None:
        """Closes the socket."""


class StreamFrames:
    """Frames over an anyio byte stream (TLS): a frame that arrives in pieces is copied once into one buffer of its
    size (joining the pieces would hold the frame twice at its peak)."""

    def __init__(self, stream: anyio.abc.ByteStream, limit: int = MAX_FRAME_BYTES) -> None:
        self._stream = stream
        self._limit = limit

    async def send(self, data: bytes) -> None:
        await self._stream.send(data)

    async def receive_frame(self) -> memoryview:
        size = _checked_size(await self._read_exactly(4), self._limit)
        return await self._read_exactly(size)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def _read_exactly(self, n: int) -> memoryview:
        first = await self._stream.receive(min(n, _MAX_RECEIVE))
        if len(first) == n:
            return memoryview(first)
        view = memoryview(bytearray(n))
        got = len(first)
        view[:got] = first
        del first
        while got < n:
            chunk = await self._stream.receive(min(n - got, _MAX_RECEIVE))
            view[got : got + len(chunk)] = chunk
            got += len(chunk)
        return view


class _FrameProtocol(asyncio.BufferedProtocol):
    """Fills frames from the socket: ``get_buffer`` hands asyncio the rest of the size prefix, then the rest of the
    frame, and asyncio ``recv_into``s it; complete frames queue up for ``SocketFrames.receive_frame``.

    Reading is never paused: the broker only sends responses to requests, so what queues here is bounded by what
    was asked for (the fetch buffer's reservations, for fetches).
    """

    def __init__(self, limit: int = MAX_FRAME_BYTES) -> None:
        self._limit = limit
        self._prefix = memoryview(bytearray(4))
        self._frame: memoryview | None = None
        self._filled = 0
        self.frames: deque[memoryview] = deque()
        self.failure: BaseException | None = None
        """Raised by the reader once the queued frames are taken: why no more will come."""
        self.transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.writable = asyncio.Event()
        self.writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self._frame
        return self._prefix[self._filled :] if frame is None else frame[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self._filled += nbytes
        frame = self._frame
        if frame is None:
            if self._filled < 4:
                return
            self._filled = 0
            try:
                size = _checked_size(self._prefix, self._limit)
            except FrameSizeError as exc:
                self._fail(exc)
                assert self.transport is not None
                self.transport.abort()
                return
            self._frame = memoryview(bytearray(size))
        elif self._filled == len(frame):
            self.frames.append(frame)
            self._frame = None
            self._filled = 0
            self._wake()

    def eof_received(self) -> bool:
        cut = self._frame is not None or self._filled
        self._fail(anyio.IncompleteRead() if cut else anyio.EndOfStream())
        return False  # asyncio closes the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc if exc is not None else anyio.BrokenResourceError())
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def closed_here(self) -> None:
        self._fail(anyio.ClosedResourceError())

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_frame(self) -> memoryview:
        while not self.frames:
            if self.failure is not None:
                raise self.failure
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self.frames.popleft()


class SocketFrames:
    """A plaintext connection: an asyncio transport with ``_FrameProtocol`` (see the module docstring)."""

    def __init__(self, transport: asyncio.Transport, protocol: _FrameProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def send(self, data: bytes) -> None:
        protocol = self._protocol
        if self._transport.is_closing():
            raise protocol.failure or anyio.ClosedResourceError()
        self._transport.write(data)
        if not protocol.writable.is_set():
            await protocol.writable.wait()
            if protocol.failure is not None:
                raise protocol.failure

    async def receive_frame(self) -> memoryview:
        return await self._protocol.next_frame()

    async def aclose(self) -> None:
        # Abrupt, as anyio's close ends: every request that mattered has had its answer, and the socket is closed now.
        self._protocol.closed_here()
        self._transport.abort()


async def open_plain(host: str, port: int, limit: int = MAX_FRAME_BYTES) -> SocketFrames:
    """Connects to the addresses of ``host`` one after the other (as Kafka's Java client does; anyio's ``connect_tcp``
    would race them) and reports failure as anyio does: ``gaierror`` when the name does not resolve, else
    ``OSError("All connection attempts failed")`` caused by the attempts' errors."""
    loop = asyncio.get_running_loop()
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    errors: list[OSError] = []
    for family, _, _, _, address in infos:
        try:
            transport, protocol = await loop.create_connection(
                lambda: _FrameProtocol(limit), str(address[0]), int(address[1]), family=family
            )
        except OSError as exc:
            errors.append(exc)
            continue
        assert isinstance(transport, asyncio.Transport)
        return SocketFrames(transport, protocol)
    if not errors:
        raise OSError(f"no address found for {host}")
    cause = errors[0] if len(errors) == 1 else ExceptionGroup("multiple connection attempts failed", errors)
    raise OSError("All connection attempts failed") from cause
