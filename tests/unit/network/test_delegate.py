"""The network delegate against a scripted broker on loopback: negotiation, matching, timeouts, disconnects.

The scripted broker speaks our own protocol classes both ways; it does what no real broker here can be made to
do on demand (answer late, refuse an API, drop a connection at a chosen request).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from asyncconsumer._clock import ManualClock, SystemClock
from asyncconsumer.errors import (
    AuthenticationError,
    KafkaConnectionError,
    RequestTimedOutError,
    ResponseTooLargeError,
    UnsupportedVersionError,
)
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.coordinator import COORDINATOR_NODE_BASE
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.network.delegate import NetworkClientDelegate
from asyncconsumer.network.security import ConnectionSecurity, SaslCredentials
from asyncconsumer.protocol.base import Request, decode_request_frame, encode_response
from asyncconsumer.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from asyncconsumer.protocol.messages.list_offsets import ListOffsetsRequest
from asyncconsumer.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
)

TYPES: dict[int, type[Request]] = {18: ApiVersionsRequest, 3: MetadataRequest, 2: ListOffsetsRequest}
Handler = Callable[[int, int, Request], Any]
"""(api_key, version, request) -> response, None to stay silent, "close" to drop the connection, or bytes to send
as they are (any framing)."""


class ScriptedBroker:
    """A tiny blocking TCP server answering with our protocol classes, one thread per connection."""

    def __init__(self, handler: Handler, metadata_max: int = 12) -> None:
        self.handler = handler
        self.metadata_max = metadata_max
        self.versions_seen: list[tuple[int, int]] = []
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            self._socks.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            while True:
                header = sock.recv(4, socket.MSG_WAITALL)
                if len(header) < 4:
                    return
                size = struct.unpack(">i", header)[0]
                frame = sock.recv(size, socket.MSG_WAITALL)
                api_key, version, correlation_id, _, request = decode_request_frame(frame, TYPES)
                self.versions_seen.append((api_key, version))
                if api_key == 18:
                    response: Any = ApiVersionsResponse(
                        error_code=0,
                        api_keys=(
                            ApiVersion(api_key=18, min_version=0, max_version=3),
                            ApiVersion(api_key=3, min_version=0, max_version=self.metadata_max),
                        ),
                    )
                else:
                    response = self.handler(api_key, version, request)
                if response is None:
                    continue
                if response == "close":
                    sock.close()
                    return
                if isinstance(response, bytes):
                    sock.sendall(response)
                    continue
                sock.sendall(encode_response(response, TYPES[api_key], version, correlation_id))
        except OSError:
            return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread, so the port is closed now
        self._server.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # a close alone sends nothing while a thread waits in recv
            with contextlib.suppress(OSError):
                sock.close()


class Nodes:
    def __init__(self, port: int) -> None:
        self.port = port

    def address(self, node_id: int) -> tuple[str, int] | None:
        return ("127.0.0.1", self.port) if node_id == -1 else None

    def candidate_nodes(self) -> list[int]:
        return [-1]

    def rebootstrap(self, reason: str) -> None:
        raise AssertionError(f"a bootstrap server is no known broker: no rebootstrap ({reason})")


def metadata_answer() -> MetadataResponse:
    return MetadataResponse(brokers=(MetadataResponseBroker(node_id=1, host="127.0.0.1", port=1),), topics=())


def new_delegate(
    clock: SystemClock, port: int, request_timeout_ms: int = 2_000, *, nodes: Any = None, **extra: Any
) -> NetworkClientDelegate:
    """A delegate whose only node is the bootstrap broker on ``port`` (or whose directory is ``nodes``)."""
    return NetworkClientDelegate(
        clock,
        nodes if nodes is not None else Nodes(port),
        client_id="t",
        request_timeout_ms=request_timeout_ms,
        connection_setup_timeout_ms=2_000,
        max_in_flight=5,
        reconnect_backoff=ExponentialBackoff(50, 200),
        **extra,
    )


async def exchange(
    broker: ScriptedBroker, request: Request, request_timeout_ms: int = 2_000, nodes: Any = None
) -> object:
    """Sends one request through a fresh delegate and returns what its callback received."""
    clock = SystemClock()
    delegate = new_delegate(clock, broker.port, request_timeout_ms, nodes=nodes)
    results: list[object] = []
    async with anyio.create_task_group() as tg:
        delegate.attach(tg)
        delegate.add_all([UnsentRequest(request, None, lambda r, now: results.append(r))], clock.now_ms())
        with anyio.fail_after(10):
            while not results:
                await delegate.poll(100, clock.now_ms())
        await delegate.close()
        tg.cancel_scope.cancel()
    return results[0]


@pytest.fixture
def scripted() -> Any:
    brokers: list[ScriptedBroker] = []

    def make(handler: Handler, **kw: Any) -> ScriptedBroker:
        broker = ScriptedBroker(handler, **kw)
        brokers.append(broker)
        return broker

    yield make
    for broker in brokers:
        broker.close()


def test_the_highest_version_both_sides_speak_is_used(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: metadata_answer(), metadata_max=7)
    result = anyio.run(exchange, broker, MetadataRequest(topics=(), allow_auto_topic_creation=False))
    assert isinstance(result, MetadataResponse)
    assert (3, 7) in broker.versions_seen
    assert broker.versions_seen[0] == (18, 3)


def test_an_api_the_broker_lacks_fails_with_unsupported_version(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: None)
    result = anyio.run(exchange, broker, ListOffsetsRequest(topics=(), replica_id=-1))
    assert isinstance(result, UnsupportedVersionError)
    assert "LIST_OFFSETS" in str(result)


def test_a_request_with_no_answer_times_out_and_its_connection_is_closed(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: None)
    result = anyio.run(exchange, broker, MetadataRequest(topics=(), allow_auto_topic_creation=False), 300)
    assert isinstance(result, RequestTimedOutError)


def test_a_dropped_connection_fails_the_request_with_a_retriable_error(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: "close")
    result = anyio.run(exchange, broker, MetadataRequest(topics=(), allow_auto_topic_creation=False))
    assert isinstance(result, KafkaConnectionError)
    assert result.retriable
    assert f"127.0.0.1:{broker.port}" in str(result)


def test_nothing_listening_fails_after_the_request_timeout_naming_the_address() -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    broker_stub = type("Stub", (), {"port": port})()
    result = anyio.run(exchange, broker_stub, MetadataRequest(topics=(), allow_auto_topic_creation=False), 500)
    assert isinstance(result, KafkaConnectionError)
    assert f"127.0.0.1:{port}" in str(result)


def test_a_response_over_the_limit_drops_the_connection_and_the_next_request_gets_a_new_one(scripted: Any) -> None:
    """The first Metadata answer announces 2 GiB: that request fails with the typed, retriable error; the retry
    goes out on a new connection (after the reconnect backoff) and is answered."""
    answers: list[Any] = [struct.pack(">i", 2**31 - 1) + bytes(16), metadata_answer()]
    broker = scripted(lambda key, version, request: answers.pop(0))

    async def run() -> list[object]:
        clock = SystemClock()
        delegate = new_delegate(clock, broker.port, max_response_bytes=1_000_000)
        results: list[object] = []
        async with anyio.create_task_group() as tg:
            delegate.attach(tg)
            for attempt in (1, 2):
                delegate.add_all(
                    [
                        UnsentRequest(
                            MetadataRequest(topics=(), allow_auto_topic_creation=False),
                            None,
                            lambda r, now: results.append(r),
                        )
                    ],
                    clock.now_ms(),
                )
                with anyio.fail_after(10):
                    while len(results) < attempt:
                        await delegate.poll(100, clock.now_ms())
            await delegate.close()
            tg.cancel_scope.cancel()
        return results

    first, second = anyio.run(run)
    assert isinstance(first, ResponseTooLargeError) and first.retriable
    assert f"bootstrap server 127.0.0.1:{broker.port} announced a response of 2147483647 bytes" in str(first)
    assert isinstance(second, MetadataResponse)
    assert broker.connections == 2


_FIRST_FAILURE = """
import logging, sys, time
from asyncconsumer import Consumer
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(created).3f %(levelname)s %(message)s")
consumer = Consumer("127.0.0.1:1")
# Whole lines in one write: print() writes the newline apart, and the background thread's log lines may come between.
sys.stdout.write(f"{time.time():.3f} START now\\n")
try:
    consumer.topics(timeout_ms=1500)
except Exception as exc:
    sys.stdout.write(f"{time.time():.3f} RAISED {exc}\\n")
consumer.close(timeout_ms=1000)
"""


def test_the_first_connection_failure_is_logged_at_once_as_a_warning_and_retries_continue() -> None:
    out = subprocess.run([sys.executable, "-c", _FIRST_FAILURE], capture_output=True, text=True, timeout=60, check=True)
    lines = [line.split(" ", 2) for line in out.stdout.splitlines()]
    start = next(float(t) for t, level, _ in lines if level == "START")
    failures = [(float(t), level, text) for t, level, text in lines if "connection.failed" in text]
    assert len(failures) >= 2, out.stdout  # it kept retrying within the call's timeout
    first_at, first_level, first_text = failures[0]
    assert first_level == "WARNING" and first_at - start < 1.0, out.stdout
    assert "connection refused" in first_text
    assert {level for _, level, _ in failures[1:]} == {"INFO"}
    assert any(level == "RAISED" for _, level, _ in lines)


def test_the_connections_close_shuts_are_not_reported_as_lost(scripted: Any) -> None:
    """A normal close is not a lost connection: the listeners (the group forgets its coordinator and logs
    ``coordinator.lost`` on one) hear of a broker that hangs up, not of the consumer closing."""
    answers: list[Any] = [metadata_answer(), "close", metadata_answer()]
    broker = scripted(lambda key, version, request: answers.pop(0))

    async def run() -> list[tuple[int, str]]:
        clock = SystemClock()
        delegate = new_delegate(clock, broker.port)
        heard: list[tuple[int, str]] = []
        delegate.add_disconnect_listener(lambda node, error: heard.append((node, str(error))))
        async with anyio.create_task_group() as tg:
            delegate.attach(tg)
            results: list[object] = []
            for sent in range(1, 4):
                request = MetadataRequest(topics=(), allow_auto_topic_creation=False)
                delegate.add_all([UnsentRequest(request, None, lambda r, now: results.append(r))], clock.now_ms())
                with anyio.fail_after(10):
                    while len(results) < sent:
                        await delegate.poll(100, clock.now_ms())
            lost_before_close = list(heard)
            await delegate.close()
            tg.cancel_scope.cancel()
        assert heard == lost_before_close
        # metrics(): two connections made (the second after the hang-up), one error (the hang-up, not the close)
        assert (delegate.connections_created, delegate.connection_errors) == (2, 1)
        return heard

    heard = anyio.run(run)
    assert len(heard) == 1 and heard[0][0] == -1, heard  # the broker's hang-up, and nothing from the close


def test_a_refused_connection_counts_as_a_connection_error_and_nothing_as_created() -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]

    async def run() -> tuple[int, int]:
        clock = SystemClock()
        delegate = new_delegate(clock, port, 300)
        results: list[object] = []
        async with anyio.create_task_group() as tg:
            delegate.attach(tg)
            request = MetadataRequest(topics=(), allow_auto_topic_creation=False)
            delegate.add_all([UnsentRequest(request, None, lambda r, now: results.append(r))], clock.now_ms())
            with anyio.fail_after(10):
                while not results:
                    await delegate.poll(50, clock.now_ms())
            await delegate.close()
            tg.cancel_scope.cancel()
        return delegate.connections_created, delegate.connection_errors

    created, errors = anyio.run(run)
    assert created == 0 and errors >= 1, (created, errors)


class MovedCluster:
    """Metadata that names broker 1 at an address where nothing listens any more; the bootstrap server (-1) is a
    live broker. ``rebootstrap`` records why and puts the bootstrap server first, as the metadata manager does."""

    def __init__(self, bootstrap_port: int, gone_port: int) -> None:
        self.bootstrap_port = bootstrap_port
        self.gone_port = gone_port
        self.reasons: list[str] = []

    def address(self, node_id: int) -> tuple[str, int] | None:
        return {-1: ("127.0.0.1", self.bootstrap_port), 1: ("127.0.0.1", self.gone_port)}.get(node_id)

    def candidate_nodes(self) -> list[int]:
        return [-1, 1] if self.reasons else [1]

    def rebootstrap(self, reason: str) -> None:
        self.reasons.append(reason)


def test_when_every_known_broker_fails_the_bootstrap_servers_are_asked_again(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: metadata_answer())
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        gone = placeholder.getsockname()[1]
    nodes = MovedCluster(broker.port, gone)

    request = MetadataRequest(topics=(), allow_auto_topic_creation=False)
    assert isinstance(anyio.run(exchange, broker, request, 5_000, nodes), MetadataResponse)
    assert nodes.reasons == ["none of the 1 known broker(s) is reachable"]
    assert broker.connections == 1


# --- unreachable nodes (metrics().unreachable_nodes) ---------------------------------------------------------------


class Directory:
    """Nodes at addresses a test moves: ``addresses[node_id] = port`` (a node without one is not in the metadata)."""

    def __init__(self, addresses: dict[int, int]) -> None:
        self.addresses = addresses

    def address(self, node_id: int) -> tuple[str, int] | None:
        port = self.addresses.get(node_id)
        return None if port is None else ("127.0.0.1", port)

    def candidate_nodes(self) -> list[int]:
        return [n for n in self.addresses if n < COORDINATOR_NODE_BASE // 2]

    def rebootstrap(self, reason: str) -> None:
        """Nothing to ask again: the tests name their nodes."""


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        return int(placeholder.getsockname()[1])


class Driven:
    """A delegate on a ``ManualClock`` (which dates its failures) polled on real sockets until a condition holds."""

    def __init__(
        self,
        nodes: Directory,
        request_timeout_ms: int = 2_000,
        setup_timeout_ms: int = 2_000,
        reconnect_backoff: ExponentialBackoff | None = None,
        security: ConnectionSecurity | None = None,
    ) -> None:
        self.clock = ManualClock(1_000)
        self.delegate = NetworkClientDelegate(
            self.clock,  # type: ignore[arg-type]
            nodes,
            client_id="t",
            request_timeout_ms=request_timeout_ms,
            connection_setup_timeout_ms=setup_timeout_ms,
            max_in_flight=5,
            reconnect_backoff=reconnect_backoff or ExponentialBackoff(0, 0),
            security=security,
        )
        self.results: list[object] = []

    def send(self, node: int) -> None:
        request = MetadataRequest(topics=(), allow_auto_topic_creation=False)
        unsent = UnsentRequest(request, node, lambda r, now: self.results.append(r))
        self.delegate.add_all([unsent], self.clock.now_ms())

    async def until(self, done: Callable[[], bool]) -> None:
        with anyio.fail_after(10):
            while not done():
                await self.delegate.poll(20, self.clock.now_ms())


def run_driven(
    nodes: Directory, body: Callable[[Driven], Any], request_timeout_ms: int = 2_000, **options: Any
) -> None:
    async def run() -> None:
        driven = Driven(nodes, request_timeout_ms, **options)
        async with anyio.create_task_group() as tg:
            driven.delegate.attach(tg)
            await body(driven)
            await driven.delegate.close()
            tg.cancel_scope.cancel()

    anyio.run(run)


def test_a_refused_node_is_unreachable_since_its_first_failure_until_it_connects(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: metadata_answer())
    gone = closed_port()
    nodes = Directory({1: gone})

    async def body(d: Driven) -> None:
        assert d.delegate.unreachable_nodes() == {}
        d.send(1)
        await d.until(lambda: 1 in d.delegate.unreachable_nodes())
        first = d.delegate.unreachable_nodes()[1]
        assert (first.host, first.port, first.since_ms, first.failures) == ("127.0.0.1", gone, 1_000, 1)
        assert "connection refused" in first.last_error and f"127.0.0.1:{gone}" in first.last_error
        d.clock.advance(700)  # the next attempt fails later: the outage keeps its start
        await d.until(lambda: d.delegate.unreachable_nodes()[1].failures >= 2)
        again = d.delegate.unreachable_nodes()[1]
        assert again.since_ms == 1_000 and again.failed_at_ms == 1_700
        nodes.addresses[1] = broker.port  # it answers again
        await d.until(lambda: bool(d.results))
        assert isinstance(d.results[0], MetadataResponse)
        assert d.delegate.unreachable_nodes() == {}

    run_driven(nodes, body)


class SilentServer:
    """Accepts connections and never reads nor answers: a black hole at connection setup. Counts the accepts."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.accepted.append(self._server.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        for sock in self.accepted:
            sock.close()


def test_the_reconnect_backoff_counts_from_the_start_of_the_attempt_that_failed() -> None:
    # A network healed while an attempt hung until its setup timeout: the next attempt goes at once if the hung one
    # took longer than the backoff (librdkafka's rule; the fault bench's coordinator black hole cost ours a further
    # backoff of up to 1.2 s after the heal); a refusal at once still waits out the whole backoff.
    silent = SilentServer()
    refused = closed_port()
    nodes = Directory({1: silent.port, 2: refused})

    async def body(d: Driven) -> None:
        d.send(1)
        await d.until(lambda: len(silent.accepted) == 1)
        d.clock.advance(1_500)  # the attempt hangs past the 1 s backoff (its setup timeout is real time)
        await d.until(lambda: 1 in d.delegate.unreachable_nodes())
        d.send(1)
        await d.until(lambda: len(silent.accepted) == 2)  # no clock moved: the backoff was over already
        d.clock.advance(2_000)  # the requests for node 1 time out: nothing wants a third attempt
        await d.until(lambda: d.delegate.unreachable_nodes()[1].failures == 2)
        d.send(2)
        await d.until(lambda: 2 in d.delegate.unreachable_nodes())
        d.send(2)
        for _ in range(10):  # the refused node is not tried again before its backoff is over
            await d.delegate.poll(20, d.clock.now_ms())
        assert d.delegate.unreachable_nodes()[2].failures == 1
        d.clock.advance(1_000)
        await d.until(lambda: d.delegate.unreachable_nodes()[2].failures == 2)

    try:
        run_driven(nodes, body, setup_timeout_ms=200, reconnect_backoff=ExponentialBackoff(1_000, 1_000, jitter=0))
    finally:
        silent.close()


def test_an_authentication_failure_stops_all_attempts_even_with_no_reconnect_backoff(scripted: Any) -> None:
    # The failed attempt's close awaits; the turns that run meanwhile must not start a second attempt (with the
    # backoff counted from the attempt's start, a SASL handshake slower than the backoff had already waited it out:
    # the broker saw two refused logins where Kafka's tests want one).
    broker = scripted(lambda key, version, request: metadata_answer())  # offers no SaslHandshake: a fatal refusal
    nodes = Directory({1: broker.port})
    plain = ConnectionSecurity(sasl=SaslCredentials("PLAIN", "alice", "secret"))

    async def body(d: Driven) -> None:
        stopped_at_close: list[bool] = []  # the close's await is a turn's chance: the stop must come before it
        d.delegate.add_disconnect_listener(
            lambda node, reason: stopped_at_close.append(d.delegate.fatal_error is not None)
        )
        d.send(1)
        await d.until(lambda: bool(d.results))
        assert stopped_at_close == [True]
        assert isinstance(d.results[0], AuthenticationError), d.results[0]
        assert isinstance(d.delegate.fatal_error, AuthenticationError)
        d.send(1)
        for _ in range(20):  # turns with no backoff left to wait: still no attempt
            await d.delegate.poll(5, d.clock.now_ms())
        assert broker.connections == 1
        assert isinstance(d.results[-1], AuthenticationError) and len(d.results) == 2

    run_driven(nodes, body, security=plain)


def test_a_request_that_times_out_makes_its_node_unreachable(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: None)  # a black hole: connected, never answered
    nodes = Directory({1: broker.port})

    async def body(d: Driven) -> None:
        d.send(1)
        await d.until(lambda: d.delegate.in_flight_count == 1)
        assert d.delegate.unreachable_nodes() == {}  # nothing known yet: the request may still be answered
        d.clock.advance(500)
        await d.until(lambda: bool(d.results))
        assert isinstance(d.results[0], RequestTimedOutError)
        outage = d.delegate.unreachable_nodes()[1]
        assert outage.since_ms == 1_500 and "timed out" in outage.last_error

    run_driven(nodes, body, request_timeout_ms=500)


def test_an_idle_connection_the_broker_closes_is_no_outage_until_the_node_fails_an_attempt(scripted: Any) -> None:
    broker = scripted(lambda key, version, request: metadata_answer())
    nodes = Directory({1: broker.port})

    async def body(d: Driven) -> None:
        d.send(1)
        await d.until(lambda: bool(d.results))
        broker.close()  # closes the idle connection, and nothing listens any more
        await d.until(lambda: d.delegate.connection_count == 0)
        assert d.delegate.unreachable_nodes() == {}
        d.clock.advance(100)
        d.send(1)
        await d.until(lambda: 1 in d.delegate.unreachable_nodes())
        assert d.delegate.unreachable_nodes()[1].since_ms == 1_100

    run_driven(nodes, body)


def test_a_coordinators_connection_counts_for_its_broker_and_a_node_gone_from_the_metadata_is_left_out() -> None:
    gone = closed_port()
    coordinator = COORDINATOR_NODE_BASE - 2
    nodes = Directory({2: gone, coordinator: gone, 3: gone})

    async def body(d: Driven) -> None:
        d.send(coordinator)
        await d.until(lambda: 2 in d.delegate.unreachable_nodes())
        d.clock.advance(300)
        d.send(2)
        d.send(3)
        await d.until(lambda: d.delegate.unreachable_nodes()[2].failures >= 2 and 3 in d.delegate.unreachable_nodes())
        outages = d.delegate.unreachable_nodes()
        assert set(outages) == {2, 3}  # the coordinator's connection under its broker's id
        assert outages[2].since_ms == 1_000 and outages[2].failed_at_ms == 1_300
        del nodes.addresses[3]
        assert set(d.delegate.unreachable_nodes()) == {2}

    run_driven(nodes, body)
