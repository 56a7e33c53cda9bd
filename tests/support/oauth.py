"""Tokens for the OAUTHBEARER tests: unsecured JWTs (``alg: none``), which Kafka's default OAUTHBEARER validator
(``OAuthBearerUnsecuredValidatorCallbackHandler``) accepts when they name a subject and have not expired."""

from __future__ import annotations

import base64
import json
import time
from typing import Any


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def unsecured_jwt(subject: str = "alice", lifetime_s: float = 3600.0, *, now: float | None = None) -> str:
    """A compact JWT with no signature: ``sub``, ``iat`` and ``exp`` (``lifetime_s`` after ``now``)."""
    issued = time.time() if now is None else now
    claims = {"sub": subject, "iat": int(issued), "exp": int(issued + lifetime_s)}
    return f"{_b64({'alg': 'none'})}.{_b64(claims)}."
