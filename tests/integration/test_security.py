"""TLS and SASL where Apache Kafka cannot be made to misbehave: a front that stands in for the broker's security
layer, and Tansu's own SASL.

Everything a correct broker does (TLS with the CA and the host name checked, SASL_SSL and SASL_PLAINTEXT with
SCRAM-SHA-256/512 and PLAIN, wrong passwords, untrusted CAs, host name mismatches, a mechanism the listener does not
offer, the command line's security properties) is tested against Kafka in ``test_security_kafka.py``. What stays:

* ``tests.support.secure_front.SecureFront`` in front of Tansu, for servers Kafka will not be: a SCRAM server that
  does not know the password (the client must refuse its signature, once), and handshakes that stall (TLS and SASL:
  a connection timeout, retried, never mistaken for an authentication failure, and the client closes the socket of
  a TLS handshake its timeout cuts short: that case once found a leak);
* Tansu's own ``--authentication`` (Tansu is a session broker too): it answers an unknown SCRAM user with
  ``e=unknown-user`` and hangs up on PLAIN, neither of which Kafka does.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from asyncconsumer import (
    AsyncConsumer,
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    TopicPartition,
)
from asyncconsumer.tools.embedded_broker import EmbeddedBroker
from tests.conftest import SecuredBroker, _run_broker, start_secured_broker
from tests.support.consume import consume_until

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

USERS = {"alice": "correct horse battery staple"}
WRONG = "not-the-password-42"
QUICK_RETRIES: dict[str, Any] = {"reconnect_backoff_ms": 20, "reconnect_backoff_max_ms": 50}


@pytest.fixture
def secured(request: pytest.FixtureRequest) -> Iterator[SecuredBroker]:
    """A broker behind a SecureFront built from the test's ``front`` marker kwargs."""
    marker = request.node.get_closest_marker("front")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    started = yield from _run_broker(functools.partial(start_secured_broker, **kwargs))
    assert not started.front.errors, started.front.errors


async def expect_quiet(consumer: AsyncConsumer, seconds: float) -> None:
    """Polls for ``seconds``: nothing may arrive and nothing may be raised."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        records = await consumer.poll(timeout_ms=100)
        assert records.count() == 0


@pytest.mark.front(users={}, impostor=True)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_a_scram_server_that_does_not_know_the_password_is_refused_once(
    secured: SecuredBroker, mechanism: str
) -> None:
    """The server says yes to any proof: only its signature (RFC 5802's server-final message) gives it away."""
    topic = secured.create_topic(1)
    async with AsyncConsumer(
        secured.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username="alice",
        sasl_password=USERS["alice"],
        group_id="g-impostor",
        **QUICK_RETRIES,
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError, match=f"{mechanism}: the server's signature is wrong"):
            await consume_until(consumer, 1, timeout_s=10)
        await expect_quiet(consumer, seconds=1.0)
        assert secured.front.counts["connections"] == 1, secured.front.counts  # no second try at a fake server
        started = time.monotonic()
        with pytest.raises(AuthenticationError):
            await consumer.committed({TopicPartition(topic, 0)}, timeout_ms=5_000)
        assert time.monotonic() - started < 2
    assert secured.front.counts["auth_ok"] == 1  # the front believed it had logged alice in: the client did not


SASL_ALICE: dict[str, Any] = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "SCRAM-SHA-256",
    "sasl_username": "alice",
    "sasl_password": USERS["alice"],
}


@pytest.mark.parametrize(
    "security",
    [
        pytest.param(
            {"security_protocol": "SSL"},
            marks=pytest.mark.front(stall="connect"),
            id="tls",
        ),
        pytest.param(SASL_ALICE, marks=pytest.mark.front(users=USERS, stall="sasl"), id="sasl"),
    ],
)
async def test_a_stalled_handshake_times_out_and_is_retried(secured: SecuredBroker, security: dict[str, Any]) -> None:
    """A server that takes the connection and never answers is slow, not a refusal: each attempt times out, the
    next one follows, and the caller's deadline names the timeout."""
    async with AsyncConsumer(
        secured.bootstrap_servers, socket_connection_setup_timeout_ms=300, **QUICK_RETRIES, **security
    ) as consumer:
        with pytest.raises(KafkaTimeoutError) as info:
            await consumer.topics(timeout_ms=2_000)
        assert not isinstance(info.value, AuthenticationError)
        assert f"cannot connect to bootstrap server {secured.bootstrap_servers}: timed out" in str(info.value)
    assert secured.front.counts["stalled"] >= 2, secured.front.counts  # retried: a stall is not fatal
    assert secured.front.counts["handshakes"] == 0


@pytest.fixture
def tansu_with_authentication() -> Iterator[EmbeddedBroker]:
    """Tansu's own SASL (``--authentication``): it offers SCRAM-SHA-256/512 but cannot hold a user (module doc)."""
    yield from _run_broker(lambda: EmbeddedBroker.start(extra_args=["--authentication"]))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_tansu_refuses_an_unknown_scram_user_with_one_typed_error(
    tansu_with_authentication: EmbeddedBroker, mechanism: str
) -> None:
    """The real broker's SCRAM server: it answers the client-final message with ``e=unknown-user``."""
    async with AsyncConsumer(
        tansu_with_authentication.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username="nobody",
        sasl_password=WRONG,
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=50,
    ) as consumer:
        await consumer.assign([TopicPartition("any-topic", 0)])
        with pytest.raises(AuthenticationError, match=f"{mechanism} authentication failed: unknown-user"):
            await consume_until(consumer, 1, timeout_s=10)
        await expect_quiet(consumer, seconds=0.5)
        with pytest.raises(AuthenticationError):
            await consumer.topics(timeout_ms=5_000)


async def test_tansu_hangs_up_on_plain_and_the_error_says_why(tansu_with_authentication: EmbeddedBroker) -> None:
    async with AsyncConsumer(
        tansu_with_authentication.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="nobody",
        sasl_password=WRONG,
    ) as consumer:
        with pytest.raises((KafkaTimeoutError, KafkaConnectionError), match="does it offer PLAIN"):
            await consumer.topics(timeout_ms=1_500)
