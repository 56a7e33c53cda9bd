"""The Spark source's offset planning, without Spark or a broker: checkpoint JSON, maxOffsetsPerTrigger, splitting
ranges for minPartitions, and offsets that vanished (failOnDataLoss)."""

from __future__ import annotations

import itertools

import pytest

from asyncconsumer.errors import ConfigError
from asyncconsumer.records import OffsetAndTimestamp, PartitionInfo, TopicPartition
from asyncconsumer.spark.offsets import (
    DataLossError,
    OffsetRange,
    by_timestamp,
    from_json,
    limit,
    partitions,
    plan,
    to_json,
)
from asyncconsumer.spark.options import SourceOptions

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


def test_partitions_gone_or_added_past_zero_count_as_data_loss_as_in_spark() -> None:
    with pytest.raises(DataLossError, match="a-1"):  # a-1 is in the checkpoint but no longer in the metadata
        plan({A0: 5, A1: 5}, {A0: 9}, {A0: 0}, fail_on_data_loss=True, min_partitions=None)
    assert plan({A0: 5, A1: 5}, {A0: 9}, {A0: 0}, fail_on_data_loss=False, min_partitions=None) == [
        OffsetRange("a", 0, 5, 9)
    ]
    with pytest.raises(DataLossError, match="b-0"):  # b-0 is new and its log no longer starts at 0
        plan({A0: 5}, {A0: 9, B0: 30}, {A0: 0, B0: 20}, fail_on_data_loss=True, min_partitions=None)
    assert plan({A0: 5}, {A0: 9, B0: 30}, {A0: 0, B0: 20}, fail_on_data_loss=False, min_partitions=None) == [
        OffsetRange("a", 0, 5, 9),
        OffsetRange("b", 0, 20, 30),
    ]
    assert plan({A0: 5}, {A0: 9, B0: 30}, {A0: 0, B0: 0}, fail_on_data_loss=True, min_partitions=None)[-1] == (
        OffsetRange("b", 0, 0, 30)
    )


class FakeConsumer:
    """What the planning functions ask of the driver's consumer: metadata, log ends, offsets for times."""

    def __init__(self, topics: dict[str, int], latest: int, at: dict[TopicPartition, int]) -> None:
        self._topics, self._latest, self._at = topics, latest, at

    def topics(self) -> dict[str, list[PartitionInfo]]:
        return {t: [PartitionInfo(t, p, 1, (1,), (1,)) for p in range(n)] for t, n in self._topics.items()}

    def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, self._latest)

    def offsets_for_times(self, stamps: dict[TopicPartition, int]) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return {tp: OffsetAndTimestamp(self._at[tp], ts) if tp in self._at else None for tp, ts in stamps.items()}


def test_subscribe_pattern_matches_anywhere_in_a_name_and_never_kafka_internal_topics() -> None:
    consumer = FakeConsumer({"a": 2, "xab": 1, "b": 1, "__consumer_offsets": 3}, 0, {})
    options = SourceOptions(consumer={}, pattern="a|_")
    assert sorted(partitions(consumer, options)) == [A0, A1, TopicPartition("xab", 0)]  # type: ignore[arg-type]
    anchored = SourceOptions(consumer={}, pattern="^a$")
    assert sorted(partitions(consumer, anchored)) == [A0, A1]  # type: ignore[arg-type]


def test_by_timestamp_follows_the_strategy_when_no_offset_matches() -> None:
    consumer = FakeConsumer({}, 50, {A0: 7})
    stamps = {A0: 100, A1: 200, B0: None}  # A1: nothing at or after 200; B0: left out of the option
    got = by_timestamp(consumer, stamps, name="startingTimestamp", strategy="latest")  # type: ignore[arg-type]
    assert got == {A0: 7, A1: 50, B0: 50}
    with pytest.raises(ConfigError, match=r"a-1.*200.*no offset matched") as caught:
        by_timestamp(consumer, stamps, name="startingOffsetsByTimestamp", strategy="error")  # type: ignore[arg-type]
    assert caught.value.key == "startingOffsetsByTimestamp"
