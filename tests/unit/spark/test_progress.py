"""Spark's Kafka source metrics from a progress's ``endOffset`` and ``latestOffset`` (``offsets_behind_latest``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.extras import requires_extra

requires_extra("spark", "pyspark")  # first: asyncconsumer.spark imports pyspark

from asyncconsumer.spark.progress import java_double, offsets_behind_latest


def source(end: Any, latest: Any) -> dict[str, Any]:
    return {"description": "x", "startOffset": None, "endOffset": end, "latestOffset": latest, "metrics": {}}


def test_min_max_and_average_of_latest_less_end_per_partition() -> None:
    progress = source({"t": {"0": 10, "1": 40}, "u": {"0": 5}}, {"t": {"0": 30, "1": 40}, "u": {"0": 8}})
    assert offsets_behind_latest(progress) == {
        "minOffsetsBehindLatest": "0",
        "maxOffsetsBehindLatest": "20",
        "avgOffsetsBehindLatest": repr(23 / 3),
    }


def test_a_partition_the_batch_has_not_seen_counts_from_offset_zero_as_spark_does() -> None:
    progress = source({"t": {"0": 10}}, {"t": {"0": 10, "1": 7}})
    assert offsets_behind_latest(progress) == {
        "minOffsetsBehindLatest": "0",
        "maxOffsetsBehindLatest": "7",
        "avgOffsetsBehindLatest": "3.5",
    }


def test_a_listeners_source_progress_carries_the_offsets_as_json_text() -> None:
    class SourceProgress:  # pyspark.sql.streaming.listener.SourceProgress has these as JSON strings
        endOffset = json.dumps({"t": {"0": 4}})
        latestOffset = json.dumps({"t": {"0": 4}})

    assert offsets_behind_latest(SourceProgress()) == {
        "minOffsetsBehindLatest": "0",
        "maxOffsetsBehindLatest": "0",
        "avgOffsetsBehindLatest": "0.0",
    }


@pytest.mark.parametrize("latest", [None, "null", "None", {}])
def test_nothing_before_the_latest_offset_is_known(latest: Any) -> None:
    assert offsets_behind_latest(source({"t": {"0": 1}}, latest)) == {}
    assert offsets_behind_latest(source(None, {"t": {"0": 1}})) == {}


@pytest.mark.parametrize(
    ("value", "java"),
    [
        (0.0, "0.0"),
        (2.5, "2.5"),
        (7.0, "7.0"),
        (0.001, "0.001"),
        (9999999.5, "9999999.5"),
        (1e7, "1.0E7"),
        (12500000.0, "1.25E7"),
        (123456789.25, "1.2345678925E8"),
        (0.0005, "5.0E-4"),
        (-3e9, "-3.0E9"),
    ],
)
def test_the_average_is_written_as_javas_double_to_string(value: float, java: str) -> None:
    assert java_double(value) == java
