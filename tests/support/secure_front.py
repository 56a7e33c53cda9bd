"""A test-only security front for a real broker: TLS and/or SASL terminated here, everything else forwarded.

Tansu 0.6.0 cannot serve either itself in a test: its ``--cert`` and ``--key`` flags are declared mutually
exclusive (a clap group) while TLS needs both, so a broker given only ``--cert`` silently serves plaintext; and
with ``--authentication`` it refuses the AlterUserScramCredentials that ``tansu user create`` sends, so with
in-memory storage no user can ever exist. ``SecureFront`` stands in for the broker's security layer:

* TLS (``server_ssl``): the listener speaks TLS; the front talks plaintext to the broker;
* SASL (``users``): ApiVersions is forwarded; SaslHandshake v0-1 and SaslAuthenticate v0-2 are answered here
  (PLAIN per RFC 4616, SCRAM-SHA-256/512 per RFC 5802 server side); any other request before authentication
  closes the connection, as Kafka does. After authentication the bytes flow unchanged both ways.

Apache Kafka serves TLS and SASL for real in ``tests/integration/test_security_kafka.py``; what keeps the front is
what Kafka cannot be made to do: ``impostor`` is a SCRAM server that does not know the password (it takes any proof
and signs with a key of its own), ``stall`` ("connect": before the TLS handshake; "sasl": at SaslHandshake) a server
that accepts the connection and then never answers.

The broker must advertise the front's port (``tests.conftest._broker_behind``). Counters are read from any
thread.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import secrets
import ssl
import struct
from collections import Counter
from typing import Literal

from asyncconsumer.errors import KafkaError
from asyncconsumer.protocol.base import decode_request_frame, encode_response
from asyncconsumer.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from asyncconsumer.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from tests.support.loop_thread import STREAM_LIMIT, LoopThreadServer, close_gracefully

__all__ = ["SCRAM_ITERATIONS", "SecureFront"]

SCRAM_ITERATIONS = 4096
_SCRAM = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_API_VERSIONS, _SASL_HANDSHAKE, _SASL_AUTHENTICATE = 18, 17, 36
_SASL_TYPES = {_SASL_HANDSHAKE: SaslHandshakeRequest, _SASL_AUTHENTICATE: SaslAuthenticateRequest}
_SASL_FAILED, _UNSUPPORTED_MECHANISM, _ILLEGAL_SASL_STATE = 58, 33, 34


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.pumps: list[asyncio.Task[None]] = []

    def abort(self) -> None:
        self.writer.transport.abort()
        if self.upstream is not None:
            self.upstream[1].transport.abort()
        for pump in self.pumps:
            pump.cancel()


class _ScramServer:
    """One SCRAM exchange, server side; ``step`` returns (error message or None, token to send)."""

    def __init__(self, mechanism: str, users: dict[str, str], *, impostor: bool = False) -> None:
        self._hash = _SCRAM[mechanism]
        self._users = users
        self._impostor = impostor
        self._stage = 0
        self._auth_prefix = ""
        self._nonce = ""
        self._salted = b""

    def step(self, token: bytes) -> tuple[str | None, bytes]:
        text = token.decode("utf-8")
        if self._stage == 0:
            self._stage = 1
            _, _, bare = text.partition(",,")
            fields = dict(part.split("=", 1) for part in bare.split(","))
            user = fields.get("n", "").replace("=2C", ",").replace("=3D", "=")
            password = self._users.get(user)
            salt = hashlib.sha256(b"salt:" + user.encode()).digest()[:16]
            # an unknown user gets a made-up salt and fails at the proof, like a real server (no user oracle)
            self._salted = hashlib.pbkdf2_hmac(
                self._hash, (password or secrets.token_hex(8)).encode(), salt, SCRAM_ITERATIONS
            )
            self._nonce = fields["r"] + secrets.token_urlsafe(18)
            server_first = f"r={self._nonce},s={base64.b64encode(salt).decode()},i={SCRAM_ITERATIONS}"
            self._auth_prefix = f"{bare},{server_first}"
            return None, server_first.encode()
        if self._stage == 1:
            self._stage = 2
            without_proof, _, proof_b64 = text.rpartition(",p=")
            if f"r={self._nonce}" not in without_proof.split(","):
                return "nonce mismatch", b""
            auth_message = f"{self._auth_prefix},{without_proof}".encode()
            client_key_expected = hmac.digest(self._salted, b"Client Key", self._hash)
            stored_key = hashlib.new(self._hash, client_key_expected).digest()
            signature = hmac.digest(stored_key, auth_message, self._hash)
            proof = base64.b64decode(proof_b64)
            client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
            if self._impostor:  # takes any proof; its signature cannot be the one the client expects
                return None, b"v=" + base64.b64encode(secrets.token_bytes(len(signature)))
            if len(proof) != len(signature) or hashlib.new(self._hash, client_key).digest() != stored_key:
                return "Authentication failed: invalid credentials", b""
            server_key = hmac.digest(self._salted, b"Server Key", self._hash)
            verifier = base64.b64encode(hmac.digest(server_key, auth_message, self._hash)).decode()
            return None, f"v={verifier}".encode()
        return "unexpected SCRAM message", b""


class SecureFront(LoopThreadServer[_Connection]):
    """See the module docstring. ``users`` maps user name to password (None: no SASL)."""

    _what = "the security front"

    def __init__(
        self,
        *,
        server_ssl: ssl.SSLContext | None = None,
        users: dict[str, str] | None = None,
        mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        impostor: bool = False,
        stall: Literal["connect", "sasl"] | None = None,
    ) -> None:
        super().__init__("127.0.0.1", 0)
        self._tls = server_ssl
        self._users = users
        self._mechanisms = mechanisms
        self._impostor = impostor
        self._stall = stall
        self._target: tuple[str, int] | None = None
        self.counts: Counter[str] = Counter()
        """"connections" (TCP accepts), "tls_ok", "tls_failed", "handshakes", "auth_ok", "auth_failed",
        "rejected_before_auth", "tokens", "stalled"."""
        self.tokens: list[bytes] = []
        """Every SaslAuthenticate token received, in order."""
        self.errors: list[BaseException] = []

    def set_target(self, host: str, port: int) -> None:
        self._target = (host, port)

    async def _handle_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connection = _Connection(reader, writer)
        self._connections.add(connection)
        self._handlers.add(task)
        self.counts["connections"] += 1
        try:
            await self._serve(connection)
        except (asyncio.IncompleteReadError, ConnectionError, OSError, ssl.SSLError):
            pass
        except Exception as exc:  # a bug in the front: the test's teardown reports it
            self.errors.append(exc)
        finally:
            self._connections.discard(connection)
            for pump in connection.pumps:
                pump.cancel()
            await asyncio.gather(*connection.pumps, return_exceptions=True)
            writers = [connection.writer] + ([connection.upstream[1]] if connection.upstream else [])
            await close_gracefully(writers)
            self._handlers.discard(task)

    async def _serve(self, connection: _Connection) -> None:
        assert self._target is not None
        if self._stall == "connect":
            await self._stall_until_closed(connection)
            return
        if self._tls is not None:
            try:
                await connection.writer.start_tls(self._tls)
            except (ssl.SSLError, ConnectionError, OSError):
                self.counts["tls_failed"] += 1
                return
            self.counts["tls_ok"] += 1
        connection.upstream = await asyncio.open_connection(*self._target, limit=STREAM_LIMIT)
        if self._users is not None and not await self._authenticate(connection):
            return
        up_reader, up_writer = connection.upstream
        connection.pumps = [
            asyncio.create_task(_pump(connection.reader, up_writer)),
            asyncio.create_task(_pump(up_reader, connection.writer)),
        ]
        await asyncio.wait(connection.pumps, return_when=asyncio.FIRST_COMPLETED)

    async def _authenticate(self, connection: _Connection) -> bool:
        """Serves requests until SASL succeeds (True) or the connection must close (False)."""
        assert self._users is not None and connection.upstream is not None
        mechanism: str | None = None
        scram: _ScramServer | None = None
        while True:
            payload = await _read_frame(connection.reader)
            api_key = struct.unpack_from(">h", payload)[0]
            if api_key == _API_VERSIONS:
                up_reader, up_writer = connection.upstream
                up_writer.write(struct.pack(">i", len(payload)) + payload)
                await up_writer.drain()
                answer = await _read_frame(up_reader)
                connection.writer.write(struct.pack(">i", len(answer)) + answer)
                await connection.writer.drain()
                continue
            if api_key not in _SASL_TYPES:
                self.counts["rejected_before_auth"] += 1
                return False
            _, version, correlation_id, _, request = decode_request_frame(payload, _SASL_TYPES)
            if isinstance(request, SaslHandshakeRequest) and self._stall == "sasl":
                await self._stall_until_closed(connection)
                return False
            if isinstance(request, SaslHandshakeRequest):
                self.counts["handshakes"] += 1
                ok = request.mechanism in self._mechanisms
                mechanism = request.mechanism if ok else None
                scram = (
                    _ScramServer(request.mechanism, self._users, impostor=self._impostor)
                    if ok and request.mechanism in _SCRAM
                    else None
                )
                reply = SaslHandshakeResponse(
                    error_code=0 if ok else _UNSUPPORTED_MECHANISM, mechanisms=self._mechanisms
                )
                await _send(connection, encode_response(reply, SaslHandshakeRequest, version, correlation_id))
                if not ok:
                    return False
                continue
            assert isinstance(request, SaslAuthenticateRequest)
            self.counts["tokens"] += 1
            self.tokens.append(request.auth_bytes)
            if mechanism is None:
                error: str | None = "SaslAuthenticate before SaslHandshake"
                token = b""
            elif scram is not None:
                error, token = scram.step(request.auth_bytes)
            else:
                _, user, password = request.auth_bytes.split(b"\0", 2)
                ok = self._users.get(user.decode()) == password.decode()
                error, token = (None, b"") if ok else ("Authentication failed: invalid credentials", b"")
            code = _SASL_FAILED if error is not None else 0
            if error is not None and mechanism is None:
                code = _ILLEGAL_SASL_STATE
            reply_auth = SaslAuthenticateResponse(error_code=code, error_message=error, auth_bytes=token)
            await _send(connection, encode_response(reply_auth, SaslAuthenticateRequest, version, correlation_id))
            if error is not None:
                self.counts["auth_failed"] += 1
                return False
            if scram is None or token.startswith(b"v="):
                self.counts["auth_ok"] += 1
                return True

    async def _stall_until_closed(self, connection: _Connection) -> None:
        """Reads and drops whatever the client sends, answering nothing, until it hangs up."""
        self.counts["stalled"] += 1
        while await connection.reader.read(1 << 16):
            pass


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def _send(connection: _Connection, frame: bytes) -> None:
    connection.writer.write(frame)
    await connection.writer.drain()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError, asyncio.IncompleteReadError, KafkaError):
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
