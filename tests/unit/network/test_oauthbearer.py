"""SASL/OAUTHBEARER (``network/oauthbearer.py``): RFC 7628's messages, tokens read from JWTs, and the login that
calls the token provider only when the token held is due for refresh, with a fake clock."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from asyncconsumer import AuthenticationError, ConfigError, ConsumerConfig, OAuthBearerToken
from asyncconsumer.network.oauthbearer import REFRESH_WINDOW_FACTOR, OAuthBearerLogin, OAuthBearerMechanism
from asyncconsumer.network.security import ConnectionSecurity
from tests.support.oauth import unsecured_jwt

pytestmark = pytest.mark.anyio

HOUR_MS = 3_600_000


class Clock:
    def __init__(self, now_s: float = 1_000_000.0) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def test_the_first_message_carries_the_token_and_the_extensions_in_rfc_7628_s_format() -> None:
    token = OAuthBearerToken("abc.def.ghi", 2_000, extensions={"logicalCluster": "lkc-1", "identityPoolId": "p-2"})
    mechanism = OAuthBearerMechanism(token)
    assert mechanism.initial() == (
        b"n,,\x01auth=Bearer abc.def.ghi\x01identityPoolId=p-2\x01logicalCluster=lkc-1\x01\x01"
    )
    assert mechanism.respond(b"") is None
    assert mechanism.done and mechanism.failure is None


def test_a_refusal_is_acknowledged_with_a_lone_separator_and_kept_for_the_error() -> None:
    mechanism = OAuthBearerMechanism(OAuthBearerToken("t", 2_000))
    mechanism.initial()
    assert mechanism.respond(b'{"status":"invalid_token"}') == b"\x01"
    assert mechanism.failure == '{"status":"invalid_token"}'
    assert mechanism.respond(b"") is None


def test_a_token_s_repr_hides_its_value() -> None:
    assert "secret" not in repr(OAuthBearerToken("secret", 1))


def test_a_jwt_gives_its_expiry_issue_time_and_subject() -> None:
    token = OAuthBearerToken.from_jwt(unsecured_jwt("bob", 600, now=1_000.0), {"k": "v"})
    assert (token.expires_at_ms, token.issued_at_ms, token.principal) == (1_600_000, 1_000_000, "bob")
    assert token.extensions == {"k": "v"}


@pytest.mark.parametrize("value", ["not-a-jwt", "a.b.c", unsecured_jwt().split(".")[0] + ".e30."])
def test_a_string_that_is_no_jwt_with_an_expiry_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match=r"JWT|claims|exp"):
        OAuthBearerToken.from_jwt(value)


async def test_the_provider_is_called_once_then_again_when_the_token_has_lived_80_percent() -> None:
    clock = Clock()
    calls: list[float] = []

    def provider() -> OAuthBearerToken:
        calls.append(clock.now_s)
        start = int(clock.now_s * 1000)
        return OAuthBearerToken(f"t{len(calls)}", start + HOUR_MS, "alice", issued_at_ms=start)

    login = OAuthBearerLogin(provider, clock)
    assert (await login.token()).value == "t1"
    clock.now_s += REFRESH_WINDOW_FACTOR * 3600 - 1
    assert (await login.token()).value == "t1"
    clock.now_s += 1
    assert (await login.token()).value == "t2"
    assert len(calls) == 2 and login.refreshes == 2 and login.principal == "alice"


async def test_a_token_with_less_left_than_a_login_needs_is_replaced_first() -> None:
    """KIP-368: the session Kafka grants ends with the token, and it refuses a re-authentication begun within 1 s of
    the last; a short-lived token near its end (before its 80% point) is replaced rather than sent."""
    clock = Clock()
    calls: list[float] = []

    def provider() -> OAuthBearerToken:
        calls.append(clock.now_s)
        start = int(clock.now_s * 1000)
        return OAuthBearerToken(f"t{len(calls)}", start + 3_000, "erin", issued_at_ms=start)

    login = OAuthBearerLogin(provider, clock)
    assert (await login.token(min_remaining_ms=2_000)).value == "t1"
    clock.now_s += 0.9  # 2.1 s left: still enough
    assert (await login.token(min_remaining_ms=2_000)).value == "t1"
    assert (await login.token()).value == "t1"
    clock.now_s += 0.2  # 1.9 s left, before the 80% point (2.4 s): replaced when a login needs 2 s
    assert (await login.token()).value == "t1"
    assert (await login.token(min_remaining_ms=2_000)).value == "t2"
    assert len(calls) == 2


async def test_connections_asking_at_once_share_one_call_of_an_async_provider() -> None:
    clock = Clock()
    calls = 0
    release = anyio.Event()

    async def provider() -> str:
        nonlocal calls
        calls += 1
        await release.wait()
        return unsecured_jwt(now=clock.now_s)

    login = OAuthBearerLogin(provider, clock)
    got: list[OAuthBearerToken] = []

    async def ask() -> None:
        got.append(await login.token())

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert calls == 1 and len(got) == 3 and len({t.value for t in got}) == 1


async def test_a_plain_provider_runs_off_the_event_loop_s_thread() -> None:
    threads: list[threading.Thread] = []

    def provider() -> str:
        threads.append(threading.current_thread())
        return unsecured_jwt()

    await OAuthBearerLogin(provider).token()
    assert threads and threads[0] is not threading.current_thread()


async def test_a_provider_that_raises_is_an_authentication_error_chaining_it() -> None:
    def provider() -> str:
        raise RuntimeError("the identity provider is down")

    with pytest.raises(AuthenticationError, match="token provider raised RuntimeError") as info:
        await OAuthBearerLogin(provider).token()
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("result", "match"),
    [
        (OAuthBearerToken("t", 1_000, "alice"), "expired"),
        (OAuthBearerToken("has space", 10**15), "characters"),
        (OAuthBearerToken("t", 10**15, extensions={"auth": "x"}), "extension 'auth'"),
        (OAuthBearerToken("t", 10**15, extensions={"k1": "x"}), "extension 'k1'"),
        (42, "returned int"),
        ("no-jwt", "raised ValueError"),
    ],
)
async def test_what_a_provider_returns_is_checked_before_it_is_sent(result: Any, match: str) -> None:
    with pytest.raises(AuthenticationError, match=match):
        await OAuthBearerLogin(lambda: result).token()


def provider() -> str:
    return unsecured_jwt()


def test_the_config_asks_for_a_provider_with_oauthbearer_and_nothing_else() -> None:
    config = ConsumerConfig.from_kwargs(
        "h:1", security_protocol="SASL_SSL", sasl_mechanism="oauthbearer", sasl_oauthbearer_token_provider=provider
    )
    security = ConnectionSecurity.from_config(config)
    assert isinstance(security.sasl, OAuthBearerLogin)
    assert security.description == "sasl OAUTHBEARER over tls"
    with pytest.raises(ConfigError, match=r"sasl_oauthbearer_token_provider.*required"):
        ConsumerConfig.from_kwargs("h:1", security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER")
    with pytest.raises(ConfigError, match=r"sasl_username.*does not apply to OAUTHBEARER"):
        ConsumerConfig.from_kwargs(
            "h:1",
            security_protocol="SASL_SSL",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauthbearer_token_provider=provider,
            sasl_username="u",
        )
    with pytest.raises(ConfigError, match="applies only to sasl_mechanism OAUTHBEARER, not PLAIN"):
        ConsumerConfig.from_kwargs(
            "h:1",
            security_protocol="SASL_SSL",
            sasl_username="u",
            sasl_password="p",
            sasl_oauthbearer_token_provider=provider,
        )
    with pytest.raises(ConfigError, match=r"sasl_oauthbearer_token_provider.*security_protocol is PLAINTEXT"):
        ConsumerConfig.from_kwargs("h:1", sasl_oauthbearer_token_provider=provider)
    with pytest.raises(ConfigError, match="sasl_oauthbearer_token_provider"):
        ConsumerConfig.from_kwargs(
            "h:1", security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER", sasl_oauthbearer_token_provider="x"
        )
