"""benchmarks/bench_consume.py's parent-side arithmetic and report: the arrow client's counting helpers, issue 22's
target lines and the decoder note. Synthetic runs only: nothing here starts a broker or a child."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.extras import requires_extra

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"

pa = requires_extra("arrow", "pyarrow")


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import bench_consume

        yield bench_consume
    finally:
        sys.path.remove(str(BENCHMARKS))


# --- the arrow child's counting ------------------------------------------------------------------------------


VALUES = [b"ab", None, b"cde", b"", b"wxyz"]


@pytest.mark.parametrize(
    "column",
    [
        pa.array(VALUES, pa.binary()),
        pa.array(VALUES, pa.binary()).slice(1, 3),
        pa.array(VALUES, pa.binary()).slice(4),
        pa.array(VALUES, pa.large_binary()).slice(2),
        pa.chunked_array([pa.array(VALUES, pa.binary()), pa.array(VALUES, pa.binary()).slice(2, 1)]),
        pa.chunked_array([], pa.binary()),
        pa.array([None, None], pa.binary()),
    ],
    ids=["whole", "slice-middle", "slice-tail", "large-binary", "chunked", "empty", "all-null"],
)
def test_value_bytes_of_sums_the_value_lengths_as_python_would(bench: ModuleType, column: Any) -> None:
    expected = sum(len(v) for v in column.to_pylist() if v is not None)
    assert bench.value_bytes_of(column) == expected


def test_partition_runs_gives_each_run_s_first_and_last_offset_and_length(bench: ModuleType) -> None:
    requires_extra("bench", "numpy")  # partition_runs reads the columns with numpy
    partitions = pa.array([0, 0, 1, 1, 1, 0, 2], pa.int32())
    offsets = pa.array([5, 6, 0, 1, 2, 7, 9], pa.int64())
    assert bench.partition_runs(partitions, offsets) == [(0, 5, 6, 2), (1, 0, 2, 3), (0, 7, 7, 1), (2, 9, 9, 1)]
    assert bench.partition_runs(pa.array([], pa.int32()), pa.array([], pa.int64())) == []


def test_partition_runs_feed_the_contiguity_check_that_catches_a_gap(bench: ModuleType) -> None:
    requires_extra("bench", "numpy")  # partition_runs reads the columns with numpy
    expected: dict[int, int] = {}
    for run in bench.partition_runs(pa.array([0, 0, 1], pa.int32()), pa.array([0, 1, 0], pa.int64())):
        bench._check_contiguous(expected, *run)
    assert expected == {0: 2, 1: 1}
    gap = bench.partition_runs(pa.array([0, 0], pa.int32()), pa.array([3, 4], pa.int64()))
    with pytest.raises(RuntimeError, match=r"partition 0: got offsets 3\.\.4"):
        bench._check_contiguous(expected, *gap[0])


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed: nothing to import")
def test_the_arrow_client_s_counting_does_not_import_pandas() -> None:
    # A fresh interpreter (the session may have pandas already): pyarrow's to_numpy and pa.array(list) import it.
    code = (  # arrays built from buffers: pa.array(list) would import pandas itself
        "import struct, sys, pyarrow as pa\n"
        "import bench_consume as b\n"
        "def fixed(kind, fmt, values):\n"
        "    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(struct.pack(fmt, *values))])\n"
        "p = fixed(pa.int32(), '<3i', [0, 0, 1]).slice(1)\n"
        "o = fixed(pa.int64(), '<3q', [4, 5, 0]).slice(1)\n"
        "offsets = pa.py_buffer(struct.pack('<3i', 0, 2, 2))\n"
        "v = pa.Array.from_buffers(pa.binary(), 2, [None, offsets, pa.py_buffer(b'ab')])\n"
        "print(b.partition_runs(p, o), b.value_bytes_of(v), 'pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=BENCHMARKS)
    assert done.stdout.strip() == "[(0, 5, 5, 1), (1, 0, 0, 1)] 2 False"


def test_the_arrow_client_is_a_default_client_with_its_own_colour(bench: ModuleType) -> None:
    assert "asyncconsumer-arrow" in bench.default_clients("tansu", java_ok=False)
    assert set(bench.ALL_CLIENTS) <= set(bench._CLIENT_COLOURS)
    assert bench.ARROW_MAX_RECORDS >= bench.POLL_MAX_RECORDS


# --- targets and the report ----------------------------------------------------------------------------------


def _run(client: str, records: int, size: int, wall_s: float, *, cpu_s: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {
        "client": client,
        "records": records,
        "value_bytes": 0 if client == "raw" else records * size,
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "first_record_s": extra.pop("first_record_s", 0.01),
        "first_batch_records": extra.pop("first_batch_records", 0),
        "peak_rss_mb": extra.pop("peak_rss_mb", 60.0),
        "broker_cpu_s": 0.1,
        "other_cpu_cores": 0.0,
        **extra,
    }


def _report(
    runs: dict[str, list[dict[str, Any]]],
    *,
    name: str = "small",
    records: int = 5_000_000,
    size: int = 100,
    **info: Any,
) -> dict[str, Any]:
    machine = {"cpus": 2, "cpu_model": "cpu", "platform": "linux", "python": "3.11", **info}
    entry = {"records": records, "value_size": size, "partitions": 4, "produce_s": 1.0, "runs": runs}
    return {"machine": machine, "command": None, "workloads": {name: entry}}


def _small_runs(arrow_wall_s: float, decoder: str = "c", peak_rss_mb: float = 55) -> dict[str, list[dict[str, Any]]]:
    n = 5_000_000
    return {
        # 2 M records/s at 0.6 CPU-s per M records
        "asyncconsumer": [_run("asyncconsumer", n, 100, 2.5, cpu_s=3.0, decoder=decoder, peak_rss_mb=peak_rss_mb)],
        "asyncconsumer-arrow": [
            _run("asyncconsumer-arrow", n, 100, arrow_wall_s, cpu_s=1.0, decoder=decoder, peak_rss_mb=80)
        ],
        "java-warm": [_run("java-warm", n, 100, 2.0, cpu_s=2.0, peak_rss_mb=400)],  # 2.5 M/s, 0.4 CPU-s per M
        "java-async-warm": [_run("java-async-warm", n, 100, 2.5, cpu_s=3.0, peak_rss_mb=330)],  # 2 M/s, 0.6
        "raw": [_run("raw", n, 100, 1.0)],  # 5 M records/s
    }


def _target_line(text: str, what: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("- target") and what in line)


def test_targets_on_small_say_met_or_not_with_the_ratio_and_margin(bench: ModuleType) -> None:
    report = _report(_small_runs(arrow_wall_s=1.0 / 0.95))  # 4.75 M/s: 0.95x raw
    text = bench.markdown(report, bench.summaries_of(report))
    arrow = _target_line(text, "asyncconsumer-arrow / raw")
    assert "= 0.95x" in arrow
    assert ">= 0.90x: **met** (+6%)" in arrow
    classic = _target_line(text, "poll vs a warm Java (classic): asyncconsumer / java-warm records/s after 1st")
    # the rates once records flow: 5M in 2.49 s against 5M in 1.99 s
    assert "= 0.80x (2.008 M / 2.513 M), wanted >= 1.00x: **not met** (-20%)" in classic
    consumer = _target_line(text, "poll vs a warm Java (consumer): asyncconsumer / java-async-warm records/s after")
    assert "= 1.00x" in consumer and "**met**" in consumer
    cpu = _target_line(text, "asyncconsumer / java-warm CPU-s per M records")
    assert "= 1.50x (0.600 / 0.400), wanted <= 1.00x: **not met** (+50%)" in cpu
    assert "whole run" not in cpu
    assert "**met**" in _target_line(text, "asyncconsumer / java-async-warm CPU-s per M records")
    assert "- target: poll's peak RSS <= 60 MB: 55 MB, **met**" in text
    assert "- CPU-s per million records: asyncconsumer 0.60, asyncconsumer-arrow 0.20" in text
    assert "- peak RSS MB: asyncconsumer 55, asyncconsumer-arrow 80" in text


def test_a_missed_target_says_so(bench: ModuleType) -> None:
    report = _report(_small_runs(arrow_wall_s=2.5, peak_rss_mb=63))  # 2 M/s: 0.4x raw
    summary = bench.summaries_of(report)["small"]
    (arrow,) = [
        t
        for t in bench.target_results("small", report["workloads"]["small"], summary)
        if t["target"].client == "asyncconsumer-arrow"
    ]
    assert arrow["ratio"] == pytest.approx(0.4)
    assert not arrow["met"]
    text = bench.markdown(report, {"small": summary})
    assert ">= 0.90x: **not met** (-56%)" in text
    assert "- target: poll's peak RSS <= 60 MB: 63 MB, **not met**" in text


def test_the_large_targets_are_poll_at_1_2x_tuned_librdkafka_once_it_flows_and_arrow_at_0_9x_raw(
    bench: ModuleType,
) -> None:
    n = 1_000_000
    runs = {
        "asyncconsumer": [_run("asyncconsumer", n, 1000, 1.0, first_record_s=0.0)],  # 1 M/s
        "asyncconsumer-arrow": [_run("asyncconsumer-arrow", n, 1000, 1.0)],
        # librdkafka: 0.55 s before its first record, then 0.8 M/s: 1.25x once it flows, 1.8x over the whole run
        "confluent-tuned": [_run("confluent-tuned", n, 1000, 1.8, first_record_s=0.55)],
        "raw": [_run("raw", n, 1000, 0.9)],
    }
    report = _report(runs, name="large", records=n, size=1000)
    results = bench.target_results("large", report["workloads"]["large"], bench.summaries_of(report)["large"])
    by_reference = {t["target"].reference: t for t in results}
    assert by_reference["confluent-tuned"]["target"].bound == 1.2
    assert by_reference["confluent-tuned"]["ratio"] == pytest.approx(1.25)
    assert by_reference["confluent-tuned"]["whole_run_ratio"] == pytest.approx(1.8)
    assert by_reference["confluent-tuned"]["met"]
    assert by_reference["raw"]["ratio"] == pytest.approx(0.9)
    assert by_reference["raw"]["met"]


def test_targets_need_both_clients_and_flag_another_shape_or_the_python_decoder(bench: ModuleType) -> None:
    runs = _small_runs(arrow_wall_s=0.25, decoder="python")
    runs = {c: [{**r, "records": r["records"] // 10, "wall_s": r["wall_s"] / 10} for r in rs] for c, rs in runs.items()}
    del runs["java-warm"], runs["java-async-warm"]
    report = _report(runs, records=500_000)
    for r in runs["asyncconsumer-arrow"] + runs["asyncconsumer"]:
        r["value_bytes"] = r["records"] * 100
    lines = bench.target_lines("small", report["workloads"]["small"], bench.summaries_of(report)["small"])
    targets = [line for line in lines if line.startswith("- target") and "peak RSS" not in line]
    assert len(targets) == 1  # no warm Java: no per-record target line
    assert "pure-Python decoder" in targets[0]
    assert "pandas" not in targets[0]
    runs["asyncconsumer-arrow"][0]["pandas_imported"] = True
    lines = bench.target_lines("small", report["workloads"]["small"], bench.summaries_of(report)["small"])
    assert "pandas was imported during the run" in lines[0]
    assert "another shape than the target's 5,000,000 x 100 B" in targets[0]


@pytest.mark.parametrize(
    ("parent", "children", "expected"),
    [
        ("c", ["c"], "decoder: `c`"),
        ("python", ["python"], "**`python`, the pure-Python fallback**"),
        ("c", ["python"], "**mixed**"),
        ("python", [], "**`python`, the pure-Python fallback**"),
        (None, [], None),
    ],
)
def test_the_header_names_the_decoder_and_never_hides_the_fallback(
    bench: ModuleType, parent: str | None, children: list[str], expected: str | None
) -> None:
    runs = {"asyncconsumer": [_run("asyncconsumer", 10, 100, 1.0, decoder=d) for d in children]}
    info = {} if parent is None else {"decoder": parent}
    note = bench.decoder_note(_report(runs, **info))
    if expected is None:
        assert note is None
    else:
        assert note is not None and expected in note
        assert expected in bench.header(_report(runs, **info))


def test_steady_records_per_s_leaves_out_the_start_and_the_first_batch(bench: ModuleType) -> None:
    derived = bench.derive(_run("x", 1_000, 100, 2.0, first_record_s=1.0, first_batch_records=200), 100)
    assert derived["steady_records_per_s"] == pytest.approx(800.0)
    assert derived["records_per_s"] == pytest.approx(500.0)


def test_peak_rss_and_cpu_say_what_consuming_added_and_the_polling_thread_used_when_recorded(
    bench: ModuleType,
) -> None:
    runs = _small_runs(arrow_wall_s=1.0, peak_rss_mb=63)
    runs["asyncconsumer-arrow"][0]["rss_at_start_mb"] = 71.0
    runs["asyncconsumer-arrow"][0]["main_thread_cpu_s"] = 0.5
    report = _report(runs)
    lines = bench.target_lines("small", report["workloads"]["small"], bench.summaries_of(report)["small"])
    assert "- peak RSS MB: asyncconsumer 63, asyncconsumer-arrow 80 (+9 while consuming)" in lines
    assert (
        "- CPU-s per million records: asyncconsumer 0.60, asyncconsumer-arrow 0.20 (0.10 in the polling thread)"
        in lines
    )


def test_the_meter_splits_the_polling_thread_s_cpu_from_the_process_s(bench: ModuleType) -> None:
    meter = bench.Meter()
    meter.begin()
    deadline = bench.time.process_time() + 0.05
    while bench.time.process_time() < deadline:  # burn CPU in this thread
        pass
    result = meter.result("x", 1, 1)
    assert 0.03 <= result["main_thread_cpu_s"] <= result["cpu_s"] + 0.01


def test_the_sessions_off_and_large_buffer_clients_run_only_when_named(bench: ModuleType) -> None:
    assert "asyncconsumer-nosessions" in bench.ALL_CLIENTS
    assert "asyncconsumer-nosessions" not in bench.default_clients("tansu", java_ok=False)
    assert "asyncconsumer-nosessions" not in bench.default_clients("kafka", java_ok=True)
    assert "asyncconsumer-64m" in bench.ALL_CLIENTS
    assert "asyncconsumer-64m" not in bench.default_clients("kafka", java_ok=True)
