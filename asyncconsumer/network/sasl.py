"""SASL client mechanisms, sans-I/O: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

A mechanism turns the server's challenges into the client's responses; the connection carries them in
SaslAuthenticate requests. Nothing here logs, and no repr shows a password.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import secrets
from typing import Protocol

from asyncconsumer.errors import AuthenticationError
from asyncconsumer.network.security import SaslCredentials

__all__ = ["MECHANISMS", "PlainMechanism", "SaslCredentials", "SaslMechanism", "ScramMechanism", "mechanism_for"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_MIN_ITERATIONS = 4096  # what Kafka's own client demands of a SCRAM server (RFC 7677 recommends it too)


class SaslMechanism(Protocol):
    """One authentication exchange: ``initial()`` first, then ``respond(challenge)`` until ``done``."""

    name: str

    @property
    def done(self) -> bool: ...

    def initial(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None:
        """The next token for ``challenge``; None when the exchange is complete (nothing more to send)."""
        ...


def mechanism_for(credentials: SaslCredentials, nonce: str | None = None) -> SaslMechanism:
    if credentials.mechanism == "PLAIN":
        return PlainMechanism(credentials)
    return ScramMechanism(credentials, nonce)


class PlainMechanism:
    """RFC 4616: the username and password in one token (so only over TLS, or to a trusted network)."""

    name = "PLAIN"

    def __init__(self, credentials: SaslCredentials) -> None:
        self._credentials = credentials
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def __repr__(self) -> str:
        return f"<PlainMechanism user={self._credentials.username!r}>"

    def initial(self) -> bytes:
        c = self._credentials
        return b"\0" + c.username.encode("utf-8") + b"\0" + c.password.encode("utf-8")

    def respond(self, challenge: bytes) -> bytes | None:
        self._done = True
        return None


class _Scram(enum.Enum):
    START = "start"
    SENT_FIRST = "sent-first"
    SENT_FINAL = "sent-final"
    DONE = "done"


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: bytes, what: str) -> dict[str, str]:
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AuthenticationError(f"SCRAM {what} is not UTF-8") from exc
    found: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationError(f"malformed SCRAM {what}: {text[:100]!r}")
        found.setdefault(key, value)
    return found


class ScramMechanism:
    """RFC 5802 client side, with the server's signature checked at the end (a fake server fails the login)."""

    def __init__(self, credentials: SaslCredentials, nonce: str | None = None) -> None:
        self.name = credentials.mechanism
        self._hash = _SCRAM_HASHES[credentials.mechanism]
        self._credentials = credentials
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._state = _Scram.START
        self._first_bare = ""
        self._server_signature = b""

    def __repr__(self) -> str:
        return f"<ScramMechanism {self.name} user={self._credentials.username!r} {self._state.value}>"

    @property
    def done(self) -> bool:
        return self._state is _Scram.DONE

    def initial(self) -> bytes:
        if self._state is not _Scram.START:
            raise AuthenticationError(f"{self.name}: the exchange has already started")
        self._first_bare = f"n={_saslname(self._credentials.username)},r={self._nonce}"
        self._state = _Scram.SENT_FIRST
        return ("n,," + self._first_bare).encode("utf-8")

    def respond(self, challenge: bytes) -> bytes | None:
        if self._state is _Scram.SENT_FIRST:
            return self._client_final(challenge)
        if self._state is _Scram.SENT_FINAL:
            self._verify_server_final(challenge)
            return None
        raise AuthenticationError(f"{self.name}: unexpected server message in state {self._state.value}")

    def _client_final(self, server_first: bytes) -> bytes:
        attributes = _attributes(server_first, "server-first message")
        if "e" in attributes:
            raise AuthenticationError(f"{self.name} authentication failed: {attributes['e']}")
        try:
            nonce, salt_b64, iterations = attributes["r"], attributes["s"], int(attributes["i"])
            salt = base64.b64decode(salt_b64, validate=True)
        except (KeyError, ValueError) as exc:
            raise AuthenticationError(f"malformed SCRAM server-first message ({exc})") from exc
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise AuthenticationError(f"{self.name}: the server's nonce does not extend the client's")
        if iterations < _MIN_ITERATIONS:
            raise AuthenticationError(f"{self.name}: the server asks for {iterations} iterations, fewer than 4096")
        salted = hashlib.pbkdf2_hmac(self._hash, self._credentials.password.encode("utf-8"), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first.decode('utf-8')},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, self._hash)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self._hash)
        self._server_signature = hmac.digest(server_key, auth_message, self._hash)
        self._state = _Scram.SENT_FINAL
        return f"{without_proof},p={base64.b64encode(proof).decode('ascii')}".encode()

    def _verify_server_final(self, server_final: bytes) -> None:
        attributes = _attributes(server_final, "server-final message")
        if "e" in attributes:
            raise AuthenticationError(f"{self.name} authentication failed: {attributes['e']}")
        try:
            verifier = base64.b64decode(attributes["v"], validate=True)
        except (KeyError, ValueError) as exc:
            raise AuthenticationError(f"malformed SCRAM server-final message ({exc})") from exc
        if not hmac.compare_digest(verifier, self._server_signature):
            raise AuthenticationError(f"{self.name}: the server's signature is wrong (it does not know the password)")
        self._state = _Scram.DONE
