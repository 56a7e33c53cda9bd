"""SASL/OAUTHBEARER (RFC 7628, KIP-255): the token a provider gives, kept until it is due for refresh, and the
mechanism that sends it.

A connection asks ``OAuthBearerLogin.token()`` when it authenticates. The provider is called only when there is no
token yet, or when the one held has lived 80% of its lifetime (Java's ``sasl.login.refresh.window.factor``), so
the many connections of one consumer share a token and a new one is fetched before the old one expires.
Concurrent asks share one call. A provider that raises fails the connection with an ``AuthenticationError`` that
chains the provider's own exception. Nothing here logs a token.
"""

from __future__ import annotations

import base64
import inspect
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

import anyio
import anyio.to_thread
import attrs

from asyncconsumer.errors import AuthenticationError

__all__ = ["OAuthBearerLogin", "OAuthBearerMechanism", "OAuthBearerToken", "TokenProvider"]

REFRESH_WINDOW_FACTOR = 0.8
"""A token is refreshed once it has lived this share of its lifetime (Java's default window factor)."""

_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]+")  # RFC 7628 section 3.1: visible ASCII and white space


@attrs.define(frozen=True, slots=True)
class OAuthBearerToken:
    """A bearer token and when it expires (Java's ``OAuthBearerToken``): what a token provider returns.

    ``expires_at_ms`` is milliseconds since the epoch (Java's ``lifetimeMs``); ``extensions`` are SASL extensions
    (KIP-342) sent with the token, as some managed services want (a logical cluster, an identity pool).
    """

    value: str = attrs.field(repr=lambda _: "'***'")
    expires_at_ms: int
    principal: str | None = None
    """Who the token names, for error messages only (never checked here: the broker decides)."""
    extensions: Mapping[str, str] = attrs.field(factory=dict)
    issued_at_ms: int | None = None
    """When the token was issued (Java's ``startTimeMs``); None: when the provider returned it."""

    @classmethod
    def from_jwt(cls, value: str, extensions: Mapping[str, str] | None = None) -> OAuthBearerToken:
        """A token from a compact JWT, its expiry (``exp``), issue time (``iat``) and principal (``sub``) read from
        its claims, without checking its signature (the broker checks it). ``ValueError`` when it has no ``exp``."""
        claims = _jwt_claims(value)
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)):
            raise ValueError("the token is not a JWT with a numeric 'exp' claim; return an OAuthBearerToken")
        iat = claims.get("iat")
        sub = claims.get("sub")
        return cls(
            value,
            int(exp * 1000),
            sub if isinstance(sub, str) else None,
            dict(extensions or {}),
            int(iat * 1000) if isinstance(iat, (int, float)) else None,
        )


TokenProvider: TypeAlias = Callable[[], "OAuthBearerToken | str | Awaitable[OAuthBearerToken | str]"]
"""What ``sasl_oauthbearer_token_provider`` takes: a callable, plain or ``async``, returning an ``OAuthBearerToken``
or a JWT string (its expiry read from its ``exp`` claim). A plain callable runs in a worker thread, so a blocking
HTTP call does not hold up the consumer's background loop."""


def _jwt_claims(value: str) -> dict[str, Any]:
    parts = value.split(".")
    if len(parts) != 3:
        raise ValueError("the token is not a compact JWT (three dot-separated parts)")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"the token's claims are not base64url JSON: {exc}") from exc
    if not isinstance(claims, dict):
        raise ValueError("the token's claims are not a JSON object")
    return claims


class OAuthBearerLogin:
    """The consumer's OAUTHBEARER identity: one token, shared by its connections and refreshed when due."""

    mechanism = "OAUTHBEARER"

    def __init__(self, provider: TokenProvider, clock: Callable[[], float] = time.time) -> None:
        self._provider = provider
        self._clock = clock
        self._token: OAuthBearerToken | None = None
        self._refresh_at_ms = 0.0
        self._lock: anyio.Lock | None = None
        self.refreshes = 0
        """How many times the provider gave a token (for tests and metrics)."""

    def __repr__(self) -> str:
        return f"<OAuthBearerLogin principal={self.principal!r}>"

    @property
    def principal(self) -> str | None:
        return None if self._token is None else self._token.principal

    async def token(self, min_remaining_ms: float = 0.0) -> OAuthBearerToken:
        """The token to authenticate with now: the one held, unless it is due for refresh or has less than
        ``min_remaining_ms`` left."""
        if self._lock is None:
            self._lock = anyio.Lock()  # made on the loop that uses it: the consumer's background loop
        async with self._lock:
            now_ms = self._clock() * 1000
            held = self._token
            if held is None or now_ms >= self._refresh_at_ms or held.expires_at_ms - now_ms < min_remaining_ms:
                token = await self._call_provider()
                start = token.issued_at_ms if token.issued_at_ms is not None else now_ms
                self._token = token
                self._refresh_at_ms = start + REFRESH_WINDOW_FACTOR * max(0.0, token.expires_at_ms - start)
                self.refreshes += 1
                held = token
            return held

    async def _call_provider(self) -> OAuthBearerToken:
        provider = self._provider
        try:
            if inspect.iscoroutinefunction(provider):
                result: Any = await provider()
            else:
                result = await anyio.to_thread.run_sync(provider)
                if inspect.isawaitable(result):
                    result = await result
            token = OAuthBearerToken.from_jwt(result) if isinstance(result, str) else result
        except Exception as exc:
            raise AuthenticationError(
                f"SASL OAUTHBEARER: the token provider raised {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(token, OAuthBearerToken):
            raise AuthenticationError(
                f"SASL OAUTHBEARER: the token provider returned {type(token).__name__}, not an OAuthBearerToken "
                "or a JWT string"
            )
        _check_token(token)
        if token.expires_at_ms <= self._clock() * 1000:
            raise AuthenticationError(
                f"SASL OAUTHBEARER: the token provider returned a token that expired at {token.expires_at_ms} ms"
                + (f" (principal {token.principal!r})" if token.principal else "")
            )
        return token


def _check_token(token: OAuthBearerToken) -> None:
    """What RFC 7628 allows on the wire: a bearer token of token68 characters, and extensions named by letters
    (``auth`` is the token's own key) with values of visible characters."""
    if not token.value or not re.fullmatch(r"[A-Za-z0-9\-._~+/]+=*", token.value):
        raise AuthenticationError("SASL OAUTHBEARER: the token is empty or has characters a bearer token cannot")
    for key, value in token.extensions.items():
        if key == "auth" or not _EXTENSION_KEY.fullmatch(key) or not _EXTENSION_VALUE.fullmatch(value):
            raise AuthenticationError(f"SASL OAUTHBEARER: extension {key!r} is not a valid SASL extension")


class OAuthBearerMechanism:
    """RFC 7628's client side: the token (and extensions) in the first message. A server that refuses it sends a
    JSON error as a challenge, which the client acknowledges with a lone ``\\x01``; the server then fails the
    exchange, and ``failure`` holds its JSON for the error message."""

    name = "OAUTHBEARER"

    def __init__(self, token: OAuthBearerToken) -> None:
        self._token = token
        self._done = False
        self.failure: str | None = None

    @property
    def done(self) -> bool:
        return self._done

    def __repr__(self) -> str:
        return f"<OAuthBearerMechanism principal={self._token.principal!r}>"

    def initial(self) -> bytes:
        parts = [f"auth=Bearer {self._token.value}"]
        parts += [f"{key}={value}" for key, value in sorted(self._token.extensions.items())]
        return ("n,," + "\x01" + "\x01".join(parts) + "\x01\x01").encode("utf-8")

    def respond(self, challenge: bytes) -> bytes | None:
        if self._done:
            return None
        self._done = True
        if challenge:
            self.failure = challenge.decode("utf-8", errors="replace")
            return b"\x01"
        return None
