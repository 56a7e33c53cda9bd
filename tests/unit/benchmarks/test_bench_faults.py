"""benchmarks/bench_faults.py's pure parts (issue 50): the children's log lines, and the counting of losses, records
read twice, stalls after a heal and errors per fault step. Synthetic logs only: nothing here starts a broker or a
child."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import bench_faults  # type: ignore[import-not-found,unused-ignore]

        yield bench_faults
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_log_parses_what_the_children_write_even_split_mid_line(bench: ModuleType) -> None:
    text = (
        bench.log_line("S", at=10.0)
        + "R\t10.500000\t3\t7\t000000045\n"
        + bench.log_line("C", "3:8,4:2", at=11.0)
        + bench.log_line("E", "commit", "CommitFailedError", "fenced\tby the group\n", at=12.0)
        + bench.log_line("B", "lost", "3,4", at=12.5)
        + bench.log_line("B", "assigned", "", at=13.0)
        + bench.log_line("X", at=14.0)
    )
    log = bench.ClientLog("ours")
    cut = text.index("000000045") + 4
    log.feed(text[:cut])
    assert log.reads == []  # the record's line is not whole yet
    log.feed(text[cut:])
    assert log.reads == [bench.Read(10.5, 3, 7, 45)]
    assert log.newest == {3: 45} and log.indices == {45}
    assert log.commits == [(11.0, {3: 8, 4: 2})]
    assert log.errors == [(12.0, "commit", "CommitFailedError", "fenced by the group ")]
    assert log.rebalances == [(12.5, "lost", (3, 4)), (13.0, "assigned", ())]
    assert (log.started, log.ended) == (10.0, 14.0)
    assert log.read_since(45, [3]) and not log.read_since(46, [3]) and not log.read_since(0, [3, 4])
    with pytest.raises(ValueError, match="unknown log line"):
        log.line("Q\t1.0")


def test_step_of_places_a_value_in_the_last_step_begun_by_then(bench: ModuleType) -> None:
    starts = [10.0, 20.0, 30.0]
    assert bench.step_of(5.0, starts) is None
    assert bench.step_of(10.0, starts) == 0
    assert bench.step_of(29.9, starts) == 1
    assert bench.step_of(99.0, starts) == 2


def test_a_lost_record_counts_against_the_step_it_was_produced_in(bench: ModuleType) -> None:
    acked = range(0, 30)
    read = set(range(30)) - {3, 12, 13, 29}
    # steps begin at records 0, 10, 20; record 3 (before any fault) counts in the first
    assert bench.lost_per_step(acked, read, [0, 10, 20]) == [1, 2, 1]
    assert bench.lost_per_step(acked, set(range(30)), [0, 10, 20]) == [0, 0, 0]


def test_a_record_read_again_counts_in_its_second_reads_step_and_a_commit_that_covered_it_is_flagged(
    bench: ModuleType,
) -> None:
    R = bench.Read
    reads = [R(1.0, 0, o, o * 6) for o in range(5)]  # partition 0, offsets 0-4
    reads += [R(12.0, 0, 2, 12), R(12.0, 0, 3, 18)]  # 2 and 3 again in step 1: not covered (committed up to 2)
    reads += [R(22.0, 0, 0, 0)]  # offset 0 again in step 2, after a commit of 2 had reported success: covered
    commits = [(2.0, {0: 2})]
    again, covered = bench.twice_per_step(reads, commits, [0.0, 10.0, 20.0])
    assert again == [0, 2, 1]
    assert covered == [0, 0, 1]
    # a record read three times counts twice (each read after the first)
    again, _ = bench.twice_per_step([R(1.0, 1, 0, 1), R(2.0, 1, 0, 1), R(3.0, 1, 0, 1)], [], [0.0])
    assert again == [2]


def test_the_stall_after_a_heal_is_the_last_partitions_first_record_produced_after_it(bench: ModuleType) -> None:
    R = bench.Read
    healed, mark = 100.0, 60
    reads = [R(100.2, p, 10, 60 + p) for p in range(6) if p != 4]
    reads += [R(99.0, 4, 9, 54)]  # before the mark: does not count
    assert bench.stall_after(reads, mark, healed) is None  # partition 4 never brought one
    reads += [R(103.5, 4, 10, 64), R(101.0, 4, 11, 70)]  # read out of time order: the earliest counts
    assert bench.stall_after(reads, mark, healed) == pytest.approx(1.0)
    assert bench.stall_after([R(99.9, p, 0, 60 + p) for p in range(6)], mark, healed) == 0.0  # never negative


def test_analyse_puts_every_figure_in_its_step_and_the_table_shows_it(bench: ModuleType) -> None:
    R = bench.Read
    steps = [bench.Done("baseline", 0.0, 0, 5.0, 30), bench.Done("black hole 25 s", 10.0, 60, 35.0, 210)]
    log = bench.ClientLog("ours")
    log.reads = [R(1.0 + i / 100, i % 6, i // 6, i) for i in range(300) if i != 100]
    log.reads += [R(36.0, 0, 0, 0)]  # read again after the heal
    log.indices = {r.index for r in log.reads}
    log.commits = [(2.0, {0: 1})]
    log.errors = [(20.0, "commit", "CommitFailedError", "x"), (21.0, "commit", "CommitFailedError", "y")]
    log.rebalances = [(30.0, "lost", (0, 1)), (31.0, "assigned", (0, 1)), (50.0, "revoked", (0, 1))]
    log.errors.append((50.5, "poll", "KafkaError", "closing"))  # from the close on: left out
    result = bench.analyse({"ours": log}, steps, list(range(300)), {"ours": {0: [1]}}, closing=50.0)
    hole = result["steps"][1]["clients"]["ours"]
    assert hole["lost"] == 1  # record 100, produced during the black hole's step
    assert hole["twice"] == 1 and hole["twice_though_committed"] == 1
    assert hole["errors"] == 2 and hole["error_kinds"] == {"commit: CommitFailedError": 2}
    assert hole["rebalance_callbacks"] == {"lost": 1, "assigned": 1}
    assert hole["released_after_heal_s"] == pytest.approx(-5.0)  # lost at 30 s, healed at 35 s
    assert bench.released_after([(36.0, "revoked", (0,)), (37.0, "lost", ())], 10.0, 50.0, 35.0) == 1.0
    assert bench.released_after([(51.0, "lost", (0,))], 10.0, 50.0, 35.0) is None  # the next step's
    assert result["steps"][0]["clients"]["ours"]["lost"] == 0
    assert result["totals"]["ours"]["commits_not_landed"] == []
    result["steps"][1]["targets"] = [3]
    text = bench.table(result, ["ours"])
    assert "| black hole 25 s | node 3 | ours | 1 | 1 (1) |" in text
    assert "2 (commit: CommitFailedError x2)" in text
    assert bench.unlanded([(1.0, {0: 5, 1: 3})], {0: [5]}) == ["1/3"]


def test_a_python_child_commits_after_every_thousand_records_and_forgets_what_it_lost(
    bench: ModuleType, tmp_path: Path
) -> None:
    log = bench.ChildLog(str(tmp_path / "child.log"))
    log.records((p % 2, p // 2, b"%09d" % p) for p in range(999))
    assert log.commit_due() is None
    log.records([(0, 500, b"000000999")])
    due = log.commit_due()
    assert due == {0: 501, 1: 499}
    assert log.commit_due() is None  # the count starts again
    log.records([(1, 499, b"000001000")])
    log.committed(due)
    assert log.pending == {1: 500}  # partition 1 moved on after the offsets were taken
    log.released("lost", [1])
    assert log.pending == {}
    log.close()
    parsed = bench.ClientLog("ours")
    parsed.feed((tmp_path / "child.log").read_text())
    assert len(parsed.reads) == 1001 and parsed.commits[0][1] == {0: 501, 1: 499}
    assert parsed.rebalances[0][1:] == ("lost", (1,)) and parsed.ended is not None


def test_an_unknown_fault_name_is_refused_with_the_names_before_any_broker_starts(bench: ModuleType) -> None:
    assert "'black hole 25 s'" in bench.step_names() and "'baseline'" not in bench.step_names()
    args = bench.argparse.Namespace(clients="asyncconsumer", faults="black hole,bandwidth 50 KB/s")
    with pytest.raises(SystemExit, match=r"--faults: no step named 'black hole'; the steps: 'latency'"):
        bench.run(args)
