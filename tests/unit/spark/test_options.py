"""The Spark source's options: parsing, defaults, typed JSON values, and the errors naming a bad option."""

from __future__ import annotations

import pytest

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
        ({"subscribe": "a", "startingTimestamp": "1", "startingOffsetsByTimestamp": "{}"}, "startingTimestamp"),
        ({"subscribe": "a", "kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit"),
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


def test_timestamp_options_with_spark_names_and_defaults() -> None:
    options = parse_options(
        {**BASE, "subscribe": "a", "startingTimestamp": "5", "endingOffsetsByTimestamp": '{"a": {"0": 9}}'},
        streaming=False,
    )
    assert (options.starting_timestamp, options.starting_timestamp_strategy) == (5, "error")  # Spark's default
    assert options.ending_by_timestamp == {"a": {0: 9}}
    latest = parse_options(
        {**BASE, "subscribe": "a", "startingOffsetsByTimestampStrategy": "LATEST", "endingTimestamp": "7"},
        streaming=False,
    )
    assert (latest.starting_timestamp_strategy, latest.ending_timestamp) == ("latest", 7)


@pytest.mark.parametrize(
    ("options", "streaming", "key"),
    [
        ({"startingOffsetsByTimestampStrategy": "earliest"}, False, "startingOffsetsByTimestampStrategy"),
        ({"endingTimestamp": "1"}, True, "endingTimestamp"),
        ({"endingOffsetsByTimestamp": '{"a": {"0": 1}}'}, True, "endingOffsetsByTimestamp"),
        ({"endingTimestamp": "1", "endingOffsetsByTimestamp": "{}"}, False, "endingTimestamp"),
        ({"endingTimestamp": "-1"}, False, "endingTimestamp"),
    ],
)
def test_bad_timestamp_options_name_themselves(options: dict[str, str], streaming: bool, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_options({**BASE, "subscribe": "a", **options}, streaming=streaming)
    assert caught.value.key == key
