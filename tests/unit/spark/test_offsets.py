"""The Spark source's offset planning, without Spark or a broker: checkpoint JSON, splitting ranges for
minPartitions/maxRecordsPerPartition, offsets that vanished (failOnDataLoss), and starting/ending by timestamp
(with a stand-in for the driver's consumer)."""

from __future__ import annotations

import itertools
from typing import Any, cast

import pytest

from tests.support.extras import requires_extra

requires_extra("spark", "pyspark")  # first: asyncconsumer.spark imports pyspark

from asyncconsumer.errors import ConfigError, UnknownTopicOrPartitionError
from asyncconsumer.records import OffsetAndTimestamp, PartitionInfo, TopicPartition
from asyncconsumer.spark.offsets import (
    DataLossError,
    OffsetRange,
    ending_offsets,
    from_json,
    partitions,
    plan,
    starting_offsets,
    to_json,
)
from asyncconsumer.spark.options import SourceOptions, parse_options

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_checkpoint_json_round_trips_with_string_partition_keys() -> None:
    offsets = {A0: 5, A1: 7, B0: 0}
    assert to_json(offsets) == {"a": {"0": 5, "1": 7}, "b": {"0": 0}}
    assert from_json(to_json(offsets)) == offsets


def test_plan_splits_for_min_partitions_and_reads_new_partitions_from_their_start() -> None:
    ranges = plan({A0: 0}, {A0: 100, A1: 10}, {A0: 0, A1: 0}, fail_on_data_loss=True, min_partitions=4)
    assert OffsetRange("a", 1, 0, 10) in ranges
    a0 = sorted((r.start, r.end) for r in ranges if r.partition == 0)
    assert a0[0][0] == 0 and a0[-1][1] == 100 and len(a0) >= 3
    assert all(x[1] == y[0] for x, y in itertools.pairwise(a0))  # contiguous, no gap, no overlap


def test_plan_cuts_ranges_to_max_records_per_partition() -> None:
    ranges = plan({A0: 0, A1: 0}, {A0: 10, A1: 3}, {}, fail_on_data_loss=True, min_partitions=None,
                  max_records_per_partition=4)  # fmt: skip
    assert ranges == [OffsetRange("a", 0, 0, 3), OffsetRange("a", 0, 3, 6), OffsetRange("a", 0, 6, 10),
                      OffsetRange("a", 1, 0, 3)]  # fmt: skip


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

    def partitions_for(self, topic: str) -> list[PartitionInfo]:
        return self.topics().get(topic, [])

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


def test_a_subscribed_topic_that_does_not_exist_is_an_error_naming_it_not_an_empty_read() -> None:
    consumer = FakeConsumer({"a": 2}, 0, {})
    assert sorted(partitions(consumer, SourceOptions(consumer={}, subscribe=("a",)))) == [A0, A1]  # type: ignore[arg-type]
    with pytest.raises(UnknownTopicOrPartitionError, match="topic\\(s\\) 'b', 'c' do not exist"):
        partitions(consumer, SourceOptions(consumer={}, subscribe=("a", "b", "c")))  # type: ignore[arg-type]


class Offsets:
    """The driver consumer's offset lookups over a fixed log: offsets 0..9, timestamps 100 + 10 * offset."""

    def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, 0)

    def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, 10)

    def offsets_for_times(self, stamps: dict[TopicPartition, int]) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        out: dict[TopicPartition, OffsetAndTimestamp | None] = {}
        for tp, ts in stamps.items():
            offset = max(0, -(-(ts - 100) // 10))
            out[tp] = OffsetAndTimestamp(offset, 100 + 10 * offset) if offset < 10 else None
        return out


def options(streaming: bool = False, **extra: str) -> SourceOptions:
    return parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "a", **extra}, streaming=streaming)


def test_starting_by_timestamp_takes_the_first_offset_at_or_after_it_and_no_match_is_an_error_by_default() -> None:
    tps, log = [A0, A1], cast(Any, Offsets())
    assert starting_offsets(log, tps, options(startingTimestamp="125")) == {A0: 3, A1: 3}
    by_partition = options(startingOffsetsByTimestamp='{"a": {"0": 100, "1": -1}}')
    assert starting_offsets(log, tps, by_partition) == {A0: 0, A1: 10}
    with pytest.raises(ConfigError, match=r"no offset of a-0 .* 500") as caught:  # Spark's default: error
        starting_offsets(log, tps, options(startingTimestamp="500"))
    assert caught.value.key == "startingTimestamp"
    latest = options(startingTimestamp="500", startingOffsetsByTimestampStrategy="LATEST")
    assert starting_offsets(log, tps, latest) == {A0: 10, A1: 10}
    # startingTimestamp wins over startingOffsetsByTimestamp and startingOffsets, as in Spark's source
    both = options(startingTimestamp="100", startingOffsetsByTimestamp='{"a": {"0": 150}}', startingOffsets="earliest")
    assert starting_offsets(log, tps, both) == {A0: 0, A1: 0}


def test_per_partition_timestamps_must_name_exactly_the_partitions_read() -> None:
    with pytest.raises(ConfigError) as caught:
        starting_offsets(cast(Any, Offsets()), [A0, A1], options(startingOffsetsByTimestamp='{"a": {"0": 100}}'))
    assert caught.value.key == "startingOffsetsByTimestamp"


def test_ending_by_timestamp_ends_before_the_first_record_at_or_after_it_or_at_the_latest() -> None:
    tps, log = [A0, A1], cast(Any, Offsets())
    assert ending_offsets(log, tps, options(endingTimestamp="150")) == {A0: 5, A1: 5}
    assert ending_offsets(log, tps, options(endingTimestamp="999")) == {A0: 10, A1: 10}
    per = options(endingOffsetsByTimestamp='{"a": {"0": 120, "1": 999}}')
    assert ending_offsets(log, tps, per) == {A0: 2, A1: 10}
    assert ending_offsets(log, tps, options(endingOffsets='{"a": {"0": 4, "1": -1}}')) == {A0: 4, A1: 10}
