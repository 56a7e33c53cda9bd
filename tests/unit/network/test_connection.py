"""How connection failures are named: the peer (bootstrap server, broker, group coordinator) and what went wrong
in plain words, never a bare ``OSError`` or an internal class name."""

from __future__ import annotations

import errno
import os
import socket
import ssl

import anyio
import anyio.abc
import pytest

from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.managers.coordinator import coordinator_node_id
from asyncconsumer.network.connection import BrokerConnection, describe_failure, describe_node, map_exceptions
from asyncconsumer.network.security import ConnectionSecurity


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
