"""The built-in OAUTHBEARER token provider: OAuth 2.0's client-credentials grant (RFC 6749 section 4.4) against an
OIDC token endpoint, with Java's settings (``sasl.oauthbearer.token.endpoint.url``, the client id and secret,
``sasl.oauthbearer.scope``).

It is a plain callable, so ``OAuthBearerLogin`` runs it in a worker thread: the HTTP call blocks that thread, never
the background loop. A connection error or a 5xx answer is retried with a growing backoff (Java's
``sasl.login.retry.backoff.ms`` and ``.max.ms``, 100 ms and 10 s); a 4xx answer (a wrong secret) fails at once.
Neither the secret nor the token is ever logged or shown in a repr.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping

from asyncconsumer.network.oauthbearer import OAuthBearerToken

__all__ = ["ClientCredentialsProvider", "TokenEndpointError"]

RETRY_BACKOFF_S = 0.1
RETRY_BACKOFF_MAX_S = 10.0


class TokenEndpointError(Exception):
    """The token endpoint refused or could not be reached; the consumer raises it as an ``AuthenticationError``'s
    cause."""


class ClientCredentialsProvider:
    """Asks ``url`` for an access token with HTTP basic authentication (the client id and secret, form-encoded
    first, as RFC 6749 section 2.3.1 says) and ``grant_type=client_credentials``."""

    def __init__(
        self,
        url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        extensions: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._url = url
        self._client_id = client_id
        self._client_secret = client_secret
        self._scope = scope
        self._extensions = dict(extensions or {})
        self._timeout_s = timeout_s
        self._sleep = sleep
        self._clock = clock

    def __repr__(self) -> str:
        return f"<ClientCredentialsProvider {self._url} client_id={self._client_id!r}>"

    def __call__(self) -> OAuthBearerToken:
        delay = RETRY_BACKOFF_S
        waited = 0.0
        while True:
            try:
                return self._fetch()
            except _Retriable as exc:
                if waited + delay > RETRY_BACKOFF_MAX_S:
                    raise TokenEndpointError(f"{self._url}: {exc} (gave up after {waited:.1f} s of retries)") from exc
                self._sleep(delay)
                waited += delay
                delay = min(delay * 2, RETRY_BACKOFF_MAX_S)

    def _fetch(self) -> OAuthBearerToken:
        form = {"grant_type": "client_credentials"}
        if self._scope:
            form["scope"] = self._scope
        user = urllib.parse.quote(self._client_id, safe="") + ":" + urllib.parse.quote(self._client_secret, safe="")
        request = urllib.request.Request(
            self._url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": "Basic " + base64.b64encode(user.encode()).decode(),
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        asked_at = self._clock()
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", errors="replace")
            if exc.code >= 500:
                raise _Retriable(f"HTTP {exc.code}: {detail}") from exc
            raise TokenEndpointError(f"{self._url} answered HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise _Retriable(str(getattr(exc, "reason", exc))) from exc
        try:
            answer = json.loads(body)
            value = answer["access_token"]
        except (ValueError, KeyError, TypeError) as exc:
            raise TokenEndpointError(f"{self._url} answered without an access_token: {body[:200]!r}") from exc
        try:
            return OAuthBearerToken.from_jwt(value, self._extensions)
        except ValueError:
            # not a JWT (an opaque token): its lifetime is the answer's expires_in
            expires_in = answer.get("expires_in")
            if not isinstance(expires_in, (int, float)):
                raise TokenEndpointError(
                    f"{self._url} answered an opaque token without expires_in: its lifetime is unknown"
                ) from None
            return OAuthBearerToken(
                value, int((asked_at + expires_in) * 1000), None, self._extensions, int(asked_at * 1000)
            )


class _Retriable(Exception):
    """A connection error or a 5xx answer: worth asking again."""
