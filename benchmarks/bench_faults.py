"""Network faults against four clients at once (issue 50): asyncconsumer, librdkafka, aiokafka and Java's consumer.

    .venv/bin/python benchmarks/bench_faults.py                     # the whole schedule, ~8 minutes
    .venv/bin/python benchmarks/bench_faults.py --faults "black hole 25 s,bandwidth 50 KB/s" --json out.json

One run: a 3-node Apache Kafka 4.4 cluster with Shopify's Toxiproxy in front of every broker's client listener
(``tests/support/toxi_cluster.py``; the brokers' own traffic stays direct), a topic of 6 partitions placed two per
node (``network_faults.PLACEMENT``), and a producer writing numbered records continuously straight to the brokers,
past the proxies (``cluster_load.AckedProducer``, idempotent, acks=all), so every record it acknowledged is known
by its number. Four children, each its own process, read the topic through the proxies, each as the one member of a
classic group of its own, every group coordinated by the same node (``COORDINATOR``):

- ``ours``: asyncconsumer's ``AsyncConsumer``;
- ``librdkafka``: confluent-kafka's ``Consumer``;
- ``aiokafka``: ``AIOKafkaConsumer``;
- ``java``: Java's ``KafkaConsumer`` (``java/JavaFaultConsume.java``, compiled by ``javapeer.build``).

Each polls continuously and commits the offsets it read (a synchronous commit of its positions) once it has read
``COMMIT_EVERY`` records since its last commit; all take the same timeouts where they have them (a 6 s session,
500 ms heartbeats, 4 s requests, 3 s to set a connection up: ``network_faults``' settings). Each writes a log
(``R`` a record, ``C`` a commit that succeeded, ``E`` an exception raised to its loop or an error its client
reported to a callback, ``B`` a rebalance callback, stamped with the wall clock) that the parent reads as it goes.

The schedule (``SCHEDULE``): a baseline (no fault, for each client's floor), then each fault on its target's proxy
for its time, healed, and the next one only once every client read every partition again (or ``RECOVER_S``
passed). The faults are ``network_faults.Fault`` values with the CI suite's parameters
(``tests/integration/test_network_faults_kafka.py``). At the end the producer stops, every client gets
``DRAIN_S`` to read every acknowledged record, and each client's commits that reported success are looked up in
``__consumer_offsets`` (``network_faults.landed_commits``).

Per fault and client (``analyse``): records lost (acknowledged, produced while that fault's step ran, and never read
by the group by the end), records read twice (the second read falling in the step), how many of those a commit that
had reported success covered (a defect: a commit that lied), the stall after the heal (``stall_after``: from the
heal until the client read, from every partition, a record produced after it) and the errors raised to the
application, by kind. The JSON goes to ``results/faults-<commit>-kafka.json``, the table beside it (``.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from benchcommon import code_version, default_results_path, machine, test_support, write_json

CLIENTS = ("ours", "librdkafka", "aiokafka", "java")
PARTITIONS = 6
RATE = 300
"""Records/s over the six partitions (50 per partition): a commit every ~3.3 s at ``COMMIT_EVERY``."""
COMMIT_EVERY = 1_000
MAX_POLL_RECORDS = 10_000
"""What each poll may return, for every client (``max_poll_records``, ``max.poll.records``, confluent's
``consume(num_messages=)``, aiokafka's ``getmany(max_records=)``), as bench_consume.py asks: the Java and
asyncconsumer defaults of 500 would make them commit every other poll while they catch up."""
SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_INTERVAL_MS = 500
REQUEST_TIMEOUT_MS = 4_000
SETUP_TIMEOUT_MS = 3_000
LEADER = 2
"""The node the data-path faults target: it leads partitions 1 and 4, and coordinates none of the groups."""
COORDINATOR = 3
"""The node coordinating every client's group (it leads partitions 2 and 5 too)."""
ALL_NODES = (1, 2, 3)
START_S = 120.0
"""Every child reads every partition (JVM start, group joins) within this of being started."""
RECOVER_S = 60.0
"""The next step starts once every client read every partition after the heal, or after this."""
GAP_S = 3.0
"""Quiet time between a step's recovery and the next fault: the commits of the step come through."""
DRAIN_S = 90.0
"""After the producer stops, every client reads every acknowledged record within this (or it is counted lost)."""
BASELINE = "baseline"


@dataclass(frozen=True)
class Step:
    """One step of the schedule: a fault (None for the baseline) on ``targets`` for ``seconds``."""

    name: str
    fault: Any
    targets: tuple[int, ...]
    seconds: float


def schedule() -> list[Step]:
    """The issue's faults, each with the CI suite's parameters (``test_network_faults_kafka.py``), healed in turn."""
    faults = test_support("network_faults")
    Fault, Toxin, both = faults.Fault, faults.Toxin, faults.both
    return [
        Step(BASELINE, None, (), 5.0),
        Step("latency", Fault("latency with jitter", both("latency", latency=300, jitter=150)), ALL_NODES, 8.0),
        Step("connection reset", Fault("reset_peer", both("reset_peer", timeout=0)), (COORDINATOR,), 3.0),
        Step("black hole 25 s", Fault("long black hole", both("timeout", timeout=0)), (COORDINATOR,), 25.0),
        Step(
            "bandwidth 50 KB/s",
            Fault("bandwidth", [Toxin("bandwidth", s, {"rate": 50}) for s in ("downstream", "upstream")]),
            (LEADER,),
            8.0,
        ),
        Step(
            "sliced frames",
            Fault("slicer", both("slicer", average_size=64, size_variation=32, delay=100)),
            (LEADER,),
            8.0,
        ),
        Step(
            "cut after 4 KB",
            Fault("limit_data responses", [Toxin("limit_data", "downstream", {"bytes": 4096})]),
            (LEADER,),
            8.0,
        ),
        Step("refused", Fault("refused", refused=True), (LEADER,), 8.0),
    ]


# ======================================================================================================================
# the logs: what each child writes, what the parent reads (pure)
# ======================================================================================================================
@dataclass(frozen=True)
class Read:
    at: float
    partition: int
    offset: int
    index: int


@dataclass
class ClientLog:
    """One child's log as read so far: its records, commits, errors and rebalance callbacks."""

    name: str
    reads: list[Read] = field(default_factory=list)
    commits: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    errors: list[tuple[float, str, str, str]] = field(default_factory=list)
    """(when, where, kind, message)."""
    rebalances: list[tuple[float, str, tuple[int, ...]]] = field(default_factory=list)
    newest: dict[int, int] = field(default_factory=dict)
    """Partition -> the highest record number read from it."""
    indices: set[int] = field(default_factory=set)
    started: float | None = None
    ended: float | None = None
    _partial: str = ""

    def feed(self, text: str) -> None:
        """Takes more of the log (whole lines are parsed; a trailing partial line waits for the rest)."""
        text = self._partial + text
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            if line:
                self.line(line)

    def line(self, line: str) -> None:
        kind, at_text, *fields = line.split("\t")
        at = float(at_text)
        if kind == "R":
            partition, offset, value = int(fields[0]), int(fields[1]), int(fields[2])
            self.reads.append(Read(at, partition, offset, value))
            self.indices.add(value)
            if value > self.newest.get(partition, -1):
                self.newest[partition] = value
        elif kind == "C":
            offsets = dict(map(int, pair.split(":")) for pair in fields[0].split(",") if pair) if fields else {}
            self.commits.append((at, offsets))
        elif kind == "E":
            where, what, message = [*fields, "", "", ""][:3]
            self.errors.append((at, where, what, message))
        elif kind == "B":
            parts = tuple(int(p) for p in fields[1].split(",") if p) if len(fields) > 1 else ()
            self.rebalances.append((at, fields[0], parts))
        elif kind == "S":
            self.started = at
        elif kind == "X":
            self.ended = at
        else:
            raise ValueError(f"{self.name}: unknown log line {line!r}")

    def read_since(self, mark: int, partitions: Iterable[int]) -> bool:
        """A record numbered ``mark`` or later was read from each of ``partitions``."""
        return all(self.newest.get(p, -1) >= mark for p in partitions)


def step_names() -> str:
    """The schedule's step names, as ``--faults`` takes them."""
    return ", ".join(repr(step.name) for step in schedule() if step.name != BASELINE)


def log_line(kind: str, *fields: object, at: float | None = None) -> str:
    """One line of a child's log (tabs and newlines in a field become spaces)."""
    shown = [str(f).replace("\t", " ").replace("\n", " ") for f in fields]
    return "\t".join([kind, f"{time.time() if at is None else at:.6f}", *shown]) + "\n"


# ======================================================================================================================
# the analysis (pure)
# ======================================================================================================================
@dataclass(frozen=True)
class Done:
    """A step as it ran: when it began and healed (wall clock) and the producer's count then."""

    name: str
    began: float
    began_mark: int
    healed: float
    healed_mark: int


def step_of(value: float, starts: Sequence[float]) -> int | None:
    """The index of the step ``value`` (a time or a record number) falls in: the last whose start is at or before
    it (None: before the first)."""
    found = None
    for i, start in enumerate(starts):
        if start <= value:
            found = i
        else:
            break
    return found


def lost_per_step(acked: Iterable[int], read: set[int], marks: Sequence[int]) -> list[int]:
    """Per step, the acknowledged records produced during it (by number) that were never read."""
    counts = [0] * len(marks)
    for index in acked:
        if index not in read:
            i = step_of(index, marks)
            counts[0 if i is None else i] += 1
    return counts


def twice_per_step(
    reads: Iterable[Read], commits: Iterable[tuple[float, Mapping[int, int]]], starts: Sequence[float]
) -> tuple[list[int], list[int]]:
    """Per step (by when the record came again): records read again, and how many of those a commit that had
    reported success before covered (its offset above the record's: that commit did not hold)."""
    again = [0] * len(starts)
    covered = [0] * len(starts)
    ordered = sorted((at, p, o) for at, offsets in commits for p, o in offsets.items())
    committed: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    j = 0
    for r in sorted(reads, key=lambda r: (r.at, r.partition, r.offset)):
        while j < len(ordered) and ordered[j][0] < r.at:
            _, p, o = ordered[j]
            committed[p] = max(committed.get(p, 0), o)
            j += 1
        key = (r.partition, r.offset)
        if key in seen:
            i = step_of(r.at, starts)
            i = 0 if i is None else i
            again[i] += 1
            if r.offset < committed.get(r.partition, 0):
                covered[i] += 1
        seen.add(key)
    return again, covered


def stall_after(reads: Iterable[Read], mark: int, healed: float, partitions: int = PARTITIONS) -> float | None:
    """Seconds from the heal until a record numbered ``mark`` or later (produced after the heal) was read from every
    partition: the last partition's first such record. None if a partition never brought one."""
    firsts: dict[int, float] = {}
    for r in reads:
        if r.index >= mark and (r.partition not in firsts or r.at < firsts[r.partition]):
            firsts[r.partition] = r.at
    if len(firsts) < partitions:
        return None
    return max(0.0, max(firsts.values()) - healed)


def errors_per_step(errors: Iterable[tuple[float, str, str, str]], starts: Sequence[float]) -> list[Counter[str]]:
    """Per step, the errors raised to the application by ``where: kind``."""
    counts: list[Counter[str]] = [Counter() for _ in starts]
    for at, where, kind, _ in errors:
        i = step_of(at, starts)
        counts[0 if i is None else i][f"{where}: {kind}"] += 1
    return counts


def rebalances_per_step(
    rebalances: Iterable[tuple[float, str, tuple[int, ...]]], starts: Sequence[float]
) -> list[Counter[str]]:
    counts: list[Counter[str]] = [Counter() for _ in starts]
    for at, kind, parts in rebalances:
        i = step_of(at, starts)
        if parts:
            counts[0 if i is None else i][kind] += 1
    return counts


def released_after(
    rebalances: Iterable[tuple[float, str, tuple[int, ...]]], began: float, until: float, healed: float
) -> float | None:
    """Seconds from the heal to the first lost or revoked callback of the step (between ``began`` and ``until``;
    negative when it came during the fault), None if the step had none: when the client learned it was out."""
    times = [at for at, kind, parts in rebalances if kind in ("lost", "revoked") and parts and began <= at < until]
    return min(times) - healed if times else None


def unlanded(commits: Iterable[tuple[float, Mapping[int, int]]], landed: Mapping[int, Sequence[int]]) -> list[str]:
    """The offsets of commits that reported success and that ``__consumer_offsets`` never got (partition/offset)."""
    return [f"{p}/{o}" for _, offsets in commits for p, o in offsets.items() if o not in landed.get(p, ())]


def analyse(
    logs: Mapping[str, ClientLog],
    steps: Sequence[Done],
    acked: Sequence[int],
    landed: Mapping[str, Mapping[int, Sequence[int]]] | None = None,
    closing: float = float("inf"),
) -> dict[str, Any]:
    """The per-step, per-client figures (see the module's docstring) and each client's totals. Errors and rebalance
    callbacks from ``closing`` on (the children told to stop: leaving the group revokes everything) are left out."""
    starts = [s.began for s in steps]
    marks = [s.began_mark for s in steps]
    out: dict[str, Any] = {"steps": [], "totals": {}}
    per_client: dict[str, dict[str, Any]] = {}
    for name, log in logs.items():
        lost = lost_per_step(acked, log.indices, marks)
        again, covered = twice_per_step(log.reads, log.commits, starts)
        errors = errors_per_step([e for e in log.errors if e[0] < closing], starts)
        rebalances = rebalances_per_step([b for b in log.rebalances if b[0] < closing], starts)
        per_client[name] = {"lost": lost, "twice": again, "covered": covered, "errors": errors, "rb": rebalances}
        out["totals"][name] = {
            "records_read": len(log.reads),
            "distinct_read": len(log.indices),
            "lost": sum(lost),
            "twice": sum(again),
            "twice_though_committed": sum(covered),
            "errors": sum(sum(c.values()) for c in errors),
            "commits": len(log.commits),
            "commits_not_landed": unlanded(log.commits, landed[name]) if landed is not None else None,
        }
    until = [*starts[1:], closing]
    for i, step in enumerate(steps):
        entry: dict[str, Any] = {
            "step": step.name,
            "began": step.began,
            "healed": step.healed,
            "began_mark": step.began_mark,
            "healed_mark": step.healed_mark,
            "clients": {},
        }
        for name, log in logs.items():
            figures = per_client[name]
            entry["clients"][name] = {
                "lost": figures["lost"][i],
                "twice": figures["twice"][i],
                "twice_though_committed": figures["covered"][i],
                "stall_s": stall_after(log.reads, step.healed_mark, step.healed),
                "released_after_heal_s": released_after(log.rebalances, step.began, until[i], step.healed),
                "errors": sum(figures["errors"][i].values()),
                "error_kinds": dict(figures["errors"][i]),
                "rebalance_callbacks": dict(figures["rb"][i]),
            }
        out["steps"].append(entry)
    return out


def stall_text(stall: float | None) -> str:
    return "no recovery" if stall is None else f"{stall:.2f} s"


def errors_text(count: int, kinds: Mapping[str, int]) -> str:
    if not count:
        return "0"
    shown = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return f"{count} ({shown})"


def table(result: Mapping[str, Any], clients: Sequence[str]) -> str:
    """The markdown table: a row per step and client."""
    lines = [
        "| fault | target | client | lost | read twice (of them covered by a commit) | stall after heal | errors "
        "raised to the application | rebalance callbacks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    targets = {s["step"]: s.get("targets", []) for s in result["steps"]}
    for step in result["steps"]:
        for n, name in enumerate(clients):
            if name not in step["clients"]:
                continue
            c = step["clients"][name]
            where = ""
            if n == 0:
                nodes = targets.get(step["step"]) or []
                where = "-" if not nodes else ("every broker" if len(nodes) == 3 else f"node {nodes[0]}")
            twice = f"{c['twice']} ({c['twice_though_committed']})" if c["twice"] else "0"
            rb = ", ".join(f"{k} x{v}" for k, v in sorted(c["rebalance_callbacks"].items())) or "-"
            lines.append(
                f"| {step['step'] if n == 0 else ''} | {where} | {name} | {c['lost']} | {twice} "
                f"| {stall_text(c['stall_s'])} | {errors_text(c['errors'], c['error_kinds'])} | {rb} |"
            )
    return "\n".join(lines)


# ======================================================================================================================
# the children
# ======================================================================================================================
class ChildLog:
    """A Python child's log file, written by its polling loop (and librdkafka's callbacks, on the same thread)."""

    def __init__(self, path: str) -> None:
        self.file: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115  # closed by close()
        self.pending: dict[int, int] = {}
        """Partition -> the next offset to commit, for what was read since the last commit."""
        self.since_commit = 0

    def write(self, kind: str, *fields: object) -> None:
        self.file.write(log_line(kind, *fields))

    def records(self, batch: Iterable[tuple[int, int, bytes]]) -> None:
        at = time.time()
        for partition, offset, value in batch:
            self.file.write(f"R\t{at:.6f}\t{partition}\t{offset}\t{value.decode('ascii')}\n")
            self.pending[partition] = offset + 1
            self.since_commit += 1

    def commit_due(self) -> dict[int, int] | None:
        """The offsets to commit once ``COMMIT_EVERY`` records were read since the last commit (None: not yet)."""
        if self.since_commit < COMMIT_EVERY or not self.pending:
            return None
        self.since_commit = 0
        return dict(self.pending)

    def committed(self, offsets: Mapping[int, int]) -> None:
        self.write("C", ",".join(f"{p}:{o}" for p, o in sorted(offsets.items())))
        for p, o in offsets.items():
            if self.pending.get(p) == o:
                del self.pending[p]

    def raised(self, where: str, kind: str, message: object) -> None:
        self.write("E", where, kind, message)

    def released(self, kind: str, partitions: Iterable[int]) -> None:
        numbers = sorted(partitions)
        for p in numbers:
            self.pending.pop(p, None)
        self.write("B", kind, ",".join(map(str, numbers)))

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.write("X")
        self.file.close()


def watch_stdin(stop: Callable[[], None]) -> None:
    """Calls ``stop`` once standard input ends (the parent closed it, or died)."""

    def run() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(1):
                pass
        stop()

    threading.Thread(target=run, name="stdin-watcher", daemon=True).start()


async def run_ours(args: argparse.Namespace, log: ChildLog) -> None:
    from asyncconsumer import AsyncConsumer, ConsumerRebalanceListener, KafkaError, TopicPartition

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    watch_stdin(lambda: loop.call_soon_threadsafe(stopping.set))

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
            log.released("revoked", (tp.partition for tp in partitions))

        def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
            log.released("lost", (tp.partition for tp in partitions))

        def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            log.write("B", "assigned", ",".join(str(p) for p in sorted(tp.partition for tp in partitions)))

    consumer = AsyncConsumer(
        args.bootstrap,
        group_id=args.group,
        group_protocol="classic",
        client_id="bench-faults-ours",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        socket_connection_setup_timeout_ms=SETUP_TIMEOUT_MS,
        max_poll_records=MAX_POLL_RECORDS,
    )
    try:
        await consumer.subscribe([args.topic], listener=Listener())
        log.write("S")
        log.flush()
        while not stopping.is_set():
            try:
                batch = await consumer.poll(timeout_ms=200)
            except KafkaError as exc:
                log.raised("poll", type(exc).__name__, exc)
                log.flush()
                await asyncio.sleep(0.05)
                continue
            log.records((r.partition, r.offset, r.value) for r in batch.records())
            offsets = log.commit_due()
            if offsets is not None:
                try:
                    await consumer.commit()
                except KafkaError as exc:
                    log.raised("commit", type(exc).__name__, exc)
                else:
                    log.committed(offsets)
            log.flush()
    finally:
        with contextlib.suppress(Exception):
            await consumer.close(timeout_ms=10_000)


def run_librdkafka(args: argparse.Namespace, log: ChildLog) -> None:
    from confluent_kafka import Consumer, KafkaException

    stopping = threading.Event()
    watch_stdin(stopping.set)

    def on_error(error: Any) -> None:
        log.raised("error_cb", error.name(), error.str())

    def on_assign(_: Any, partitions: list[Any]) -> None:
        log.write("B", "assigned", ",".join(str(p) for p in sorted(tp.partition for tp in partitions)))

    def on_revoke(_: Any, partitions: list[Any]) -> None:
        log.released("revoked", (tp.partition for tp in partitions))

    def on_lost(_: Any, partitions: list[Any]) -> None:
        log.released("lost", (tp.partition for tp in partitions))

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.protocol": "classic",
            "client.id": "bench-faults-librdkafka",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "socket.timeout.ms": REQUEST_TIMEOUT_MS,
            "socket.connection.setup.timeout.ms": SETUP_TIMEOUT_MS,
            "error_cb": on_error,
            "log_level": 0,
        }
    )
    try:
        consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        log.write("S")
        log.flush()
        while not stopping.is_set():
            try:
                messages = consumer.consume(num_messages=MAX_POLL_RECORDS, timeout=0.2)
            except KafkaException as exc:
                error = exc.args[0]
                log.raised("poll", error.name(), error.str())
                log.flush()
                continue
            good = []
            for m in messages:
                error = m.error()
                if error is not None:
                    log.raised("poll", error.name(), error.str())
                else:
                    good.append((m.partition(), m.offset(), m.value()))
            log.records(good)
            offsets = log.commit_due()
            if offsets is not None:
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException as exc:
                    error = exc.args[0]
                    log.raised("commit", error.name(), error.str())
                else:
                    log.committed(offsets)
            log.flush()
    finally:
        with contextlib.suppress(Exception):
            consumer.close()


async def run_aiokafka(args: argparse.Namespace, log: ChildLog) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.abc import ConsumerRebalanceListener
    from aiokafka.errors import KafkaError

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    watch_stdin(lambda: loop.call_soon_threadsafe(stopping.set))

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            log.released("revoked", (tp.partition for tp in revoked))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            log.write("B", "assigned", ",".join(str(p) for p in sorted(tp.partition for tp in assigned)))

    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id="bench-faults-aiokafka",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    await consumer.start()
    try:
        consumer.subscribe([args.topic], listener=Listener())
        log.write("S")
        log.flush()
        while not stopping.is_set():
            try:
                batches = await consumer.getmany(timeout_ms=200, max_records=MAX_POLL_RECORDS)
            except KafkaError as exc:
                log.raised("poll", type(exc).__name__, exc)
                log.flush()
                await asyncio.sleep(0.05)
                continue
            log.records((r.partition, r.offset, r.value) for records in batches.values() for r in records)
            offsets = log.commit_due()
            if offsets is not None:
                try:
                    await consumer.commit()
                except KafkaError as exc:
                    log.raised("commit", type(exc).__name__, exc)
                else:
                    log.committed(offsets)
            log.flush()
    finally:
        with contextlib.suppress(Exception):
            await consumer.stop()


def child_main(args: argparse.Namespace) -> int:
    log = ChildLog(args.out)
    try:
        if args.child == "ours":
            import structlog

            level = 20 if os.environ.get("BENCH_FAULTS_OURS_INFO") else 40  # info, or errors only, to stderr
            structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))
            asyncio.run(run_ours(args, log))
        elif args.child == "librdkafka":
            run_librdkafka(args, log)
        elif args.child == "aiokafka":
            import logging

            logging.basicConfig(level=logging.ERROR)
            asyncio.run(run_aiokafka(args, log))
        else:
            raise ValueError(f"unknown child {args.child!r}")
    finally:
        log.close()
    return 0


# ======================================================================================================================
# the parent
# ======================================================================================================================
class Child:
    """A running child: its process, its log file and what the parent read of it so far."""

    def __init__(self, name: str, argv: Sequence[str], out: Path, stderr: Path) -> None:
        self.name = name
        self.out = out
        self.log = ClientLog(name)
        self._stderr = open(stderr, "w")  # noqa: SIM115  # closed by stop()
        self.stderr_path = stderr
        out.touch()
        self.process = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=self._stderr, stderr=self._stderr)
        self._reader = open(out, encoding="utf-8")  # noqa: SIM115  # closed by stop()

    def refresh(self) -> None:
        self.log.feed(self._reader.read())

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = 60.0) -> None:
        """Closes its standard input (it stops and closes its consumer), by SIGKILL to its pid after ``timeout_s``."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.refresh()
        self._reader.close()
        self._stderr.close()

    def stderr_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])
        return ""


def java_setup() -> tuple[list[str], dict[str, Any]]:
    """The Java child's command line up to its options, and what the report says about it."""
    import javapeer

    kafka_broker = test_support("kafka_broker")
    libs = kafka_broker.fetch_jars()
    classes = javapeer.build(libs, kafka_broker.cache_root(), main_class="JavaFaultConsume")
    jars = javapeer.runtime_jars(libs)
    text = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    cp = ":".join([str(classes), *(str(j) for j in jars)])
    info = {
        "java": text.strip().splitlines()[0] if text.strip() else "unknown",
        "kafka_clients": jars[0].stem.removeprefix("kafka-clients-"),
        "jvm_flags": list(javapeer.JVM_FLAGS),
    }
    return [shutil.which("java") or "java", *javapeer.JVM_FLAGS, "-cp", cp, "JavaFaultConsume"], info


def child_argv(name: str, java: Sequence[str], bootstrap: str, topic: str, group: str, out: Path) -> list[str]:
    options = ["--bootstrap", bootstrap, "--topic", topic, "--group", group, "--out", str(out)]
    if name == "java":
        timeouts = [
            "--commit-every",
            str(COMMIT_EVERY),
            "--session-timeout-ms",
            str(SESSION_TIMEOUT_MS),
            "--heartbeat-interval-ms",
            str(HEARTBEAT_INTERVAL_MS),
            "--request-timeout-ms",
            str(REQUEST_TIMEOUT_MS),
            "--connection-setup-timeout-ms",
            str(SETUP_TIMEOUT_MS),
            "--max-poll-records",
            str(MAX_POLL_RECORDS),
        ]
        return [*java, *options, *timeouts]
    return [sys.executable, str(Path(__file__).resolve()), "--child", name, *options]


def refresh_all(children: Sequence[Child]) -> None:
    for child in children:
        child.refresh()
        if not child.alive():
            raise RuntimeError(f"{child.name} exited with code {child.process.returncode}:\n{child.stderr_tail()}")


def wait_all_read(children: Sequence[Child], mark: int, timeout_s: float, producer: Any) -> dict[str, bool]:
    """Until every child read, from every partition, a record numbered ``mark`` or later (or ``timeout_s``
    passed); which did."""
    deadline = time.monotonic() + timeout_s
    while True:
        producer.check()
        refresh_all(children)
        done = {c.name: c.log.read_since(mark, range(PARTITIONS)) for c in children}
        if all(done.values()) or time.monotonic() >= deadline:
            return done
        time.sleep(0.05)


def hold(children: Sequence[Child], seconds: float) -> None:
    """Keeps reading the children's logs for ``seconds`` (a fault's time: a schedule, not a wait for a condition)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        refresh_all(children)
        time.sleep(min(0.1, max(0.0, until - time.monotonic())))


def groups_led_by(cluster: Any, node: int, count: int) -> list[str]:
    faults = test_support("network_faults")
    found: list[str] = []
    for _ in range(count):
        found.append(asyncio.run(faults.group_led_by(cluster, node, avoid=found)))
    return found


def run(args: argparse.Namespace) -> dict[str, Any]:
    toxi_cluster = test_support("toxi_cluster")
    cluster_load = test_support("cluster_load")
    faults = test_support("network_faults")
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    wanted = {s.strip() for s in args.faults.split(",")} if args.faults else None
    unknown = sorted(wanted - {s.name for s in schedule()}) if wanted else []
    if unknown:
        raise SystemExit(f"--faults: no step named {', '.join(map(repr, unknown))}; the steps: {step_names()}")
    steps = [s for s in schedule() if s.name == BASELINE or wanted is None or s.name in wanted]
    java, java_info = java_setup() if "java" in clients else ([], {})
    loads: list[tuple[float, float, float, float]] = [(time.time(), *os.getloadavg())]
    print(f"# starting 3 Kafka nodes behind Toxiproxy (load {os.getloadavg()[0]:.1f})", flush=True)
    cluster = toxi_cluster.ProxiedCluster.start()
    children: list[Child] = []
    producer = None
    workdir = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    try:
        topic = f"faults-{int(time.time())}"
        cluster_load.create_placed_topic(cluster.kafka, topic, faults.PLACEMENT)
        groups = dict(zip(clients, groups_led_by(cluster, COORDINATOR, len(clients)), strict=True))
        producer = cluster_load.AckedProducer(cluster.direct_servers, topic, PARTITIONS, args.rate).start()
        for name in clients:
            out = workdir / f"{name}.log"
            argv = child_argv(name, java, cluster.bootstrap_servers, topic, groups[name], out)
            children.append(Child(name, argv, out, workdir / f"{name}.stderr"))
        ready = wait_all_read(children, producer.sent, START_S, producer)
        if not all(ready.values()):
            raise RuntimeError(f"not every client read every partition within {START_S:.0f} s: {ready}")
        print(f"# every client reads every partition; faults begin (load {os.getloadavg()[0]:.1f})", flush=True)
        done: list[Done] = []
        recovered: dict[str, dict[str, bool]] = {}
        load_at_heal: dict[str, float] = {}
        for step in steps:
            hold(children, GAP_S)
            began, began_mark = time.time(), producer.sent
            loads.append((began, *os.getloadavg()))
            if step.fault is None:
                hold(children, step.seconds)
            else:
                with faults.applied(cluster, step.fault, step.targets):
                    hold(children, step.seconds)
            healed, healed_mark = time.time(), producer.sent
            load_at_heal[step.name] = os.getloadavg()[0]
            recovered[step.name] = wait_all_read(children, healed_mark, RECOVER_S, producer)
            done.append(Done(step.name, began, began_mark, healed, healed_mark))
            stalls = {c.name: stall_text(stall_after(c.log.reads, healed_mark, healed)) for c in children}
            print(f"# {step.name}: {stalls} (load {os.getloadavg()[0]:.1f})", flush=True)
        acked_records = producer.stop()
        failed_sends = len(producer.failed)
        producer = None
        acked = [a.index for a in acked_records]
        everything = set(acked)
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            refresh_all(children)
            if all(everything <= c.log.indices for c in children):
                break
            time.sleep(0.1)
        closing = time.time()
        loads.append((closing, *os.getloadavg()))
        for child in children:
            child.stop()
        landed_raw = faults.landed_commits(cluster, set(groups.values()))
        landed = {
            name: {p: offsets for (g, p), offsets in landed_raw.items() if g == group} for name, group in groups.items()
        }
        result = analyse({c.name: c.log for c in children}, done, acked, landed, closing)
        targets = {s.name: list(s.targets) for s in steps}
        for entry in result["steps"]:
            entry["targets"] = targets[entry["step"]]
            fault = next(s.fault for s in steps if s.name == entry["step"])
            entry["fault"] = "none" if fault is None else fault.describe()
            entry["recovered_within_bound"] = recovered[entry["step"]]
            entry["load_1min_at_heal"] = load_at_heal[entry["step"]]
        result.update(
            {
                "bench": "faults",
                "code": code_version(),
                "broker": f"Apache Kafka {cluster.kafka.version}, 3 nodes (KRaft, broker+controller each)",
                "toxiproxy": test_support("toxiproxy").TOXIPROXY_VERSION,
                "machine": machine(("aiokafka", "confluent_kafka")),
                "asyncconsumer": _version("asyncconsumer"),
                "java_client": java_info,
                "clients": clients,
                "rate": args.rate,
                "commit_every": COMMIT_EVERY,
                "settings": {
                    "session_timeout_ms": SESSION_TIMEOUT_MS,
                    "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
                    "request_timeout_ms": REQUEST_TIMEOUT_MS,
                    "socket_connection_setup_timeout_ms": SETUP_TIMEOUT_MS,
                },
                "acknowledged": len(acked),
                "load_average": [list(x) for x in loads],
                "failed_sends": failed_sends,
            }
        )
        return result
    finally:
        for child in children:
            if child.alive():
                child.stop(timeout_s=20)
        if producer is not None:
            with contextlib.suppress(BaseException):
                producer.stop()
        cluster.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"# the children's logs are kept in {workdir}")


def _version(module: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return "unknown"


def parent_main(args: argparse.Namespace) -> int:
    result = run(args)
    text = table(result, result["clients"])
    print(text)
    for name, totals in result["totals"].items():
        print(f"# {name}: {totals}")
    path = Path(args.json or default_results_path("faults", result["code"], broker="kafka"))
    write_json(path, result, indent=1, end="\n", default=str)
    path.with_suffix(".md").write_text(text + "\n")
    print(f"results: {path}, {path.with_suffix('.md')}")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default=",".join(CLIENTS), help="which clients, comma-separated")
    parser.add_argument(
        "--faults", default="", help="which steps by their exact names (default: all), comma-separated: " + step_names()
    )
    parser.add_argument("--rate", type=int, default=RATE, help="records/s produced")
    parser.add_argument("--json", default="", help="where the results go (default: results/faults-<commit>-kafka)")
    parser.add_argument("--keep", action="store_true", help="keep the children's logs")
    parser.add_argument("--child", choices=[c for c in CLIENTS if c != "java"], help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--group", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
