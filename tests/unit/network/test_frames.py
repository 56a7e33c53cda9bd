"""Frames read whole whatever pieces the socket delivers them in, by both readers (plaintext: asyncio
``recv_into`` straight into the frame; TLS: anyio's stream), and every way a frame can fail to arrive."""

from __future__ import annotations

import errno
import itertools
import os
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest

from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.network.connection import describe_failure, map_exceptions
from asyncconsumer.network.frames import FrameSizeError, FrameStream, StreamFrames, open_plain

Serve = Callable[[anyio.abc.SocketStream], Awaitable[None]]


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


LIMIT = 1 << 20
"""The readers' frame limit in these tests (a connection passes ``receive_message_max_bytes``)."""


async def _open(kind: str, port: int) -> FrameStream:
    if kind == "plain":
        return await open_plain("127.0.0.1", port, LIMIT)
    return StreamFrames(await anyio.connect_tcp("127.0.0.1", port), LIMIT)


@asynccontextmanager
async def _serving(serve: Serve) -> AsyncIterator[int]:
    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:  # the server's end is closed too, however the test ends
            await serve(stream)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        yield int(listener.extra(anyio.abc.SocketAttribute.local_port))
        tg.cancel_scope.cancel()
    await listener.aclose()


READERS = pytest.mark.parametrize("kind", ["plain", "stream"])


@READERS
@pytest.mark.anyio
async def test_frames_come_whole_from_any_split_of_the_bytes(kind: str) -> None:
    """Three frames (the smallest, a small one, one larger than a socket read) sent in pieces that cut the size
    prefixes and the payloads anywhere, with pauses so the reader sees each piece alone, then a burst of frames in
    one write."""
    big = os.urandom(700_000)  # below LIMIT
    payloads = [b"abcd", b"0123456789", big]
    wire = b"".join(frame(p) for p in payloads)
    cuts = [0, 1, 3, 4, 6, 9, 12, 20, 5000, 300_000, len(wire)]
    burst = [os.urandom(n) for n in (4, 17, 65_536, 5)]

    async def serve(stream: anyio.abc.SocketStream) -> None:
        for start, end in itertools.pairwise(cuts):
            await stream.send(wire[start:end])
            await anyio.sleep(0.01)
        await stream.send(b"".join(frame(p) for p in burst))
        await anyio.sleep_forever()

    async with _serving(serve) as port:
        frames = await _open(kind, port)
        got = [bytes(await frames.receive_frame()) for _ in range(len(payloads) + len(burst))]
        await frames.aclose()
    assert got == payloads + burst


@READERS
@pytest.mark.anyio
@pytest.mark.parametrize("size", [LIMIT + 1, 3, -1])
async def test_a_size_above_the_limit_or_impossible_is_refused_before_anything_is_allocated(
    kind: str, size: int
) -> None:
    async def serve(stream: anyio.abc.SocketStream) -> None:
        await stream.send(frame(b"fine") + struct.pack(">i", size))
        await anyio.sleep_forever()

    async with _serving(serve) as port:
        frames = await _open(kind, port)
        assert bytes(await frames.receive_frame()) == b"fine"
        with pytest.raises(FrameSizeError) as raised:
            await frames.receive_frame()
        await frames.aclose()
    assert raised.value.size == size


@READERS
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tail", "error"),
    [(b"", anyio.EndOfStream), (b"\x00\x00", anyio.IncompleteRead), (b"\x00\x00\x00\x09abc", anyio.IncompleteRead)],
)
async def test_a_peer_that_hangs_up_ends_the_frames_after_those_it_sent_whole(
    kind: str, tail: bytes, error: type[Exception]
) -> None:
    """Between frames the stream ends (``EndOfStream``); inside one, the size prefix or the payload was cut
    (``IncompleteRead``; anyio's reader says ``EndOfStream`` there too): both read "the connection was closed by
    the peer"."""

    async def serve(stream: anyio.abc.SocketStream) -> None:
        await stream.send(frame(b"last") + tail)

    async with _serving(serve) as port:
        frames = await _open(kind, port)
        assert bytes(await frames.receive_frame()) == b"last"
        with pytest.raises((anyio.EndOfStream, anyio.IncompleteRead)) as raised:
            await frames.receive_frame()
        await frames.aclose()
    if kind == "plain":
        assert type(raised.value) is error
    assert describe_failure(raised.value) == "the connection was closed by the peer"


@pytest.mark.anyio
async def test_sending_on_a_closed_plain_connection_is_a_stream_error_the_connection_names() -> None:
    async def serve(stream: anyio.abc.SocketStream) -> None:
        await anyio.sleep_forever()

    async with _serving(serve) as port:
        frames = await open_plain("127.0.0.1", port)
        await frames.send(frame(b"request"))
        await frames.aclose()
        closed = "lost the connection to broker 1 at h:1: the connection was closed"
        with pytest.raises(KafkaConnectionError, match=closed), map_exceptions(1, "h", 1, "lost the connection to"):
            await frames.send(frame(b"another"))


@pytest.mark.anyio
async def test_a_refused_plain_connection_fails_as_anyio_connect_tcp_does() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
    await listener.aclose()  # nothing listens there now
    with pytest.raises(OSError, match="All connection attempts failed") as raised:
        await open_plain("127.0.0.1", port)
    assert isinstance(raised.value.__cause__, ConnectionRefusedError)
    assert raised.value.__cause__.errno == errno.ECONNREFUSED
    assert describe_failure(raised.value) == "connection refused"
