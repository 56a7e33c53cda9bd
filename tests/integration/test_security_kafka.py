"""TLS and SASL against Apache Kafka's own security layer: one module-scoped broker with an SSL listener, an SSL
listener whose certificate names another host, a SASL_SSL listener offering SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN,
and a SASL_PLAINTEXT listener offering SCRAM only. Certificates are made here with trustme; SCRAM users come from
the storage format (``--add-scram``) and from AlterUserScramCredentials sent to the running broker.

Records are produced over the PLAINTEXT listener: what is tested is the consumer's side of TLS and SASL. "Raised
once" is counted on the broker's side (``Seen``: the connections its acceptor logs, the authentications its Selector
logs as failed) and on the consumer's (its ``connection.auth_failed`` event). What Kafka cannot be made to do stays
on the front in ``test_security.py``.
"""

from __future__ import annotations

import json
import logging
import re
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from asyncconsumer import (
    AsyncConsumer,
    AsyncShareConsumer,
    AuthenticationError,
    Consumer,
    ConsumerConfig,
    ConsumerRecord,
    OAuthBearerToken,
    ShareRecord,
    TopicPartition,
)
from asyncconsumer.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError
from asyncconsumer.network import connection as connection_module
from asyncconsumer.network import delegate as delegate_module
from tests.conftest import _run_broker, unique_topic_name
from tests.support.consume import consume_blocking, consume_until
from tests.support.kafka_broker import KafkaCluster, Listener
from tests.support.logs import captured_events, events_named
from tests.support.oauth import unsecured_jwt
from tests.support.oidc_server import OidcServer
from tests.support.produce import ProducedRecord, ProduceHelper
from tests.support.waiting import wait_for, wait_for_async

pytestmark = [pytest.mark.anyio, pytest.mark.kafka_only("Tansu cannot serve TLS or hold a SASL user")]

ALICE = "alice-secret"
"""alice's password for every mechanism: SCRAM from the storage format, PLAIN from the listener's JAAS config."""
BOB = ("bob", "b0b=,pw ü")
"""A SCRAM user created on the running broker with AlterUserScramCredentials: '=' ',' and non-ASCII in the password
(which ``--add-scram`` could not carry: it splits on ',')."""
WRONG = "not-the-password-42"
APP_SECRET = "app-s3cret:/+="
"""The OIDC client ``app``'s secret, with characters its form encoding must carry."""
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
QUICK_RETRIES: dict[str, Any] = {"reconnect_backoff_ms": 20, "reconnect_backoff_max_ms": 50}
"""Reconnect backoffs of tens of milliseconds: a consumer that retried after a fatal failure would be seen retrying
within the quiet second that follows it."""


@attrs.frozen
class Pki:
    """The test's certificates, as files: the CA the broker's certificates come from, and one nobody uses."""

    ca_file: Path
    other_ca_file: Path
    server_pem: Path
    """Key (PKCS#8, which Kafka's PEM key store needs) and chain for 127.0.0.1 and localhost."""
    wrong_name_pem: Path
    """Key and chain from the same CA for another host name only."""


def _key_store(ca: trustme.CA, path: Path, *names: str) -> Path:
    cert = ca.issue_cert(*names)
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pkcs8 + b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca, other = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    other.cert_pem.write_to_path(str(directory / "other-ca.pem"))
    return Pki(
        ca_file=directory / "ca.pem",
        other_ca_file=directory / "other-ca.pem",
        server_pem=_key_store(ca, directory / "server.pem", "127.0.0.1", "localhost"),
        wrong_name_pem=_key_store(ca, directory / "wrong-name.pem", "broker.example.test"),
    )


def _tls(listener: str, key_store: Path, ca_file: Path) -> dict[str, str]:
    prefix = f"listener.name.{listener.lower()}."
    return {
        f"{prefix}ssl.keystore.type": "PEM",
        f"{prefix}ssl.keystore.location": str(key_store),
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.location": str(ca_file),
    }


def _sasl(listener: str, mechanisms: tuple[str, ...]) -> dict[str, str]:
    prefix = f"listener.name.{listener.lower()}."
    settings = {f"{prefix}sasl.enabled.mechanisms": ",".join(mechanisms)}
    for mechanism in mechanisms:
        if mechanism == "PLAIN":
            module = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{ALICE}";'
        else:
            module = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        settings[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = module
    return settings


def _oauthbearer(listener: str) -> dict[str, str]:
    """OAUTHBEARER with Kafka's default validator, which takes unsecured JWTs (``alg: none``) naming a subject."""
    prefix = f"listener.name.{listener.lower()}."
    return {
        f"{prefix}sasl.enabled.mechanisms": "OAUTHBEARER",
        f"{prefix}oauthbearer.sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        ),
    }


def _oidc(listener: str) -> dict[str, str]:
    """OAUTHBEARER checked by Kafka's ``OAuthBearerValidatorCallbackHandler`` against the test's JWKS endpoint
    (``sasl.oauthbearer.jwks.endpoint.url``, a broker setting, and the JVM property that allows the URL)."""
    prefix = f"listener.name.{listener.lower()}.oauthbearer."
    return {
        **_oauthbearer(listener),
        f"{prefix}sasl.server.callback.handler.class": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
        ),
    }


def listeners(pki: Pki) -> list[Listener]:
    return [
        Listener("OIDC", _oidc("OIDC"), protocol="SASL_PLAINTEXT"),
        Listener("SSL", _tls("SSL", pki.server_pem, pki.ca_file)),
        Listener("WRONG_NAME", _tls("WRONG_NAME", pki.wrong_name_pem, pki.ca_file), protocol="SSL"),
        Listener("SASL_SSL", {**_tls("SASL_SSL", pki.server_pem, pki.ca_file), **_sasl("SASL_SSL", MECHANISMS)}),
        Listener("SASL_PLAINTEXT", _sasl("SASL_PLAINTEXT", SCRAM)),
        Listener("OAUTH", _oauthbearer("OAUTH"), protocol="SASL_PLAINTEXT"),
        Listener(
            "REAUTH",
            {**_oauthbearer("REAUTH"), "listener.name.reauth.oauthbearer.connections.max.reauth.ms": "2500"},
            protocol="SASL_PLAINTEXT",
        ),
    ]


def _create_scram_user(kafka: KafkaCluster, user: str, password: str) -> None:
    """AlterUserScramCredentials (what ``kafka-configs --alter --add-config SCRAM-SHA-...`` sends) for both SCRAM
    mechanisms, then waits until librdkafka logs in with each: the credentials reach the broker's login cache
    through the metadata log, a moment after the request is answered."""
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        # one request per mechanism: Kafka refuses a user twice in one request (DUPLICATE_RESOURCE)
        upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 4096), password.encode())
        kafka.admin().alter_user_scram_credentials([upsert])[user].result(timeout=30)
    for name in SCRAM:
        probe = AdminClient(
            {
                "bootstrap.servers": kafka.listener_address("SASL_PLAINTEXT"),
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": name,
                "sasl.username": user,
                "sasl.password": password,
                "log_level": 0,
            }
        )
        probe.list_topics(timeout=30)  # librdkafka retries a refused login until the deadline


@pytest.fixture(scope="module")
def oidc() -> Iterator[OidcServer]:
    """The identity provider of the OIDC listener: ``app`` gets good tokens, ``mallory`` badly signed ones."""
    server = OidcServer({"app": APP_SECRET, "mallory": "m-secret"}, forged=frozenset({"mallory"})).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def kafka(pki: Pki, oidc: OidcServer) -> Iterator[KafkaCluster]:
    """One Kafka node with every listener of this module (starting one costs seconds; topics are per test)."""

    def start() -> KafkaCluster:
        cluster = KafkaCluster.start(
            listeners=listeners(pki),
            settings=oidc.broker_settings(),
            system_properties=oidc.broker_system_properties(),
            scram_users=[f"{mechanism}=[name=alice,password={ALICE}]" for mechanism in SCRAM],
            log_levels={"kafka.network.DataPlaneAcceptor": "DEBUG"},  # a line per accepted connection: see Seen
        )
        try:
            _create_scram_user(cluster, *BOB)
        except BaseException:
            cluster.stop(keep_logs=True)
            raise
        return cluster

    yield from _run_broker(start)


def new_topic(kafka: KafkaCluster, partitions: int, hint: str) -> str:
    name = unique_topic_name(hint)
    kafka.create_topic(name, partitions)
    return name


@attrs.frozen
class Seen:
    """What the broker logged on one listener so far: connections accepted (its acceptor's DEBUG line, one per TCP
    connection: the consumer's connection attempts) and authentications it failed (its Selector's INFO line)."""

    accepted: int
    refused: int


def seen(kafka: KafkaCluster, listener: str) -> Seen:
    """Kafka's acceptor logs a connection after handing it to a processor, reading the socket then: when the
    processor has already refused and closed it (a token refused at once, on a busy machine), the line names no
    address ("from null on null"), or reading the closed socket fails and the acceptor logs an error instead. So
    lines are told apart by the thread that logs them, the listener's acceptor (named with its port: the broker's
    log pattern has ``%t``), never by the addresses they name: a short-lived connection to another listener (a
    producer's) can log "null" too."""
    acceptor = f"-acceptor-{listener}-"
    port = f"-{kafka.nodes[0].listener_ports[listener]}] "
    lines = kafka.nodes[0].log_path.read_text(errors="replace").splitlines()
    address = kafka.listener_address(listener)

    def accepted(line: str) -> bool:
        ours = acceptor in line and port in line
        return ours and ("Accepted connection from" in line or "Error while accepting connection" in line)

    return Seen(
        accepted=sum(1 for line in lines if accepted(line)),
        refused=sum(1 for line in lines if "Failed authentication with" in line and f"(channelId={address}-" in line),
    )


def same_records(got: list[ConsumerRecord], produced: dict[int, list[ProducedRecord]]) -> bool:
    """Every produced record exactly once, at its offset, with its value."""
    want = sorted((p, r.offset, r.value) for p, records in produced.items() for r in records)
    return sorted((r.partition, r.offset, r.value) for r in got) == want


def tls_settings(pki: Pki, **extra: Any) -> dict[str, Any]:
    return {"security_protocol": "SSL", "ssl_cafile": str(pki.ca_file), "auto_offset_reset": "earliest", **extra}


def sasl_settings(pki: Pki, listener: str, mechanism: str, user: str, password: str, **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "security_protocol": listener,
        "sasl_mechanism": mechanism,
        "sasl_username": user,
        "sasl_password": password,
        "auto_offset_reset": "earliest",
        **extra,
    }
    if listener == "SASL_SSL":
        settings["ssl_cafile"] = str(pki.ca_file)
    return settings


async def consume_and_commit(kafka: KafkaCluster, bootstrap: str, settings: dict[str, Any], hint: str) -> None:
    """Consumes 2 partitions' records and commits them through the group coordinator: a second connection (to the
    coordinator) set up with the same security, on the address the broker advertises for this listener."""
    topic = new_topic(kafka, 2, hint)
    produced = await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 30, 2)
    partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    async with AsyncConsumer(bootstrap, group_id=unique_topic_name(f"g-{hint}"), **settings) as consumer:
        await consumer.assign(partitions)
        got = await consume_until(consumer, 30)
        await consumer.commit()
        committed = await consumer.committed(partitions, timeout_ms=10_000)
    assert same_records(got, produced)
    assert {tp: c.offset for tp, c in committed.items() if c is not None} == {tp: 15 for tp in partitions}


async def test_tls_consumes_with_the_ca_and_the_host_name_checked(kafka: KafkaCluster, pki: Pki) -> None:
    settings = tls_settings(pki)
    config = ConsumerConfig.from_kwargs(kafka.listener_address("SSL"), **settings)
    assert config.ssl_check_hostname  # the default: the certificate must name 127.0.0.1, and does
    before = seen(kafka, "SSL")
    await consume_and_commit(kafka, kafka.listener_address("SSL"), settings, "tls")
    after = seen(kafka, "SSL")
    assert after.accepted >= before.accepted + 2 and after.refused == before.refused  # bootstrap and coordinator


def test_the_blocking_consumer_over_tls_with_an_ssl_context(kafka: KafkaCluster, pki: Pki) -> None:
    topic = new_topic(kafka, 1, "tls-blocking")
    produced = ProduceHelper(kafka.bootstrap_servers).values(topic, 12, 1)
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    with Consumer(
        kafka.listener_address("SSL"), security_protocol="SSL", ssl_context=context, auto_offset_reset="earliest"
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got = consume_blocking(consumer, 12)
    assert same_records(got, produced)


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_sasl_ssl_consumes_with_each_mechanism(kafka: KafkaCluster, pki: Pki, mechanism: str) -> None:
    """alice's SCRAM credentials come from the storage format, her PLAIN password from the listener's JAAS."""
    before = seen(kafka, "SASL_SSL")
    settings = sasl_settings(pki, "SASL_SSL", mechanism, "alice", ALICE)
    await consume_and_commit(kafka, kafka.listener_address("SASL_SSL"), settings, f"sasl-ssl-{mechanism}")
    after = seen(kafka, "SASL_SSL")
    assert after.accepted >= before.accepted + 2 and after.refused == before.refused


@pytest.mark.parametrize("mechanism", SCRAM)
async def test_a_scram_user_created_on_the_running_broker_logs_in(
    kafka: KafkaCluster, pki: Pki, mechanism: str
) -> None:
    """bob exists through AlterUserScramCredentials only (the module fixture); SASL_PLAINTEXT this time."""
    topic = new_topic(kafka, 1, f"bob-{mechanism}")
    produced = await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 8, 1)
    async with AsyncConsumer(
        kafka.listener_address("SASL_PLAINTEXT"), **sasl_settings(pki, "SASL_PLAINTEXT", mechanism, *BOB)
    ) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        got = await consume_until(consumer, 8)
    assert same_records(got, produced)


async def expect_quiet(consumer: AsyncConsumer, seconds: float) -> None:
    """Polls for ``seconds``: nothing may arrive and nothing may be raised."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        records = await consumer.poll(timeout_ms=100)
        assert records.count() == 0


async def expect_one_attempt(
    kafka: KafkaCluster, listener: str, before: Seen, consumer: AsyncConsumer, *, refused: int
) -> None:
    """The consumer made one connection on ``listener`` since ``before`` (``refused``: it failed SASL at the broker),
    and made no other during a quiet second of polls."""
    want = Seen(before.accepted + 1, before.refused + refused)  # QUICK_RETRIES: a retry would come within the second
    await wait_for_async(
        lambda: seen(kafka, listener) == want,
        timeout=10,
        message=lambda: f"the broker to log {want} on {listener}; it logged {seen(kafka, listener)}",
    )
    await expect_quiet(consumer, seconds=1.0)
    assert seen(kafka, listener) == want


@pytest.mark.parametrize(
    ("mechanism", "user"),
    [("SCRAM-SHA-256", "alice"), ("SCRAM-SHA-512", "alice"), ("PLAIN", "alice"), ("SCRAM-SHA-256", "nobody")],
)
async def test_a_wrong_password_is_one_authentication_error(
    kafka: KafkaCluster, pki: Pki, mechanism: str, user: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncconsumer")
    topic = new_topic(kafka, 1, "wrong-password")
    address = kafka.listener_address("SASL_SSL")
    settings = sasl_settings(pki, "SASL_SSL", mechanism, user, WRONG, group_id="g-wrong-password", **QUICK_RETRIES)
    assert WRONG not in repr(ConsumerConfig.from_kwargs(address, **settings))
    before = seen(kafka, "SASL_SSL")
    async with AsyncConsumer(address, **settings) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError) as info:
            await consume_until(consumer, 1, timeout_s=10)
        assert isinstance(info.value, SaslAuthenticationFailedError)  # Kafka's SASL_AUTHENTICATION_FAILED (58)
        message = str(info.value)
        assert mechanism in message and repr(user) in message and address in message, message
        assert re.search(r"(?i)invalid", message), message  # Kafka's own reason, passed on
        assert WRONG not in message
        await expect_one_attempt(kafka, "SASL_SSL", before, consumer, refused=1)
        started = time.monotonic()
        with pytest.raises(AuthenticationError):  # calls that need the network fail at once, with the cause
            await consumer.committed({TopicPartition(topic, 0)}, timeout_ms=5_000)
        assert time.monotonic() - started < 2
    assert seen(kafka, "SASL_SSL") == Seen(before.accepted + 1, before.refused + 1)
    assert caplog.text.count("connection.auth_failed") == 1
    assert WRONG not in caplog.text


def test_the_blocking_consumer_raises_a_wrong_password_once(kafka: KafkaCluster, pki: Pki) -> None:
    topic = new_topic(kafka, 1, "wrong-password-blocking")
    settings = sasl_settings(pki, "SASL_PLAINTEXT", "SCRAM-SHA-512", BOB[0], WRONG, **QUICK_RETRIES)
    before = seen(kafka, "SASL_PLAINTEXT")
    want = Seen(before.accepted + 1, before.refused + 1)
    with Consumer(kafka.listener_address("SASL_PLAINTEXT"), **settings) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(SaslAuthenticationFailedError, match="SCRAM-SHA-512 as 'bob'"):
            consume_blocking(consumer, 1, timeout_s=10)
        wait_for(lambda: seen(kafka, "SASL_PLAINTEXT") == want, timeout=10, message=f"the broker to log {want}")
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # polls neither raise again nor reconnect
            assert consumer.poll(timeout_ms=100).count() == 0
        assert seen(kafka, "SASL_PLAINTEXT") == want
        with pytest.raises(AuthenticationError):
            consumer.topics(timeout_ms=5_000)
    assert seen(kafka, "SASL_PLAINTEXT") == want


async def test_an_untrusted_ca_is_one_authentication_error_naming_tls(kafka: KafkaCluster, pki: Pki) -> None:
    topic = new_topic(kafka, 1, "untrusted")
    address = kafka.listener_address("SSL")
    before = seen(kafka, "SSL")
    async with AsyncConsumer(address, **tls_settings(pki, ssl_cafile=str(pki.other_ca_file), **QUICK_RETRIES)) as c:
        await c.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError) as info:
            await consume_until(c, 1, timeout_s=10)
        message = str(info.value)
        assert "TLS handshake" in message and address in message, message
        assert "unable to get local issuer certificate" in message, message  # OpenSSL's verify message
        # (the TLS failure is the client's, so Kafka logs no failed authentication: the one attempt is what counts)
        await expect_one_attempt(kafka, "SSL", before, c, refused=0)


async def test_a_host_name_mismatch_fails_unless_the_check_is_off(kafka: KafkaCluster, pki: Pki) -> None:
    """The WRONG_NAME listener's certificate is from the trusted CA, for broker.example.test only."""
    topic = new_topic(kafka, 1, "wrong-name")
    produced = await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 5, 1)
    address = kafka.listener_address("WRONG_NAME")
    partition = [TopicPartition(topic, 0)]
    async with AsyncConsumer(address, **tls_settings(pki)) as consumer:
        await consumer.assign(partition)
        with pytest.raises(AuthenticationError, match=r"TLS handshake .* failed: IP address mismatch"):
            await consume_until(consumer, 1, timeout_s=10)
    async with AsyncConsumer(address, **tls_settings(pki, ssl_check_hostname=False)) as consumer:
        await consumer.assign(partition)
        got = await consume_until(consumer, 5)
    assert same_records(got, produced)
    # Without the host name check, the chain is still checked.
    async with AsyncConsumer(
        address, **tls_settings(pki, ssl_check_hostname=False, ssl_cafile=str(pki.other_ca_file))
    ) as c:
        await c.assign(partition)
        with pytest.raises(AuthenticationError, match="unable to get local issuer certificate"):
            await consume_until(c, 1, timeout_s=10)


async def test_a_mechanism_the_listener_does_not_offer_is_named(kafka: KafkaCluster, pki: Pki) -> None:
    """The SASL_PLAINTEXT listener offers SCRAM only; Kafka answers PLAIN with UNSUPPORTED_SASL_MECHANISM."""
    topic = new_topic(kafka, 1, "no-plain")
    settings = sasl_settings(pki, "SASL_PLAINTEXT", "PLAIN", "alice", ALICE, **QUICK_RETRIES)
    before = seen(kafka, "SASL_PLAINTEXT")
    async with AsyncConsumer(kafka.listener_address("SASL_PLAINTEXT"), **settings) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(UnsupportedSaslMechanismError) as info:
            await consume_until(consumer, 1, timeout_s=10)
        assert isinstance(info.value, AuthenticationError)
        offered = re.search(r"offers SASL mechanisms \[(.*?)\]", str(info.value))
        assert offered is not None and set(offered.group(1).split(", ")) == set(SCRAM), info.value
        assert "sasl_mechanism is PLAIN" in str(info.value)
        await expect_one_attempt(kafka, "SASL_PLAINTEXT", before, consumer, refused=1)


def test_the_cli_takes_security_properties(kafka: KafkaCluster, pki: Pki) -> None:
    from tests.support.cli import run_cli

    topic = new_topic(kafka, 1, "cli")
    produced = ProduceHelper(kafka.bootstrap_servers).values(topic, 4, 1)[0]
    security = [
        "--property=security.protocol=SASL_SSL",
        f"--property=ssl.cafile={pki.ca_file}",
        "--property=sasl.mechanism=SCRAM-SHA-256",
        "--property=sasl.username=alice",
    ]
    common = ["--bootstrap-server", kafka.listener_address("SASL_SSL"), "--timeout-ms", "5000", *security]
    ok = run_cli("offsets", topic, *common, f"--property=sasl.password={ALICE}", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    rows = [(row["topic"], row["partition"], row["beginning"], row["end"]) for row in json.loads(ok.stdout)]
    assert rows == [(topic, 0, 0, 4)]
    printed = run_cli(
        "consume",
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        "4",
        *common,
        f"--property=sasl.password={ALICE}",
    )
    assert printed.returncode == 0, printed.stderr
    want = [f"{topic}-0@{r.offset}\tNone\t{r.value.decode()}" for r in produced if r.value is not None]
    assert printed.stdout.splitlines() == want, printed.stdout
    refused = run_cli("--verbose", "offsets", topic, *common, f"--property=sasl.password={WRONG}")
    assert refused.returncode != 0
    error_lines = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "SaslAuthenticationFailed" in error_lines[0], refused.stderr
    assert WRONG not in refused.stderr + refused.stdout


async def test_a_share_consumer_reads_over_sasl_ssl(kafka: KafkaCluster, pki: Pki) -> None:
    """A share group's member with SCRAM inside TLS: its coordinator's connection and its share sessions' are set
    up like a consumer's."""
    topic = new_topic(kafka, 2, "share-sasl")
    produced = await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 20, 2)
    group = unique_topic_name("g-share-sasl")
    kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})
    settings = sasl_settings(pki, "SASL_SSL", "SCRAM-SHA-512", "alice", ALICE)
    del settings["auto_offset_reset"]  # a group config for share groups
    before = seen(kafka, "SASL_SSL")
    async with AsyncShareConsumer(kafka.listener_address("SASL_SSL"), group_id=group, **settings) as consumer:
        await consumer.subscribe([topic])
        got: list[ShareRecord] = []

        async def all_in() -> bool:
            got.extend((await consumer.poll(200)).records())
            return len(got) >= 20

        await wait_for_async(all_in, 60, message=lambda: f"{len(got)} of 20 records")
        results = await consumer.commit_sync()
    want = sorted((p, r.offset, r.value) for p, records in produced.items() for r in records)
    assert sorted((r.partition, r.offset, r.value) for r in got) == want
    assert set(results.values()) == {None}
    after = seen(kafka, "SASL_SSL")
    assert after.accepted >= before.accepted + 2 and after.refused == before.refused


# --- SASL/OAUTHBEARER ------------------------------------------------------------------------------------------


LOST = ("connection.closed", "connection.reauthentication_failed")
"""The consumer's events for a connection it lost or could not log in again on."""


def oauth_settings(provider: Any, **extra: Any) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauthbearer_token_provider": provider,
        "auto_offset_reset": "earliest",
        **extra,
    }


async def test_oauthbearer_consumes_and_commits_with_a_plain_provider_s_jwt(kafka: KafkaCluster) -> None:
    calls: list[str] = []

    def provider() -> str:
        calls.append("token")
        return unsecured_jwt("alice", 3600)

    before = seen(kafka, "OAUTH")
    await consume_and_commit(kafka, kafka.listener_address("OAUTH"), oauth_settings(provider), "oauth-plain")
    after = seen(kafka, "OAUTH")
    # two connections at least (the partitions' leader and the group coordinator), one token for both
    assert after.accepted >= before.accepted + 2 and after.refused == before.refused
    assert calls == ["token"]


async def test_oauthbearer_with_an_async_provider_and_extensions(kafka: KafkaCluster) -> None:
    async def provider() -> OAuthBearerToken:
        await anyio.sleep(0)
        return OAuthBearerToken.from_jwt(unsecured_jwt("carol", 600), {"traceId": "abc123"})

    await consume_and_commit(kafka, kafka.listener_address("OAUTH"), oauth_settings(provider), "oauth-async")


@pytest.mark.parametrize(
    ("token", "match"),
    [
        (lambda: unsecured_jwt("dave", -60), "expired"),  # refused before it is sent
        (lambda: OAuthBearerToken("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", 2**42, "x"), "invalid_token"),
    ],
    ids=["expired", "signed-unverifiable"],
)
async def test_a_token_the_broker_cannot_take_is_one_authentication_error_naming_the_mechanism(
    kafka: KafkaCluster, token: Any, match: str
) -> None:
    topic = new_topic(kafka, 1, "oauth-refused")
    before = seen(kafka, "OAUTH")
    async with AsyncConsumer(kafka.listener_address("OAUTH"), **oauth_settings(token, **QUICK_RETRIES)) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError, match=match) as info:
            await consume_until(consumer, 1, timeout_s=10)
        assert "OAUTHBEARER" in str(info.value)
        await expect_one_attempt(kafka, "OAUTH", before, consumer, refused=0 if match == "expired" else 1)


async def test_a_provider_that_raises_is_surfaced_once_with_its_exception_chained(kafka: KafkaCluster) -> None:
    calls = 0

    def provider() -> str:
        nonlocal calls
        calls += 1
        raise ConnectionError("the identity provider is unreachable")

    topic = new_topic(kafka, 1, "oauth-raises")
    before = seen(kafka, "OAUTH")
    settings = oauth_settings(provider, group_id="g-oauth-raises", **QUICK_RETRIES)
    async with AsyncConsumer(kafka.listener_address("OAUTH"), **settings) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError, match="token provider raised ConnectionError") as info:
            await consume_until(consumer, 1, timeout_s=10)
        assert isinstance(info.value.__cause__, ConnectionError)
        await expect_one_attempt(kafka, "OAUTH", before, consumer, refused=0)
        with pytest.raises(AuthenticationError):  # calls that need the network fail at once, with the cause
            await consumer.committed({TopicPartition(topic, 0)}, timeout_ms=5_000)
    assert calls == 1


def oidc_settings(oidc: OidcServer, client_id: str, secret: str, **extra: Any) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauthbearer_token_endpoint_url": oidc.token_url,
        "sasl_oauthbearer_client_credentials_client_id": client_id,
        "sasl_oauthbearer_client_credentials_client_secret": secret,
        "auto_offset_reset": "earliest",
        **extra,
    }


async def test_the_built_in_oidc_provider_logs_in_with_a_token_kafka_checks_against_the_jwks(
    kafka: KafkaCluster, oidc: OidcServer
) -> None:
    before = len(oidc.token_requests)
    oidc.fail_next = 2  # the identity provider answers 503 twice first: retried with backoff
    settings = oidc_settings(oidc, "app", APP_SECRET, sasl_oauthbearer_scope="kafka.read")
    assert APP_SECRET not in repr(ConsumerConfig.from_kwargs(kafka.listener_address("OIDC"), **settings))
    await consume_and_commit(kafka, kafka.listener_address("OIDC"), settings, "oidc")
    asked = oidc.token_requests[before:]
    assert [r["client_id"] for r in asked] == ["app"] * 3  # two refused, then one token for every connection
    assert asked[-1]["scope"] == "kafka.read" and asked[-1]["grant_type"] == "client_credentials"


@pytest.mark.parametrize(
    ("client", "secret", "match"),
    [("app", "wrong", "HTTP 401"), ("mallory", "m-secret", "invalid_token")],
    ids=["wrong-secret", "badly-signed"],
)
async def test_a_refused_oidc_login_is_one_authentication_error(
    kafka: KafkaCluster, oidc: OidcServer, client: str, secret: str, match: str
) -> None:
    topic = new_topic(kafka, 1, "oidc-refused")
    before = seen(kafka, "OIDC")
    settings = oidc_settings(oidc, client, secret, **QUICK_RETRIES)
    async with AsyncConsumer(kafka.listener_address("OIDC"), **settings) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError, match=match) as info:
            await consume_until(consumer, 1, timeout_s=30)
        assert "OAUTHBEARER" in str(info.value) and secret not in str(info.value)
        await expect_one_attempt(kafka, "OIDC", before, consumer, refused=0 if client == "app" else 1)


async def test_an_ending_sasl_session_is_renewed_on_the_open_connection(
    kafka: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KIP-368: the listener ends SASL sessions after 2.5 s and tokens live 3 s. The consumer logs in again on its
    open connections, with a fresh token when the one held is due, and reads on: no connection is closed or made
    again, and every record arrives once, in order. A token is asked for only when a connection logs in, so fresh
    tokens while the broker saw no new connection are renewals on open connections (without them, the broker
    closes the connections and the consumer connects again, which ``seen`` counts)."""
    tokens: list[str] = []

    def provider() -> str:
        tokens.append(unsecured_jwt("erin", 3))
        return tokens[-1]

    topic = new_topic(kafka, 1, "oauth-reauth")
    producer = ProduceHelper(kafka.bootstrap_servers)
    got: list[ConsumerRecord] = []
    with captured_events(monkeypatch, connection_module, delegate_module) as events:
        async with AsyncConsumer(kafka.listener_address("REAUTH"), **oauth_settings(provider)) as consumer:
            await consumer.assign([TopicPartition(topic, 0)])
            await producer.values_async(topic, 5, 1)
            got += await consume_until(consumer, 5)
            connected = seen(kafka, "REAUTH")
            deadline = time.monotonic() + 30
            while len(tokens) < 3:  # two refreshes: sessions renewed past two token lifetimes
                assert time.monotonic() < deadline, f"{len(tokens)} tokens; the broker saw {seen(kafka, 'REAUTH')}"
                await producer.values_async(topic, 5, 1)
                got += await consume_until(consumer, 5)
            after = seen(kafka, "REAUTH")
            # this consumer's connections only: the capture hears every consumer of the process, and one a failed
            # test elsewhere left open (retrying a broker already stopped) is not this one's
            port = kafka.nodes[0].listener_ports["REAUTH"]
            lost = [dict(e) for e in events if e["event"] in LOST and e.get("port", port) == port]
        renewed = events_named(events, "connection.reauthenticated")
    assert after == connected and after.refused == 0, lost  # nothing closed, nothing refused
    assert not lost
    assert len(renewed) >= 2
    assert [r.offset for r in got] == list(range(len(got)))
    assert len(set(tokens)) == len(tokens)
