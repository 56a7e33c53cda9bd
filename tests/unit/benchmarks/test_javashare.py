"""benchmarks/javashare.py (Java's share consumer as a share-group peer): its command line, the combinations it
refuses, and its output read back. Nothing here starts a JVM."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def javashare() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import javashare  # type: ignore[import-not-found,unused-ignore]

        yield javashare
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_command_names_the_group_the_modes_and_each_stop_condition(javashare: ModuleType, tmp_path: Path) -> None:
    argv = javashare.command(
        tmp_path / "classes",
        [tmp_path / "kafka-clients-4.4.0.jar"],
        bootstrap="127.0.0.1:9092",
        topic="t",
        group="g",
        ack_mode="explicit",
        ack_type="release",
        commit="poll",
        count=10,
        stop_file=tmp_path / "stop",
        stdin_eof=True,
        idle_s=2.5,
        properties={"fetch.max.wait.ms": "100"},
    )
    assert argv[argv.index("-cp") + 1] == f"{tmp_path / 'classes'}:{tmp_path / 'kafka-clients-4.4.0.jar'}"
    options = argv[argv.index("JavaShareConsume") + 1 :]
    pairs = dict(zip(options[::2], options[1::2], strict=True))
    assert pairs["--group"] == "g"
    assert (pairs["--ack-mode"], pairs["--ack-type"], pairs["--commit"]) == ("explicit", "release", "poll")
    assert (pairs["--count"], pairs["--stop-file"], pairs["--stdin-eof"]) == ("10", str(tmp_path / "stop"), "true")
    assert (pairs["--idle-s"], pairs["--property"]) == ("2.5", "fetch.max.wait.ms=100")


@pytest.mark.parametrize(
    "options",
    [{"ack_mode": "auto"}, {"ack_type": "renew"}, {"ack_mode": "implicit", "ack_type": "reject"}, {"commit": "never"}],
)
def test_command_refuses_what_the_program_cannot_do(javashare: ModuleType, options: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        javashare.command(Path("c"), [], bootstrap="b", topic="t", group="g", **options)


def test_output_is_read_back_by_what_became_of_each_record(javashare: ModuleType) -> None:
    run = javashare.parse_output(
        "A 0 1 1\nA 3 7 2\nL 1 0 1\nJ 2 5 1\nF 0 9 1\nU 1 4 1\nlog noise\n"
        'SHARE_RESULT {"polled": 6, "records_per_s": 12.5}\n'
    )
    assert run.accepted == [(0, 1, 1), (3, 7, 2)]
    assert (run.released, run.rejected, run.failed, run.unconfirmed) == (
        [(1, 0, 1)],
        [(2, 5, 1)],
        [(0, 9, 1)],
        [(1, 4, 1)],
    )
    assert run.result == {"polled": 6, "records_per_s": 12.5}


def test_share_consumer_performance_runs_on_the_tools_class_path(javashare: ModuleType, tmp_path: Path) -> None:
    argv = javashare.performance_command(
        tmp_path, bootstrap="b:1", topic="t", group="g", num_records=100, properties={"client.id": "perf"}
    )
    assert argv[argv.index("-cp") + 1] == f"{tmp_path}/*"
    assert argv[argv.index("org.apache.kafka.tools.ShareConsumerPerformance") + 1 :] == [
        "--bootstrap-server", "b:1", "--topic", "t", "--group", "g", "--num-records", "100", "--threads", "1",
        "--timeout", "10000", "--command-property", "client.id=perf",
    ]  # fmt: skip
