"""benchmarks/soak_cluster.py's pure parts: the member commands per group, the share group's results without offset
gaps, and the choices it refuses. Nothing here starts a broker or a child."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def soak() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import soak_cluster  # type: ignore[import-not-found,unused-ignore]

        yield soak_cluster
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_each_group_runs_its_own_member_script_and_protocol(soak: ModuleType, tmp_path: Path) -> None:
    classic = soak.member_slots("classic", 2, "b:1", "g1", "t", tmp_path)
    consumer = soak.member_slots("consumer", 1, "b:1", "g2", "t", tmp_path)
    share = soak.member_slots("share", 3, "b:1", "g3", "t", tmp_path)
    assert [m.slot for m in classic] == [0, 1] and len(share) == 3
    assert classic[0].argv[1].endswith("group_member.py") and classic[0].argv[-2:] == ["--group-protocol", "classic"]
    assert consumer[0].argv[-2:] == ["--group-protocol", "consumer"]
    assert share[0].argv[1].endswith("share_member.py") and share[0].argv[2:5] == ["b:1", "g3", "t"]
    assert share[0].tail == ["soak"]  # after the output file: share_member.py's mode
    assert {m.directory.name for m in (*classic, *consumer, *share)} == {"classic", "consumer", "share"}


def test_the_faults_and_groups_it_does_not_know_are_refused(
    soak: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        soak.main(["--faults", "broker kill,meteor"])
    assert "--faults: unknown meteor" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        soak.main(["--groups", "classic,queue"])
    assert "--groups: unknown queue" in capsys.readouterr().err


def test_a_rebootstrap_is_the_rarest_fault(soak: ModuleType) -> None:
    assert soak.FAULTS["rebootstrap"] < min(w for kind, w in soak.FAULTS.items() if kind != "rebootstrap")
