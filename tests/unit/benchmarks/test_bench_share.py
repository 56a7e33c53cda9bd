"""benchmarks/bench_share.py's pure parts: its arguments and matrix, ShareConsumerPerformance's output read back, the
group-wide figures of a run, the checks, the medians, the ratios and the targets. Nothing here starts a broker."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import bench_share  # type: ignore[import-not-found,unused-ignore]

        yield bench_share
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_defaults_cover_the_issue_matrix_and_java_perf_is_implicit_only(bench: ModuleType) -> None:
    args = bench.parse_args([])
    assert (args.consumers, args.ack, args.max_poll_records, args.record_locks) == (
        [1, 3],
        ["implicit", "explicit"],
        [500],
        [None],
    )
    assert [(w.name, w.records, w.size) for w in bench.workloads_of(args)] == [
        ("small", 1_000_000, 100),
        ("large", 200_000, 1_000),
    ]
    plan = bench.cases(args)
    assert len(plan) == 2 * 2 * (5 + 4)  # workloads x group sizes x (implicit: 5 clients, explicit: 4)
    assert not [c for c in plan if c.client == "java-perf" and c.ack == "explicit"]


def test_quick_lists_and_overrides(bench: ModuleType) -> None:
    args = bench.parse_args(
        ["--quick", "--workload", "large", "--large-records", "123", "--record-locks", "default,4000"]
    )
    assert [(w.name, w.records, w.size) for w in bench.workloads_of(args)] == [("large", 123, 1_000)]
    assert args.record_locks == [None, 4000]
    assert bench.parse_args(["--max-poll-records", "500,2000"]).max_poll_records == [500, 2000]
    assert bench.parse_args(["--quick"]).records is None


@pytest.mark.parametrize(
    "argv",
    [
        ["--clients", "kafka-python"],
        ["--ack", "auto"],
        ["--max-poll-records", "0"],
        ["--reps", "0"],
        ["--workload", ""],
    ],
)
def test_refuses_bad_arguments(bench: ModuleType, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(argv)


def _ms(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").timestamp() * 1000)


PERF = """start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg, fetch.time.ms
2026-11-27 01:19:27:033, 2026-11-27 01:19:28:244, 0.0001, 0.0001, 0.8258, 1, 1211 for share consumer 1
2026-11-27 01:19:27:029, 2026-11-27 01:19:28:258, 0.0001, 0.0001, 0.8137, 1, 1229 for share consumer 2
2026-11-27 01:19:28:244, 2026-11-27 01:19:28:834, 2.2727, 3.8519, 40389.8305, 23831, 590 for share consumer 1
2026-11-27 01:19:26:711, 2026-11-27 01:19:29:337, 19.0735, 7.2633, 76161.4623, 200000, 2626
"""


def test_perf_output_gives_the_first_record_and_the_totals(bench: ModuleType) -> None:
    perf = bench.parse_perf_output(PERF)
    assert perf["first_record_epoch_ms"] == _ms("2026-11-27 01:19:28.244")  # the earliest first line's end
    assert (perf["start_epoch_ms"], perf["end_epoch_ms"]) == (
        _ms("2026-11-27 01:19:26.711"),
        _ms("2026-11-27 01:19:29.337"),
    )
    assert (perf["records"], perf["own_records_per_s"], perf["fetch_time_ms"], perf["threads_seen"]) == (
        200_000,
        76161.4623,
        2626,
        2,
    )
    with pytest.raises(ValueError):
        bench.parse_perf_output(PERF.splitlines()[0])


def _member(first: float, last: float, confirmed: float, accepted: int = 500, polled: int = 500) -> dict[str, Any]:
    return {
        "first_record_epoch_ms": first,
        "last_record_epoch_ms": last,
        "last_confirmed_epoch_ms": confirmed,
        "accepted": accepted,
        "polled": polled,
    }


def test_group_figures_run_from_the_first_record_to_the_last_accepted(bench: ModuleType) -> None:
    members = [_member(1_000, 1_400, 1_500), _member(1_200, 1_900, 2_000), _member(-1, -1, -1, 0, 0)]
    figures = bench.group_figures(1_000, members, spawned_epoch_ms=500)
    assert figures["first_record_epoch_ms"] == 1_000
    assert figures["records_per_s"] == pytest.approx(1_000)  # 1,000 records over 1 s
    assert figures["records_per_s_received"] == pytest.approx(1_000 / 0.9)
    assert (figures["active_s"], figures["first_record_s"]) == (1.0, 0.5)
    perf = {"first_record_epoch_ms": 2_000, "end_epoch_ms": 4_000}
    assert bench.group_figures(1_000, [], perf=perf)["records_per_s"] == pytest.approx(500)
    assert bench.group_figures(1_000, [_member(-1, -1, -1)])["records_per_s"] is None


def test_check_run_wants_every_record_accepted_once(bench: ModuleType) -> None:
    case = bench.Case("small", 2, "implicit", 500, None, "confluent")
    assert bench.check_run(case, 1_000, [_member(0, 1, 1), _member(0, 1, 1)], None) == []
    problems = bench.check_run(case, 1_000, [_member(0, 1, 1), _member(0, 1, 1, accepted=400, polled=600)], None)
    assert problems == ["accepted 900 records, expected 1000", "polled 1100 records (redeliveries?), expected 1000"]
    assert bench.check_run(case, 1_000, [], {"records": 999}) == ["read 999 of 1000"]


def _run(client: str, ack: str, rate: float, consumers: int = 1, error: str | None = None) -> dict[str, Any]:
    case = bench_case(client, ack, consumers)
    run: dict[str, Any] = {"key": _key(case), "case": case, "records_per_s": rate, "cpu_s_per_m": 1.0}
    if error:
        run["error"] = error
    return run


def bench_case(client: str, ack: str, consumers: int) -> dict[str, Any]:
    return {
        "workload": "small",
        "consumers": consumers,
        "ack": ack,
        "max_poll_records": 500,
        "record_locks": None,
        "client": client,
    }


def _key(case: dict[str, Any]) -> str:
    return f"small/{case['consumers']}/{case['ack']}/500/default/{case['client']}"


def test_summary_medians_ratios_and_targets(bench: ModuleType) -> None:
    runs = [
        _run("asyncconsumer-sync", "implicit", 100),
        _run("asyncconsumer-sync", "implicit", 300),
        _run("asyncconsumer-sync", "implicit", 200),
        _run("asyncconsumer-sync", "implicit", 1, error="boom"),  # failed runs are left out
        _run("java-perf", "implicit", 100),
        _run("confluent", "implicit", 150),
        _run("asyncconsumer-sync", "explicit", 90),
        _run("java", "explicit", 100),
        _run("confluent", "explicit", 50),
    ]
    summary = bench.summarise(runs)
    ours = summary["small/1/implicit/500/default/asyncconsumer-sync"]
    assert (ours["records_per_s"], ours["runs"], ours["peak_rss_mb"]) == (200, 3, None)
    assert bench.ratio(summary, ours, "java-perf") == pytest.approx(2.0)
    assert bench.java_reference(ours["case"]) == "java-perf"
    assert bench.java_reference({"ack": "explicit"}) == "java"  # the tool cannot acknowledge explicitly
    assert bench.ratio(summary, ours, "java") is None
    assert bench.target_lines(summary) == [
        "- asyncconsumer-sync small x1 explicit: 0.90x java (not met, target 1.0x); 1.80x confluent (met, target 1.5x)",
        "- asyncconsumer-sync small x1 implicit: 2.00x java-perf (met, target 1.0x); 1.33x confluent (not met, "
        "target 1.5x)",
    ]
    text = bench.table(summary, "small")
    assert "| 1 | implicit | 500 | default | asyncconsumer-sync | 200 | 2.00x | 1.33x |" in text
    assert bench.median([None, 3, 1]) == 2 and bench.median([None]) is None


def test_the_steady_rate_to_the_last_record_received_is_compared_with_confluents_too(bench: ModuleType) -> None:
    """confluent's members confirm their last acknowledgements long after their last record: its steady rate is
    the one to the last record received, and the report says how ours compares on it as well."""
    ours, theirs = _run("asyncconsumer", "implicit", 150), _run("confluent", "implicit", 100)
    ours["records_per_s_received"], theirs["records_per_s_received"] = 150, 300
    summary = bench.summarise([ours, theirs])
    assert bench.target_lines(summary) == [
        "- asyncconsumer small x1 implicit: 1.50x confluent (met, target 1.5x); 0.50x confluent to the last record "
        "received"
    ]
    assert "| 150 | -x | 1.50x | 150 | 0.50x |" in bench.table(summary, "small")


def test_case_keys_name_every_knob(bench: ModuleType) -> None:
    case = bench.Case("large", 3, "explicit", 2000, 4000, "java")
    assert case.key() == "large/3/explicit/2000/4000/java"
    assert bench.peer_key(case.__dict__, "confluent") == "large/3/explicit/2000/4000/confluent"
    assert isinstance(bench.parse_args(["--child", "confluent"]), argparse.Namespace)


def test_warm_up_goes_on_until_the_brokers_cpu_per_record_settles(bench: ModuleType) -> None:
    assert not bench.warmed([1.4, 1.4, 1.4])  # fewer than WARM_UP_RUNS
    assert not bench.warmed([3.98, 2.6, 1.9, 1.42])  # still falling
    assert bench.warmed([3.98, 2.6, 1.45, 1.42, 1.40])
    assert not bench.warmed([3.0, 1.5, 1.4, 0.0])  # a run without the broker's figure says nothing
    assert bench.WARM_UP_MAX > bench.WARM_UP_RUNS
