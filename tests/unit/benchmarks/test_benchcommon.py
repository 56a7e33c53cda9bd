"""benchmarks/benchcommon.py, the harness the benchmark scripts share: medians over reps, table cells and rows,
the quiet-machine decision (with made-up meters and clock), the results path and file, and a failed run's note."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.bench_scripts import BENCHMARKS, script


@pytest.fixture(scope="module")
def common() -> Iterator[ModuleType]:
    yield from script("benchcommon")


# --- summaries over reps


def test_median_leaves_out_unknown_values_and_is_none_without_any(common: ModuleType) -> None:
    assert common.median([3.0, None, 1.0, 2.0]) == 2.0
    assert common.median([4, None, 1]) == 2.5
    assert common.median([None, None]) is None and common.median([]) is None
    assert common.median(v for v in (5.0, None)) == 5.0  # any iterable


def test_median_min_max_of_the_known_values_in_that_key_order(common: ModuleType) -> None:
    stats = common.median_min_max([2.0, None, 9.0, 1.0])
    assert stats == {"median": 2.0, "min": 1.0, "max": 9.0}
    assert list(stats) == ["median", "min", "max"]  # the order the JSON reports keep
    assert common.median_min_max([None]) == {"median": None, "min": None, "max": None}


# --- table cells and rows


def test_fmt_cell_formats_or_shows_the_missing_mark(common: ModuleType) -> None:
    assert common.fmt_cell(1234.567, ",.1f") == "1,234.6"
    assert common.fmt_cell(None, ".2f") == "?"
    assert common.fmt_cell(None, ".2f", "-") == "-"
    assert common.fmt_cell(0.0, ".2f") == "0.00"  # zero is a value, not missing


def test_table_row_and_rule_make_a_markdown_table(common: ModuleType) -> None:
    assert common.table_row(["mode", "requests/s", "bytes"]) == "| mode | requests/s | bytes |"
    assert common.table_row(iter(["a"])) == "| a |"
    assert common.table_rule(3) == "|---|---:|---:|"
    assert common.table_rule(1) == "|---|"


# --- meters and the quiet-machine decision


def test_other_load_takes_the_broker_out_and_never_goes_below_zero(common: ModuleType) -> None:
    assert common.other_load(0.5, 10.0, 10.5) == pytest.approx(1.0)
    assert common.other_load(0.5, 10.0, 10.5, 3.0, 3.25) == pytest.approx(0.5)  # broker's 0.25 s left out
    assert common.other_load(0.5, 10.0, 10.5, None, 3.25) == pytest.approx(1.0)  # broker unknown: counted
    assert common.other_load(1.0, 10.0, 10.1, 0.0, 0.5) == 0.0


class FakeMachine:
    """Meters and a clock for ``wait_until_quiet``: each 0.5 s sample shows the next of ``loads`` (cores busy),
    of which the broker used ``broker_cores``."""

    def __init__(self, loads: list[float], broker_cores: float = 0.0) -> None:
        self.loads = list(loads)
        self.broker_cores = broker_cores
        self.now = 0.0
        self.busy_s = 100.0
        self.broker_s = 10.0
        self.samples = 0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def busy(self) -> float:
        return self.busy_s

    def process(self, pid: int | None) -> float | None:
        return None if pid is None else self.broker_s

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if seconds == 0.5:  # a sample: the machine is busy for the interval
            load = self.loads[min(self.samples, len(self.loads) - 1)]
            self.samples += 1
            self.busy_s += load * seconds
            self.broker_s += self.broker_cores * seconds
        self.now += seconds

    def wait(self, common: ModuleType, broker_pid: int | None, max_cores: float, max_wait_s: float) -> float | None:
        return common.wait_until_quiet(
            broker_pid,
            max_cores,
            max_wait_s,
            busy=self.busy,
            process=self.process,
            sleep=self.sleep,
            clock=self.clock,
        )


def test_wait_until_quiet_returns_at_once_on_a_quiet_machine(common: ModuleType) -> None:
    fake = FakeMachine([0.1])
    assert fake.wait(common, None, 0.3, 60.0) == pytest.approx(0.1)
    assert fake.sleeps == [0.5]


def test_wait_until_quiet_samples_until_the_load_drops(common: ModuleType) -> None:
    fake = FakeMachine([1.5, 0.8, 0.2])
    assert fake.wait(common, None, 0.3, 60.0) == pytest.approx(0.2)
    assert fake.samples == 3 and fake.sleeps == [0.5, 1.0, 0.5, 1.0, 0.5]


def test_wait_until_quiet_does_not_count_the_broker(common: ModuleType) -> None:
    fake = FakeMachine([1.2], broker_cores=1.0)  # 1.2 cores busy, 1.0 of them the broker's
    assert fake.wait(common, 1234, 0.3, 60.0) == pytest.approx(0.2)
    assert fake.samples == 1
    fake = FakeMachine([1.2], broker_cores=1.0)
    assert fake.wait(common, None, 0.3, 4.0) == pytest.approx(1.2)  # no pid: the broker counts


def test_wait_until_quiet_gives_up_at_the_deadline_with_the_last_load(common: ModuleType) -> None:
    fake = FakeMachine([2.0])
    assert fake.wait(common, None, 0.3, 4.0) == pytest.approx(2.0)
    assert fake.samples == 4 and fake.now == pytest.approx(5.0)  # samples end at 0.5, 2.0, 3.5 and 5.0 >= 4.0


def test_wait_until_quiet_is_none_without_a_cpu_meter(common: ModuleType) -> None:
    assert common.wait_until_quiet(None, 0.3, 60.0, busy=lambda: None, sleep=lambda s: None, clock=lambda: 0.0) is None


def test_process_cpu_s_reads_this_process_and_is_none_for_no_pid(common: ModuleType) -> None:
    assert common.process_cpu_s(None) is None
    if sys.platform == "linux":
        assert common.process_cpu_s(os.getpid()) >= 0.0
        assert common.process_cpu_s(2**31 - 1) is None  # no such process
        assert common.busy_cpu_s() > 0.0


# --- results


def test_default_results_path_names_kind_code_and_a_broker_other_than_tansu(common: ModuleType) -> None:
    assert common.default_results_path("consume", "abc1234") == common.RESULTS_DIR / "consume-abc1234.json"
    assert common.default_results_path("share", "abc+dirty", broker="kafka").name == "share-abc+dirty-kafka.json"
    assert common.default_results_path("faults", "abc", ".md", broker="kafka").name == "faults-abc-kafka.md"
    assert common.RESULTS_DIR == BENCHMARKS / "results"


def test_write_json_creates_the_directory_and_keeps_indent_end_and_default(common: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "r.json"
    common.write_json(path, {"a": [1, 2]})
    assert path.read_text() == json.dumps({"a": [1, 2]}, indent=2)
    common.write_json(path, {"p": Path("/x")}, indent=1, end="\n", default=str)
    assert path.read_text() == '{\n "p": "/x"\n}\n'
    with pytest.raises(TypeError):
        common.write_json(path, {"p": Path("/x")})  # no default: not JSON


def test_note_failure_records_only_when_going_on(common: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    failures: list[str] = []
    assert common.note_failure("FAILED [small rep 1] boom", failures, keep_going=True) is True
    assert failures == ["FAILED [small rep 1] boom"]
    assert common.note_failure("FAILED [small rep 2] bang", failures, keep_going=False) is False
    assert failures == ["FAILED [small rep 1] boom"]
    assert capsys.readouterr().err == "FAILED [small rep 1] boom\nFAILED [small rep 2] bang\n"


def test_quiet_before_run_says_when_the_machine_stayed_busy(
    common: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    loads = iter([0.75, 0.1])
    monkeypatch.setattr(common, "wait_until_quiet", lambda pid, cores, wait: next(loads))
    assert common.quiet_before_run(None, 0.3, 60.0, who="in use") == 0.75
    assert capsys.readouterr().out == "  (machine still busy: 0.75 cores in use; measuring anyway)\n"
    assert common.quiet_before_run(None, 0.3, 60.0) == 0.1
    assert capsys.readouterr().out == ""
