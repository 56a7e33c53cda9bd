"""A small OIDC identity provider for the OAUTHBEARER tests: a client-credentials token endpoint that signs RS256
JWTs, and the JWKS endpoint Kafka's ``OAuthBearerValidatorCallbackHandler`` checks them against. In a thread, on a
free loopback port; started and stopped by the tests."""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

KEY_ID = "asyncconsumer-test-key"
AUDIENCE = "kafka"
"""The ``aud`` of every token: Kafka 4.4's validator wants an expected audience set."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _int_b64(value: int) -> str:
    return _b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class OidcServer:
    """``clients`` maps client ids to secrets. A client in ``forged`` gets tokens signed with a key the JWKS does
    not hold (a badly signed token); ``fail_next`` answers that many token requests with HTTP 503 first."""

    def __init__(self, clients: dict[str, str], *, lifetime_s: int = 3600, forged: frozenset[str] = frozenset()):
        self.clients = clients
        self.lifetime_s = lifetime_s
        self.forged = forged
        self.fail_next = 0
        self.opaque = False
        """Answer an opaque (non-JWT) access token, whose lifetime is only the answer's ``expires_in``."""
        self.token_requests: list[dict[str, Any]] = []
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="oidc-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    @property
    def jwks_url(self) -> str:
        return self.url + "/jwks"

    def broker_settings(self) -> dict[str, str]:
        """What a Kafka 4.4 broker needs to check this provider's tokens (it wants the audience and the issuer)."""
        return {
            "sasl.oauthbearer.jwks.endpoint.url": self.jwks_url,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            "sasl.oauthbearer.expected.issuer": self.url,
        }

    def broker_system_properties(self) -> dict[str, str]:
        """The JVM property Kafka 4.x needs before it fetches the JWKS URL."""
        return {"org.apache.kafka.sasl.oauthbearer.allowed.urls": self.jwks_url}

    def start(self) -> OidcServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def jwks(self) -> dict[str, Any]:
        numbers = self._key.public_key().public_numbers()
        key = {"kty": "RSA", "kid": KEY_ID, "use": "sig", "alg": "RS256"}
        return {"keys": [{**key, "n": _int_b64(numbers.n), "e": _int_b64(numbers.e)}]}

    def sign(self, claims: dict[str, Any], *, forged: bool = False) -> str:
        header = _b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": KEY_ID}).encode())
        payload = _b64(json.dumps(claims).encode())
        key = self._other_key if forged else self._key
        signature = key.sign(f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{payload}.{_b64(signature)}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._answer(200, server.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                auth = self.headers.get("Authorization", "")
                client_id, _, secret = base64.b64decode(auth.removeprefix("Basic ")).decode().partition(":")
                client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
                server.token_requests.append({"client_id": client_id, **form})
                if server.fail_next > 0:
                    server.fail_next -= 1
                    self._answer(503, {"error": "temporarily_unavailable"})
                    return
                if form.get("grant_type") != "client_credentials" or server.clients.get(client_id) != secret:
                    self._answer(401, {"error": "invalid_client"})
                    return
                now = int(time.time())
                claims = {
                    "sub": client_id,
                    "iat": now,
                    "exp": now + server.lifetime_s,
                    "iss": server.url,
                    "aud": AUDIENCE,
                }
                if "scope" in form:
                    claims["scope"] = form["scope"]
                if server.opaque:
                    self._answer(200, {"access_token": "opaque-token", "expires_in": server.lifetime_s})
                    return
                token = server.sign(claims, forged=client_id in server.forged)
                self._answer(200, {"access_token": token, "token_type": "Bearer", "expires_in": server.lifetime_s})

        return Handler
