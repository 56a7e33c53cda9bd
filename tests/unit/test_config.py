"""Configuration (``config.py``): both spellings, a settings mapping with keyword arguments, errors that name the
key, the group protocol's rules, and the shape of the plugin and security settings."""

from __future__ import annotations

import ssl
from typing import Any

import attrs
import pytest

from asyncconsumer import AsyncConsumer, ConfigError, Consumer, ConsumerSettings, ShareConsumerSettings
from asyncconsumer.config import SHARE_UNSUPPORTED, ConsumerConfig, ShareConsumerConfig, canonical_key
from asyncconsumer.plugins import Plugin, installed_plugins
from asyncconsumer.plugins.lag_monitor import LagMonitor
from tests.support.no_broker import REFUSED


def test_java_and_python_spellings_are_the_same_setting() -> None:
    a = ConsumerConfig.from_kwargs("h:1", **{"fetch.max.wait.ms": 50, "auto.offset.reset": "earliest"})
    b = ConsumerConfig.from_kwargs("h:1", fetch_max_wait_ms=50, auto_offset_reset="earliest")
    assert a == b
    assert a.fetch_max_wait_ms == 50


def test_bootstrap_servers_accepts_a_comma_separated_string() -> None:
    assert ConsumerConfig.from_kwargs("a:1, b:2").bootstrap_servers == ("a:1", "b:2")
    assert ConsumerConfig.from_kwargs(["a:1"]).bootstrap_servers == ("a:1",)


def test_java_style_string_numbers_are_accepted() -> None:
    assert ConsumerConfig.from_kwargs("h:1", **{"max.poll.records": "10"}).max_poll_records == 10


@pytest.mark.parametrize(
    ("kwargs", "key", "text"),
    [
        ({"auto_offset_reset": "smallest"}, "auto_offset_reset", "'earliest', 'latest', 'none'"),
        ({"fetch.max.bytes": 0}, "fetch_max_bytes", "positive"),
        ({"fetch_max_wait_ms": -1}, "fetch_max_wait_ms", ">= 0"),
        ({"isolation_level": "serializable"}, "isolation_level", "read_committed"),
        ({"fetch_max_wiat_ms": 5}, "fetch_max_wiat_ms", "did you mean fetch_max_wait_ms"),
        ({"value_deserializer": "utf-8"}, "value_deserializer", "callable"),
        ({"receive_message_max_bytes": 0}, "receive_message_max_bytes", "positive"),
        ({"receive.message.max.bytes": 2**31}, "receive_message_max_bytes", "at most 2147483647"),
        ({"receive_message_max_bytes": 1_000_000}, "receive_message_max_bytes", "fetch_max_bytes + 512 (52429312)"),
        (
            {"fetch_max_bytes": 1_000, "receive_message_max_bytes": 1_511},
            "receive_message_max_bytes",
            "at least fetch_max_bytes + 512 (1512), so that a whole fetch response fits; got 1511",
        ),
        ({"fetch_max_bytes": 2**31 - 1}, "fetch_max_bytes", "at most 2147483135"),
    ],
)
def test_bad_config_names_the_key_and_what_is_allowed(kwargs: dict[str, object], key: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", **kwargs)
    assert info.value.key == key
    assert text in str(info.value)


def test_a_typo_hint_answers_in_the_spelling_of_the_key_given() -> None:
    """A Java-style key in a settings mapping is answered with Java names, a keyword argument with Python names."""
    with pytest.raises(ConfigError) as java:
        Consumer({"bootstrap.server": "x"})
    assert java.value.key == "bootstrap.server"
    assert "did you mean bootstrap.servers?" in str(java.value)
    assert "bootstrap_servers" not in str(java.value)
    with pytest.raises(ConfigError) as python:
        Consumer(bootstrap_server="x")  # type: ignore[call-arg]
    assert python.value.key == "bootstrap_server"
    assert "did you mean bootstrap_servers?" in str(python.value)
    with pytest.raises(ConfigError) as python_in_mapping:
        ConsumerConfig.from_settings({"bootstrap_servers": "h:1", "fetch_max_wiat_ms": 5})
    assert "did you mean fetch_max_wait_ms," in str(python_in_mapping.value)
    with pytest.raises(ConfigError) as java_keyword:
        ConsumerConfig.from_kwargs("h:1", **{"fetch.max.wiat.ms": 5})
    assert "did you mean fetch.max.wait.ms, fetch.max.bytes" in str(java_keyword.value)
    with pytest.raises(ConfigError) as dashed:
        ConsumerConfig.from_kwargs("h:1", **{"fetch-max-wiat-ms": 5})
    assert "did you mean fetch-max-wait-ms, fetch-max-bytes" in str(dashed.value)


def test_receive_message_max_bytes_defaults_to_librdkafkas_and_follows_fetch_max_bytes_until_set() -> None:
    """As librdkafka: 100,000,000 by default, raised to fetch_max_bytes + 512 when that is larger, unless set
    explicitly (then it must be at least that)."""
    assert ConsumerConfig.from_kwargs("h:1").receive_message_max_bytes == 100_000_000
    assert ConsumerConfig.from_kwargs("h:1", fetch_max_bytes=1_000).receive_message_max_bytes == 100_000_000
    big = ConsumerConfig.from_kwargs("h:1", fetch_max_bytes=150_000_000)
    assert big.receive_message_max_bytes == 150_000_512
    assert ConsumerConfig.from_kwargs("h:1").with_changes(fetch_max_bytes=150_000_000) == big
    java = ConsumerConfig.from_kwargs("h:1", **{"receive.message.max.bytes": "600000000"})
    assert java.receive_message_max_bytes == 600_000_000
    small = ConsumerConfig.from_kwargs("h:1", fetch_max_bytes=1_000, receive_message_max_bytes=1_512)
    assert small.receive_message_max_bytes == 1_512
    with pytest.raises(ConfigError) as info:  # set explicitly, it does not follow
        small.with_changes(fetch_max_bytes=2_000)
    assert info.value.key == "receive_message_max_bytes"


@pytest.mark.parametrize("servers", ["", "nohost", "h:notaport", "h:0"])
def test_bad_bootstrap_servers_are_rejected(servers: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs(servers)
    assert info.value.key == "bootstrap_servers"


def test_bootstrap_servers_as_a_keyword_argument() -> None:
    assert ConsumerConfig.from_settings(bootstrap_servers="a:1").bootstrap_servers == ("a:1",)
    assert AsyncConsumer(bootstrap_servers="a:1", group_id="g").config.bootstrap_servers == ("a:1",)
    with pytest.raises(ConfigError, match="given twice") as info:
        Consumer("a:1", bootstrap_servers="b:2")
    assert info.value.key == "bootstrap_servers"


def test_missing_bootstrap_servers_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        Consumer()
    with pytest.raises(ConfigError):
        AsyncConsumer(fetch_min_bytes=1)


# --- a settings mapping and keyword arguments, as the faces take them --------------------------------------


def test_settings_as_a_mapping_with_java_names_plus_keyword_arguments() -> None:
    consumer = Consumer(
        {"bootstrap.servers": REFUSED, "group.id": "g", "auto.offset.reset": "earliest"}, fetch_max_wait_ms=7
    )
    config = consumer.config
    assert (config.bootstrap_servers, config.group_id, config.auto_offset_reset) == ((REFUSED,), "g", "earliest")
    assert config.fetch_max_wait_ms == 7
    assert (
        AsyncConsumer({"bootstrap_servers": REFUSED, "enable.auto.commit": "false"}).config.enable_auto_commit is False
    )


def test_a_setting_given_both_ways_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"given twice: as 'group.id' in the settings mapping") as raised:
        Consumer({"bootstrap.servers": REFUSED, "group.id": "a"}, group_id="b")
    assert raised.value.key == "group_id"


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"bootstrap.servers": REFUSED, "fetch.max.wiat.ms": 5}, "fetch.max.wiat.ms"),
        ({"bootstrap.servers": REFUSED, "enable.auto.commit": "ture"}, "enable_auto_commit"),
        ({"group.id": "g"}, "bootstrap_servers"),
    ],
)
def test_bad_settings_in_a_mapping_name_the_key(settings: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Consumer(settings)
    assert raised.value.key == key


def test_a_config_object_is_accepted_as_is() -> None:
    config = ConsumerConfig.from_kwargs(REFUSED, group_id="g")
    assert Consumer(config).config is config
    assert Consumer(config, client_id="other").config.client_id == "other"


def test_the_typed_keyword_arguments_are_exactly_the_config_fields() -> None:
    assert set(ConsumerSettings.__annotations__) == {f.name for f in attrs.fields(ConsumerConfig)}
    share_own = {f.name for f in attrs.fields(ShareConsumerConfig)} - {"consumer"}
    accepted = {f.name for f in attrs.fields(ConsumerConfig)} - set(SHARE_UNSUPPORTED) | share_own
    assert set(ShareConsumerSettings.__annotations__) == accepted


# --- group.protocol (KIP-848) ---------------------------------------------------------------------------------


def test_group_protocol_defaults_to_classic() -> None:
    config = ConsumerConfig.from_kwargs("h:1")
    assert config.group_protocol == "classic"
    assert config.group_remote_assignor is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"group_protocol": "consumer"},
        {"group_protocol": "CONSUMER"},
        {"group_protocol": " Consumer "},
        {"group.protocol": "consumer"},
        {"group.protocol": "Consumer"},
    ],
)
def test_group_protocol_consumer_in_any_case_and_spelling(kwargs: dict[str, object]) -> None:
    assert ConsumerConfig.from_kwargs("h:1", **kwargs).group_protocol == "consumer"


@pytest.mark.parametrize("value", ["Classic", "CLASSIC", "classic"])
def test_group_protocol_classic_in_any_case(value: str) -> None:
    assert ConsumerConfig.from_kwargs("h:1", **{"group.protocol": value}).group_protocol == "classic"


@pytest.mark.parametrize("value", ["eager", "", "kip-848", "consumers", 1, None])
def test_unknown_group_protocol_is_a_config_error_naming_the_key(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", group_protocol=value)
    assert info.value.key == "group_protocol"
    assert str(info.value).startswith("group_protocol: ")
    assert "'classic', 'consumer'" in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"group_protocol": "consumer", "group_remote_assignor": "uniform"},
        {"group.protocol": "consumer", "group.remote.assignor": "range"},
    ],
)
def test_group_remote_assignor_with_the_consumer_protocol(kwargs: dict[str, object]) -> None:
    config = ConsumerConfig.from_kwargs("h:1", **kwargs)
    assert config.group_protocol == "consumer"
    assert config.group_remote_assignor in ("uniform", "range")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"group_remote_assignor": "uniform"},
        {"group.remote.assignor": "uniform"},
        {"group_protocol": "classic", "group_remote_assignor": "range"},
    ],
)
def test_group_remote_assignor_requires_the_consumer_protocol(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", **kwargs)
    assert info.value.key == "group_remote_assignor"
    assert "group_protocol='consumer'" in str(info.value)


@pytest.mark.parametrize("value", ["", "  "])
def test_empty_group_remote_assignor_is_rejected(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", group_protocol="consumer", group_remote_assignor=value)
    assert info.value.key == "group_remote_assignor"


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"partition_assignment_strategy": "roundrobin"}, "partition_assignment_strategy"),
        ({"partition.assignment.strategy": ["cooperative-sticky"]}, "partition_assignment_strategy"),
        ({"session_timeout_ms": 30_000}, "session_timeout_ms"),
        ({"session.timeout.ms": "60000"}, "session_timeout_ms"),
        ({"heartbeat_interval_ms": 1_000}, "heartbeat_interval_ms"),
        ({"heartbeat.interval.ms": 5_000}, "heartbeat_interval_ms"),
    ],
)
def test_classic_only_settings_are_rejected_under_the_consumer_protocol(kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", group_protocol="consumer", **kwargs)
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}: ")
    assert "group_protocol='classic'" in str(info.value)
    # the very same settings are fine with the classic protocol
    config = ConsumerConfig.from_kwargs("h:1", **kwargs)
    assert config.group_protocol == "classic"


def test_classic_only_settings_left_alone_are_fine_under_the_consumer_protocol() -> None:
    config = ConsumerConfig.from_kwargs("h:1", group_protocol="consumer", group_remote_assignor="uniform")
    classic = ConsumerConfig.from_kwargs("h:1")
    assert config.partition_assignment_strategy == classic.partition_assignment_strategy
    assert config.session_timeout_ms == classic.session_timeout_ms
    assert config.heartbeat_interval_ms == classic.heartbeat_interval_ms


def test_with_changes_checks_the_group_protocol_rules_too() -> None:
    consumer = ConsumerConfig.from_kwargs("h:1", group_protocol="consumer", group_remote_assignor="uniform")
    with pytest.raises(ConfigError) as info:
        consumer.with_changes(session_timeout_ms=10_000)
    assert info.value.key == "session_timeout_ms"
    with pytest.raises(ConfigError) as info:
        consumer.with_changes(group_protocol="classic")
    assert info.value.key == "group_remote_assignor"
    classic = ConsumerConfig.from_kwargs("h:1", heartbeat_interval_ms=1_000)
    with pytest.raises(ConfigError) as info:
        classic.with_changes(group_protocol="consumer")
    assert info.value.key == "heartbeat_interval_ms"


@pytest.mark.parametrize("key", ["session_timeout_ms", "heartbeat.interval.ms", "partition_assignment_strategy"])
def test_a_classic_only_key_is_rejected_under_the_consumer_protocol_even_at_its_default(key: str) -> None:
    defaults = {"session_timeout_ms": 45_000, "heartbeat.interval.ms": 3_000, "partition_assignment_strategy": "range"}
    with pytest.raises(ConfigError) as caught:
        ConsumerConfig.from_kwargs("h:1", group_protocol="consumer", **{key: defaults[key]})
    assert caught.value.key == key.replace(".", "_")


# --- plugins (the shape only: names are looked up where the consumer is built) ---------------------------------


def test_plugins_accept_names_plugin_objects_and_a_java_style_string() -> None:
    direct = Plugin("mine", lambda ctx: LagMonitor(ctx))
    assert ConsumerConfig.from_kwargs("h:1", plugins=["lag-monitor", direct]).plugins == ("lag-monitor", direct)
    assert ConsumerConfig.from_kwargs("h:1", plugins="lag-monitor").plugins == ("lag-monitor",)
    assert "lag-monitor" in installed_plugins()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"plugins": ["lag-monitor", "lag-monitor"]}, "'lag-monitor' is enabled twice"),
        ({"plugins": [Plugin("x", LagMonitor), Plugin("x", LagMonitor)]}, "'x' is enabled twice"),
        ({"plugins": [42]}, "installed plugin's name or a Plugin, got int"),
        ({"plugin_options": {"lag-monitor": {}}}, "'lag-monitor' is not enabled"),
        ({"plugins": ["lag-monitor"], "plugin_options": {"lag-monitor": 5}}, "must be a dict"),
        ({"plugin_errors": "ignore"}, "'isolate', 'fatal'"),
    ],
)
def test_bad_plugin_settings_are_config_errors_naming_the_key(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig.from_kwargs("h:1", **kwargs)


# --- security ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"security_protocol": "SASL_SSL"}, "sasl_username"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_username": "u"}, "sasl_password"),
        ({"sasl_username": "u", "sasl_password": "p"}, "sasl_username"),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_username": "u",
                "sasl_password": "p",
                "sasl_mechanism": "SCRAM-SHA-1",
            },
            "sasl_mechanism",
        ),
        ({"ssl_cafile": "/ca.pem"}, "ssl_cafile"),
        (
            {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_username": "u",
                "sasl_password": "p",
                "ssl_context": ssl.create_default_context(),
            },
            "ssl_context",
        ),
        (
            {"security_protocol": "SSL", "ssl_context": ssl.create_default_context(), "ssl_cafile": "/ca.pem"},
            "ssl_cafile",
        ),
        (
            {"security_protocol": "SSL", "ssl_context": ssl.create_default_context(), "ssl_check_hostname": False},
            "ssl_check_hostname",
        ),
        ({"security_protocol": "SSL", "ssl_keyfile": "/key.pem"}, "ssl_keyfile"),
        ({"security_protocol": "SSL", "ssl_context": "not a context"}, "ssl_context"),
        ({"security_protocol": "TLS"}, "security_protocol"),
    ],
)
def test_security_settings_that_cannot_work_are_config_errors(settings: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", **settings)
    assert info.value.key == key


# --- share consumers (ShareConsumerConfig) ------------------------------------------------------------------------


def test_a_share_config_takes_the_consumers_settings_and_its_own_keys_in_either_spelling() -> None:
    config = ShareConsumerConfig.from_settings(
        {"bootstrap.servers": "h:1", "group.id": "g", "share.acknowledgement.mode": "EXPLICIT"},
        fetch_max_wait_ms=50,
        share_acquire_mode="record_limit",
    )
    assert config.group_id == "g"
    assert config.consumer.bootstrap_servers == ("h:1",) and config.consumer.fetch_max_wait_ms == 50
    assert (config.share_acknowledgement_mode, config.share_acquire_mode) == ("explicit", "record_limit")
    defaults = ShareConsumerConfig.from_settings("h:1", group_id="g")
    assert (defaults.share_acknowledgement_mode, defaults.share_acquire_mode) == ("implicit", "batch_optimized")


def test_a_share_config_needs_a_group() -> None:
    with pytest.raises(ConfigError) as info:
        ShareConsumerConfig.from_settings("h:1")
    assert info.value.key == "group_id"


@pytest.mark.parametrize("key", sorted(SHARE_UNSUPPORTED))
def test_every_consumer_only_setting_is_refused_naming_it_and_why(key: str) -> None:
    java = key.replace("_", ".")
    for settings, kwargs in [("h:1", {key: None}), ({"bootstrap.servers": "h:1", java: None}, {})]:
        with pytest.raises(ConfigError) as info:
            ShareConsumerConfig.from_settings(settings, group_id="g", **kwargs)
        assert canonical_key(info.value.key) == key
        assert SHARE_UNSUPPORTED[key] in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "key", "text"),
    [
        ({"share_acknowledgement_mode": "sometimes"}, "share_acknowledgement_mode", "'implicit', 'explicit'"),
        ({"share.acquire.mode": "greedy"}, "share_acquire_mode", "'batch_optimized', 'record_limit'"),
        ({"share_ack_mode": "explicit"}, "share_ack_mode", "did you mean"),
    ],
)
def test_bad_share_settings_name_their_key(kwargs: dict[str, object], key: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        ShareConsumerConfig.from_settings("h:1", group_id="g", **kwargs)
    assert info.value.key == key
    assert text in str(info.value)


def test_a_share_key_given_in_the_mapping_and_as_a_keyword_is_refused() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        ShareConsumerConfig.from_settings(
            {"bootstrap.servers": "h:1", "group.id": "g", "share.acknowledgement.mode": "explicit"},
            share_acknowledgement_mode="implicit",
        )


def test_a_consumer_config_is_taken_unless_it_sets_a_consumer_only_setting() -> None:
    plain = ConsumerConfig.from_kwargs("h:1", group_id="g")
    assert ShareConsumerConfig.from_settings(plain).consumer is plain
    with pytest.raises(ConfigError) as info:
        ShareConsumerConfig.from_settings(ConsumerConfig.from_kwargs("h:1", group_id="g", enable_auto_commit=False))
    assert info.value.key == "enable_auto_commit"


def test_a_share_config_with_keywords_is_a_new_one_checked_like_the_first() -> None:
    base = ShareConsumerConfig.from_settings("h:1", group_id="g")
    assert ShareConsumerConfig.from_settings(base) is base
    changed = ShareConsumerConfig.from_settings(base, **{"share.acknowledgement.mode": "explicit"}, max_poll_records=7)
    assert changed.share_acknowledgement_mode == "explicit" and changed.consumer.max_poll_records == 7
    assert base.share_acknowledgement_mode == "implicit"  # frozen: the first is unchanged
    with pytest.raises(ConfigError) as info:
        ShareConsumerConfig.from_settings(base, enable_auto_commit=False)
    assert info.value.key == "enable_auto_commit"
    with pytest.raises(ConfigError) as unknown:
        ShareConsumerConfig.from_settings(base, share_ack_mode="explicit")
    assert unknown.value.key == "share_ack_mode"
