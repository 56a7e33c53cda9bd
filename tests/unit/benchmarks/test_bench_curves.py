"""benchmarks/bench_curves.py's parent-side arithmetic: a point's medians, a curve's series, tables and growth.
Synthetic reports only: nothing here starts a broker or a child."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def curves() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import bench_curves

        yield bench_curves
    finally:
        sys.path.remove(str(BENCHMARKS))


def _point(rates: dict[str, float | None]) -> dict[str, Any]:
    return {
        "failures": [],
        "medians": {"small": {c: {"records_per_s": r, "peak_rss_mb": 40.0} for c, r in rates.items()}},
    }


def _curve(points: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "axis": "partitions",
        "axis_title": "partitions",
        "describe": "test",
        "clients": ["asyncconsumer", "confluent-tuned", "java"],
        "workloads": ["small"],
        "workload_describe": {"small": "1,000 x 100 B"},
        "metrics": ["records_per_s", "peak_rss_mb"],
        "points": points,
    }


def test_medians_of_takes_each_workload_s_per_client_medians(curves: ModuleType) -> None:
    report = {
        "workloads": {
            "small": {"summary": {"asyncconsumer": {"median": {"records_per_s": 5.0}, "min": {}, "max": {}}}},
            "large": {"summary": None},
        }
    }
    assert curves.medians_of(report) == {"small": {"asyncconsumer": {"records_per_s": 5.0}}, "large": {}}


def test_series_orders_points_numerically_and_skips_missing_values(curves: ModuleType) -> None:
    curve = _curve(
        {
            "256": _point({"asyncconsumer": 3e6}),
            "16": _point({"asyncconsumer": 4e6}),
            "1024": _point({"asyncconsumer": None}),
            "1": _point({"asyncconsumer": 5e6}),
        }
    )
    assert curves.series(curve, "small", "asyncconsumer", "records_per_s") == [(1.0, 5e6), (16.0, 4e6), (256.0, 3e6)]
    assert curves.growth(curve, "small", "asyncconsumer", "records_per_s") == pytest.approx(0.6)
    assert curves.growth(curve, "small", "java", "records_per_s") is None


def test_metric_table_gives_poll_s_ratio_to_each_peer_and_a_dash_where_one_is_missing(curves: ModuleType) -> None:
    curve = _curve(
        {
            "4": _point({"asyncconsumer": 4e6, "confluent-tuned": 2e6, "java": 8e6}),
            "1024": _point({"asyncconsumer": 1e6, "confluent-tuned": 2e6}),
        }
    )
    lines = curves.metric_table(curve, "small", "records_per_s").splitlines()
    assert lines[0] == "**records/s, whole run (M)**"
    assert lines[2].startswith("| partitions | poll | librdkafka tuned | Java classic | poll / librdkafka tuned |")
    assert lines[4] == "| 4 | 4.00 | 2.00 | 8.00 | 2.00x | 0.50x |"
    assert lines[5] == "| 1,024 | 1.00 | 2.00 | - | 0.50x | - |"


def test_the_backlog_axis_is_written_in_gigabytes(curves: ModuleType) -> None:
    curve = _curve({"0.5": _point({"asyncconsumer": 1e6}), "2": _point({"asyncconsumer": 1e6})})
    curve["axis"] = curve["axis_title"] = "backlog"
    rows = curves.metric_table(curve, "small", "peak_rss_mb").splitlines()[4:]
    assert [row.split(" | ")[0] for row in rows] == ["| 0.5 GB", "| 2 GB"]


def test_a_point_runs_bench_consume_with_its_shape_and_keeps_going(curves: ModuleType) -> None:
    argv = curves.point_argv(
        bootstrap="127.0.0.1:9092",
        broker="kafka",
        json_path=Path("/tmp/p.json"),
        clients=["asyncconsumer", "raw"],
        workloads=["small"],
        partitions=256,
        records=1000,
        large_records=10,
        reps=2,
    )
    assert argv[1].endswith("bench_consume.py")
    options = dict(zip(argv[2::2], argv[3::2], strict=False))
    assert options["--partitions"] == "256"
    assert options["--clients"] == "asyncconsumer,raw"
    assert options["--bootstrap"] == "127.0.0.1:9092"
    assert "--keep-going" in argv


@pytest.mark.parametrize("text", ["", "0,16", "4,-1"])
def test_points_must_be_positive(curves: ModuleType, text: str) -> None:
    with pytest.raises(ValueError, match="positive"):
        curves.parse_points(text, int)


def test_markdown_names_every_failed_run(curves: ModuleType) -> None:
    point = _point({"asyncconsumer": 1e6})
    point["failures"] = ["FAILED [small rep 1] raw: exit code 1\nstderr..."]
    report = {
        "machine": {"code": "abc1234", "cpus": 2, "cpu_model": "x", "python": "3.11", "broker": "Apache Kafka 4.4.0"},
        "started": "2026-11-27 15:00 UTC",
        "command": ["--reps", "1"],
        "args": {"reps": 1},
        "curves": {"partitions": _curve({"4": point})},
    }
    text = curves.markdown(report)
    assert "## Failed runs" in text
    assert "- FAILED [small rep 1] raw: exit code 1" in text
    assert "stderr" not in text
