"""The Spark source's options and offset planning, without Spark or a broker."""

from __future__ import annotations

import itertools

import pytest

from asyncconsumer.errors import ConfigError
from asyncconsumer.records import TopicPartition
from asyncconsumer.spark.offsets import DataLossError, OffsetRange, from_json, limit, plan, to_json
from asyncconsumer.spark.options import parse_options

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
BASE = {"kafka.bootstrap.servers": "h:1"}


def test_checkpoint_json_round_trips_with_string_partition_keys() -> None:
    offsets = {A0: 5, A1: 7, B0: 0}
    assert to_json(offsets) == {"a": {"0": 5, "1": 7}, "b": {"0": 0}}
    assert from_json(to_json(offsets)) == offsets


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


def test_max_offsets_per_trigger_is_split_by_lag_and_never_exceeded() -> None:
    start = {A0: 0, A1: 100, B0: 0}
    latest = {A0: 300, A1: 200, B0: 0}  # lags 300, 100, 0
    limited = limit(start, latest, 100)
    assert limited == {A0: 75, A1: 125, B0: 0}
    assert sum(limited[tp] - start[tp] for tp in start) == 100
    assert limit(start, latest, 1_000) == latest  # everything fits
    odd = limit({A0: 0, A1: 0}, {A0: 3, A1: 3}, 5)  # the rounding remainder is handed out, not lost
    assert sum(odd.values()) == 5 and all(odd[tp] <= 3 for tp in odd)


def test_plan_splits_for_min_partitions_and_reads_new_partitions_from_their_start() -> None:
    ranges = plan({A0: 0}, {A0: 100, A1: 10}, {A0: 0, A1: 0}, fail_on_data_loss=True, min_partitions=4)
    assert OffsetRange("a", 1, 0, 10) in ranges
    a0 = sorted((r.start, r.end) for r in ranges if r.partition == 0)
    assert a0[0][0] == 0 and a0[-1][1] == 100 and len(a0) >= 3
    assert all(x[1] == y[0] for x, y in itertools.pairwise(a0))  # contiguous, no gap, no overlap


def test_vanished_offsets_raise_or_are_skipped_as_fail_on_data_loss_says() -> None:
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        plan({A0: 5}, {A0: 50}, {A0: 20}, fail_on_data_loss=True, min_partitions=None)
    assert plan({A0: 5}, {A0: 50}, {A0: 20}, fail_on_data_loss=False, min_partitions=None) == [
        OffsetRange("a", 0, 20, 50)
    ]
    with pytest.raises(DataLossError):  # the log is now shorter than the checkpoint: topic recreated
        plan({A0: 40}, {A0: 3}, {A0: 0}, fail_on_data_loss=True, min_partitions=None)
    assert plan({A0: 40}, {A0: 3}, {A0: 0}, fail_on_data_loss=False, min_partitions=None) == [OffsetRange("a", 0, 0, 3)]
