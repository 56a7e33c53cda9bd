"""How connection failures are named: the peer (bootstrap server, broker, group coordinator) and what went wrong
in plain words, never a bare ``OSError`` or an internal class name."""

from __future__ import annotations

import errno
import socket

import anyio
import pytest

from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.managers.coordinator import coordinator_node_id
from asyncconsumer.network.connection import describe_failure, describe_node, map_exceptions


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
