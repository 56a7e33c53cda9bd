"""The stream and batch readers' driver side without Spark or a broker: a stand-in consumer answers offset lookups.
Offset lookups are retried as fetchOffset.* say; minOffsetsPerTrigger is kept by latestOffset itself (the Python
data source API hands it one limit, not Spark's composite one)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.extras import requires_extra

requires_extra("spark", "pyspark")  # first: asyncconsumer.spark imports pyspark

from pyspark.sql.datasource import InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from asyncconsumer._clock import ManualClock
from asyncconsumer.errors import ConfigError, KafkaTimeoutError
from asyncconsumer.records import PartitionInfo, TopicPartition
from asyncconsumer.spark.options import SourceOptions, parse_options
from asyncconsumer.spark.source import KafkaBatchReader, KafkaStreamReader

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Log:
    """Topic t with two partitions; ``end`` is what ListOffsets LATEST answers; ``failures`` lookups fail first."""

    def __init__(self, end: dict[TopicPartition, int], failures: int = 0) -> None:
        self.end = end
        self.failures = failures
        self.calls = 0

    def partitions_for(self, topic: str) -> list[Any]:
        return [PartitionInfo(topic, 0, 1, (1,), (1,)), PartitionInfo(topic, 1, 1, (1,), (1,))]

    def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, 0)

    def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise KafkaTimeoutError("ListOffsets timed out")
        return {tp: self.end[tp] for tp in tps}

    def close(self) -> None:
        pass


def stream(log: Log, **extra: str) -> KafkaStreamReader:
    options = parse_options(
        {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "fetchOffset.retryIntervalMs": "0", **extra},
        streaming=True,
    )
    reader = KafkaStreamReader(options)
    reader._consumer = log  # type: ignore[assignment]
    reader.consumer = lambda: log  # type: ignore[method-assign]
    return reader


def test_offset_lookups_are_retried_fetch_offset_num_retries_times_in_all() -> None:
    log = Log({T0: 5, T1: 5}, failures=2)
    assert stream(log).latestOffset({"t": {"0": 0, "1": 0}}, ReadAllAvailable()) == {"t": {"0": 5, "1": 5}}
    assert log.calls == 3
    log = Log({T0: 5, T1: 5}, failures=3)
    with pytest.raises(KafkaTimeoutError):
        stream(log).latestOffset({"t": {"0": 0, "1": 0}}, ReadAllAvailable())
    assert log.calls == 3
    log = Log({T0: 5, T1: 5}, failures=1)
    with pytest.raises(KafkaTimeoutError):
        stream(log, **{"fetchOffset.numRetries": "1"}).latestOffset({"t": {"0": 0, "1": 0}}, ReadAllAvailable())


def test_a_bad_option_found_while_planning_is_not_retried() -> None:
    options = parse_options(
        {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "startingOffsetsByTimestamp": '{"t": {"0": 5}}'},
        streaming=False,
    )
    reader = KafkaBatchReader(options)
    log = Log({T0: 5, T1: 5})
    reader.consumer = lambda: log  # type: ignore[method-assign]
    with pytest.raises(ConfigError) as caught:
        reader.partitions()
    assert caught.value.key == "startingOffsetsByTimestamp"


def test_a_latest_offset_behind_the_known_one_is_asked_again() -> None:
    log = Log({T0: 3, T1: 9})
    answers = iter([{T0: 3, T1: 9}, {T0: 8, T1: 9}])
    log.end_offsets = lambda tps: next(answers)  # type: ignore[method-assign]
    assert stream(log).latestOffset({"t": {"0": 7, "1": 0}}, ReadAllAvailable()) == {"t": {"0": 8, "1": 9}}


def test_min_offsets_per_trigger_holds_a_small_batch_back_until_the_delay() -> None:
    log = Log({T0: 10, T1: 10})
    reader = stream(log, minOffsetsPerTrigger="5", maxTriggerDelay="1s", maxOffsetsPerTrigger="8")
    clock = ManualClock(1_000)
    reader._clock = clock  # type: ignore[assignment]
    assert reader.getDefaultReadLimit() == ReadMaxRows(8)  # the maximum travels; the minimum is ours to keep
    first = reader.latestOffset({"t": {"0": 0, "1": 0}}, ReadMaxRows(8))
    assert first == {"t": {"0": 4, "1": 4}}  # the first batch never waits
    start = {"t": {"0": 8, "1": 8}}  # 4 offsets left: below 5
    clock.advance(500)
    assert reader.latestOffset(start, ReadMaxRows(8)) == start  # held back
    clock.advance(500)
    assert reader.latestOffset(start, ReadMaxRows(8)) == {"t": {"0": 10, "1": 10}}  # the delay passed
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 10, "1": 10}}  # Trigger.Once: all
    only_min = stream(log, minOffsetsPerTrigger="5")
    assert only_min.getDefaultReadLimit() == ReadMinRows(5)


def test_available_now_never_holds_a_batch_back() -> None:
    log = Log({T0: 10, T1: 10})
    reader = stream(log, minOffsetsPerTrigger="8", maxOffsetsPerTrigger="8")
    reader.prepareForTriggerAvailableNow()
    assert reader.latestOffset({"t": {"0": 0, "1": 0}}, ReadMaxRows(8)) == {"t": {"0": 4, "1": 4}}
    assert reader.latestOffset({"t": {"0": 4, "1": 4}}, ReadMaxRows(8)) == {"t": {"0": 8, "1": 8}}
    assert reader.latestOffset({"t": {"0": 8, "1": 8}}, ReadMaxRows(8)) == {"t": {"0": 10, "1": 10}}  # 4 < 8: read


def test_the_task_of_an_empty_plan_reads_nothing_and_a_foreign_partition_is_an_error() -> None:
    reader = KafkaBatchReader(SourceOptions(consumer={"bootstrap.servers": "h:1"}))
    assert list(reader.read(InputPartition(None))) == []  # Spark runs one task on InputPartition(None)
    with pytest.raises(TypeError, match="not an offset range"):
        reader.read(InputPartition({"topic": "t"}))
