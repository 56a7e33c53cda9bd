"""``groups reset-offsets``' plan (``tools/_reset.py``) on literal offsets: each option as Kafka's tool works it out
(into the log's range, a shift without a committed offset refused, a time with no record at or after it going to
the end), and the times and durations it reads."""

from __future__ import annotations

import pytest

from asyncconsumer.records import TopicPartition
from asyncconsumer.tools._reset import ResetError, ResetSpec, parse_datetime_ms, parse_duration_back_ms, plan

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
EARLIEST = {T0: 2, T1: 0}
LATEST = {T0: 10, T1: 5}
COMMITTED = {T0: 4}


@pytest.mark.parametrize(
    ("spec", "found", "expected"),
    [
        (ResetSpec("earliest"), None, {T0: 2, T1: 0}),
        (ResetSpec("latest"), None, {T0: 10, T1: 5}),
        (ResetSpec("offset", 3), None, {T0: 3, T1: 3}),
        (ResetSpec("offset", 1), None, {T0: 2, T1: 1}),  # below the log start: the start
        (ResetSpec("offset", 99), None, {T0: 10, T1: 5}),  # past the end: the end
        (ResetSpec("current"), None, {T0: 4, T1: 5}),  # none committed: the end
        (ResetSpec("time", 1_000), {T0: 7, T1: None}, {T0: 7, T1: 5}),  # every record older: the end
    ],
)
def test_each_option_moves_each_partition_as_kafkas_tool(
    spec: ResetSpec, found: dict[TopicPartition, int | None] | None, expected: dict[TopicPartition, int]
) -> None:
    assert plan(spec, [T1, T0], EARLIEST, LATEST, COMMITTED, found) == expected


def test_a_shift_stays_in_the_log_and_needs_a_committed_offset() -> None:
    assert plan(ResetSpec("shift", -5), [T0], EARLIEST, LATEST, COMMITTED) == {T0: 2}
    assert plan(ResetSpec("shift", 3), [T0], EARLIEST, LATEST, COMMITTED) == {T0: 7}
    assert plan(ResetSpec("shift", 30), [T0], EARLIEST, LATEST, COMMITTED) == {T0: 10}
    with pytest.raises(ResetError, match="cannot shift the offset of t-1: the group has no committed offset"):
        plan(ResetSpec("shift", 1), [T0, T1], EARLIEST, LATEST, COMMITTED)


def test_times_read_as_kafkas_tool_reads_them_and_bad_ones_are_named() -> None:
    assert parse_datetime_ms("2024-01-02T03:04:05.678") == 1_704_164_645_678  # no zone: UTC
    assert parse_datetime_ms("2024-01-02T04:04:05.678+01:00") == 1_704_164_645_678
    assert parse_datetime_ms("2024-01-02T03:04:05.678Z") == 1_704_164_645_678
    with pytest.raises(ResetError, match="--to-datetime '2024-01-02': not a date and time"):
        parse_datetime_ms("2024-01-02")
    with pytest.raises(ResetError, match="--to-datetime 'soon'"):
        parse_datetime_ms("soon")
    assert parse_duration_back_ms("PT1H", 10_000_000) == 10_000_000 - 3_600_000
    with pytest.raises(ResetError, match="--by-duration 'P1X'"):
        parse_duration_back_ms("P1X", 0)
    assert ResetSpec("time", 5).lookup() == 5 and ResetSpec("latest").lookup() is None
