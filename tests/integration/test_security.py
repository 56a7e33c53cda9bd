"""TLS and SASL end to end: a real broker behind ``tests.support.secure_front.SecureFront`` (why a front: its
docstring).

Records are produced through the same front by aiokafka with its own TLS and SCRAM code, so the front's
server side is checked by an independent client before ours is trusted against it.
"""

from __future__ import annotations

import functools
import json
import logging
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiokafka import AIOKafkaProducer

from asyncconsumer import (
    AsyncConsumer,
    AuthenticationError,
    ConsumerConfig,
    KafkaConnectionError,
    KafkaTimeoutError,
    TopicPartition,
)
from asyncconsumer.errors import UnsupportedSaslMechanismError
from asyncconsumer.tools.embedded_broker import EmbeddedBroker
from tests.conftest import SecuredBroker, _run_broker, start_secured_broker
from tests.support.consume import by_partition, consume_until

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

USERS = {"alice": "correct horse battery staple", "bob": "b0b=,pw"}
WRONG = "not-the-password-42"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tls") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


def server_context(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


def client_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


@pytest.fixture
def secured(request: pytest.FixtureRequest) -> Iterator[SecuredBroker]:
    """A broker behind a SecureFront built from the test's ``front`` marker kwargs."""
    marker = request.node.get_closest_marker("front")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    if callable(kwargs.get("server_ssl")):
        kwargs["server_ssl"] = kwargs["server_ssl"](request.getfixturevalue("ca"))
    started = yield from _run_broker(functools.partial(start_secured_broker, **kwargs))
    assert not started.front.errors, started.front.errors


async def produce_secure(bootstrap: str, topic: str, count: int, partitions: int, **security: Any) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False, **security)
    await producer.start()
    try:
        futures = [await producer.send(topic, value=f"v{i}".encode(), partition=i % partitions) for i in range(count)]
        for future in futures:
            await future
    finally:
        await producer.stop()


def expect_every_record(got: list[Any], count: int, partitions: int) -> None:
    offsets = by_partition(got)
    per_partition = count // partitions
    assert offsets == {p: list(range(per_partition)) for p in range(partitions)}, offsets
    assert sorted(r.value for r in got) == sorted(f"v{i}".encode() for i in range(count))


def _tls_for(*names: str) -> Callable[[trustme.CA], ssl.SSLContext]:
    return lambda ca: server_context(ca, *names)


@pytest.mark.front(server_ssl=_tls_for("localhost", "127.0.0.1"))
async def test_tls_with_a_ca_file_consumes_every_record(secured: SecuredBroker, ca: trustme.CA, ca_file: Path) -> None:
    topic = secured.create_topic(2)
    await produce_secure(
        secured.bootstrap_servers, topic, 40, 2, security_protocol="SSL", ssl_context=client_context(ca)
    )
    async with AsyncConsumer(
        secured.bootstrap_servers, security_protocol="SSL", ssl_cafile=str(ca_file), auto_offset_reset="earliest"
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got = await consume_until(consumer, 40)
    expect_every_record(got, 40, 2)
    assert secured.front.counts["connections"] >= 2  # the producer's and ours: all of it over TLS


@pytest.mark.front(server_ssl=_tls_for("localhost", "127.0.0.1"))
async def test_tls_with_an_ssl_context_consumes(secured: SecuredBroker, ca: trustme.CA) -> None:
    topic = secured.create_topic(1)
    await produce_secure(
        secured.bootstrap_servers, topic, 10, 1, security_protocol="SSL", ssl_context=client_context(ca)
    )
    async with AsyncConsumer(
        secured.bootstrap_servers, security_protocol="SSL", ssl_context=client_context(ca), auto_offset_reset="earliest"
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        got = await consume_until(consumer, 10)
    expect_every_record(got, 10, 1)


@pytest.mark.front(server_ssl=_tls_for("localhost", "127.0.0.1"))
async def test_tls_against_an_untrusted_ca_fails_once_with_authentication_error(secured: SecuredBroker) -> None:
    topic = secured.create_topic(1)
    # the default context trusts the system's CAs only, not the test CA
    async with AsyncConsumer(
        secured.bootstrap_servers, security_protocol="SSL", reconnect_backoff_ms=20, reconnect_backoff_max_ms=50
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError) as info:
            await consume_until(consumer, 1, timeout_s=10)
        assert "certificate verify failed" in str(info.value) or "certificate" in str(info.value).lower()
        assert secured.bootstrap_servers.split(":")[1] in str(info.value)
        await expect_quiet(consumer, seconds=1.0)  # 20 reconnect backoffs' worth: no retry storm, no 2nd raise
        assert secured.front.counts["connections"] == 1, secured.front.counts
    assert secured.front.counts["tls_ok"] == 0


@pytest.mark.front(server_ssl=_tls_for("broker.example.test"))
async def test_tls_checks_the_host_name_unless_told_not_to(secured: SecuredBroker, ca_file: Path) -> None:
    topic = secured.create_topic(1)
    common = {"security_protocol": "SSL", "ssl_cafile": str(ca_file), "auto_offset_reset": "earliest"}
    async with AsyncConsumer(secured.bootstrap_servers, **common) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError, match=r"(?i)hostname|match"):
            await consume_until(consumer, 1, timeout_s=10)
    ctx = ssl.create_default_context(cafile=str(ca_file))
    ctx.check_hostname = False
    await produce_secure(secured.bootstrap_servers, topic, 5, 1, security_protocol="SSL", ssl_context=ctx)
    async with AsyncConsumer(secured.bootstrap_servers, ssl_check_hostname=False, **common) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        got = await consume_until(consumer, 5)
    expect_every_record(got, 5, 1)


async def expect_quiet(consumer: AsyncConsumer, seconds: float) -> None:
    """Polls for ``seconds``: nothing may arrive and nothing may be raised."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        records = await consumer.poll(timeout_ms=100)
        assert records.count() == 0


@pytest.mark.front(users=USERS)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_sasl_scram_consumes_every_record(secured: SecuredBroker, mechanism: str) -> None:
    topic = secured.create_topic(2)
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism}
    await produce_secure(
        secured.bootstrap_servers, topic, 30, 2, sasl_plain_username="bob", sasl_plain_password=USERS["bob"], **sasl
    )
    producer_logins = secured.front.counts["auth_ok"]
    assert producer_logins >= 1  # aiokafka's SCRAM client accepted the front's server side
    async with AsyncConsumer(
        secured.bootstrap_servers,
        sasl_username="bob",  # '=' and ',' in the password, and a user name that needs no escaping
        sasl_password=USERS["bob"],
        auto_offset_reset="earliest",
        **sasl,
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got = await consume_until(consumer, 30)
    expect_every_record(got, 30, 2)
    assert secured.front.counts["auth_ok"] > producer_logins
    assert secured.front.counts["auth_failed"] == 0
    assert secured.front.counts["rejected_before_auth"] == 0


@pytest.mark.front(users=USERS, server_ssl=_tls_for("localhost", "127.0.0.1"))
async def test_sasl_ssl_scram_sha_512(secured: SecuredBroker, ca: trustme.CA, ca_file: Path) -> None:
    topic = secured.create_topic(1)
    await produce_secure(
        secured.bootstrap_servers,
        topic,
        12,
        1,
        security_protocol="SASL_SSL",
        ssl_context=client_context(ca),
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password=USERS["alice"],
    )
    async with AsyncConsumer(
        secured.bootstrap_servers,
        security_protocol="sasl_ssl",
        ssl_cafile=str(ca_file),
        sasl_mechanism="scram-sha-512",
        sasl_username="alice",
        sasl_password=USERS["alice"],
        auto_offset_reset="earliest",
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        got = await consume_until(consumer, 12)
    expect_every_record(got, 12, 1)


@pytest.mark.front(users=USERS)
async def test_sasl_plain_sends_the_rfc_4616_token(secured: SecuredBroker) -> None:
    topic = secured.create_topic(1)
    await produce_secure(
        secured.bootstrap_servers,
        topic,
        3,
        1,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=USERS["alice"],
    )
    first_token = len(secured.front.tokens)
    async with AsyncConsumer(
        secured.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
        sasl_password=USERS["alice"],
        auto_offset_reset="earliest",
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        got = await consume_until(consumer, 3)
    expect_every_record(got, 3, 1)
    ours = secured.front.tokens[first_token:]
    assert ours and set(ours) == {b"\0alice\0" + USERS["alice"].encode()}  # one token per connection, exactly


@pytest.mark.front(users=USERS)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
async def test_wrong_password_raises_once_and_never_leaks(
    secured: SecuredBroker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncconsumer")
    topic = secured.create_topic(1)
    settings: dict[str, Any] = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_username": "alice",
        "sasl_password": WRONG,
        "reconnect_backoff_ms": 20,
        "reconnect_backoff_max_ms": 50,
        "group_id": "g-wrong-password",
    }
    config = ConsumerConfig.from_kwargs(secured.bootstrap_servers, **settings)
    assert WRONG not in repr(config) and "'***'" in repr(config)
    async with AsyncConsumer(secured.bootstrap_servers, **settings) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError) as info:
            await consume_until(consumer, 1, timeout_s=10)
        message = str(info.value)
        assert mechanism in message and "alice" in message and "invalid credentials" in message
        assert WRONG not in message
        await expect_quiet(consumer, seconds=1.0)
        assert secured.front.counts["auth_failed"] == 1, secured.front.counts  # not one per backoff
        started = time.monotonic()
        with pytest.raises(AuthenticationError):  # calls that need the network fail at once, with the cause
            await consumer.committed({TopicPartition(topic, 0)}, timeout_ms=5_000)
        assert time.monotonic() - started < 2
    logged = caplog.text
    assert "connection.auth_failed" in logged
    assert WRONG not in logged


@pytest.mark.front(users=USERS, mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"))
async def test_a_mechanism_the_broker_does_not_offer_is_named(secured: SecuredBroker) -> None:
    topic = secured.create_topic(1)
    async with AsyncConsumer(
        secured.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
        sasl_password=USERS["alice"],
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(UnsupportedSaslMechanismError) as info:
            await consume_until(consumer, 1, timeout_s=10)
    assert isinstance(info.value, AuthenticationError)
    assert "[SCRAM-SHA-256, SCRAM-SHA-512]" in str(info.value) and "PLAIN" in str(info.value)
    assert secured.front.counts["handshakes"] == 1


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


@pytest.mark.front(users=USERS, server_ssl=_tls_for("localhost", "127.0.0.1"))
def test_the_cli_takes_security_properties(secured: SecuredBroker, ca: trustme.CA, ca_file: Path) -> None:
    import anyio

    from tests.support.cli import run_cli

    topic = secured.create_topic(1)
    anyio.run(
        functools.partial(
            produce_secure,
            secured.bootstrap_servers,
            topic,
            4,
            1,
            security_protocol="SASL_SSL",
            ssl_context=client_context(ca),
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="alice",
            sasl_plain_password=USERS["alice"],
        )
    )
    security = [
        "--property=security.protocol=SASL_SSL",
        f"--property=ssl.cafile={ca_file}",
        "--property=sasl.mechanism=SCRAM-SHA-256",
        "--property=sasl.username=alice",
    ]
    common = ["--bootstrap-server", secured.bootstrap_servers, "--timeout-ms", "5000", *security]
    ok = run_cli("offsets", topic, *common, f"--property=sasl.password={USERS['alice']}", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    # (Tansu's LATEST is the last batch's base offset + 1, so "end" is not checked here)
    assert [(row["topic"], row["partition"], row["beginning"]) for row in json.loads(ok.stdout)] == [(topic, 0, 0)]
    printed = run_cli(
        "consume",
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        "4",
        *common,
        f"--property=sasl.password={USERS['alice']}",
    )
    assert printed.returncode == 0, printed.stderr
    assert [line.split()[-1] for line in printed.stdout.splitlines()] == ["v0", "v1", "v2", "v3"]
    refused = run_cli("--verbose", "offsets", topic, *common, f"--property=sasl.password={WRONG}")
    assert refused.returncode != 0
    error_lines = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "SaslAuthenticationFailed" in error_lines[0], refused.stderr
    assert WRONG not in refused.stderr + refused.stdout
