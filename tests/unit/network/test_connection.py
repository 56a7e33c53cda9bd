"""How connection failures are named: the peer (bootstrap server, broker, group coordinator) and what went wrong
in plain words, never a bare ``OSError`` or an internal class name; the bound on a response frame; and when a SASL
session is renewed."""

from __future__ import annotations

import errno
import os
import re
import socket
import ssl
import struct
import tracemalloc

import anyio
import anyio.abc
import anyio.streams.buffered
import pytest

from asyncconsumer.errors import CorruptResponseError, KafkaConnectionError, KafkaError, ResponseTooLargeError
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.coordinator import coordinator_node_id
from asyncconsumer.network import connection as connection_module
from asyncconsumer.network.connection import (
    BrokerConnection,
    ConnectionState,
    describe_failure,
    describe_node,
    map_exceptions,
    reauthenticate_in,
)
from asyncconsumer.network.frames import FrameSizeError
from asyncconsumer.network.security import ConnectionSecurity
from asyncconsumer.protocol.base import decode_request_frame, encode_response
from asyncconsumer.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from asyncconsumer.protocol.messages.metadata import MetadataRequest


@pytest.mark.parametrize(
    ("lifetime_ms", "share", "expected_ms"),
    [
        (3_600_000, 0.85, 3_060_000),  # an hour's session: Java's 85-95 %, minutes before its end
        (3_600_000, 0.95, 3_420_000),
        (20_000, 0.95, 19_000),  # 5 % would be 1 s: the margin already holds
        (2_500, 0.90, 1_500),  # 10 % of a short session is 250 ms: a busy machine delays a request longer
        (2_000, 0.95, 1_100),  # the margin would renew 1 s after the login, which Kafka refuses
        (1_200, 0.85, 1_020),  # sessions too short for both: Java's share
    ],
)
def test_a_sasl_session_is_renewed_a_second_before_its_end_when_it_can_be(
    lifetime_ms: int, share: float, expected_ms: int
) -> None:
    assert reauthenticate_in(lifetime_ms, share) == expected_ms


def test_peers_are_named_by_role() -> None:
    assert describe_node(-1, "h", 9092) == "bootstrap server h:9092"
    assert describe_node(3, "h", 9092) == "broker 3 at h:9092"
    assert describe_node(coordinator_node_id(3), "h", 9092) == "group coordinator (broker 3) at h:9092"


def _wrapped(cause: OSError) -> OSError:
    """What anyio's connect_tcp raises when every address failed: the last attempt's error as the cause."""
    error = OSError("All connection attempts failed")
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (_wrapped(ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed")), "connection refused"),
        (socket.gaierror(-2, "Name or service not known"), "name not resolved (Name or service not known)"),
        (_wrapped(OSError(errno.EHOSTUNREACH, "No route to host")), "no route to host (No route to host)"),
        (OSError(errno.ENETUNREACH, "Network is unreachable"), "no route to host (Network is unreachable)"),
        (TimeoutError(), "timed out"),
        (ConnectionResetError(errno.ECONNRESET, "reset"), "connection reset by the peer"),
        (anyio.EndOfStream(), "the connection was closed by the peer"),
        (anyio.IncompleteRead(), "the connection was closed by the peer"),
        (OSError(errno.EMFILE, "Too many open files"), "too many open files"),
    ],
)
def test_failures_are_named_in_plain_words(error: BaseException, words: str) -> None:
    assert describe_failure(error) == words


def test_map_exceptions_names_the_peer_and_keeps_the_cause() -> None:
    refused = _wrapped(ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"))
    with pytest.raises(KafkaConnectionError) as raised, map_exceptions(-1, "h", 1, "cannot connect to"):
        raise refused
    assert str(raised.value) == "cannot connect to bootstrap server h:1: connection refused"
    assert raised.value.__cause__ is refused


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.anyio
async def test_a_tls_handshake_cut_short_by_the_setup_timeout_closes_its_socket() -> None:
    """A server that accepts and never answers the ClientHello: the set-up timeout cancels the handshake, and the
    socket is closed then, not left to the garbage collector (it once was)."""
    held: list[anyio.abc.SocketStream] = []

    async def hold(stream: anyio.abc.SocketStream) -> None:
        held.append(stream)
        await anyio.sleep_forever()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, hold)
        security = ConnectionSecurity(ssl_context=ssl.create_default_context())
        connection = BrokerConnection(1, "127.0.0.1", port, "test", lambda u, r: None, lambda c, e: None, security)
        before = _open_fds()
        timed_out = r"cannot connect to broker 1 at 127\.0\.0\.1:\d+: timed out"
        with pytest.raises(KafkaConnectionError, match=timed_out) as raised:
            await connection.connect(0.2)
        for stream in held:  # the server's end of it
            await stream.aclose()
        assert len(held) == 1
        assert _open_fds() == before, "the client's socket is still open"  # the traceback still holds its frames
        assert raised.value.__cause__ is not None
        tg.cancel_scope.cancel()
    await listener.aclose()


class _SilentServer:
    """Accepts and never answers (not even ApiVersions), holding the server's ends until ``close``."""

    def __init__(self, listener: anyio.abc.SocketListener) -> None:
        self.listener = listener
        self.port: int = listener.extra(anyio.abc.SocketAttribute.local_port)
        self.held: list[anyio.abc.SocketStream] = []

    async def hold(self, stream: anyio.abc.SocketStream) -> None:
        self.held.append(stream)
        await anyio.sleep_forever()

    async def hang_up(self) -> None:
        for stream in self.held:
            await stream.aclose()


async def _fds_back_to(before: int) -> int:
    """The open descriptors once the loop has run the closes it was handed (an asyncio transport's socket is
    closed a loop turn after ``abort``), waiting 2 s at most."""
    with anyio.move_on_after(2):
        while _open_fds() > before:
            await anyio.sleep(0.01)
    return _open_fds()


@pytest.mark.anyio
async def test_a_set_up_cancelled_while_negotiating_closes_its_socket() -> None:
    """The client closing (its task group cancelled) while a connection waits for ApiVersions: the socket is closed
    then. It once was left to the garbage collector, after the background loop had ended (a ResourceWarning in a
    later test)."""
    server = _SilentServer(await anyio.create_tcp_listener(local_host="127.0.0.1"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.listener.serve, server.hold)
        connection = BrokerConnection(1, "127.0.0.1", server.port, "test", lambda u, r: None, lambda c, e: None)
        before = _open_fds()
        async with anyio.create_task_group() as attempt:
            attempt.start_soon(connection.connect, 30.0)
            with anyio.fail_after(5):
                while not server.held:
                    await anyio.sleep(0.01)
            attempt.cancel_scope.cancel()
        assert len(server.held) == 1
        # Counted before the server hangs up: the peer's close would close the client's end too.
        assert await _fds_back_to(before + 1) == before + 1, "the client's socket is still open"  # and the server's
        await server.hang_up()
        tg.cancel_scope.cancel()
    await server.listener.aclose()


@pytest.mark.anyio
async def test_a_connection_closed_while_its_socket_opens_closes_the_socket_once_open() -> None:
    server = _SilentServer(await anyio.create_tcp_listener(local_host="127.0.0.1"))
    failures: list[BaseException] = []

    async def connect(connection: BrokerConnection) -> None:
        try:
            await connection.connect(30.0)
        except KafkaConnectionError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(server.listener.serve, server.hold)
        connection = BrokerConnection(1, "127.0.0.1", server.port, "test", lambda u, r: None, lambda c, e: None)
        before = _open_fds()
        async with anyio.create_task_group() as attempt:
            attempt.start_soon(connect, connection)
            await connection.close(KafkaConnectionError("the consumer is closing"))  # before the socket is open
        assert [str(f) for f in failures] == ["connection to node 1 closed by the client"]
        assert connection.state is ConnectionState.CLOSED
        # Counted before the server hangs up: the peer's close would close the client's end too.
        assert await _fds_back_to(before + 1) == before + 1, "the client's socket is still open"  # and the server's
        await server.hang_up()
        tg.cancel_scope.cancel()
    await server.listener.aclose()


# --- the bound on a response frame (receive_message_max_bytes) -----------------------------------------------


class _OversizeServer:
    """Answers ApiVersions, then, once ``requests`` more requests are in, announces a frame of ``size`` bytes,
    sends 68 bytes of it and waits (half a second at most) for the client to hang up."""

    def __init__(self, size: int, requests: int) -> None:
        self.size = size
        self.requests = requests
        self.received = 0
        self.client_hung_up = False
        self.done = anyio.Event()

    async def serve(self, stream: anyio.abc.SocketStream) -> None:
        try:
            async with stream:
                await self._answer(stream)
        finally:
            self.done.set()

    async def _answer(self, stream: anyio.abc.SocketStream) -> None:
        buffered = anyio.streams.buffered.BufferedByteReceiveStream(stream)
        while True:
            size = struct.unpack(">i", await buffered.receive_exactly(4))[0]
            api_key, version, correlation_id, _, _ = decode_request_frame(
                await buffered.receive_exactly(size), {18: ApiVersionsRequest, 3: MetadataRequest}
            )
            if api_key == 18:
                answer = ApiVersionsResponse(
                    error_code=0,
                    api_keys=(
                        ApiVersion(api_key=18, min_version=0, max_version=3),
                        ApiVersion(api_key=3, min_version=0, max_version=12),
                    ),
                )
                await stream.send(encode_response(answer, ApiVersionsRequest, version, correlation_id))
                continue
            self.received += 1
            if self.received == self.requests:
                await stream.send(struct.pack(">i", self.size) + struct.pack(">i", correlation_id) + bytes(64))
                with anyio.move_on_after(0.5):
                    try:
                        await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        self.client_hung_up = True
                return


async def _oversized(size: int, limit: int, requests: int) -> tuple[list[object], list[KafkaError], _OversizeServer]:
    """Sends ``requests`` Metadata requests on one connection with ``limit`` and lets the server answer with a
    frame of ``size`` bytes; returns what each request completed with, why the connection closed, and the server."""
    server = _OversizeServer(size, requests)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    results: list[object] = []
    closed: list[KafkaError] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.serve)
        connection = BrokerConnection(
            1,
            "127.0.0.1",
            port,
            "test",
            lambda unsent, result: results.append(result),
            lambda conn, reason: closed.append(reason),
            max_response_bytes=limit,
        )
        await connection.connect(5)
        for _ in range(requests):
            await connection.send(
                UnsentRequest(MetadataRequest(topics=(), allow_auto_topic_creation=False), 1, lambda r, now: None),
                12,
                10**12,
            )
        with anyio.fail_after(5):
            await connection.read_loop()
            await server.done.wait()
        assert connection.state is ConnectionState.CLOSED
        tg.cancel_scope.cancel()
    await listener.aclose()
    return results, closed, server


@pytest.mark.anyio
async def test_a_frame_claiming_2_gib_fails_the_connection_and_every_request_on_it_before_any_allocation() -> None:
    limit = 100_000_000
    tracemalloc.start()
    try:
        results, closed, server = await _oversized(2**31 - 1, limit, requests=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"{peak} bytes allocated at peak"  # reading the 2 GiB frame would be 2 GiB
    assert server.received == 3 and len(results) == 3
    assert server.client_hung_up, "the connection was left open"
    assert all(result is closed[0] for result in results), results  # the same error completes every request
    assert len(closed) == 1
    error = closed[0]
    assert isinstance(error, ResponseTooLargeError)
    assert isinstance(error, KafkaConnectionError) and error.retriable  # retried on a new connection
    assert (error.size, error.limit) == (2**31 - 1, limit)
    text = str(error)
    assert re.search(r"broker 1 at 127\.0\.0\.1:\d+ announced a response of 2147483647 bytes", text), text
    assert "receive_message_max_bytes (100000000)" in text


@pytest.mark.anyio
async def test_a_negative_frame_size_fails_the_connection_too() -> None:
    results, closed, server = await _oversized(-7, 1_000_000, requests=1)
    assert isinstance(closed[0], ResponseTooLargeError) and results == closed
    assert server.client_hung_up
    assert "announced a response of -7 bytes, a negative size" in str(closed[0])


@pytest.mark.anyio
async def test_a_frame_just_over_the_limit_is_refused_and_one_at_the_limit_is_read() -> None:
    _, closed, _ = await _oversized(1_001, 1_000, requests=1)
    assert isinstance(closed[0], ResponseTooLargeError) and closed[0].size == 1_001
    _, closed, server = await _oversized(1_000, 1_000, requests=1)
    assert not server.client_hung_up  # the client waited for the rest of the frame until the server hung up
    assert not isinstance(closed[0], ResponseTooLargeError), closed[0]


def test_the_refusal_is_logged_once_with_a_stable_event_name(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, dict[str, object]]] = []

    class Recorder:
        def warning(self, event: str, **fields: object) -> None:
            events.append((event, fields))

        def info(self, event: str, **fields: object) -> None:
            events.append((event, fields))

        def debug(self, event: str, **fields: object) -> None:
            pass

    monkeypatch.setattr(connection_module, "log", Recorder())
    anyio.run(_oversized, 2**31 - 1, 1_000, 2)
    refused = [fields for event, fields in events if event == "connection.response_too_large"]
    assert len(refused) == 1
    assert refused[0]["size"] == 2**31 - 1 and refused[0]["limit"] == 1_000 and refused[0]["node"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("size", "error", "words"),
    [
        (-7, ResponseTooLargeError, "broker 3 at h:9092 announced a response of -7 bytes"),
        (2, CorruptResponseError, "node 3 sent a frame of 2 bytes"),
    ],
)
async def test_the_connection_names_the_broker_that_sent_an_impossible_frame(
    size: int, error: type[Exception], words: str
) -> None:
    class Refusing:
        async def send(self, data: bytes) -> None:
            raise AssertionError("not sent")

        async def receive_frame(self) -> memoryview:
            raise FrameSizeError(size)

        async def aclose(self) -> None:
            return None

    connection = BrokerConnection(3, "h", 9092, "test", lambda u, r: None, lambda c, e: None)
    with pytest.raises(error, match=words):
        await connection._read_frame(Refusing())
