"""One broker connection: TCP over anyio, ApiVersions negotiation, framing and correlation ids.

Socket and decoding failures are translated into our errors here and nowhere else.
"""

from __future__ import annotations

import enum
import errno
import random
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from typing import cast

import anyio
import anyio.abc
import anyio.to_thread
import attrs
from anyio.streams.tls import TLSStream

from asyncconsumer._logs import get_logger
from asyncconsumer.config import DEFAULT_RECEIVE_MESSAGE_MAX_BYTES
from asyncconsumer.errors import (
    AuthenticationError,
    CorruptResponseError,
    ErrorCode,
    KafkaConnectionError,
    KafkaError,
    ResponseTooLargeError,
    UnsupportedVersionError,
    for_code,
)
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.coordinator import COORDINATOR_NODE_BASE
from asyncconsumer.network.frames import FrameSizeError, FrameStream, StreamFrames, open_plain
from asyncconsumer.network.security import ConnectionSecurity
from asyncconsumer.protocol.base import (
    ApiKey,
    Request,
    Response,
    decode_response,
    encode_request,
    peek_correlation_id,
)
from asyncconsumer.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse

log = get_logger("asyncconsumer.network")

CLIENT_SOFTWARE_NAME = "asyncconsumer"
CLIENT_VERSION = "0.1.0"
"""What ApiVersions v3+ tells the broker about us (KIP-511)."""


class ConnectionState(enum.Enum):
    CONNECTING = "connecting"
    READY = "ready"
    REAUTHENTICATING = "reauthenticating"
    """KIP-368: the broker's SASL session is ending; no new request goes out until the connection has logged in
    again on the same socket."""
    CLOSED = "closed"


@attrs.define(slots=True)
class InFlight:
    unsent: UnsentRequest
    request_type: type[Request]
    version: int
    deadline_ms: int
    waiter: Callable[[object], None] | None = None
    """For the connection's own requests (re-authentication): takes the answer instead of ``complete``."""


REAUTH_AT = (0.85, 0.95)
"""When to log in again, as a share of the session lifetime the broker gave (Java's client picks the same range)."""
REAUTH_MARGIN_MS = 1_000
"""The least time left in a session when logging in again starts, where the session allows: the broker closes a
connection whose next request other than a SaslHandshake arrives after the session's end, and 5-15 % of a short
session (seconds) is less than a busy machine can delay a request by."""
MIN_REAUTH_INTERVAL_MS = 1_100
"""Kafka refuses a re-authentication begun within 1 s of the previous login (ILLEGAL_SASL_STATE): never sooner."""
MIN_SESSION_MS = 2_000
"""A SASL session granted for a token ends with the token: one with less than this left is replaced before it logs
in, so the session outlasts ``MIN_REAUTH_INTERVAL_MS``."""


Completion = Callable[[UnsentRequest, object], None]
"""Receives a finished request and its decoded response or ``KafkaError``."""


def describe_node(node_id: int, host: str, port: int) -> str:
    """How a connection's peer is named in errors: a bootstrap server, a broker, or a group coordinator."""
    if node_id < 0:
        return f"bootstrap server {host}:{port}"
    if node_id > COORDINATOR_NODE_BASE // 2:
        return f"group coordinator (broker {COORDINATOR_NODE_BASE - node_id}) at {host}:{port}"
    return f"broker {node_id} at {host}:{port}"


def reauthenticate_in(session_lifetime_ms: int, share: float) -> int:
    """When to log in again after a login whose session lasts ``session_lifetime_ms``: at ``share`` of it as Java
    does, but ``REAUTH_MARGIN_MS`` before its end when that is later than ``MIN_REAUTH_INTERVAL_MS``."""
    at = min(session_lifetime_ms * share, session_lifetime_ms - REAUTH_MARGIN_MS)
    return int(max(at, min(MIN_REAUTH_INTERVAL_MS, session_lifetime_ms * share)))


_NO_ROUTE = frozenset({errno.EHOSTUNREACH, errno.ENETUNREACH})


def describe_failure(exc: BaseException) -> str:
    """A socket or stream failure in plain words (connection refused, no route, name not resolved...)."""
    if type(exc) is OSError and isinstance(exc.__cause__, OSError):
        exc = exc.__cause__  # anyio's "All connection attempts failed" wraps the last attempt's error
    if isinstance(exc, socket.gaierror):
        return f"name not resolved ({exc.strerror or exc})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionResetError):
        return "connection reset by the peer"
    if isinstance(exc, OSError) and exc.errno in _NO_ROUTE:
        return f"no route to host ({exc.strerror})"
    if isinstance(exc, (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, BrokenPipeError)):
        return "the connection was closed by the peer"
    if isinstance(exc, anyio.ClosedResourceError):
        return "the connection was closed"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return f"{type(exc).__name__}: {exc}"


@contextmanager
def map_exceptions(node_id: int, host: str, port: int, doing: str) -> Iterator[None]:
    """Turns socket and stream failures into ``KafkaConnectionError`` naming the peer and what went wrong."""
    try:
        yield
    except KafkaError:
        raise
    except (
        OSError,
        anyio.EndOfStream,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        anyio.IncompleteRead,
    ) as exc:
        raise KafkaConnectionError(f"{doing} {describe_node(node_id, host, port)}: {describe_failure(exc)}") from exc


class BrokerConnection:
    """A connection to one node; the delegate owns it and runs its reader in the delegate's task group."""

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        client_id: str,
        complete: Completion,
        on_closed: Callable[[BrokerConnection, KafkaError], None],
        security: ConnectionSecurity | None = None,
        max_response_bytes: int = DEFAULT_RECEIVE_MESSAGE_MAX_BYTES,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.state = ConnectionState.CONNECTING
        self.versions: dict[int, tuple[int, int]] = {}
        self.in_flight: dict[int, InFlight] = {}
        self._client_id = client_id
        self._complete = complete
        self._on_closed = on_closed
        self._security = security or ConnectionSecurity()
        self._stream: FrameStream | None = None
        self._next_correlation_id = 1
        self._send_lock = anyio.Lock()
        self._max_response_bytes = max_response_bytes
        """``receive_message_max_bytes``: a frame announcing more fails the connection before it is read."""
        self.close_reason: KafkaError | None = None
        self.reauthenticate_in_ms: int | None = None
        """From the last login, when to log in again (KIP-368): a share of the SASL session the broker gave; None
        when the broker gave no session end. The delegate keeps the time by its clock in ``reauthenticate_at_ms``."""
        self.reauthenticate_at_ms: int | None = None
        self.reauthentications = 0
        self._drained: anyio.Event | None = None
        self.was_ready = False
        """It connected (and authenticated): a close after that is a lost connection, not a failed attempt."""
        self.lost_requests = 0
        """Requests in flight when it closed, failed with it."""

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port} {self.state.value}>"

    async def connect(self, timeout_s: float) -> None:
        """Opens the socket (TLS, if configured), negotiates API versions and authenticates (SASL, if configured).

        Raises ``AuthenticationError`` when TLS or SASL refuses us (fatal), ``KafkaConnectionError`` otherwise.
        """
        try:
            with map_exceptions(self.node_id, self.host, self.port, "cannot connect to"):
                with anyio.fail_after(timeout_s):
                    stream = await self._open()
                    self._stream = stream
                    if self.state is ConnectionState.CLOSED:  # closed by the client while the socket opened
                        raise KafkaConnectionError(f"connection to node {self.node_id} closed by the client")
                    self.versions = await self._negotiate(stream)
                    if self._security.sasl is not None:
                        await self._authenticate(lambda request: self._exchange(stream, request))
        except BaseException:
            # Whatever ends the set-up (a failure, the client closing, the set-up timeout), the socket is closed
            # now: a cancelled set-up once left it open for the garbage collector, after its loop had ended.
            await self.close_stream()
            raise
        self.state = ConnectionState.READY
        self.was_ready = True
        log.debug("connection.ready", node=self.node_id, host=self.host, port=self.port)

    async def _open(self) -> FrameStream:
        context = self._security.ssl_context
        if context is None:
            return await open_plain(self.host, self.port, self._max_response_bytes)
        tcp = await anyio.connect_tcp(self.host, self.port)
        try:
            tls = await TLSStream.wrap(tcp, hostname=self.host, ssl_context=context, standard_compatible=False)
            return StreamFrames(tls, self._max_response_bytes)
        except BaseException as exc:
            # Whatever ends the handshake (a refusal, the set-up timeout's cancellation), the socket is ours to
            # close: nothing else holds it yet.
            with anyio.CancelScope(shield=True):
                await tcp.aclose()
            cause = exc if isinstance(exc, ssl.SSLError) else exc.__cause__
            if isinstance(exc, (ssl.SSLError, anyio.BrokenResourceError)) and isinstance(cause, ssl.SSLError):
                raise AuthenticationError(
                    f"TLS handshake with node {self.node_id} at {self.host}:{self.port} failed: "
                    f"{getattr(cause, 'verify_message', None) or cause.reason or cause}"
                ) from exc
            raise

    async def _exchange(self, stream: FrameStream, request: Request) -> Response:
        """One request and its answer before the reader runs (connection set-up only)."""
        version = self.version_for(type(request))
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        await stream.send(encode_request(request, version, correlation_id, self._client_id))
        payload = await self._read_frame(stream)
        if peek_correlation_id(payload) != correlation_id:
            raise CorruptResponseError(f"node {self.node_id} answered another request during authentication")
        return decode_response(payload, type(request), version)

    def begin_reauthentication(self) -> None:
        """From now on no request goes out until ``reauthenticate`` has logged in again."""
        self.state = ConnectionState.REAUTHENTICATING
        self.reauthenticate_in_ms = self.reauthenticate_at_ms = None

    async def reauthenticate(self, timeout_s: float, deadline_ms: int) -> None:
        """Logs in again on the open connection (KIP-368): no request goes out meanwhile, the answers to those in
        flight are delivered as usual, then the SASL exchange runs through the reader. ``deadline_ms`` (the
        delegate's clock) bounds each of its requests. Raises as ``connect`` does."""
        self.begin_reauthentication()
        with map_exceptions(self.node_id, self.host, self.port, "lost the connection to"):
            with anyio.fail_after(timeout_s):
                if self.in_flight:
                    self._drained = anyio.Event()
                    await self._drained.wait()
                await self._authenticate(lambda request: self._call(request, deadline_ms))
        if self.state is ConnectionState.REAUTHENTICATING:
            self.state = ConnectionState.READY
            self.reauthentications += 1
            log.debug("connection.reauthenticated", node=self.node_id, count=self.reauthentications)

    async def _call(self, request: Request, deadline_ms: int) -> Response:
        """One request of the connection's own, sent while the reader runs; its answer comes back here."""
        version = self.version_for(type(request))
        answered = anyio.Event()
        result: list[object] = []

        def take(answer: object) -> None:
            result.append(answer)
            answered.set()

        await self.send(UnsentRequest(request, self.node_id, _ignore), version, deadline_ms, waiter=take)
        await answered.wait()
        answer = result[0]
        if isinstance(answer, KafkaError):
            raise answer
        return cast(Response, answer)

    async def _authenticate(self, exchange: Callable[[Request], Awaitable[Response]]) -> None:
        # Late: only SASL connections need these (a consumer without SASL never loads them).
        from asyncconsumer.network.kerberos import KerberosLogin
        from asyncconsumer.network.oauthbearer import OAuthBearerLogin, OAuthBearerMechanism
        from asyncconsumer.network.sasl import SaslMechanism, mechanism_for
        from asyncconsumer.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
        from asyncconsumer.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

        credentials = self._security.sasl
        assert credentials is not None
        where = f"node {self.node_id} at {self.host}:{self.port}"
        try:
            handshake = await exchange(SaslHandshakeRequest(mechanism=credentials.mechanism))
        except UnsupportedVersionError as exc:
            raise AuthenticationError(f"{where} does not offer SASL (no SaslHandshake v1): {exc}") from exc
        except (OSError, anyio.EndOfStream, anyio.BrokenResourceError, anyio.IncompleteRead) as exc:
            # Some brokers (Tansu) hang up instead of answering UNSUPPORTED_SASL_MECHANISM: retried, but say so.
            raise KafkaConnectionError(
                f"{where} closed the connection during the SASL handshake (does it offer {credentials.mechanism}?)"
            ) from exc
        assert isinstance(handshake, SaslHandshakeResponse)
        if handshake.error_code:
            offered = ", ".join(handshake.mechanisms) or "none"
            raise for_code(
                handshake.error_code,
                f"{where} offers SASL mechanisms [{offered}]; sasl_mechanism is {credentials.mechanism}",
            )
        blocking = False  # GSSAPI's steps may ask the KDC for tickets: a worker thread runs them, not the loop
        if isinstance(credentials, OAuthBearerLogin):
            bearer = OAuthBearerMechanism(await credentials.token(min_remaining_ms=MIN_SESSION_MS))
            mechanism: SaslMechanism = bearer
            who = f"as {credentials.principal!r} " if credentials.principal else ""
        elif isinstance(credentials, KerberosLogin):
            bearer = None
            mechanism = credentials.mechanism_for(self.host)
            who = f"as {credentials.principal!r} " if credentials.principal else ""
            blocking = True
        else:
            bearer = None
            mechanism = mechanism_for(credentials)
            who = f"as {credentials.username!r} "

        async def step(call: Callable[[], bytes | None]) -> bytes | None:
            return await anyio.to_thread.run_sync(call, abandon_on_cancel=True) if blocking else call()

        token: bytes | None = await step(mechanism.initial)
        while token is not None:
            response = await exchange(SaslAuthenticateRequest(auth_bytes=token))
            assert isinstance(response, SaslAuthenticateResponse)
            if response.error_code:
                detail = f" ({bearer.failure})" if bearer is not None and bearer.failure else ""
                raise for_code(
                    response.error_code,
                    f"SASL {credentials.mechanism} {who}to {where}: {response.error_message or 'refused'}{detail}",
                )
            token = await step(partial(mechanism.respond, response.auth_bytes))
            if response.session_lifetime_ms > 0:
                self.reauthenticate_in_ms = reauthenticate_in(response.session_lifetime_ms, random.uniform(*REAUTH_AT))
        log.debug("connection.authenticated", node=self.node_id, mechanism=credentials.mechanism)

    async def _negotiate(self, stream: FrameStream) -> dict[int, tuple[int, int]]:
        version = ApiVersionsRequest.MAX_VERSION
        request = ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_VERSION)
        for _ in range(2):
            frame = encode_request(request, version, 0, self._client_id)
            await stream.send(frame)
            payload = await self._read_frame(stream)
            response = decode_response(payload, ApiVersionsRequest, version)
            assert isinstance(response, ApiVersionsResponse)
            ranges = {r.api_key: (r.min_version, r.max_version) for r in response.api_keys}
            if response.error_code == ErrorCode.NONE:
                return ranges
            if response.error_code == ErrorCode.UNSUPPORTED_VERSION and ranges.get(ApiKey.API_VERSIONS):
                version = min(ranges[ApiKey.API_VERSIONS][1], ApiVersionsRequest.MAX_VERSION)
                continue
            raise KafkaConnectionError(f"ApiVersions to node {self.node_id} failed with code {response.error_code}")
        raise KafkaConnectionError(f"ApiVersions to node {self.node_id} could not agree on a version")

    async def _read_frame(self, stream: FrameStream) -> memoryview:
        try:
            return await stream.receive_frame()
        except FrameSizeError as exc:  # checked before a byte is allocated for the frame
            raise self._bad_size(exc.size) from None

    def _bad_size(self, size: int) -> KafkaError:
        if 0 <= size < 4:
            return CorruptResponseError(f"node {self.node_id} sent a frame of {size} bytes")
        log.warning(
            "connection.response_too_large",
            node=self.node_id,
            host=self.host,
            port=self.port,
            size=size,
            limit=self._max_response_bytes,
        )
        return ResponseTooLargeError(describe_node(self.node_id, self.host, self.port), size, self._max_response_bytes)

    def version_for(self, request_type: type[Request]) -> int:
        """The highest version both sides implement; ``UnsupportedVersionError`` if none."""
        broker = self.versions.get(int(request_type.API_KEY))
        if broker is None:
            raise UnsupportedVersionError(
                f"node {self.node_id} does not support {request_type.API_KEY.name} (API {int(request_type.API_KEY)})"
            )
        low = max(broker[0], request_type.MIN_VERSION)
        high = min(broker[1], request_type.MAX_VERSION)
        if low > high:
            raise UnsupportedVersionError(
                f"{request_type.API_KEY.name}: node {self.node_id} speaks v{broker[0]}-{broker[1]}, "
                f"this client v{request_type.MIN_VERSION}-{request_type.MAX_VERSION}"
            )
        return high

    async def send(
        self, unsent: UnsentRequest, version: int, deadline_ms: int, *, waiter: Callable[[object], None] | None = None
    ) -> None:
        """Writes one request; its response arrives through ``complete``, or ``waiter`` for the connection's own
        requests, the only ones sent while it re-authenticates."""
        stream = self._stream
        wanted = ConnectionState.READY if waiter is None else ConnectionState.REAUTHENTICATING
        if stream is None or self.state is not wanted:
            raise KafkaConnectionError(f"node {self.node_id} is not connected")
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        frame = encode_request(unsent.request, version, correlation_id, self._client_id)
        self.in_flight[correlation_id] = InFlight(unsent, type(unsent.request), version, deadline_ms, waiter)
        with map_exceptions(self.node_id, self.host, self.port, "lost the connection to"):
            async with self._send_lock:
                await stream.send(frame)

    async def read_loop(self) -> None:
        """Reads responses until the connection closes; then fails whatever is still in flight."""
        stream = self._stream
        assert stream is not None
        try:
            with map_exceptions(self.node_id, self.host, self.port, "lost the connection to"):
                while True:
                    payload = await self._read_frame(stream)
                    correlation_id = peek_correlation_id(payload)
                    entry = self.in_flight.pop(correlation_id, None)
                    if entry is None:
                        raise CorruptResponseError(
                            f"node {self.node_id} answered unknown correlation id {correlation_id}"
                        )
                    try:
                        response: object = decode_response(payload, entry.request_type, entry.version)
                    except CorruptResponseError:
                        self._deliver(
                            entry,
                            CorruptResponseError(
                                f"undecodable {entry.request_type.API_KEY.name} response from node {self.node_id}"
                            ),
                        )
                        raise
                    self._deliver(entry, response)
                    if self._drained is not None and not self.in_flight:
                        self._drained.set()
                        self._drained = None
        except KafkaError as exc:
            await self.close(exc)
        except anyio.get_cancelled_exc_class():
            await self.close(KafkaConnectionError(f"connection to node {self.node_id} closed by the client"))
            raise

    def _deliver(self, entry: InFlight, result: object) -> None:
        if entry.waiter is None:
            self._complete(entry.unsent, result)
        else:
            entry.waiter(result)

    def fail(self, reason: KafkaError) -> bool:
        """Marks the connection closed and fails what is in flight, at once; False if it already was.

        The socket itself is closed by ``close_stream``, which the caller schedules.
        """
        if self.state is ConnectionState.CLOSED:
            return False
        self.state = ConnectionState.CLOSED
        self.close_reason = reason
        pending, self.in_flight = self.in_flight, {}
        self.lost_requests = len(pending)
        for entry in pending.values():
            self._deliver(entry, reason)
        if self._drained is not None:
            self._drained.set()
        log.info("connection.closed", node=self.node_id, host=self.host, port=self.port, reason=str(reason))
        self._on_closed(self, reason)
        return True

    async def close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with (
                anyio.CancelScope(shield=True),
                suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError),
            ):
                await stream.aclose()

    async def close(self, reason: KafkaError) -> None:
        self.fail(reason)
        await self.close_stream()


def _ignore(result: object, now_ms: int) -> None:
    """The connection's own requests are answered through their ``InFlight.waiter``, never through here."""
