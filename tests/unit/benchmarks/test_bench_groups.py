"""benchmarks/bench_groups.py's pure parts for the curves of issue 32: settle detection over the snapshot lines of
several member processes, the regex points' topics and patterns, the summaries, tables and report files. Synthetic
runs only: nothing here starts a broker or a child."""

from __future__ import annotations

import argparse
import json
import re
import sys
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
        import bench_groups  # type: ignore[import-not-found,unused-ignore]

        yield bench_groups
    finally:
        sys.path.remove(str(BENCHMARKS))


# --- settle detection over several processes' lines -------------------------------------------------------------


def test_watch_settles_when_every_member_holds_a_disjoint_share_under_one_generation(bench: ModuleType) -> None:
    watch = bench.GroupWatch(members=2, partitions=4)
    watch.update(0, 1.0, 1, [0, 1, 2, 3])
    assert watch.settled_since is None  # the other member owns nothing yet
    watch.update(1, 1.5, 2, [])
    assert watch.settled_since is None
    watch.update(0, 1.6, 2, [0, 1])
    assert watch.settled_since is None  # partitions 2, 3 owned by no one
    watch.update(1, 1.7, 2, [2, 3])
    assert watch.settled_since == 1.7
    assert watch.generations == {1, 2}
    assert watch.changes == 4


def test_watch_takes_the_latest_stamp_when_lines_arrive_out_of_order(bench: ModuleType) -> None:
    """Lines of two processes interleave in any order: the group settled when the last member got there."""
    watch = bench.GroupWatch(members=2, partitions=2)
    watch.update(1, 3.0, 5, [1])  # stamped later, read first
    watch.update(0, 2.5, 5, [0])
    assert watch.settled_since == 3.0
    assert not watch.held(4.9, 2.0)
    assert watch.held(5.0, 2.0)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((3, [0, 1]), (4, [2, 3])),  # two generations
        ((3, [0, 1, 2]), (3, [2, 3])),  # partition 2 owned twice
        ((-1, [0, 1]), (-1, [2, 3])),  # outside any generation
    ],
)
def test_watch_is_not_settled_on_mixed_generations_overlaps_or_no_generation(
    bench: ModuleType, first: tuple[int, list[int]], second: tuple[int, list[int]]
) -> None:
    watch = bench.GroupWatch(members=2, partitions=4)
    watch.update(0, 1.0, *first)
    watch.update(1, 1.0, *second)
    assert watch.settled_since is None
    assert not watch.held(100.0, 2.0)


def test_watch_sums_the_members_cpu_only_when_every_member_reported_it(bench: ModuleType) -> None:
    watch = bench.GroupWatch(members=2, partitions=2)
    watch.update(0, 1.0, 1, [0], 0.25)
    assert watch.cpu_s() is None  # member 1 has said nothing yet
    watch.update(1, 1.1, 1, [1], 0.5)
    assert watch.cpu_s() == 0.75
    watch.update(1, 1.2, 1, [1])  # a line without it (an older child)
    assert watch.cpu_s() is None


def test_watch_unsettles_on_a_later_change_and_settles_again_later(bench: ModuleType) -> None:
    watch = bench.GroupWatch(members=2, partitions=2)
    watch.update(0, 1.0, 1, [0])
    watch.update(1, 1.1, 1, [1])
    assert watch.settled_since == 1.1
    watch.update(0, 2.0, 2, [])  # a rebalance starts: no longer settled, the hold starts over
    assert watch.settled_since is None
    watch.update(0, 2.4, 2, [0])
    watch.update(1, 2.5, 2, [1])
    assert watch.settled_since == 2.5


# --- regex points ------------------------------------------------------------------------------------------


def test_each_pattern_matches_exactly_its_own_points_topics(bench: ModuleType) -> None:
    topics = {n: bench.regex_topics("ab12cd", n) for n in (1, 100, 1000)}
    every = [t for names in topics.values() for t in names]
    assert len(set(every)) == 1101
    for n, names in topics.items():
        pattern = bench.regex_pattern("ab12cd", n)
        assert [t for t in every if re.fullmatch(pattern, t)] == names  # ours, the broker's RE2/J: whole names
        assert [t for t in every if re.search(f"^{pattern}$", t)] == names  # librdkafka: "^..." searched
    assert topics[1] == ["rx1-ab12cd-0000"]


def test_parse_group_config(bench: ModuleType) -> None:
    assert bench.parse_group_config("consumer.heartbeat.interval.ms=500, consumer.assignment.interval.ms=0") == {
        "consumer.heartbeat.interval.ms": "500",
        "consumer.assignment.interval.ms": "0",
    }
    with pytest.raises(argparse.ArgumentTypeError):
        bench.parse_group_config("consumer.heartbeat.interval.ms")


def test_curve_variants_leave_kip848_to_kafka(bench: ModuleType) -> None:
    assert bench.curve_variants("size", "kafka") == (
        "asyncconsumer",
        "asyncconsumer-kip848",
        "confluent",
        "confluent-kip848",
    )
    assert bench.curve_variants("regex", "tansu") == ("asyncconsumer", "confluent")
    assert bench.curve_variants("size", "kafka", ["confluent"]) == ("confluent",)


# --- summaries and tables ----------------------------------------------------------------------------------


def size_run(client: str, members: int, settle_s: float, generation: int, **extra: Any) -> dict[str, Any]:
    return {
        "client": client,
        "members": members,
        "settle_s": settle_s,
        "final_generation": generation,
        "generations_seen": list(range(1, generation + 1)),
        "max_poll_gap_s": 0.1,
        "load_at_end": 1.5,
        "broker_cpu_s": 0.2,
        "member_cpu_to_settle_s": 0.3,
        **extra,
    }


SIZE_RUNS = [
    size_run("asyncconsumer", 1, 0.05, 1),
    size_run("asyncconsumer", 1, 0.07, 1),
    size_run("asyncconsumer", 1, 0.06, 1),
    size_run("asyncconsumer", 32, 0.40, 2),
    {"client": "asyncconsumer", "members": 32, "failed": True, "error": "not settled"},
    size_run("confluent-kip848", 32, 2.10, 33),
    size_run("confluent-kip848", 32, 2.20, 33),
]


def test_size_summary_medians_ranges_generations_and_failures(bench: ModuleType) -> None:
    summary = bench.summarise_curve("size", SIZE_RUNS)
    one = summary["asyncconsumer"][1]
    assert one["reps"] == 3 and one["failed"] == 0
    assert one["settle_s"] == {"median": 0.06, "min": 0.05, "max": 0.07}
    assert one["final_generations"] == [1, 1, 1]
    big = summary["asyncconsumer"][32]
    assert (big["reps"], big["failed"], big["settle_s"]["median"]) == (1, 1, 0.40)
    assert summary["confluent-kip848"][32]["settle_s"]["median"] == pytest.approx(2.15)
    assert summary["confluent-kip848"][32]["generations_seen"] == [33, 33]


def test_size_tables(bench: ModuleType) -> None:
    summary = bench.summarise_curve("size", SIZE_RUNS)
    wide = bench.curve_wide_table("size", summary).splitlines()
    assert wide[0] == "| client | 1 members | 32 members |"
    assert wide[2] == "| asyncconsumer | 0.06 | 0.40 (1 FAILED) |"
    assert wide[3] == "| confluent-kip848 |  | 2.15 |"
    long = bench.curve_table("size", summary)
    assert (
        "| asyncconsumer | classic, range | 1 | 0.06 (0.05-0.07) | 1, 1, 1 | 1, 1, 1 | 0.10 | 0.30 | 0.2 | 3 |" in long
    )
    assert "| 32 | 0.40 | 2 | 2 | 0.10 | 0.30 | 0.2 | 1 (1 FAILED) |" in long


def test_a_point_whose_every_run_failed_says_so(bench: ModuleType) -> None:
    runs = [{"client": "confluent", "members": 16, "failed": True, "error": "x"}]
    summary = bench.summarise_curve("size", runs)
    assert summary["confluent"][16]["settle_s"]["median"] is None
    assert bench.curve_wide_table("size", summary).splitlines()[2] == "| confluent | FAILED (1) |"
    assert "| confluent | classic, range | 16 | - | - | - | - | - | - | 0 (1 FAILED) |" in bench.curve_table(
        "size", summary
    )


def regex_run(client: str, topics: int, first: float, assigned: float, every: float) -> dict[str, Any]:
    return {
        "client": client,
        "topics": topics,
        "first_record_s": first,
        "assigned_s": assigned,
        "all_topics_s": every,
    }


REGEX_RUNS = [
    regex_run("asyncconsumer", 1000, 0.15, 0.10, 0.16),
    regex_run("asyncconsumer", 1000, 0.17, 0.12, 0.18),
    regex_run("confluent-kip848", 1, 1.2, 1.1, 1.2),
]


def test_regex_summary_and_tables(bench: ModuleType) -> None:
    summary = bench.summarise_curve("regex", REGEX_RUNS)
    assert summary["asyncconsumer"][1000]["all_topics_s"] == {"median": pytest.approx(0.17), "min": 0.16, "max": 0.18}
    wide = bench.curve_wide_table("regex", summary).splitlines()
    assert wide[0] == "| client | 1 topics | 1,000 topics |"
    assert wide[2] == "| asyncconsumer |  | 0.17 |"
    long = bench.curve_table("regex", summary)
    assert "| asyncconsumer | classic | 1,000 | 0.16 (0.15-0.17) | 0.11 (0.10-0.12) | 0.17 (0.16-0.18) | 2 |" in long
    assert "| confluent-kip848 | consumer | 1 | 1.20 | 1.10 | 1.20 | 1 |" in long


def test_write_curves_writes_json_markdown_and_a_png_per_curve(bench: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    info = {"cpus": 2, "cpu_model": "cpu", "python": "3.11", "platform": "linux", "broker": "Apache Kafka 4.4.0"}
    report = {
        "machine": {**info, "code": "abc1234"},
        "args": {"reps": 2, "kip848_group_config": {"consumer.assignment.interval.ms": "0"}},
        "scenarios": {
            "size": {"runs": SIZE_RUNS, "summary": bench.summarise_curve("size", SIZE_RUNS)},
            "regex": {"runs": REGEX_RUNS, "summary": bench.summarise_curve("regex", REGEX_RUNS)},
        },
    }
    path = tmp_path / "groups-curves-abc1234-kafka.json"
    written = bench.write_curves(report, path)
    assert [p.name for p in written] == [
        "groups-curves-abc1234-kafka.json",
        "groups-curves-abc1234-kafka-size.png",
        "groups-curves-abc1234-kafka-regex.png",
        "groups-curves-abc1234-kafka.md",
    ]
    assert all(p.stat().st_size > 0 for p in written)
    saved = json.loads(path.read_text())
    assert saved["scenarios"]["size"]["summary"]["asyncconsumer"]["1"]["reps"] == 3  # JSON keys are strings
    md = path.with_suffix(".md").read_text()
    assert "consumer.assignment.interval.ms=0" in md
    assert "![size](groups-curves-abc1234-kafka-size.png)" in md
    assert "| asyncconsumer | 0.06 | 0.40 (1 FAILED) |" in md
