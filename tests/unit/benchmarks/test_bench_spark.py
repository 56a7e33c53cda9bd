"""benchmarks/bench_spark.py's parent-side logic: process-tree CPU from /proc stat lines, the shapes and variants
it is given, the pairing of our source with Spark's Kafka source in the summary and its tables, and old reports.
Synthetic data only: nothing here starts Spark or a broker."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import bench_spark

        yield bench_spark
    finally:
        sys.path.remove(str(BENCHMARKS))


def stat_line(pid: int, comm: str, ppid: int, utime: int, stime: int, cutime: int, cstime: int) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    return f"{pid} ({comm}) S {ppid} 1 1 0 -1 4194304 10 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0 5"


def test_parse_stat_sums_own_and_reaped_children_time(bench: ModuleType) -> None:
    assert bench.parse_stat(stat_line(42, "java", 7, 100, 20, 3, 4)) == (42, 7, 127)


def test_parse_stat_survives_a_command_name_with_spaces_and_parentheses(bench: ModuleType) -> None:
    assert bench.parse_stat(stat_line(9, "py (worker) 2", 42, 5, 1, 0, 0)) == (9, 42, 6)


def test_tree_ticks_counts_the_root_and_every_descendant_only(bench: ModuleType) -> None:
    stats = {
        42: (7, 100),  # the JVM
        50: (42, 10),  # a Python daemon
        51: (50, 5),  # its forked worker
        60: (7, 1000),  # the broker: a sibling, not counted
        61: (60, 1),
    }
    assert bench.tree_ticks(stats, 42) == 115
    assert bench.tree_ticks(stats, 50) == 15
    assert bench.tree_ticks(stats, 99) == 0  # gone


def test_tree_cpu_of_this_process_grows_with_work(bench: ModuleType) -> None:
    before = bench.tree_cpu_s(os.getpid())
    assert before is not None
    deadline = time.process_time() + 0.1
    while time.process_time() < deadline:
        pass
    after = bench.tree_cpu_s(os.getpid())
    assert after is not None and after - before >= 0.05


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1mx100,200kx1000", [(1_000_000, 100), (200_000, 1_000)]),
        ("20000x1024", [(20_000, 1024)]),
        (" 5kX10 , ", [(5_000, 10)]),
    ],
)
def test_parse_shapes(bench: ModuleType, text: str, expected: list[tuple[int, int]]) -> None:
    assert bench.parse_shapes(text, "tansu", 1, 1) == expected


def test_parse_shapes_defaults_by_broker(bench: ModuleType) -> None:
    assert bench.parse_shapes(None, "kafka", 7, 8) == [(1_000_000, 100), (200_000, 1_000)]
    assert bench.parse_shapes(None, "tansu", 7, 8) == [(7, 8)]


@pytest.mark.parametrize("text", ["100", "x100", "1mx", "1mx0", "tenx5"])
def test_parse_shapes_rejects_what_is_not_records_x_bytes(bench: ModuleType, text: str) -> None:
    with pytest.raises(ValueError, match="--shapes"):
        bench.parse_shapes(text, "tansu", 1, 1)


def test_parse_variants(bench: ModuleType) -> None:
    assert bench.parse_variants(None, "kafka") == list(bench.DEFAULT_VARIANTS["kafka"])
    assert bench.parse_variants("kafka-count, spark-arrow", "tansu") == ["kafka-count", "spark-arrow"]
    with pytest.raises(ValueError, match="kafka-nope"):
        bench.parse_variants("kafka-nope", "kafka")


def test_every_pair_is_ours_against_sparks_source(bench: ModuleType) -> None:
    for ours, theirs in bench.PAIRS.items():
        assert ours in bench.OURS and theirs in bench.SPARKS


def test_spark_source_options(bench: ModuleType) -> None:
    options = bench.source_options("b:9092", "t", 1000)
    assert bench.spark_source("kafka-agg", options) == (
        "kafka",
        {"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "startingOffsets": "earliest"},
    )
    fmt, ours = bench.spark_source("spark-tuples", options)
    assert fmt == "asyncconsumer" and ours["useArrow"] == "false" and ours["arrowBatchRows"] == "1000"
    assert bench.spark_source("agg-arrow", options)[1]["useArrow"] == "true"


def run(rows: int, wall: float, tree: float | None = None, rss: int | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"rows": rows, "wall_s": wall, "client_cpu_s": wall, "broker_cpu_s": 0.1}
    if tree is not None:
        result |= {"spark_tree_cpu_s": tree, "driver_py_cpu_s": 0.5, "jvm_peak_rss": rss, "driver_py_peak_rss": rss}
        result |= {"others_cpu_s": 0.0, "interval_s": wall}
    return result


RUNS = {
    "spark-arrow": [run(1000, 1.0, 2.0, 100 << 20), run(1000, 0.5, 1.0, 300 << 20), run(1000, 2.0, 3.0, 200 << 20)],
    "kafka-count": [run(1000, 1.0, 2.5, 100 << 20)] * 3,
    "stream-arrow": [run(1000, 4.0, 1.0, 100 << 20)],
    "consumer": [run(1000, 0.25)],
}


def test_summarise_pairs_ours_with_sparks_source(bench: ModuleType) -> None:
    summary = bench.summarise(RUNS)
    assert summary["spark-arrow"]["rows_per_s"] == 1000.0  # median of 1000, 2000, 500
    assert summary["spark-arrow"]["ratio_to_spark_kafka"] == 1.0
    assert summary["spark-arrow"]["ratio_to_consumer"] == 0.25
    assert summary["spark-arrow"]["spark_cpu_s"] == 2.5  # median of tree + driver: 2.5, 1.5, 3.5
    assert summary["spark-arrow"]["jvm_peak_rss"] == 200 << 20
    assert "ratio_to_spark_kafka" not in summary["stream-arrow"]  # kafka-stream did not run
    assert summary["consumer"]["spark_cpu_s"] is None


def test_pair_table_and_verdict(bench: ModuleType) -> None:
    summary = bench.summarise(RUNS)
    lines = bench.pair_table(summary).splitlines()
    assert len(lines) == 3  # header, rule, the one complete pair
    assert "| 1.00x | yes |" in lines[2] and "| 2.50 / 3.00 |" in lines[2] and "| 200 / 100 |" in lines[2]
    assert bench.pair_verdict(summary, "w") == "w: ours >= 1.0x Spark's Kafka source: MET (batch `count()` 1.00x)"
    slower = bench.summarise({**RUNS, "kafka-count": [run(1000, 0.5, 1.0, 1)]})
    assert "NOT MET by 1 of 1" in (bench.pair_verdict(slower, "w") or "")
    assert "**no**" in bench.pair_table(slower)
    assert bench.pair_verdict(bench.summarise({"consumer": RUNS["consumer"]}), "w") is None


def test_print_report_reads_a_report_from_before_shapes(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    old = {
        "machine": {"cpus": 2, "cpu_model": "x", "python": "3.11", "code": "abc"},
        "args": {"reps": 1},
        "workload": {"records": 1000, "value_size": 100, "partitions": 4},
        "spark": {"master": "local[2]", "startup_s": 5.0, "cold_s": {"spark-arrow": 6.0}},
        "target_rows_per_s": 300_000,
        "runs": {"spark-arrow": [run(1000, 1.0)], "consumer": [run(1000, 0.25) | {"poll_wall_s": 0.2}]},
    }
    bench.print_report(old)
    out = capsys.readouterr().out
    assert "### 1,000 x 100 B in 4 partitions" in out
    assert "Ours against Spark's Kafka source" not in out
    assert "5 k rows/s" in out  # the consumer from its first poll


def test_peak_rss_samples_this_process(bench: ModuleType) -> None:
    with bench.peak_rss({"me": "self", "nobody": None}) as peaks:
        pass
    assert peaks["me"] is not None and peaks["me"] > 1 << 20
    assert peaks["nobody"] is None
