"""The Spark source's options: parsing, defaults, typed JSON values, and the errors naming a bad option."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.extras import requires_extra

requires_extra("spark", "pyspark")  # first: asyncconsumer.spark imports pyspark

from asyncconsumer.errors import ConfigError
from asyncconsumer.spark.options import parse_options

BASE = {"kafka.bootstrap.servers": "h:1"}


def test_options_are_case_insensitive_and_kafka_ones_reach_the_consumer() -> None:
    options = parse_options(
        {**BASE, "SUBSCRIBE": "a, b", "kafka.fetch.max.wait.ms": "50", "includeHeaders": "TRUE", "minPartitions": "8"},
        streaming=False,
    )
    assert options.subscribe == ("a", "b")
    assert options.consumer == {"bootstrap.servers": "h:1", "fetch.max.wait.ms": "50"}
    assert (options.include_headers, options.min_partitions, options.starting, options.ending) == (
        True,
        8,
        "earliest",
        "latest",
    )
    assert parse_options({**BASE, "subscribe": "a"}, streaming=True).starting == "latest"  # as Spark's source


def test_per_partition_offsets_json_is_typed() -> None:
    options = parse_options(
        {**BASE, "assign": '{"a": [1, 0]}', "startingOffsets": '{"a": {"0": 3, "1": -2}}'}, streaming=False
    )
    assert options.assign == {"a": (0, 1)}
    assert options.starting == {"a": {0: 3, 1: -2}}


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({}, "subscribe"),
        ({"subscribe": "a", "subscribePattern": "a.*"}, "subscribe"),
        ({"subscribePattern": "(unclosed"}, "subscribePattern"),
        ({"assign": '{"a": [-1]}'}, "assign"),
        ({"subscribe": "a", "startingOffsets": '{"a": {"0": -3}}'}, "startingOffsets"),
        ({"subscribe": "a", "minPartitions": "0"}, "minPartitions"),
        ({"subscribe": "a", "failOnDataLoss": "maybe"}, "failondataloss"),
        ({"subscribe": "a", "kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit"),
        ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
        ({"subscribe": "a", "kafka.value.deserializer": "x"}, "kafka.value.deserializer"),
        ({"subscribe": "a", "startingOffsets": "latest"}, "startingOffsets"),  # batch: as Spark's source
        ({"subscribe": "a", "startingOffsets": '{"a": {"0": -1}}'}, "startingOffsets"),
        (
            {"subscribe": "a", "startingOffsets": '{"a": {"0": 5}}', "endingOffsets": '{"a": {"0": 4}}'},
            "startingOffsets",
        ),
        (
            {"subscribe": "a", "startingOffsets": '{"a": {"0": 1}}', "endingOffsets": '{"a": {"1": 4}}'},
            "startingOffsets",
        ),
        ({"subscribe": "a", "startingOffsetsByTimestampStrategy": "earliest"}, "startingOffsetsByTimestampStrategy"),
        ({"subscribe": "a", "maxRecordsPerPartition": "0"}, "maxRecordsPerPartition"),
        ({"subscribe": "a", "fetchOffset.numRetries": "0"}, "fetchOffset.numRetries"),
        ({"subscribe": "a", "fetchOffset.retryIntervalMs": "-1"}, "fetchOffset.retryIntervalMs"),
        ({"subscribe": "a", "kafkaConsumer.pollTimeoutMs": "0"}, "kafkaConsumer.pollTimeoutMs"),
        ({"subscribe": "a", "kafkaConsumer.pollTimeoutMs": "5", "pollTimeoutMs": "6"}, "pollTimeoutMs"),
        ({"subscribe": "a", "groupIdPrefix": " "}, "groupIdPrefix"),
        ({"subscribePattern": " "}, "subscribePattern"),
    ],
)
def test_a_bad_option_is_a_config_error_naming_it(options: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_options({**BASE, **options}, streaming=False)
    assert caught.value.key == key


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_options({"subscribe": "a"}, streaming=False)
    assert caught.value.key == "kafka.bootstrap.servers"


def test_streaming_only_and_batch_only_options() -> None:
    stream = parse_options(
        {
            **BASE,
            "subscribe": "a",
            "maxOffsetsPerTrigger": "100",
            "minOffsetsPerTrigger": "10",
            "maxTriggerDelay": "2m",
        },
        streaming=True,
    )
    assert (stream.max_offsets_per_trigger, stream.min_offsets_per_trigger, stream.max_trigger_delay_ms) == (
        100,
        10,
        120_000,
    )
    assert parse_options({**BASE, "subscribe": "a"}, streaming=True).max_trigger_delay_ms == 15 * 60_000  # Spark's
    for text, ms in (("250", 250), ("250ms", 250), ("10s", 10_000), ("5min", 300_000), ("1h", 3_600_000)):
        assert (
            parse_options({**BASE, "subscribe": "a", "maxTriggerDelay": text}, streaming=True).max_trigger_delay_ms
            == ms
        )
    with pytest.raises(ConfigError) as caught:
        parse_options(
            {**BASE, "subscribe": "a", "minOffsetsPerTrigger": "11", "maxOffsetsPerTrigger": "10"}, streaming=True
        )
    assert caught.value.key == "minOffsetsPerTrigger"
    with pytest.raises(ConfigError) as caught:
        parse_options({**BASE, "subscribe": "a", "maxTriggerDelay": "soon"}, streaming=True)
    assert caught.value.key == "maxTriggerDelay"
    # a batch query ignores the trigger options (Spark's source logs a warning and carries on)
    batch = parse_options(
        {**BASE, "subscribe": "a", "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "9"}, streaming=False
    )
    assert (batch.max_offsets_per_trigger, batch.min_offsets_per_trigger) == (None, None)
    for ending in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        with pytest.raises(ConfigError) as caught:
            parse_options({**BASE, "subscribe": "a", ending: "1"}, streaming=True)
        assert caught.value.key == ending


def test_spark_names_for_retries_poll_timeout_splits_and_timestamps() -> None:
    options = parse_options(
        {
            **BASE,
            "subscribe": "a",
            "fetchOffset.numRetries": "5",
            "fetchOffset.retryIntervalMs": "10",
            "kafkaConsumer.pollTimeoutMs": "3000",
            "maxRecordsPerPartition": "1000",
            "endingTimestamp": "1700000000000",
            "startingOffsetsByTimestamp": '{"a": {"0": 1699999999999}}',
            "startingOffsetsByTimestampStrategy": "Latest",
        },
        streaming=False,
    )
    assert (options.fetch_offset_retries, options.fetch_offset_retry_interval_ms, options.poll_timeout_ms) == (
        5,
        10,
        3000,
    )
    assert options.max_records_per_partition == 1000
    assert (options.ending_timestamp, options.starting_by_timestamp) == (
        1_700_000_000_000,
        {"a": {0: 1_699_999_999_999}},
    )
    assert options.by_timestamp_strategy == "latest"
    assert (
        parse_options({**BASE, "subscribe": "a"}, streaming=False).by_timestamp_strategy == "error"
    )  # Spark's default


def test_group_id_and_its_prefix_are_accepted_and_not_given_to_the_consumers() -> None:
    options = parse_options({**BASE, "subscribe": "a", "kafka.group.id": "g", "groupIdPrefix": "p"}, streaming=True)
    assert options.consumer == {"bootstrap.servers": "h:1"}


SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_JAAS = SCRAM_MODULE + r' required username="alice" password="a\\b\"c;d=e";'
"""A JAAS line as Java reads it: inside quotes a backslash escapes the next character, so the password is
``a\\b"c;d=e``."""


def test_java_security_settings_become_ours() -> None:
    options = parse_options(
        {
            **BASE,
            "subscribe": "a",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": SCRAM_JAAS,
            "kafka.ssl.truststore.location": "/certs/ca.pem",
            "kafka.ssl.truststore.type": "pem",
            "kafka.ssl.endpoint.identification.algorithm": "",
        },
        streaming=False,
    )
    assert options.consumer == {
        "bootstrap.servers": "h:1",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 'a\\b"c;d=e',
        "ssl.cafile": "/certs/ca.pem",
        "ssl.check.hostname": "false",
    }
    assert "p\\w" not in repr(options) and "alice" in repr(options)
    plain = parse_options(
        {
            **BASE,
            "subscribe": "a",
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": f"{PLAIN_MODULE} required username=bob password=pw;",
            "kafka.ssl.keystore.type": "PEM",
        },
        streaming=False,
    )
    assert (plain.consumer["sasl.username"], plain.consumer["sasl.password"]) == ("bob", "pw")


@pytest.mark.parametrize(
    ("settings", "key", "says"),
    [
        ({"kafka.ssl.truststore.location": "/ca.jks"}, "kafka.ssl.truststore.type", "JKS"),
        (
            {"kafka.ssl.truststore.location": "/ca.p12", "kafka.ssl.truststore.type": "PKCS12"},
            "kafka.ssl.truststore.type",
            "PEM",
        ),
        (
            {"kafka.ssl.keystore.location": "/me.jks", "kafka.ssl.keystore.type": "JKS"},
            "kafka.ssl.keystore.type",
            "PEM",
        ),
        ({"kafka.ssl.truststore.password": "x"}, "kafka.ssl.truststore.password", "no password"),
        ({"kafka.ssl.key.password": "x"}, "kafka.ssl.key.password", "unencrypted"),
        ({"kafka.ssl.truststore.certificates": "-----BEGIN"}, "kafka.ssl.truststore.certificates", "PEM file"),
        (
            {"kafka.ssl.endpoint.identification.algorithm": "ldap"},
            "kafka.ssl.endpoint.identification.algorithm",
            "https",
        ),
        (
            {
                "kafka.sasl.mechanism": "GSSAPI",
                "kafka.sasl.jaas.config": "com.example.LdapLoginModule required;",
            },
            "kafka.sasl.jaas.config",
            "SCRAM, PLAIN, OAUTHBEARER and GSSAPI",
        ),
        (
            {"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": SCRAM_JAAS},
            "kafka.sasl.jaas.config",
            "PLAIN",
        ),
        (
            {
                "kafka.sasl.mechanism": "SCRAM-SHA-256",
                "kafka.sasl.jaas.config": f"{SCRAM_MODULE} required username=u;",
            },
            "kafka.sasl.jaas.config",
            "password",
        ),
        (
            {"kafka.sasl.mechanism": "SCRAM-SHA-256", "kafka.sasl.jaas.config": SCRAM_JAAS, "kafka.sasl.username": "u"},
            "kafka.sasl.username",
            "twice",
        ),
        ({"kafka.ssl.cipher.suites": "x"}, "kafka.ssl.cipher.suites", "unknown"),
    ],
)
def test_security_settings_our_client_cannot_honour_are_refused_by_name(
    settings: dict[str, str], key: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        parse_options({**BASE, "subscribe": "a", "kafka.security.protocol": "SASL_SSL", **settings}, streaming=False)
    assert caught.value.key == key


OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
OAUTH_BASE = {
    **BASE,
    "subscribe": "a",
    "kafka.security.protocol": "SASL_SSL",
    "kafka.sasl.mechanism": "OAUTHBEARER",
    "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
}


def test_java_s_oauthbearer_client_credentials_settings_become_the_built_in_provider_s() -> None:
    options = parse_options(
        {
            **OAUTH_BASE,
            "kafka.sasl.login.callback.handler.class": OAUTH_HANDLER,
            "kafka.sasl.jaas.config": f'{OAUTH_MODULE} required clientId="app" clientSecret="s3cr=t" scope="kafka" '
            'extension_logicalCluster="lkc-1" extension_identityPoolId="pool-2";',
        },
        streaming=False,
    )
    assert options.consumer == {
        "bootstrap.servers": "h:1",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.client.credentials.client.id": "app",
        "sasl.oauthbearer.client.credentials.client.secret": "s3cr=t",
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1,identityPoolId=pool-2",
    }
    assert "s3cr=t" not in repr(options)


@pytest.mark.parametrize(
    ("extra", "key", "match"),
    [
        ({"kafka.sasl.jaas.config": f"{OAUTH_MODULE} required;"}, "kafka.sasl.login.callback.handler.class", "tests"),
        (
            {"kafka.sasl.jaas.config": f"{OAUTH_MODULE} required;", "kafka.sasl.login.callback.handler.class": "x.Y"},
            "kafka.sasl.login.callback.handler.class",
            "Java classes",
        ),
        (
            {
                "kafka.sasl.jaas.config": f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="a";',
                "kafka.sasl.login.callback.handler.class": OAUTH_HANDLER,
            },
            "kafka.sasl.jaas.config",
            "unsecuredLoginStringClaim_sub",
        ),
    ],
    ids=["no-handler", "custom-handler", "unsecured-option"],
)
def test_oauthbearer_logins_we_cannot_run_are_named(extra: dict[str, str], key: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        parse_options({**OAUTH_BASE, **extra}, streaming=False)
    assert info.value.key == key


KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
KRB5_BASE = {**BASE, "subscribe": "a", "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "GSSAPI"}


def test_java_s_kerberos_keytab_login_becomes_our_kerberos_settings(tmp_path: Path) -> None:
    requires_extra("gssapi", "gssapi")  # the consumer's settings are checked, and GSSAPI needs the package
    keytab = tmp_path / "app.keytab"
    keytab.write_bytes(b"\x05\x02")
    options = parse_options(
        {
            **KRB5_BASE,
            "kafka.sasl.kerberos.service.name": "kfk",
            "kafka.sasl.jaas.config": f'{KRB5_MODULE} required useKeyTab=true storeKey=true keyTab="{keytab}" '
            'principal="app/host@EXAMPLE.COM";',
        },
        streaming=False,
    )
    assert options.consumer == {
        "bootstrap.servers": "h:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kfk",
        "sasl.kerberos.keytab": str(keytab),
        "sasl.kerberos.principal": "app/host@EXAMPLE.COM",
    }


def test_java_s_kerberos_ticket_cache_login_uses_the_default_cache() -> None:
    requires_extra("gssapi", "gssapi")
    options = parse_options(
        {**KRB5_BASE, "kafka.sasl.jaas.config": f'{KRB5_MODULE} required useTicketCache=true serviceName="kfk";'},
        streaming=False,
    )
    assert options.consumer == {
        "bootstrap.servers": "h:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kfk",
    }
    # as in Java, keyTab counts only with useKeyTab=true
    options = parse_options(
        {**KRB5_BASE, "kafka.sasl.jaas.config": f'{KRB5_MODULE} required keyTab="/no/such.keytab";'}, streaming=False
    )
    assert "sasl.kerberos.keytab" not in options.consumer


@pytest.mark.parametrize(
    ("jaas", "key", "match"),
    [
        ("useKeyTab=true", "kafka.sasl.jaas.config", "needs keyTab"),
        ('useKeyTab=yes keyTab="/k"', "kafka.sasl.jaas.config", "true or false"),
        ('useTicketCache=true ticketCache="/tmp/cc"', "kafka.sasl.jaas.config", "KRB5CCNAME"),
        ("useFirstPass=true", "kafka.sasl.jaas.config", "useFirstPass"),
        ('useKeyTab=true keyTab="/no/such.keytab" principal="a@R"', "kafka.sasl_kerberos_keytab", "no such file"),
    ],
)
def test_kerberos_logins_we_cannot_run_are_named(jaas: str, key: str, match: str) -> None:
    requires_extra("gssapi", "gssapi")
    with pytest.raises(ConfigError, match=match) as info:
        parse_options({**KRB5_BASE, "kafka.sasl.jaas.config": f"{KRB5_MODULE} required {jaas};"}, streaming=False)
    assert info.value.key == key
