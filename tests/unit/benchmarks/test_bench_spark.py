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


# --- several masters: a standalone cluster beside local[2] ----------------------------------------------------


def test_tree_ticks_over_several_roots_counts_a_shared_descendant_once(bench: ModuleType) -> None:
    stats = {
        10: (1, 100),  # the driver's JVM
        20: (1, 7),  # a worker daemon
        21: (20, 50),  # its executor
        22: (21, 5),  # the executor's Python worker
        30: (1, 3),  # the master
        40: (1, 1000),  # the broker
    }
    assert bench.descendants(stats, 20) == {20, 21, 22}
    assert bench.tree_ticks(stats, 10, 20, 30) == 165
    assert bench.tree_ticks(stats, 20, 21) == 62  # 21 is under 20: counted once
    assert bench.tree_ticks(stats, 10, 99) == 100  # a root that is gone adds nothing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local[2]", ["local[2]"]),
        (" local[2] , standalone ", ["local[2]", "standalone"]),
        ("standalone", ["standalone"]),
    ],
)
def test_parse_masters(bench: ModuleType, text: str, expected: list[str]) -> None:
    assert bench.parse_masters(text) == expected


@pytest.mark.parametrize(("text", "message"), [(" , ", "at least one"), ("standalone,local[2],standalone", "twice")])
def test_parse_masters_refuses_none_and_repeats(bench: ModuleType, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bench.parse_masters(text)


def test_cluster_conf_gives_executors_this_interpreter_and_the_tree_under_test(bench: ModuleType) -> None:
    conf = bench.cluster_conf(2, 1, "1g", ["/work/tree", "/extra"])
    assert conf == {
        "spark.cores.max": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(["/work/tree", "/extra"]),
    }
    assert "spark.executorEnv.PYTHONPATH" not in bench.cluster_conf(3, 2, "512m", [])
    assert bench.cluster_conf(3, 2, "512m", [])["spark.cores.max"] == "6"


def test_executor_pythonpath_puts_the_imported_tree_first_once(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = bench.tree_root()
    assert (Path(root) / "asyncconsumer" / "__init__.py").is_file()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, "/elsewhere"]))
    assert bench.executor_pythonpath() == [root, "/elsewhere"]


def leg(master: str, topic: str, scale: float, runs: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """One master's leg over one topic of 1,000 x 100 B; every wall of ``RUNS`` times ``scale``."""
    runs = runs or {
        v: [r | {"wall_s": r["wall_s"] * scale, "poll_wall_s": r["wall_s"]} for r in rs] for v, rs in RUNS.items()
    }
    workload = {"records": 1000, "value_size": 100, "partitions": 4, "topic": topic}
    spark = {"master": master, "master_url": master, "startup_s": 5.0, "cold_s": {}}
    return {"master": master, "spark": spark, "shapes": [{"workload": workload, "runs": runs}]}


def test_master_table_compares_each_pair_with_the_first_master(bench: ModuleType) -> None:
    legs = [leg("local[2]", "t", 1.0), leg("standalone", "t", 2.0)]
    lines = bench.master_table(legs).splitlines()
    assert "ours / ours on local[2]" in lines[0] and "Spark's / Spark's on local[2]" in lines[0]
    rows = [line for line in lines[2:] if "batch `count()`" in line]
    assert rows == [
        "| 1,000 x 100 B | batch `count()` | local[2] | 1 k | 1 k | 1.00x | 1.00x | 1.00x |",
        "| 1,000 x 100 B | batch `count()` | standalone | 0 k | 0 k | 1.00x | 0.50x | 0.50x |",
    ]
    stream = [line for line in lines[2:] if "stream" in line]  # ours ran, Spark's did not
    assert stream[1] == "| 1,000 x 100 B | `availableNow` stream | standalone | 0 k | - | - | 0.50x | - |"
    assert bench.master_table(legs[:1]) == ""


def test_master_table_matches_shapes_by_topic_and_skips_pairs_a_master_lacks(bench: ModuleType) -> None:
    slow_spark = {**RUNS, "kafka-count": [run(1000, 4.0, 1.0, 1)]}
    legs = [leg("local[2]", "t", 1.0), leg("standalone", "t", 1.0, slow_spark), leg("spark://x", "other", 1.0)]
    lines = bench.master_table(legs).splitlines()
    standalone = [line for line in lines if "| standalone |" in line and "count()" in line]
    assert standalone == ["| 1,000 x 100 B | batch `count()` | standalone | 1 k | 0 k | 4.00x | 1.00x | 0.25x |"]
    assert not [line for line in lines if "spark://x" in line]  # another topic: not the same data


def test_legs_of_an_old_report_is_its_single_master(bench: ModuleType) -> None:
    old = {"spark": {"master": "local[2]"}, "shapes": [{"workload": {}, "runs": {}}]}
    assert bench.legs_of(old) == [{"master": "local[2]", "spark": old["spark"], "shapes": old["shapes"]}]
    new = {"legs": [leg("local[2]", "t", 1.0)]}
    assert bench.legs_of(new) is new["legs"]


def test_print_report_names_the_master_of_every_figure(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    cluster_runs = {
        v: [r | {"executor_peak_rss": 300 << 20, "wall_s": r["wall_s"] * 2} for r in rs]
        for v, rs in RUNS.items()
        if v != "consumer"
    }
    standalone = leg("standalone", "t", 2.0, cluster_runs)
    standalone["spark"] |= {
        "master_url": "spark://127.0.0.1:7077",
        "cluster": {"workers": 2, "cores_per_worker": 1, "executor_memory": "1g", "start_s": 9.0},
        "executors_wait_s": 1.5,
    }
    report = {
        "machine": {"cpus": 2, "cpu_model": "x", "python": "3.11", "code": "abc"},
        "args": {"reps": 3},
        "target_rows_per_s": 300_000,
        "legs": [leg("local[2]", "t", 1.0), standalone],
    }
    bench.print_report(report)
    out = capsys.readouterr().out
    assert "### 1,000 x 100 B in 4 partitions, Spark local[2], medians of 3 reps" in out
    assert "### 1,000 x 100 B in 4 partitions, Spark standalone, medians of 3 reps" in out
    assert "Ours against Spark's Kafka source (1,000 x 100 B in 4 partitions, Spark standalone)" in out
    assert "the largest executor JVM's peak, MB (median): spark-arrow 300, kafka-count 300" in out
    assert out.count("largest executor JVM") == 1  # local[2] has no executor of its own
    assert "on each master (local[2], standalone; same topics, same run)" in out
    assert "| 1,000 x 100 B | batch `count()` | standalone | 0 k | 0 k | 1.00x | 0.50x | 0.50x |" in out
    assert "standalone cluster (spark://127.0.0.1:7077): master and 2 workers of 1 core" in out
