"""Java's KafkaShareConsumer (KIP-932) as a share-group peer: ``java/JavaShareConsume.java`` compiled once with
``javac`` against the Kafka jars the tests cache (as ``javapeer.py`` compiles ``JavaConsume``), the command line that
runs it, and what it prints read back; plus the command line of kafka-tools' ``ShareConsumerPerformance``, Kafka's
own share-consumer benchmark, on kafka-tools' class path (``tests.support.kafka_broker.fetch_tools_jars``).

    classes = javashare.build(kafka_broker.fetch_jars(), kafka_broker.cache_root())
    argv = javashare.command(classes, javapeer.runtime_jars(libs), bootstrap=..., topic=..., group=..., count=1000)
    run = javashare.parse_output(subprocess.run(argv, capture_output=True, text=True).stdout)
    run.accepted  # [(partition, offset, delivery_count), ...] the broker confirmed as accepted

Used by ``tests/support/share_peers.py`` (mixed share groups) and the share benchmarks. Nothing compiled or fetched is
committed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import javapeer

MAIN_CLASS = "JavaShareConsume"
RESULT_MARKER = "SHARE_RESULT "
ACK_MODES = ("explicit", "implicit")
ACK_TYPES = ("accept", "release", "reject")
COMMITS = ("sync", "async", "poll")
LINE_KINDS = {"A": "accepted", "L": "released", "J": "rejected", "F": "failed", "U": "unconfirmed"}
"""The first letter of a record line and what the broker said of that record's acknowledgement."""

PERFORMANCE_CLASS = "org.apache.kafka.tools.ShareConsumerPerformance"

Delivery = tuple[int, int, int]
"""(partition, offset, delivery count) of one record."""


def build(libs: Path, cache: Path) -> Path:
    """The compiled ``JavaShareConsume`` (see ``javapeer.build``: same jars, cache and locking)."""
    return javapeer.build(libs, cache, MAIN_CLASS)


def command(
    classes: Path,
    jars: Sequence[Path],
    *,
    bootstrap: str,
    topic: str,
    group: str,
    ack_mode: str = "explicit",
    ack_type: str = "accept",
    commit: str = "sync",
    count: int | None = None,
    stop_file: Path | None = None,
    stdin_eof: bool = False,
    idle_s: float | None = None,
    max_s: float = 600.0,
    print_records: bool = True,
    progress: bool = False,
    start_file: Path | None = None,
    max_poll_records: int | None = None,
    client_id: str = "java-share",
    properties: Mapping[str, str] | None = None,
    java: str = "java",
) -> list[str]:
    """The command line of one ``JavaShareConsume`` (its Javadoc says what each option does). At least one stop
    condition besides ``max_s`` should be given: ``count``, ``stop_file``, ``stdin_eof`` or ``idle_s``. ``progress``
    prints ``P accepted_so_far`` lines instead of record lines; ``start_file`` holds the first poll until it exists."""
    if ack_mode not in ACK_MODES:
        raise ValueError(f"ack_mode must be one of {ACK_MODES}, got {ack_mode!r}")
    if ack_type not in ACK_TYPES:
        raise ValueError(f"ack_type must be one of {ACK_TYPES}, got {ack_type!r}")
    if ack_mode == "implicit" and ack_type != "accept":
        raise ValueError(f"ack_type={ack_type!r} needs ack_mode='explicit' (implicit mode accepts every record)")
    if commit not in COMMITS:
        raise ValueError(f"commit must be one of {COMMITS}, got {commit!r}")
    argv = [
        java,
        *javapeer.JVM_FLAGS,
        "-cp",
        ":".join([str(classes), *(str(j) for j in jars)]),
        MAIN_CLASS,
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--group",
        group,
        "--ack-mode",
        ack_mode,
        "--ack-type",
        ack_type,
        "--commit",
        commit,
        "--max-s",
        str(max_s),
        "--print",
        "progress" if progress else "records" if print_records else "none",
        "--client-id",
        client_id,
    ]
    if count is not None:
        argv += ["--count", str(count)]
    if stop_file is not None:
        argv += ["--stop-file", str(stop_file)]
    if stdin_eof:
        argv += ["--stdin-eof", "true"]
    if start_file is not None:
        argv += ["--start-file", str(start_file)]
    if idle_s is not None:
        argv += ["--idle-s", str(idle_s)]
    if max_poll_records is not None:
        argv += ["--max-poll-records", str(max_poll_records)]
    for key, value in (properties or {}).items():
        argv += ["--property", f"{key}={value}"]
    return argv


@dataclass
class ShareRun:
    """What one ``JavaShareConsume`` printed: its records by what became of their acknowledgement, and its result
    line (None until it has printed one)."""

    accepted: list[Delivery] = field(default_factory=list)
    released: list[Delivery] = field(default_factory=list)
    rejected: list[Delivery] = field(default_factory=list)
    failed: list[Delivery] = field(default_factory=list)
    unconfirmed: list[Delivery] = field(default_factory=list)
    result: dict[str, Any] | None = None

    def add_line(self, line: str) -> None:
        """Reads one line of its output (a record line or the result line; anything else is ignored)."""
        line = line.rstrip("\n")
        if line.startswith(RESULT_MARKER):
            self.result = json.loads(line[len(RESULT_MARKER) :])
            return
        kind, _, rest = line.partition(" ")
        if kind not in LINE_KINDS:
            return
        partition, offset, deliveries = (int(x) for x in rest.split())
        getattr(self, LINE_KINDS[kind]).append((partition, offset, deliveries))


def parse_output(lines: str | Iterable[str]) -> ShareRun:
    """A ``ShareRun`` from ``JavaShareConsume``'s whole output."""
    run = ShareRun()
    for line in lines.splitlines() if isinstance(lines, str) else lines:
        run.add_line(line)
    return run


def performance_command(
    tools_libs: Path,
    *,
    bootstrap: str,
    topic: str,
    group: str,
    num_records: int,
    threads: int = 1,
    timeout_ms: int = 10_000,
    properties: Mapping[str, str] | None = None,
    java: str = "java",
) -> list[str]:
    """The command line of kafka-tools' ``ShareConsumerPerformance`` reading ``num_records`` records of ``topic`` in
    share group ``group`` with ``threads`` share consumers (implicit acknowledgement; its own default settings).
    ``tools_libs`` is ``fetch_tools_jars()``'s directory. It prints a CSV header and one line of totals."""
    argv = [
        java,
        *javapeer.JVM_FLAGS,
        "-cp",
        f"{tools_libs}/*",
        PERFORMANCE_CLASS,
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--group",
        group,
        "--num-records",
        str(num_records),
        "--threads",
        str(threads),
        "--timeout",
        str(timeout_ms),
    ]
    for key, value in (properties or {}).items():
        argv += ["--command-property", f"{key}={value}"]
    return argv
