"""Configuration: both spellings, and errors that name the key."""

from __future__ import annotations

import pytest

import asyncconsumer
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
    ],
)
def test_bad_config_names_the_key_and_what_is_allowed(kwargs: dict[str, object], key: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs("h:1", **kwargs)
    assert info.value.key == key
    assert text in str(info.value)


@pytest.mark.parametrize("servers", ["", "nohost", "h:notaport", "h:0"])
def test_bad_bootstrap_servers_are_rejected(servers: str) -> None:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_kwargs(servers)
    assert info.value.key == "bootstrap_servers"


def test_missing_bootstrap_servers_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        Consumer()
    with pytest.raises(ConfigError):
        AsyncConsumer(fetch_min_bytes=1)


def test_public_api_is_pinned() -> None:
    assert set(asyncconsumer.__all__) == {
        "AsyncConsumer",
        "ClientClosedError",
        "CommitFailedError",
        "ConfigError",
        "ConsumerRebalanceListener",
        "GroupMetadata",
        "OffsetAndMetadata",
        "PollIntervalExceededError",
        "Consumer",
        "ConsumerConfig",
        "ConsumerRecord",
        "ConsumerRecords",
        "CorruptRecordError",
        "IllegalStateError",
        "InvalidOffsetError",
        "KafkaConnectionError",
        "KafkaError",
        "KafkaTimeoutError",
        "NoOffsetForPartitionError",
        "OffsetAndTimestamp",
        "OffsetOutOfRangeError",
        "PartitionInfo",
        "RecordDeserializationError",
        "TopicPartition",
        "UnknownTopicOrPartitionError",
        "__version__",
    }
    for name in asyncconsumer.__all__:
        assert hasattr(asyncconsumer, name)
