"""Configuration: both spellings, and errors that name the key."""

from __future__ import annotations

import pytest

import asyncconsumer
import asyncconsumer.plugins
from asyncconsumer import AsyncConsumer, ConfigError, Consumer
from asyncconsumer.config import ConsumerConfig


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


def test_public_api_is_pinned() -> None:
    assert set(asyncconsumer.__all__) == {
        "AsyncConsumer",
        "AuthenticationError",
        "ClientClosedError",
        "CommitFailedError",
        "ConfigError",
        "ConsumerRebalanceListener",
        "GroupMetadata",
        "OffsetAndMetadata",
        "PollIntervalExceededError",
        "Consumer",
        "ConsumerConfig",
        "ConsumerMetrics",
        "ConsumerRecord",
        "ConsumerRecords",
        "ConsumerSettings",
        "CorruptRecordError",
        "ErrorCode",
        "IllegalStateError",
        "InvalidOffsetError",
        "KafkaConnectionError",
        "KafkaError",
        "KafkaTimeoutError",
        "LogTruncationError",
        "NoOffsetForPartitionError",
        "OffsetAndTimestamp",
        "OffsetOutOfRangeError",
        "PartitionInfo",
        "PartitionMetrics",
        "PluginError",
        "RecordDeserializationError",
        "TopicPartition",
        "UnknownTopicOrPartitionError",
        "WakeupError",
        "__version__",
    }
    for name in asyncconsumer.__all__:
        assert hasattr(asyncconsumer, name)
    assert set(asyncconsumer.plugins.__all__) == {
        "ENTRY_POINT_GROUP",
        "MAX_POLL_WAIT_MS",
        "Broker",
        "Clock",
        "Cluster",
        "Plugin",
        "PluginContext",
        "PluginError",
        "PluginFactory",
        "PluginMetrics",
        "PollResult",
        "RequestManager",
        "ResponseCallback",
        "TopicInfo",
        "UnsentRequest",
        "installed_plugins",
    }
    for name in asyncconsumer.plugins.__all__:
        assert hasattr(asyncconsumer.plugins, name)


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
