"""SASL/GSSAPI against Apache Kafka and a real MIT Kerberos KDC (``tests.support.kdc``): one module-scoped realm
with the broker's service principal ``kafka/localhost`` and a client principal, and one Kafka node whose GSSAPI
listeners advertise ``localhost`` (the host part of the service principal the client asks for).

Records are produced over the PLAINTEXT listener: what is tested is the consumer's login, with a keytab, with a
``kinit``'d credentials cache, without a ticket, with a wrong service name, and again on open connections (KIP-368).
Without the Kerberos programs these tests skip, naming them; under CI they fail instead.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.support.extras import requires_extra

requires_extra("gssapi", "gssapi")

from asyncconsumer import AsyncConsumer, AuthenticationError, ConsumerRecord, TopicPartition  # noqa: E402
from asyncconsumer.network.kerberos import GssapiMechanism, KerberosLogin  # noqa: E402
from tests.conftest import _broker_unavailable, _run_broker, unique_topic_name  # noqa: E402
from tests.support.consume import consume_until  # noqa: E402
from tests.support.kafka_broker import KafkaCluster, Listener  # noqa: E402
from tests.support.kdc import Kdc, KdcStartError, KdcUnavailable  # noqa: E402
from tests.support.produce import ProduceHelper  # noqa: E402
from tests.support.waiting import wait_for_async  # noqa: E402

pytestmark = [pytest.mark.anyio]

QUICK_RETRIES: dict[str, Any] = {"reconnect_backoff_ms": 20, "reconnect_backoff_max_ms": 50}
"""A consumer that retried after a fatal failure would be seen retrying within the quiet second that follows it."""


@attrs.frozen
class Realm:
    kdc: Kdc
    client: str
    """The client's principal, ``client@REALM``."""
    client_keytab: Path
    no_ticket: Path
    """A credentials cache file that does not exist: the default cache of a user who never ran kinit."""


@pytest.fixture(scope="module")
def realm() -> Iterator[Realm]:
    try:
        kdc = Kdc.start()
    except (KdcUnavailable, KdcStartError) as exc:
        _broker_unavailable(f"the Kerberos KDC cannot run here: {exc}")
    try:
        kdc.add_principal("kafka/localhost")
        client = kdc.principal("client")
        found = Realm(kdc, client, kdc.add_principal(client), kdc.root / "no-such-ccache")
        with kdc.client_env(KRB5CCNAME=f"FILE:{found.no_ticket}"):
            yield found
    finally:
        kdc.stop()


def _gssapi(name: str, realm: Realm, **extra: str) -> Listener:
    prefix = f"listener.name.{name.lower()}."
    keytab = realm.kdc.root / "kafka_localhost.keytab"
    jaas = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{keytab}" principal="{realm.kdc.principal("kafka/localhost")}";'
    )
    settings = {
        f"{prefix}sasl.enabled.mechanisms": "GSSAPI",
        f"{prefix}gssapi.sasl.jaas.config": jaas,
        "sasl.kerberos.service.name": "kafka",  # the broker's login reads it unprefixed
        **extra,
    }
    return Listener(name, settings, protocol="SASL_PLAINTEXT", advertised_host="localhost")


@pytest.fixture(scope="module")
def kafka(realm: Realm) -> Iterator[KafkaCluster]:
    def start() -> KafkaCluster:
        return KafkaCluster.start(
            listeners=[
                _gssapi("GSSAPI", realm),
                _gssapi("REAUTH", realm, **{"listener.name.reauth.gssapi.connections.max.reauth.ms": "2500"}),
            ],
            system_properties=realm.kdc.java_properties,
            log_levels={"kafka.network.DataPlaneAcceptor": "DEBUG"},  # a line per accepted connection: see accepted
        )

    yield from _run_broker(start)


def accepted(kafka: KafkaCluster, listener: str) -> int:
    """Connections the broker accepted on ``listener`` so far (its acceptor's DEBUG line)."""
    port = kafka.nodes[0].listener_ports[listener]
    lines = kafka.nodes[0].log_path.read_text(errors="replace").splitlines()
    return sum(1 for line in lines if "Accepted connection from" in line and f":{port} " in line)


def gssapi_settings(**extra: Any) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "auto_offset_reset": "earliest",
        **extra,
    }


def keytab_settings(realm: Realm, **extra: Any) -> dict[str, Any]:
    return gssapi_settings(sasl_kerberos_principal=realm.client, sasl_kerberos_keytab=str(realm.client_keytab), **extra)


async def consume_and_commit(kafka: KafkaCluster, bootstrap: str, settings: dict[str, Any], hint: str) -> None:
    """Reads 2 partitions and commits through the group coordinator: a second login, to the advertised address."""
    topic = unique_topic_name(hint)
    kafka.create_topic(topic, 2)
    produced = await ProduceHelper(kafka.bootstrap_servers).values_async(topic, 20, 2)
    partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    async with AsyncConsumer(bootstrap, group_id=unique_topic_name(f"g-{hint}"), **settings) as consumer:
        await consumer.assign(partitions)
        got = await consume_until(consumer, 20)
        await consumer.commit()
        committed = await consumer.committed(partitions, timeout_ms=10_000)
    want = sorted((p, r.offset, r.value) for p, records in produced.items() for r in records)
    assert sorted((r.partition, r.offset, r.value) for r in got) == want
    assert {tp: c.offset for tp, c in committed.items() if c is not None} == {tp: 10 for tp in partitions}


async def test_a_keytab_login_consumes_and_commits_its_steps_off_the_background_loop(
    kafka: KafkaCluster, realm: Realm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ticket in the default cache (the realm fixture's KRB5CCNAME): the keytab alone logs in. Every step (which
    may ask the KDC) runs in a worker thread, never on the consumer's background thread."""
    threads: list[str] = []
    for name in ("initial", "respond"):
        original = getattr(GssapiMechanism, name)

        def recorded(self: GssapiMechanism, *args: Any, _original: Any = original) -> Any:
            threads.append(threading.current_thread().name)
            return _original(self, *args)

        monkeypatch.setattr(GssapiMechanism, name, recorded)
    await consume_and_commit(kafka, kafka.listener_address("GSSAPI"), keytab_settings(realm), "gssapi-keytab")
    assert len(threads) >= 8  # two logins (bootstrap and coordinator) of four steps each
    assert not [name for name in threads if name.startswith("asyncconsumer-network")], threads


async def test_a_kinit_credentials_cache_logs_in_without_settings(
    kafka: KafkaCluster, realm: Realm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ccache = tmp_path / "ccache"
    realm.kdc.kinit(realm.client, realm.client_keytab, ccache)
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{ccache}")
    await consume_and_commit(kafka, kafka.listener_address("GSSAPI"), gssapi_settings(), "gssapi-ccache")


async def test_the_domain_name_names_the_service_host_when_connecting_by_address(
    kafka: KafkaCluster, realm: Realm
) -> None:
    """Bootstrapping by 127.0.0.1, the service principal's host comes from sasl_kerberos_domain_name."""
    address = f"127.0.0.1:{kafka.nodes[0].listener_ports['GSSAPI']}"
    settings = keytab_settings(realm, sasl_kerberos_domain_name="localhost")
    await consume_and_commit(kafka, address, settings, "gssapi-domain")


def test_the_cli_takes_kerberos_properties(kafka: KafkaCluster, realm: Realm) -> None:
    from tests.support.cli import run_cli

    topic = unique_topic_name("gssapi-cli")
    kafka.create_topic(topic, 1)
    ProduceHelper(kafka.bootstrap_servers).values(topic, 3, 1)
    common = [
        "--bootstrap-server",
        kafka.listener_address("GSSAPI"),
        "--timeout-ms",
        "10000",
        "--property=security.protocol=SASL_PLAINTEXT",
        "--property=sasl.mechanism=GSSAPI",
        f"--property=sasl.kerberos.principal={realm.client}",
        f"--property=sasl.kerberos.keytab={realm.client_keytab}",
    ]
    offsets = run_cli("offsets", topic, *common, "--format", "json")
    assert offsets.returncode == 0, offsets.stderr
    assert [(row["beginning"], row["end"]) for row in json.loads(offsets.stdout)] == [(0, 3)]
    consumed = run_cli("consume", "--topic", topic, "--from-beginning", "--max-messages", "3", *common)
    assert consumed.returncode == 0, consumed.stderr
    assert len(consumed.stdout.splitlines()) == 3
    refused = run_cli("offsets", topic, *common, "--property=sasl.kerberos.service.name=nope")
    assert refused.returncode != 0
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "nope/localhost" in errors[0], refused.stderr


async def expect_one_attempt(kafka: KafkaCluster, listener: str, before: int, consumer: AsyncConsumer) -> None:
    """One connection on ``listener`` since ``before``, and no other during a quiet second of polls."""
    await wait_for_async(
        lambda: accepted(kafka, listener) == before + 1,
        timeout=10,
        message=lambda: f"one connection on {listener}; the broker logged {accepted(kafka, listener) - before}",
    )
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        assert (await consumer.poll(timeout_ms=100)).count() == 0
    assert accepted(kafka, listener) == before + 1


async def fails_once(kafka: KafkaCluster, settings: dict[str, Any], hint: str, match: str) -> AuthenticationError:
    """The consumer's one ``AuthenticationError``, after one connection, with nothing retried after it."""
    topic = unique_topic_name(hint)
    kafka.create_topic(topic, 1)
    before = accepted(kafka, "GSSAPI")
    group = unique_topic_name(f"g-{hint}")
    async with AsyncConsumer(kafka.listener_address("GSSAPI"), group_id=group, **settings, **QUICK_RETRIES) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(AuthenticationError, match=match) as info:
            await consume_until(consumer, 1, timeout_s=15)
        await expect_one_attempt(kafka, "GSSAPI", before, consumer)
        with pytest.raises(AuthenticationError):  # calls that need the network fail at once, with the cause
            await consumer.committed({TopicPartition(topic, 0)}, timeout_ms=5_000)
    return info.value


async def test_no_ticket_is_one_authentication_error_saying_to_kinit(kafka: KafkaCluster, realm: Realm) -> None:
    import gssapi.exceptions

    error = await fails_once(kafka, gssapi_settings(), "gssapi-no-ticket", "GSSAPI")
    message = str(error)
    assert "kinit" in message and "sasl_kerberos_keytab" in message, message
    assert isinstance(error.__cause__, gssapi.exceptions.MissingCredentialsError)


async def test_a_wrong_service_name_is_one_authentication_error_naming_the_principal(
    kafka: KafkaCluster, realm: Realm
) -> None:
    from gssapi.raw.misc import GSSError

    settings = keytab_settings(realm, sasl_kerberos_service_name="kafka-nope")
    error = await fails_once(kafka, settings, "gssapi-wrong-service", "kafka-nope/localhost")
    assert "sasl_kerberos_service_name" in str(error)
    assert isinstance(error.__cause__, GSSError)


async def test_an_ending_session_is_renewed_on_the_open_connection(
    kafka: KafkaCluster, realm: Realm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KIP-368: the listener ends GSSAPI sessions after 2.5 s. The consumer logs in again (a new GSS-API context
    each time) on its open connections and reads on: no new connection, every record once, in order."""
    logins: list[str] = []
    original = KerberosLogin.mechanism_for

    def counted(self: KerberosLogin, host: str) -> GssapiMechanism:
        logins.append(host)
        return original(self, host)

    monkeypatch.setattr(KerberosLogin, "mechanism_for", counted)
    topic = unique_topic_name("gssapi-reauth")
    kafka.create_topic(topic, 1)
    producer = ProduceHelper(kafka.bootstrap_servers)
    got: list[ConsumerRecord] = []
    async with AsyncConsumer(kafka.listener_address("REAUTH"), **keytab_settings(realm)) as consumer:
        await consumer.assign([TopicPartition(topic, 0)])
        await producer.values_async(topic, 5, 1)
        got += await consume_until(consumer, 5)
        connected, connections = accepted(kafka, "REAUTH"), len(logins)  # one login per connection so far
        deadline = time.monotonic() + 30
        while len(logins) < 3 * connections:  # each open connection renewed twice (or some more often)
            assert time.monotonic() < deadline, f"{len(logins) - connections} renewals of {connections} connections"
            await producer.values_async(topic, 5, 1)
            got += await consume_until(consumer, 5)
        assert accepted(kafka, "REAUTH") == connected  # nothing closed and made again
    assert [r.offset for r in got] == list(range(len(got)))
