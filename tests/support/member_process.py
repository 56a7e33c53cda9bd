"""``group_member.py`` in a child process, for the tests that kill group members: start, read back what it wrote,
stop or SIGKILL it, and wait for a group of them to settle."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from tests.support.waiting import wait_for_async

MEMBER_SCRIPT = Path(__file__).with_name("group_member.py")


class MemberProcess:
    """``group_member.py`` in a child process; reads back the JSON lines it writes."""

    def __init__(self, index: int, bootstrap: str, group_id: str, topic: str, directory: Path) -> None:
        self.index = index
        self.out_path = directory / f"member-{index}.jsonl"
        self.log_path = directory / f"member-{index}.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(MEMBER_SCRIPT), bootstrap, group_id, topic, str(self.out_path)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def lines(self) -> list[dict[str, Any]]:
        """Every complete line written so far (a line being written when the process was killed is left out)."""
        if not self.out_path.exists():
            return []
        text = self.out_path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]

    def owned(self) -> tuple[int, frozenset[int]] | None:
        """(generation, partitions) of the last assignment line, None before the first."""
        last = [line for line in self.lines() if line["kind"] == "assignment"]
        if not last:
            return None
        return last[-1]["generation"], frozenset(last[-1]["partitions"])

    def processed(self) -> list[tuple[int, int, float]]:
        """(partition, offset, time written) of every record it processed, in order."""
        return [(p, o, line["t"]) for line in self.lines() if line["kind"] == "records" for p, o in line["records"]]

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"member {self.index} exited with {self.proc.returncode}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM (a clean close) and wait for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._log.close()


def group_view(members: Iterable[MemberProcess]) -> str:
    return "; ".join(f"member {m.index}: {m.owned()}, {len(m.processed())} processed" for m in members)


def one_generation_owns_all(members: list[MemberProcess], partitions: int, after: int = -1) -> int | None:
    """The generation in which ``members`` (each owning something) split ``0..partitions-1`` exactly, if they do."""
    owned = [m.owned() for m in members]
    if any(o is None or not o[1] for o in owned):
        return None
    generations = {o[0] for o in owned if o is not None}
    sets = [o[1] for o in owned if o is not None]
    if (
        len(generations) != 1
        or sum(len(s) for s in sets) != partitions
        or frozenset().union(*sets) != set(range(partitions))
    ):
        return None
    generation = generations.pop()
    return generation if generation > after else None


async def settle_and_pick_victim(
    members: list[MemberProcess], partitions: int, timeout: float
) -> tuple[int, MemberProcess, list[MemberProcess], frozenset[int]]:
    """Waits until one generation splits every partition among ``members`` (all alive); the first member is the one
    to kill: (generation, victim, survivors, the victim's partitions)."""

    def stable() -> bool:
        for m in members:
            m.check_alive()
        return one_generation_owns_all(members, partitions) is not None

    await wait_for_async(stable, timeout=timeout, message=lambda: group_view(members))
    generation = one_generation_owns_all(members, partitions)
    assert generation is not None
    victim_owns = members[0].owned()
    assert victim_owns is not None
    return generation, members[0], members[1:], victim_owns[1]
