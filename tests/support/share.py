"""What the share-group tests share: a group configured on Kafka, a child-process member, and a tally of what
every member got."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from asyncconsumer import ShareRecord
from tests.support.groups import new_group_id
from tests.support.kafka_broker import KafkaCluster

MEMBER_SCRIPT = Path(__file__).with_name("share_member.py")

Delivery = tuple[int, int, int]
"""(partition, offset, delivery count) as a member got it."""


def new_share_group(kafka: KafkaCluster, **configs: str | int) -> str:
    """A fresh share group that starts at the earliest offset, with ``configs`` (underscores for dots:
    ``share_record_lock_duration_ms=2000``)."""
    group = new_group_id()
    settings: dict[str, str | int] = {"share.auto.offset.reset": "earliest"}
    settings.update({k.replace("_", "."): v for k, v in configs.items()})
    kafka.set_group_config(group, settings)
    return group


class Tally:
    """Deliveries by member, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_member: dict[str, list[Delivery]] = {}

    def add(self, member: str, records: Iterable[ShareRecord]) -> None:
        got = [(r.partition, r.offset, r.delivery_count) for r in records]
        with self._lock:
            self.by_member.setdefault(member, []).extend(got)

    def extend(self, member: str, deliveries: Iterable[Delivery]) -> None:
        with self._lock:
            self.by_member[member] = list(deliveries)

    def all(self) -> list[Delivery]:
        with self._lock:
            return [d for got in self.by_member.values() for d in got]

    def distinct(self) -> set[tuple[int, int]]:
        return {(p, o) for p, o, _ in self.all()}

    def repeated(self) -> list[tuple[int, int]]:
        counts = Counter((p, o) for p, o, _ in self.all())
        return sorted(k for k, n in counts.items() if n > 1)

    def summary(self) -> str:
        with self._lock:
            return ", ".join(f"{m}: {len(got)}" for m, got in self.by_member.items())


class ShareMemberProcess:
    """``share_member.py`` in a child process; reads back the lines it writes."""

    def __init__(self, bootstrap: str, group: str, topic: str, directory: Path, mode: str = "implicit") -> None:
        self.out_path = directory / f"share-member-{id(self)}.jsonl"
        self.log_path = directory / f"share-member-{id(self)}.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(MEMBER_SCRIPT), bootstrap, group, topic, str(self.out_path), mode],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def lines(self) -> list[dict[str, Any]]:
        if not self.out_path.exists():
            return []
        text = self.out_path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]

    def deliveries(self) -> list[Delivery]:
        return [(p, o, n) for line in self.lines() for p, o, n in line["records"]]

    def assigned(self) -> bool:
        lines = self.lines()
        return bool(lines and lines[-1]["assigned"])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"share member exited with {self.proc.returncode}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 30.0) -> int:
        """Closes its stdin (it closes its consumer and exits) and waits."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._log.close()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self._log.close()
