"""The NetworkClientDelegate: sends the managers' requests, matches responses, completes callbacks.

It owns every connection (opened on demand, reconnected with backoff and jitter), picks the least-loaded node
for requests that name none, times requests out, and sleeps in ``poll`` until a response, a connection change,
a wake-up from the caller, or the timeout.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Protocol

import anyio
import anyio.abc
import anyio.lowlevel
import attrs

from asyncconsumer._clock import Clock
from asyncconsumer._logs import get_logger
from asyncconsumer._state.snapshot import NO_OUTAGES, NodeOutage
from asyncconsumer.config import DEFAULT_RECEIVE_MESSAGE_MAX_BYTES
from asyncconsumer.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaError,
    RequestTimedOutError,
    UnsupportedVersionError,
)
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.coordinator import COORDINATOR_NODE_BASE
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.network.connection import BrokerConnection, ConnectionState
from asyncconsumer.network.security import ConnectionSecurity

log = get_logger("asyncconsumer.network")


class NodeDirectory(Protocol):
    """Where nodes are: the metadata manager implements it."""

    def address(self, node_id: int) -> tuple[str, int] | None: ...

    def candidate_nodes(self) -> list[int]: ...

    def rebootstrap(self, reason: str) -> None: ...


@attrs.define(slots=True)
class _Pending:
    unsent: UnsentRequest
    enqueued_ms: int


@attrs.define(slots=True)
class _NodeBackoff:
    failures: int = 0
    retry_at_ms: int = 0
    last_error: KafkaError | None = None
    failed_at_ms: int = 0


class NetworkClientDelegate:
    """All network I/O of one consumer; used only from the background thread."""

    def __init__(
        self,
        clock: Clock,
        nodes: NodeDirectory,
        *,
        client_id: str,
        request_timeout_ms: int,
        connection_setup_timeout_ms: int,
        max_in_flight: int,
        reconnect_backoff: ExponentialBackoff,
        security: ConnectionSecurity | None = None,
        max_response_bytes: int = DEFAULT_RECEIVE_MESSAGE_MAX_BYTES,
    ) -> None:
        self._clock = clock
        self._max_response_bytes = max_response_bytes
        self._security = security or ConnectionSecurity()
        self._nodes = nodes
        self._client_id = client_id
        self._request_timeout_ms = request_timeout_ms
        self._setup_timeout_ms = connection_setup_timeout_ms
        self._max_in_flight = max_in_flight
        self._reconnect_backoff = reconnect_backoff
        self._connections: dict[int, BrokerConnection] = {}
        self._backoff: dict[int, _NodeBackoff] = {}
        self._unsent: collections.deque[_Pending] = collections.deque()
        self._completed: collections.deque[tuple[UnsentRequest, object]] = collections.deque()
        self._tg: anyio.abc.TaskGroup | None = None
        self._wake = anyio.Event()
        self._disconnect_listeners: list[Callable[[int, KafkaError], None]] = []
        self._closing = False
        """Set by ``close``: the connections it shuts are not losses, so the disconnect listeners are not told."""
        self._fatal_listeners: list[Callable[[KafkaError], None]] = []
        self.fatal_error: KafkaError | None = None
        """Set by the first authentication failure: from then on nothing is sent and no connection is made."""
        self.requests_sent = 0
        self.connections_created = 0
        """Connections opened and ready (authenticated), as Java's connection-creation-total."""
        self.connection_errors = 0
        """Connection attempts that failed and open connections lost, not counting the consumer's own closes."""
        self._outages: dict[int, NodeOutage] = {}
        self._attempt_started_ms: dict[int, int] = {}
        """Per node, when its connection attempt under way began (the reconnect backoff counts from there)."""
        """Per connection node id, the nodes that failed since they last connected (see ``unreachable_nodes``)."""

    # --- wiring ----------------------------------------------------------------------------------------------
    def attach(self, task_group: anyio.abc.TaskGroup) -> None:
        self._tg = task_group

    def add_disconnect_listener(self, listener: Callable[[int, KafkaError], None]) -> None:
        self._disconnect_listeners.append(listener)

    def add_fatal_listener(self, listener: Callable[[KafkaError], None]) -> None:
        """Called once, with the error that stopped all network traffic (an ``AuthenticationError``)."""
        self._fatal_listeners.append(listener)

    def wakeup(self) -> None:
        """Cuts the current ``poll`` sleep short (background thread only)."""
        self._wake.set()

    @property
    def connection_count(self) -> int:
        live = (ConnectionState.READY, ConnectionState.REAUTHENTICATING)
        return sum(1 for c in self._connections.values() if c.state in live)

    @property
    def in_flight_count(self) -> int:
        return sum(len(c.in_flight) for c in self._connections.values())

    def supports_api(self, api_key: int) -> bool | None:
        """Whether the brokers offer ``api_key``, from the first connected broker's ApiVersions; None: none yet."""
        for conn in self._connections.values():
            if conn.state is ConnectionState.READY and conn.versions:
                return api_key in conn.versions
        return None

    def last_connection_error(self) -> KafkaError | None:
        """The most recent failure of a node that has not connected since (None: every node is fine)."""
        failed = [b for b in self._backoff.values() if b.last_error is not None]
        return max(failed, key=lambda b: b.failed_at_ms).last_error if failed else None

    def unreachable_nodes(self) -> Mapping[int, NodeOutage]:
        """The nodes that cannot be reached now, by broker node id, for ``metrics()``: each connection attempt since
        the first failure failed, or a connection to it was lost with requests unanswered (refused, reset, a request
        timed out), and it has not connected since. A coordinator's connection counts for its broker; a bootstrap
        server keeps its negative id; a node the metadata no longer names is left out. An idle connection the broker
        closed is not an outage (brokers close idle connections): the next attempt to use the node tells."""
        if not self._outages:
            return NO_OUTAGES
        folded: dict[int, NodeOutage] = {}
        for node, outage in self._outages.items():
            if self._nodes.address(node) is None:
                continue
            broker = COORDINATOR_NODE_BASE - node if node > COORDINATOR_NODE_BASE // 2 else node
            other = folded.get(broker)
            if other is not None:
                latest = outage if outage.failed_at_ms >= other.failed_at_ms else other
                outage = attrs.evolve(
                    latest,
                    since_ms=min(outage.since_ms, other.since_ms),
                    failures=outage.failures + other.failures,
                )
            folded[broker] = outage
        return MappingProxyType(folded)

    def _note_outage(self, conn: BrokerConnection, reason: KafkaError, now_ms: int) -> None:
        known = self._outages.get(conn.node_id)
        if known is None:
            self._outages[conn.node_id] = NodeOutage(
                host=conn.host, port=conn.port, since_ms=now_ms, failed_at_ms=now_ms, failures=1, last_error=str(reason)
            )
        else:
            self._outages[conn.node_id] = attrs.evolve(
                known, failed_at_ms=now_ms, failures=known.failures + 1, last_error=str(reason)
            )

    # --- requests --------------------------------------------------------------------------------------------
    def add_all(self, requests: Iterable[UnsentRequest], now_ms: int) -> None:
        for unsent in requests:
            self._unsent.append(_Pending(unsent, now_ms))

    async def poll(self, timeout_ms: int, now_ms: int) -> None:
        """Sends what can go, waits up to ``timeout_ms`` for something to happen, runs completed callbacks."""
        await self._send_ready(now_ms)
        if not self._completed:
            wait_ms = min(timeout_ms, self._next_deadline_ms(now_ms) - now_ms)
            if wait_ms > 0:
                with anyio.move_on_after(wait_ms / 1000):
                    await self._wake.wait()
            else:
                await anyio.lowlevel.checkpoint()  # never run a loop iteration without letting the tasks run
        self._wake = anyio.Event()
        now_ms = self._clock.now_ms()
        self._expire(now_ms)
        self._run_callbacks(now_ms)

    def _run_callbacks(self, now_ms: int) -> None:
        while self._completed:
            unsent, result = self._completed.popleft()
            unsent.on_response(result, now_ms)

    def _complete(self, unsent: UnsentRequest, result: object) -> None:
        self._completed.append((unsent, result))
        self._wake.set()

    async def _send_ready(self, now_ms: int) -> None:
        self._reauthenticate_due(now_ms)
        if not self._unsent:
            return
        if self.fatal_error is not None:
            while self._unsent:
                self._complete(self._unsent.popleft().unsent, self.fatal_error)
            return
        waiting: collections.deque[_Pending] = collections.deque()
        while self._unsent:
            pending = self._unsent.popleft()
            timeout = pending.unsent.timeout_ms or self._request_timeout_ms
            if now_ms - pending.enqueued_ms >= timeout:
                self._complete(pending.unsent, self._unsendable_error(pending, timeout))
                continue
            node = pending.unsent.node_id
            if node is None:
                node = self._least_loaded_node(now_ms)
                if node is None:
                    waiting.append(pending)
                    continue
            conn = self._connection(node, now_ms)
            if conn is None:
                if self._nodes.address(node) is None:
                    self._complete(pending.unsent, KafkaConnectionError(f"node {node} is not in the metadata"))
                else:
                    waiting.append(pending)
                continue
            if conn.state is not ConnectionState.READY or len(conn.in_flight) >= self._max_in_flight:
                waiting.append(pending)
                continue
            try:
                version = conn.version_for(type(pending.unsent.request))
            except UnsupportedVersionError as exc:
                self._complete(pending.unsent, exc)
                continue
            try:
                await conn.send(pending.unsent, version, now_ms + timeout)
                self.requests_sent += 1
            except KafkaError as exc:
                await conn.close(exc)
        self._unsent = waiting

    def _unsendable_error(self, pending: _Pending, timeout: int) -> KafkaError:
        last = self.last_connection_error()
        detail = f"; last connection error: {last}" if last is not None else ""
        return KafkaConnectionError(
            f"{pending.unsent.request.API_KEY.name} request could not be sent within {timeout} ms{detail}"
        )

    def _least_loaded_node(self, now_ms: int) -> int | None:
        """A ready node with the fewest requests in flight, else a node to connect to (None: all backing off)."""
        best: BrokerConnection | None = None
        candidates = self._nodes.candidate_nodes()
        for node in candidates:
            conn = self._connections.get(node)
            if conn is None or conn.state is not ConnectionState.READY or len(conn.in_flight) >= self._max_in_flight:
                continue
            if best is None or len(conn.in_flight) < len(best.in_flight):
                best = conn
        if best is not None:
            return best.node_id
        for node in candidates:
            conn = self._connections.get(node)
            if conn is not None and conn.state is ConnectionState.CONNECTING:
                return node
        ready = [n for n in candidates if now_ms >= self._backoff.get(n, _NodeBackoff()).retry_at_ms]
        if not ready:
            if candidates and all(n >= 0 and n in self._backoff for n in candidates):
                # every broker the metadata named has failed since it last answered: ask the bootstrap servers
                # again (KIP-899), if the strategy allows; the next turn finds them among the candidates
                self._nodes.rebootstrap(f"none of the {len(candidates)} known broker(s) is reachable")
            return None
        return min(ready, key=lambda n: self._backoff.get(n, _NodeBackoff()).failures)

    def _connection(self, node: int, now_ms: int) -> BrokerConnection | None:
        conn = self._connections.get(node)
        if conn is not None and conn.state is not ConnectionState.CLOSED:
            return conn
        if self.fatal_error is not None:
            return None
        backoff = self._backoff.get(node)
        if backoff is not None and now_ms < backoff.retry_at_ms:
            return None
        address = self._nodes.address(node)
        if address is None or self._tg is None:
            return None
        conn = BrokerConnection(
            node,
            address[0],
            address[1],
            self._client_id,
            self._complete,
            self._closed,
            self._security,
            max_response_bytes=self._max_response_bytes,
        )
        self._connections[node] = conn
        self._attempt_started_ms[node] = now_ms
        self._tg.start_soon(self._connect, conn)
        return conn

    async def _connect(self, conn: BrokerConnection) -> None:
        try:
            await conn.connect(self._setup_timeout_ms / 1000)
        except AuthenticationError as exc:
            # Stopped before the close awaits: the turns run while it closes must start no other attempt.
            self._stop_on(exc, conn)
            await conn.close(exc)
            return
        except KafkaError as exc:
            # The first failure since the node last answered is a warning, at once (as Java's); retries are info.
            first = self._backoff.get(conn.node_id) is None
            (log.warning if first else log.info)(
                "connection.failed", node=conn.node_id, host=conn.host, port=conn.port, error=str(exc)
            )
            await conn.close(exc)
            self._wake.set()
            return
        self._backoff.pop(conn.node_id, None)
        self._outages.pop(conn.node_id, None)
        self._attempt_started_ms.pop(conn.node_id, None)
        self.connections_created += 1
        self._note_session(conn)
        self._wake.set()
        await conn.read_loop()

    def _note_session(self, conn: BrokerConnection) -> None:
        """When to log ``conn`` in again (KIP-368), by this clock, if the broker's SASL session ends."""
        if conn.reauthenticate_in_ms is not None:
            conn.reauthenticate_at_ms = self._clock.now_ms() + conn.reauthenticate_in_ms

    def _reauthenticate_due(self, now_ms: int) -> None:
        """Starts logging in again the connections whose SASL session is near its end (KIP-368)."""
        if self._tg is None:
            return
        for conn in self._connections.values():
            at = conn.reauthenticate_at_ms
            if at is not None and now_ms >= at and conn.state is ConnectionState.READY:
                conn.begin_reauthentication()  # now, so the next turn neither sends on it nor starts this again
                self._tg.start_soon(self._reauthenticate, conn, now_ms)

    async def _reauthenticate(self, conn: BrokerConnection, now_ms: int) -> None:
        try:
            await conn.reauthenticate(self._setup_timeout_ms / 1000, now_ms + self._setup_timeout_ms)
        except AuthenticationError as exc:
            self._stop_on(exc, conn)  # before the close awaits, as in _connect
            await conn.close(exc)
            return
        except KafkaError as exc:
            log.info("connection.reauthentication_failed", node=conn.node_id, error=str(exc))
            await conn.close(exc)
            return
        finally:
            self._wake.set()
        self._note_session(conn)

    def _stop_on(self, error: AuthenticationError, conn: BrokerConnection) -> None:
        """An authentication failure will not heal by retrying: stop all traffic and report it once."""
        self._wake.set()
        if self.fatal_error is not None:
            return
        self.fatal_error = error
        log.error(
            "connection.auth_failed",
            node=conn.node_id,
            host=conn.host,
            port=conn.port,
            security=self._security.description,
            error=str(error),
        )
        for listener in self._fatal_listeners:
            listener(error)

    def _closed(self, conn: BrokerConnection, reason: KafkaError) -> None:
        if self._connections.get(conn.node_id) is conn:
            del self._connections[conn.node_id]
        backoff = self._backoff.setdefault(conn.node_id, _NodeBackoff())
        backoff.failures += 1
        backoff.last_error = reason
        backoff.failed_at_ms = self._clock.now_ms()
        started_ms = self._attempt_started_ms.pop(conn.node_id, backoff.failed_at_ms)
        # An attempt that failed in setup waited its backoff already if it took that long (a black hole answers
        # nothing until the setup timeout): the backoff counts from the attempt's start, as librdkafka's does, so
        # the first attempt after a network heals is not held back a further backoff. A lost connection counts
        # from its loss. Either way at most one attempt per backoff starts, so a refusing node sees no storm.
        since_ms = started_ms if not conn.was_ready else backoff.failed_at_ms
        backoff.retry_at_ms = max(backoff.failed_at_ms, since_ms + self._reconnect_backoff.backoff_ms(backoff.failures))
        if not self._closing:  # a normal close is no coordinator lost, no read replica gone
            self.connection_errors += 1
            if conn.lost_requests or not conn.was_ready:
                self._note_outage(conn, reason, backoff.failed_at_ms)
            for listener in self._disconnect_listeners:
                listener(conn.node_id, reason)
        self._wake.set()

    def _next_deadline_ms(self, now_ms: int) -> int:
        deadline = now_ms + 3_600_000
        for conn in self._connections.values():
            for entry in conn.in_flight.values():
                deadline = min(deadline, entry.deadline_ms)
            if conn.reauthenticate_at_ms is not None:
                deadline = min(deadline, conn.reauthenticate_at_ms)
        for pending in self._unsent:
            deadline = min(deadline, pending.enqueued_ms + (pending.unsent.timeout_ms or self._request_timeout_ms))
        if self._unsent:
            # Waiting requests are re-checked when a reconnect backoff ends, and at least every 100 ms.
            retry = [b.retry_at_ms for b in self._backoff.values() if b.retry_at_ms > now_ms]
            deadline = min(deadline, min(retry, default=now_ms + 100), now_ms + 100)
        return deadline

    def _expire(self, now_ms: int) -> None:
        for conn in list(self._connections.values()):
            expired = [cid for cid, e in conn.in_flight.items() if e.deadline_ms <= now_ms]
            if (
                expired
                and conn.fail(RequestTimedOutError(f"request to node {conn.node_id} timed out; closing the connection"))
                and self._tg is not None
            ):
                self._tg.start_soon(conn.close_stream)

    def fail_unsent(self, error: KafkaError) -> None:
        """Fails every request not yet sent (on close: only the close work is still worth sending)."""
        while self._unsent:
            self._complete(self._unsent.popleft().unsent, error)
        self._run_callbacks(self._clock.now_ms())

    async def close(self) -> None:
        """Closes every connection and fails whatever was pending."""
        error = KafkaConnectionError("the consumer is closing")
        self._closing = True
        for conn in list(self._connections.values()):
            await conn.close(error)
        while self._unsent:
            self._complete(self._unsent.popleft().unsent, error)
        self._run_callbacks(self._clock.now_ms())
