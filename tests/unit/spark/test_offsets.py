"""The Spark source's offset planning, without Spark or a broker: checkpoint JSON, maxOffsetsPerTrigger, splitting
ranges for minPartitions, and offsets that vanished (failOnDataLoss)."""

from __future__ import annotations

import itertools

import pytest

from asyncconsumer.records import TopicPartition
from asyncconsumer.spark.offsets import DataLossError, OffsetRange, from_json, limit, plan, to_json

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_checkpoint_json_round_trips_with_string_partition_keys() -> None:
    offsets = {A0: 5, A1: 7, B0: 0}
    assert to_json(offsets) == {"a": {"0": 5, "1": 7}, "b": {"0": 0}}
    assert from_json(to_json(offsets)) == offsets


def test_max_offsets_per_trigger_is_split_by_lag_and_never_exceeded() -> None:
    start = {A0: 0, A1: 100, B0: 0}
    latest = {A0: 300, A1: 200, B0: 0}  # lags 300, 100, 0
    limited = limit(start, latest, 100)
    assert limited == {A0: 75, A1: 125, B0: 0}
    assert sum(limited[tp] - start[tp] for tp in start) == 100
    assert limit(start, latest, 1_000) == latest  # everything fits


def test_max_offsets_per_trigger_rounds_as_spark_kafka_source_does() -> None:
    """Shares are rounded down (the remainder waits for the next batch) except shares below one, rounded up."""
    assert limit({A0: 0, A1: 0}, {A0: 3, A1: 3}, 5) == {A0: 2, A1: 2}  # 2.5 each: 4 in all, not 5
    assert limit({A0: 0, A1: 7}, {A0: 1000, A1: 8}, 10) == {A0: 9, A1: 8}  # 9.99 -> 9, 0.0099 -> 1: 10 in all
    tiny = limit({A0: 0, A1: 0, B0: 0}, {A0: 1, A1: 1, B0: 98}, 4)  # 0.04, 0.04, 3.92 -> 1, 1, 3
    assert tiny == {A0: 1, A1: 1, B0: 3}
    assert limit({A0: 10, A1: 5}, {A0: 10, A1: 4}, 1) == {A0: 10, A1: 4}  # no lag (or a shrunk log): latest


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
