"""A fault-injecting TCP proxy that understands Kafka framing, for tests.

The proxy runs its own asyncio loop in a daemon thread, so synchronous and asynchronous tests drive it the
same way. Each accepted client connection gets its own upstream connection to the target, and each direction
is split into Kafka frames (a 4-byte big-endian size, then that many payload bytes) forwarded whole.
A test can:

* rewrite, drop or replace frames (``set_request_mutator`` / ``set_response_mutator``): a mutator is called
  as ``fn(api_key, payload)`` with the payload without its size prefix; for a response ``api_key`` is the key
  of the request with the same correlation id on the same connection (``UNKNOWN_API`` if none). It returns
  ``None`` to forward the frame unchanged, new payload bytes (the size prefix is recomputed; with ``raw=True``
  the bytes are written exactly as returned, prefix included, e.g. ``truncated_frame(payload, 100)``),
  ``DROP`` to swallow the frame, or ``CLOSE`` to close the connection instead of forwarding it. Mutators run
  on the proxy's thread (``mutating_connection`` tells which connection the frame is on); an exception in one
  closes that connection and lands in ``mutator_errors``;
* cut the next response(s) after some bytes and close (``drop_mid_response``), close every connection
  (``drop_connections``), stall everything (``blackhole``), delay every frame (``set_delay_ms``), reset new
  connections (``refuse_new_connections``), close only the connections awaiting a response of one api key
  (``drop_connections_awaiting``), or point the proxy at another broker (``set_target``).

Control calls take effect before they return. Counters are plain attributes, safe to read from any thread.
Plain TCP only: the proxy cannot read TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from tests.support.loop_thread import STREAM_LIMIT, LoopThreadServer, close_gracefully

__all__ = [
    "API_API_VERSIONS",
    "API_FETCH",
    "API_FIND_COORDINATOR",
    "API_HEARTBEAT",
    "API_JOIN_GROUP",
    "API_LEAVE_GROUP",
    "API_LIST_OFFSETS",
    "API_METADATA",
    "API_OFFSET_COMMIT",
    "API_OFFSET_FETCH",
    "API_PRODUCE",
    "API_SYNC_GROUP",
    "CLOSE",
    "DROP",
    "UNKNOWN_API",
    "Direction",
    "FaultProxy",
    "FrameAction",
    "Mutator",
    "RequestHeader",
    "flip_byte",
    "frame",
    "parse_request_header",
    "request_api_key",
    "response_correlation_id",
    "truncated_frame",
]

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_OFFSET_COMMIT = 8
API_OFFSET_FETCH = 9
API_FIND_COORDINATOR = 10
API_JOIN_GROUP = 11
API_HEARTBEAT = 12
API_LEAVE_GROUP = 13
API_SYNC_GROUP = 14
API_API_VERSIONS = 18
UNKNOWN_API = -1
"""The api key given to a response whose correlation id matches no request seen on its connection."""

_MAX_FRAME = 512 * 1024 * 1024
_UPSTREAM_CONNECT_TIMEOUT_S = 10.0


class Direction(enum.StrEnum):
    REQUEST = "request"
    """Client to broker."""
    RESPONSE = "response"
    """Broker to client."""


class FrameAction(enum.Enum):
    DROP = "drop"
    """Do not forward this frame; the connection stays open."""
    CLOSE = "close"
    """Do not forward this frame; close the connection (both sides)."""


DROP = FrameAction.DROP
CLOSE = FrameAction.CLOSE

Mutator = Callable[[int, bytes], "bytes | FrameAction | None"]
"""``fn(api_key, payload) -> None | bytes | DROP | CLOSE``; see the module docstring."""


# --- Kafka frame helpers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def request_api_key(payload: bytes) -> int:
    """The api key of a request payload (int16 at offset 0)."""
    if len(payload) < 2:
        raise ValueError(f"a request payload has at least 2 bytes, got {len(payload)}")
    key: int = struct.unpack_from(">h", payload, 0)[0]
    return key


def parse_request_header(payload: bytes) -> RequestHeader:
    """Api key, version, correlation id and client id of a request payload (any header version)."""
    if len(payload) < 8:
        raise ValueError(f"a request header has at least 8 bytes, got {len(payload)}")
    api_key, api_version, correlation_id = struct.unpack_from(">hhi", payload, 0)
    client_id: str | None = None
    if len(payload) >= 10:
        (length,) = struct.unpack_from(">h", payload, 8)
        if 0 <= length <= len(payload) - 10:
            client_id = payload[10 : 10 + length].decode("utf-8", "replace")
    return RequestHeader(api_key, api_version, correlation_id, client_id)


def response_correlation_id(payload: bytes) -> int:
    """The correlation id of a response payload (int32 at offset 0)."""
    if len(payload) < 4:
        raise ValueError(f"a response payload has at least 4 bytes, got {len(payload)}")
    correlation_id: int = struct.unpack_from(">i", payload, 0)[0]
    return correlation_id


def frame(payload: bytes) -> bytes:
    """``payload`` with its 4-byte big-endian size prefix."""
    return len(payload).to_bytes(4, "big") + payload


def truncated_frame(payload: bytes, keep: int) -> bytes:
    """The size prefix of the whole ``payload``, then only its first ``keep`` bytes (for raw=True)."""
    return len(payload).to_bytes(4, "big") + payload[:keep]


def flip_byte(payload: bytes, index: int) -> bytes:
    """``payload`` with every bit of the byte at ``index`` inverted."""
    if not -len(payload) <= index < len(payload):
        raise IndexError(f"index {index} outside a payload of {len(payload)} bytes")
    data = bytearray(payload)
    data[index] ^= 0xFF
    return bytes(data)


# --- the proxy ----------------------------------------------------------------------------------------------


class _Connection:
    """One client connection and its upstream connection."""

    def __init__(self, number: int, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter):
        self.number = number
        self.client_reader = client_reader
        self.client_writer = client_writer
        self.upstream_reader: asyncio.StreamReader | None = None
        self.upstream_writer: asyncio.StreamWriter | None = None
        self.pending: dict[int, int] = {}
        """correlation id -> api key of requests whose responses have not come yet."""
        self.pumps: list[asyncio.Task[None]] = []
        self.client_id: str | None = None
        self.closed = False

    def writers(self) -> list[asyncio.StreamWriter]:
        return [w for w in (self.client_writer, self.upstream_writer) if w is not None]

    def abort(self) -> None:
        """Close both sides now, dropping anything buffered, and stop forwarding."""
        self.closed = True
        for writer in self.writers():
            writer.transport.abort()
        for pump in self.pumps:
            pump.cancel()


class FaultProxy(LoopThreadServer[_Connection]):
    """A Kafka-frame-aware TCP proxy on 127.0.0.1 that injects faults on request. See the module docstring."""

    _what = "the fault proxy"

    def __init__(
        self,
        target_host: str,
        target_port: int,
        listen_port: int | None = None,
        *,
        listen_host: str = "127.0.0.1",
    ) -> None:
        super().__init__(listen_host, listen_port)
        self._target = (target_host, target_port)
        self._flowing: asyncio.Event | None = None
        self._mutators: dict[Direction, tuple[Mutator | None, bool]] = {
            Direction.REQUEST: (None, False),
            Direction.RESPONSE: (None, False),
        }
        self._delay_s = 0.0
        self._refusing = False
        self._cut_lock = threading.Lock()
        self._cut_after: int | None = None
        self._cut_remaining = 0

        self.connections_accepted = 0
        """Client connections accepted and forwarded (refused ones are not counted here)."""
        self.connections_refused = 0
        """Client connections reset because of ``refuse_new_connections(True)``."""
        self.connections_closed = 0
        """Accepted connections that have ended, for any reason."""
        self.upstream_connect_failures = 0
        self.frames_forwarded: dict[Direction, int] = {Direction.REQUEST: 0, Direction.RESPONSE: 0}
        self.bytes_forwarded: dict[Direction, int] = {Direction.REQUEST: 0, Direction.RESPONSE: 0}
        """Bytes written, size prefixes included."""
        self.frames_dropped: dict[Direction, int] = {Direction.REQUEST: 0, Direction.RESPONSE: 0}
        self.frames_held = 0
        """Frames read and waiting for the end of a blackhole right now."""
        self.connections_by_client_id: Counter[str] = Counter()
        """Client id (from a connection's first request that has one) -> connections; tells a consumer's
        connections from a producer's when both go through the proxy."""
        self.requests_by_api: Counter[int] = Counter()
        """Requests read from clients, by api key (counted when read, even if then held, dropped or cut)."""
        self.responses_by_api: Counter[int] = Counter()
        """Responses read from the broker, by the api key of their request."""
        self.request_versions: dict[int, set[int]] = {}
        """Api key -> the request versions clients used."""
        self.responses_cut = 0
        """Responses cut short by ``drop_mid_response``."""
        self.mutator_errors: list[BaseException] = []
        self.mutating_connection = 0
        """While a mutator runs: the number of the connection its frame came on (1 for the first accepted), so a
        mutator can tell apart correlation ids that several client connections use alike."""

    # --- lifecycle ----------------------------------------------------------------------------------------

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close the listener and every connection, then end the proxy's thread. Idempotent."""
        if not self._stopped and self._thread is not None and threading.current_thread() is self._thread:
            raise RuntimeError("FaultProxy.stop() cannot be called from a mutator")
        super().stop(timeout_s)

    @property
    def target(self) -> tuple[str, int]:
        return self._target

    @property
    def blackholed(self) -> bool:
        return self._flowing is not None and not self._flowing.is_set()

    # --- faults -------------------------------------------------------------------------------------------

    def set_response_mutator(self, fn: Mutator | None, *, raw: bool = False) -> None:
        """Apply ``fn`` to every broker->client frame from now on; None removes it."""
        self._mutators[Direction.RESPONSE] = (fn, raw)

    def set_request_mutator(self, fn: Mutator | None, *, raw: bool = False) -> None:
        """Apply ``fn`` to every client->broker frame from now on; None removes it."""
        self._mutators[Direction.REQUEST] = (fn, raw)

    def set_delay_ms(self, ms: float) -> None:
        """Hold every frame ``ms`` milliseconds before forwarding it (per connection and direction)."""
        if ms < 0:
            raise ValueError(f"delay must be >= 0, got {ms}")
        self._delay_s = ms / 1000.0

    def refuse_new_connections(self, enabled: bool) -> None:
        """While enabled, new client connections are reset (RST) as soon as they are accepted."""
        self._refusing = enabled

    def set_target(self, host: str, port: int) -> None:
        """Send connections made from now on to another address (e.g. a restarted broker)."""
        self._target = (host, port)

    def drop_mid_response(self, after_bytes: int, count: int = 1) -> None:
        """For the next ``count`` responses whose frame (size prefix included) is longer than ``after_bytes``,
        forward only its first ``after_bytes`` bytes, then close that connection."""
        if after_bytes < 0 or count < 0:
            raise ValueError("after_bytes and count must be >= 0")
        with self._cut_lock:
            self._cut_after = after_bytes
            self._cut_remaining = count

    def drop_connections_awaiting(self, api_key: int) -> int:
        """Close every connection with a request of ``api_key`` that has had no response yet (e.g. a JoinGroup
        the broker is holding); returns how many were closed. Other connections stay up."""

        def drop() -> int:
            awaiting = [c for c in self._connections if not c.closed and api_key in c.pending.values()]
            for connection in awaiting:
                connection.abort()
            return len(awaiting)

        return self._call(drop)

    def blackhole(self, enabled: bool) -> None:
        """While enabled, forward nothing in either direction but keep connections open (a stalled broker).

        Frames keep being read and counted (``requests_by_api``), then held; disabling forwards them in order.
        """

        def apply() -> None:
            assert self._flowing is not None
            if enabled:
                self._flowing.clear()
            else:
                self._flowing.set()

        self._call(apply)

    def reset_counters(self) -> None:
        """Zero every counter (not the faults)."""

        def reset() -> None:
            self.connections_accepted = self.connections_refused = self.connections_closed = 0
            self.upstream_connect_failures = self.responses_cut = 0
            for counters in (self.frames_forwarded, self.bytes_forwarded, self.frames_dropped):
                for direction in Direction:
                    counters[direction] = 0
            self.requests_by_api.clear()
            self.responses_by_api.clear()
            self.connections_by_client_id.clear()
            self.request_versions.clear()

        self._call(reset)

    # --- the proxy's thread -------------------------------------------------------------------------------

    def _thread_name(self) -> str:
        return f"faultproxy->{self._target[1]}"

    def _prepare(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()

    async def _handle_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if self._refusing or self._stopped:
            self.connections_refused += 1
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        self.connections_accepted += 1
        connection = _Connection(self.connections_accepted, reader, writer)
        self._connections.add(connection)
        self._handlers.add(task)
        try:
            await self._serve(connection)
        finally:
            self._connections.discard(connection)
            connection.closed = True
            for pump in connection.pumps:
                pump.cancel()
            await asyncio.gather(*connection.pumps, return_exceptions=True)
            await close_gracefully(connection.writers())
            self.connections_closed += 1
            self._handlers.discard(task)

    async def _serve(self, connection: _Connection) -> None:
        try:
            host, port = self._target
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=STREAM_LIMIT), _UPSTREAM_CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError):
            self.upstream_connect_failures += 1
            return
        connection.upstream_reader, connection.upstream_writer = upstream_reader, upstream_writer
        if connection.closed:  # dropped while connecting
            return
        connection.pumps = [
            asyncio.create_task(self._pump(connection, Direction.REQUEST, connection.client_reader, upstream_writer)),
            asyncio.create_task(self._pump(connection, Direction.RESPONSE, upstream_reader, connection.client_writer)),
        ]
        await asyncio.wait(connection.pumps, return_when=asyncio.FIRST_COMPLETED)

    async def _pump(
        self,
        connection: _Connection,
        direction: Direction,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        # When one side closes, the connection ends.
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, OSError):
            await self._forward_frames(connection, direction, reader, writer)

    async def _forward_frames(
        self,
        connection: _Connection,
        direction: Direction,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        flowing = self._flowing
        assert flowing is not None
        while True:
            prefix = await reader.readexactly(4)
            size = int.from_bytes(prefix, "big", signed=True)
            if not 0 <= size <= _MAX_FRAME:
                return  # not Kafka framing: give up on this connection
            payload = await reader.readexactly(size)
            api_key = self._note_frame(connection, direction, payload)

            wire: list[bytes] = [prefix, payload]
            mutator, raw = self._mutators[direction]
            if mutator is not None:
                try:
                    self.mutating_connection = connection.number
                    result = mutator(api_key, payload)
                except Exception as exc:
                    self.mutator_errors.append(exc)
                    return
                if result is FrameAction.DROP:
                    self.frames_dropped[direction] += 1
                    continue
                if result is FrameAction.CLOSE:
                    return
                if result is not None:
                    wire = [result] if raw else [len(result).to_bytes(4, "big"), result]

            if self._delay_s > 0:
                await asyncio.sleep(self._delay_s)
            if not flowing.is_set():
                self.frames_held += 1
                try:
                    await flowing.wait()
                finally:
                    self.frames_held -= 1
            if connection.closed:
                return

            length = sum(len(part) for part in wire)
            cut = self._take_cut(length) if direction is Direction.RESPONSE else None
            # Counters move just before the bytes are handed to the socket: whoever receives them sees the
            # counters already updated, and a snapshot taken right after a control call returns is exact.
            if cut is not None:
                self.responses_cut += 1
                self.bytes_forwarded[direction] += cut
                writer.write(b"".join(wire)[:cut])
                await writer.drain()
                return  # the handler closes both sides, gracefully so the partial bytes arrive
            self.frames_forwarded[direction] += 1
            self.bytes_forwarded[direction] += length
            writer.writelines(wire)
            await writer.drain()

    def _note_frame(self, connection: _Connection, direction: Direction, payload: bytes) -> int:
        """Count the frame and return its api key (for a response, the api key of its request)."""
        if direction is Direction.REQUEST:
            try:
                header = parse_request_header(payload)
            except ValueError:
                return UNKNOWN_API
            connection.pending[header.correlation_id] = header.api_key
            if connection.client_id is None and header.client_id:
                connection.client_id = header.client_id
                self.connections_by_client_id[header.client_id] += 1
            self.requests_by_api[header.api_key] += 1
            self.request_versions.setdefault(header.api_key, set()).add(header.api_version)
            return header.api_key
        api_key = UNKNOWN_API
        if len(payload) >= 4:
            api_key = connection.pending.pop(response_correlation_id(payload), UNKNOWN_API)
        self.responses_by_api[api_key] += 1
        return api_key

    def _take_cut(self, length: int) -> int | None:
        with self._cut_lock:
            if self._cut_remaining > 0 and self._cut_after is not None and length > self._cut_after:
                self._cut_remaining -= 1
                return self._cut_after
            return None

    def __repr__(self) -> str:
        where = f"127.0.0.1:{self._port}" if self._port is not None else "not started"
        return f"<FaultProxy {where} -> {self._target[0]}:{self._target[1]}>"
