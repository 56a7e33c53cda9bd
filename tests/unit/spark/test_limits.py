"""How much a micro-batch reads and how ranges become Spark tasks, with the numbers Spark's Kafka source gives:
maxOffsetsPerTrigger's share by lag, minOffsetsPerTrigger held back by maxTriggerDelay on a manual clock, and
minPartitions/maxRecordsPerPartition splits."""

from __future__ import annotations

import itertools

from tests.support.extras import requires_extra

requires_extra("spark", "pyspark")  # first: asyncconsumer.spark imports pyspark

from asyncconsumer.records import TopicPartition
from asyncconsumer.spark.limits import Span, TriggerDelay, rate_limit, split

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_max_offsets_per_trigger_is_shared_by_lag_with_spark_rounding() -> None:
    start = {A0: 0, A1: 100, B0: 0}
    latest = {A0: 300, A1: 200, B0: 0}  # lags 300, 100, 0
    assert rate_limit(start, latest, 100) == {A0: 75, A1: 125, B0: 0}
    assert rate_limit(start, latest, 1_000) == latest  # everything fits: the latest offsets, not beyond
    assert rate_limit({A0: 0, A1: 0}, {A0: 3, A1: 3}, 5) == {A0: 2, A1: 2}  # floor: 4 of 5, as Spark
    # a share below one offset is raised to one, so a small partition is never starved (here 9 + 1 + 1 > 10)
    assert rate_limit({A0: 0, A1: 0, B0: 0}, {A0: 1000, A1: 1, B0: 1}, 10) == {A0: 9, A1: 1, B0: 1}
    assert rate_limit({A0: 5}, {A0: 5}, 10) == {A0: 5}  # nothing new


def test_min_offsets_per_trigger_waits_for_enough_offsets_or_for_the_delay() -> None:
    delay = TriggerDelay(min_offsets=10, max_delay_ms=1_000)
    assert delay.admit(5_000, 0)  # the first batch never waits
    assert not delay.admit(5_100, 9)
    assert delay.admit(5_200, 10)  # enough: runs, and the delay restarts here
    assert not delay.admit(6_100, 0)
    assert delay.admit(6_200, 0)  # 1 s since the last batch began: runs whatever it has
    assert not delay.admit(6_300, 3)


def spans(sizes: dict[TopicPartition, int]) -> list[Span]:
    return [Span(tp, 0, size) for tp, size in sizes.items()]


def test_min_partitions_cuts_the_large_ranges_in_proportion() -> None:
    assert split(spans({A0: 100, A1: 10}), min_partitions=2, max_records=None) == spans({A0: 100, A1: 10})
    got = split(spans({A0: 100, A1: 10, B0: 0}), min_partitions=4, max_records=None)
    # A1 (a third of a task's worth) stays whole; the other three tasks go to A0, 33/33/34; B0 is empty
    assert [(s.tp, s.start, s.end) for s in got] == [(A0, 0, 33), (A0, 33, 66), (A0, 66, 100), (A1, 0, 10)]


def test_max_records_per_partition_cuts_first_then_min_partitions() -> None:
    got = split(spans({A0: 10, A1: 3}), min_partitions=None, max_records=4)
    assert [(s.tp, s.start, s.end) for s in got] == [(A0, 0, 3), (A0, 3, 6), (A0, 6, 10), (A1, 0, 3)]
    both = split(spans({A0: 100}), min_partitions=4, max_records=50)  # 2 pieces of 50, then 4 of 25
    assert [(s.start, s.end) for s in both] == [(0, 25), (25, 50), (50, 75), (75, 100)]
    assert all(x.end == y.start for x, y in itertools.pairwise(both))
