"""Share-group (KIP-932) consume throughput on Apache Kafka: asyncconsumer's share consumers against Java's and
confluent's, each member its own process (Java's ``ShareConsumerPerformance``: its threads in one JVM).

    python benchmarks/bench_share.py                                  # every workload, client, group size, mode
    python benchmarks/bench_share.py --quick                          # 200k x 100 B and 50k x 1 KB, 1 rep
    python benchmarks/bench_share.py --clients asyncconsumer-sync,java-perf --consumers 1 --ack implicit \\
        --workload small --max-poll-records 500,2000 --record-locks 2000,4000 --reps 1   # what bounds a client
    python benchmarks/bench_share.py --report benchmarks/results/share-XXXXXXX-kafka.json  # tables, .md again

The parent starts a one-node Apache Kafka (``tests/support/kafka_broker.py``; ``--bootstrap`` uses a running one),
produces each workload once into a 4-partition topic, then for every run makes a fresh share group
(``share.auto.offset.reset=earliest``) and starts the run's members together. A member of ours, of confluent's or
``JavaShareConsume`` subscribes and waits for a start file; once the broker lists every member with partitions
assigned (ShareGroupDescribe) the parent creates it and they all begin to poll. Each prints ``P accepted_so_far``
as the broker confirms acknowledgements; when the members' sum reaches the topic's count the parent closes their
standard input and they commit, close and print a result line. ``ShareConsumerPerformance`` (``--threads N``,
implicit acknowledgement, its own stop at ``--num-records``) cannot wait: it joins and reads at once.

Figures per run (group-wide): records/s from the first record any member got to the last acknowledgement the broker
confirmed as accepted (``ShareConsumerPerformance``: to its last record received, its own end); the same to the last
record received; CPU (``wait4`` of each member process, the whole process); peak RSS (``VmHWM``, sampled); the
broker's CPU. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from benchcommon import (
    REPO_ROOT,
    code_version,
    default_results_path,
    kafka_broker_module,
    machine,
    median,
    peak_rss_bytes,
    process_cpu_s,
    wait_until_quiet,
    write_json,
)

Result = dict[str, Any]

CLIENTS = ("asyncconsumer", "asyncconsumer-sync", "java-perf", "java", "confluent")
"""``asyncconsumer``: ``AsyncShareConsumer``; ``asyncconsumer-sync``: ``ShareConsumer``; ``java-perf``: kafka-tools'
``ShareConsumerPerformance`` (implicit only); ``java``: ``JavaShareConsume`` (``KafkaShareConsumer``, kafka-clients
4.4.0); ``confluent``: confluent-kafka's ``ShareConsumer``."""
PYTHON_CLIENTS = ("asyncconsumer", "asyncconsumer-sync", "confluent")
OURS = ("asyncconsumer", "asyncconsumer-sync")
IMPLICIT_ONLY = frozenset({"java-perf"})
ACK_MODES = ("implicit", "explicit")
PARTITIONS = 4
POLL_TIMEOUT_S = 0.2


@dataclass(frozen=True)
class Workload:
    name: str
    records: int
    size: int


WORKLOADS = {"small": Workload("small", 1_000_000, 100), "large": Workload("large", 200_000, 1_000)}
QUICK = {"small": Workload("small", 200_000, 100), "large": Workload("large", 50_000, 1_000)}


# --- arguments ---------------------------------------------------------------------------------------------------
def _csv(text: str, allowed: Sequence[str] | None = None, what: str = "value") -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"no {what} given")
    if allowed is not None:
        bad = [x for x in items if x not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad)}; choose from {', '.join(allowed)}")
    return list(dict.fromkeys(items))


def _ints(text: str, *, allow_default: bool = False) -> list[int | None]:
    out: list[int | None] = []
    for item in _csv(text):
        if allow_default and item == "default":
            out.append(None)
            continue
        try:
            value = int(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {item!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive: {value}")
        out.append(value)
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=lambda s: _csv(s, CLIENTS, "client"), default=list(CLIENTS))
    p.add_argument("--workload", type=lambda s: _csv(s, tuple(WORKLOADS), "workload"), default=list(WORKLOADS))
    p.add_argument("--consumers", type=lambda s: [int(x) for x in _ints(s) if x is not None], default=[1, 3])
    p.add_argument("--ack", type=lambda s: _csv(s, ACK_MODES, "mode"), default=list(ACK_MODES))
    p.add_argument("--reps", type=int, default=1, help="repetitions (medians over them); one full rep takes ~15 min")
    p.add_argument("--quick", action="store_true", help="200k x 100 B and 50k x 1 KB")
    p.add_argument("--records", type=int, help="records of the small workload")
    p.add_argument("--large-records", type=int, help="records of the large workload")
    p.add_argument(
        "--max-poll-records", type=lambda s: _ints(s), default=[500], help="every client's max.poll.records (a list)"
    )
    p.add_argument(
        "--record-locks",
        type=lambda s: _ints(s, allow_default=True),
        default=[None],
        help="the group's share.partition.max.record.locks (a list; 'default' is the broker's, 2000)",
    )
    p.add_argument("--bootstrap", help="a running Kafka instead of starting one")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    p.add_argument("--profile", type=Path, help="run our members under cProfile, stats into this directory")
    p.add_argument("--json", type=Path, help="where to write the results (default results/share-<commit>-kafka.json)")
    p.add_argument("--report", type=Path, help="print a saved run's tables and rewrite its .md")
    p.add_argument("--child", choices=PYTHON_CLIENTS, help=argparse.SUPPRESS)
    p.add_argument("--topic", help=argparse.SUPPRESS)
    p.add_argument("--group", help=argparse.SUPPRESS)
    p.add_argument("--ack-mode", choices=ACK_MODES, default="implicit", help=argparse.SUPPRESS)
    p.add_argument("--start-file", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--profile-out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error("--reps must be at least 1")
    return args


def workloads_of(args: argparse.Namespace) -> list[Workload]:
    base = QUICK if args.quick else WORKLOADS
    chosen = []
    for name in args.workload:
        w = base[name]
        override = args.records if name == "small" else args.large_records
        chosen.append(Workload(name, override or w.records, w.size))
    return chosen


WARM_UP_RUNS = 4
"""Untimed runs per workload before the timed ones, at least; more, up to ``WARM_UP_MAX``, until the broker's CPU per
record has settled (``warmed``): after four the first timed rep still ran up to 2x slower than the last."""
WARM_UP_MAX = 16
WARM_UP_SETTLED = 0.15


def warmed(broker_cpu_per_m: Sequence[float]) -> bool:
    """The broker has warmed up: at least ``WARM_UP_RUNS`` runs, and its CPU per record in the last three within
    ``WARM_UP_SETTLED`` of their least."""
    last = [x for x in broker_cpu_per_m[-3:] if x > 0]
    return len(broker_cpu_per_m) >= WARM_UP_RUNS and len(last) == 3 and max(last) <= min(last) * (1 + WARM_UP_SETTLED)


@dataclass(frozen=True)
class Case:
    """One cell of the matrix: a workload, a group size, an acknowledgement mode, the knobs and a client."""

    workload: str
    consumers: int
    ack: str
    max_poll_records: int
    record_locks: int | None
    client: str

    def key(self) -> str:
        locks = "default" if self.record_locks is None else str(self.record_locks)
        return f"{self.workload}/{self.consumers}/{self.ack}/{self.max_poll_records}/{locks}/{self.client}"


def cases(args: argparse.Namespace) -> list[Case]:
    """Every run of one rep, in order; ``java-perf`` only in implicit mode."""
    out = []
    for w in args.workload:
        for n in args.consumers:
            for ack in args.ack:
                for mpr in args.max_poll_records:
                    for locks in args.record_locks:
                        for client in args.clients:
                            if ack == "explicit" and client in IMPLICIT_ONLY:
                                continue
                            out.append(Case(w, n, ack, mpr, locks, client))
    return out


# --- what one run measured ---------------------------------------------------------------------------------------
def parse_perf_output(text: str) -> Result:
    """``ShareConsumerPerformance --show-detailed-stats``: the totals line and, per share consumer, the end time of
    its first line (its first record: the line is printed at the first record after the reporting interval, and
    joining takes longer than that). Times are ms since the epoch (its timestamps are local time)."""
    firsts: dict[str, int] = {}
    total: Result | None = None
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 7 or fields[0].startswith("start.time"):
            continue
        try:
            start, end = (_perf_time(f) for f in fields[:2])
        except ValueError:
            continue
        last = fields[6]
        if " for share consumer " in last:
            who = last.split(" for share consumer ", 1)[1].strip()
            firsts.setdefault(who, end)
        else:
            total = {
                "start_epoch_ms": start,
                "end_epoch_ms": end,
                "records": int(fields[5]),
                "own_records_per_s": float(fields[4]),
                "fetch_time_ms": int(last),
            }
    if total is None:
        raise ValueError("ShareConsumerPerformance printed no totals line")
    total["first_record_epoch_ms"] = min(firsts.values()) if firsts else None
    total["threads_seen"] = len(firsts)
    return total


def _perf_time(text: str) -> int:
    """``2026-11-27 01:19:21:441`` (local time, ms after the last colon) as ms since the epoch."""
    stamp, _, ms = text.rpartition(":")
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp() * 1000) + int(ms)


def group_figures(
    records: int, members: Sequence[Result], *, perf: Result | None = None, spawned_epoch_ms: float | None = None
) -> Result:
    """The run's group-wide figures from its members' results (epoch ms): first record, last record, last
    acknowledgement confirmed accepted, and the rates over them. ``perf`` instead for ``ShareConsumerPerformance``
    (no acknowledgement confirmation: its end is its last record received)."""
    if perf is not None:
        first = perf["first_record_epoch_ms"]
        last_record = last_accepted = perf["end_epoch_ms"]
    else:
        firsts = [m["first_record_epoch_ms"] for m in members if m.get("first_record_epoch_ms", -1) >= 0]
        first = min(firsts) if firsts else None
        last_record = max((m["last_record_epoch_ms"] for m in members), default=None)
        last_accepted = max((m["last_confirmed_epoch_ms"] for m in members), default=None)

    def rate(end: float | None) -> float | None:
        if first is None or end is None or end <= first:
            return None
        return float(records / ((end - first) / 1000))

    return {
        "first_record_epoch_ms": first,
        "records_per_s": rate(last_accepted),
        "records_per_s_received": rate(last_record),
        "active_s": None if first is None or last_accepted is None else (last_accepted - first) / 1000,
        "first_record_s": None if first is None or spawned_epoch_ms is None else (first - spawned_epoch_ms) / 1000,
    }


def check_run(case: Case, records: int, members: Sequence[Result], perf: Result | None) -> list[str]:
    """What is wrong with a run: members that accepted (or, for ``java-perf``, read) other than exactly the topic."""
    if perf is not None:
        return [] if perf["records"] >= records else [f"read {perf['records']} of {records}"]
    problems = []
    accepted = sum(m.get("accepted", 0) for m in members)
    polled = sum(m.get("polled", 0) for m in members)
    if accepted != records:
        problems.append(f"accepted {accepted} records, expected {records}")
    if polled != records:
        problems.append(f"polled {polled} records (redeliveries?), expected {records}")
    failed = sum(m.get("failed", 0) for m in members)
    if failed:
        problems.append(f"{failed} acknowledgements failed")
    return problems


# --- summaries ---------------------------------------------------------------------------------------------------
SUMMARISED = (
    "records_per_s",
    "records_per_s_received",
    "cpu_s_per_m",
    "cpu_run_s_per_m",
    "peak_rss_mb",
    "peak_rss_mb_sum",
    "broker_cpu_s_per_m",
    "wall_s",
    "first_record_s",
    "records_per_fetch",
    "other_cpu_cores",
)


def summarise(runs: Sequence[Result]) -> dict[str, Result]:
    """Medians of every summarised figure per case key, with the run count."""
    by_key: dict[str, list[Result]] = {}
    for run in runs:
        if run.get("error"):
            continue
        by_key.setdefault(run["key"], []).append(run)
    out: dict[str, Result] = {}
    for key, group in by_key.items():
        entry: Result = {"case": group[0]["case"], "runs": len(group)}
        for name in SUMMARISED:
            entry[name] = median([r.get(name) for r in group])
        out[key] = entry
    return out


def peer_key(case: Mapping[str, Any], client: str) -> str:
    return Case(**{**case, "client": client}).key()


def java_reference(case: Mapping[str, Any]) -> str:
    """Java's share consumer to compare with: ``ShareConsumerPerformance`` in implicit mode (the issue's), our
    ``JavaShareConsume`` in explicit mode (the tool cannot acknowledge explicitly)."""
    return "java-perf" if case["ack"] == "implicit" else "java"


def ratio(summary: Mapping[str, Result], entry: Result, peer: str, metric: str = "records_per_s") -> float | None:
    other = summary.get(peer_key(entry["case"], peer))
    if other is None or not other.get(metric) or entry.get(metric) is None:
        return None
    return float(entry[metric]) / float(other[metric])


def target_lines(summary: Mapping[str, Result]) -> list[str]:
    """Our clients against the issue's targets: records/s ≥ 1.0x Java's share consumer and ≥ 1.5x confluent's."""
    lines = []
    for key in sorted(summary):
        entry = summary[key]
        case = entry["case"]
        if case["client"] not in OURS:
            continue
        label = f"{case['client']} {case['workload']} x{case['consumers']} {case['ack']}"
        parts = []
        for peer, goal in ((java_reference(case), 1.0), ("confluent", 1.5)):
            r = ratio(summary, entry, peer)
            if r is not None:
                parts.append(f"{r:.2f}x {peer} ({'met' if r >= goal else 'not met'}, target {goal}x)")
        steady = ratio(summary, entry, "confluent", "records_per_s_received")
        if steady is not None:
            parts.append(f"{steady:.2f}x confluent to the last record received")
        if parts:
            lines.append(f"- {label}: " + "; ".join(parts))
    return lines


def _num(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value / scale, spec)


def table(summary: Mapping[str, Result], workload: str) -> str:
    rows = [
        "| consumers | ack | max.poll.records | locks | client | records/s | vs Java | vs confluent"
        " | to last received | vs confluent | CPU-s / M (process; polling) | peak RSS MB (max; sum)"
        " | broker CPU-s / M | records / fetch | 1st record s | others' load | runs |",
        "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    entries = [e for e in summary.values() if e["case"]["workload"] == workload]
    order = {c: i for i, c in enumerate(CLIENTS)}
    entries.sort(
        key=lambda e: (
            e["case"]["consumers"],
            ACK_MODES.index(e["case"]["ack"]),
            e["case"]["max_poll_records"],
            e["case"]["record_locks"] or 0,
            order[e["case"]["client"]],
        )
    )
    for e in entries:
        c = e["case"]
        java = ratio(summary, e, java_reference(c))
        conf = ratio(summary, e, "confluent")
        conf_received = ratio(summary, e, "confluent", "records_per_s_received")
        rows.append(
            f"| {c['consumers']} | {c['ack']} | {c['max_poll_records']} | {c['record_locks'] or 'default'} "
            f"| {c['client']} | {_num(e['records_per_s'], ',.0f')} "
            f"| {_num(java, '.2f')}x | {_num(conf, '.2f')}x "
            f"| {_num(e['records_per_s_received'], ',.0f')} | {_num(conf_received, '.2f')}x "
            f"| {_num(e['cpu_s_per_m'], '.2f')}; {_num(e['cpu_run_s_per_m'], '.2f')} "
            f"| {_num(e['peak_rss_mb'], '.0f')}; {_num(e['peak_rss_mb_sum'], '.0f')} "
            f"| {_num(e['broker_cpu_s_per_m'], '.2f')} | {_num(e['records_per_fetch'], ',.0f')} "
            f"| {_num(e['first_record_s'], '.2f')} | {_num(e['other_cpu_cores'], '.2f')} | {e['runs']} |"
        )
    return "\n".join(rows)


def markdown(report: Result) -> str:
    summary = summarise(report["runs"])
    m = report["machine"]
    out = [
        f"# bench_share: {m.get('broker', '?')}, asyncconsumer {report['code']}, {report['started']}",
        "",
        f"{m.get('cpus')} CPUs ({m.get('cpu_model')}), Python {m.get('python')}, confluent-kafka "
        f"{m.get('confluent_kafka')} (librdkafka {m.get('librdkafka')}), {m.get('java', 'java ?')}; "
        f"{report['reps']} rep(s), medians; {PARTITIONS} partitions"
        + "".join(f"; {n} warm-up runs ({w})" for w, n in report.get("warm_up_runs", {}).items())
        + ".",
        "",
        "records/s: first record (any member) to the last acknowledgement the broker confirmed as accepted "
        "(java-perf: to its last record received). vs Java: java-perf (implicit), java (explicit). "
        "to last received: to the last record any member got, the steady rate (confluent's members confirm their "
        "last acknowledgements about 0.6 s after their last record, as if after a long poll of fetch.wait.max.ms), "
        "and the "
        "ratio to confluent's.",
        "",
    ]
    for w in report["workloads"]:
        out += [f"## {w['name']}: {w['records']:,} x {w['size']} B", "", table(summary, w["name"]), ""]
    targets = target_lines(summary)
    if targets:
        out += ["## Targets", "", *targets, ""]
    failures = [r for r in report["runs"] if r.get("error")]
    if failures:
        out += ["## Failed runs", "", *(f"- {r['key']} rep {r['rep']}: {r['error']}" for r in failures), ""]
    return "\n".join(out)


# --- the children ------------------------------------------------------------------------------------------------
def _watch_stdin(stop: threading.Event) -> None:
    def run() -> None:
        while sys.stdin.buffer.read(256):
            pass
        stop.set()

    threading.Thread(target=run, name="stdin-eof", daemon=True).start()


def _wait_start(path: Path | None, stop: threading.Event) -> float:
    """Says READY, waits for the start file; the process's CPU seconds then."""
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    while path is not None and not path.exists() and not stop.is_set():
        time.sleep(0.005)
    return _cpu_s()


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Tally:
    """A member's counts: polled, value bytes, accepted, and the wall clock of the first and last record and of
    the last accepted acknowledgement; ``progress`` prints ``P accepted`` when it changed."""

    def __init__(self) -> None:
        self.polled = 0
        self.value_bytes = 0
        self.accepted = 0
        self.failed = 0
        self.first_ms = -1.0
        self.last_ms = -1.0
        self.confirmed_ms = -1.0
        self._shown = 0

    def got(self, n: int, value_bytes: int) -> None:
        now = time.time() * 1000
        if self.first_ms < 0:
            self.first_ms = now
        self.last_ms = now
        self.polled += n
        self.value_bytes += value_bytes

    def confirmed(self, offsets: Mapping[Any, Any], error: object) -> None:
        n = sum(len(v) for v in offsets.values())
        if error is not None:
            self.failed += n
            return
        self.accepted += n
        self.confirmed_ms = time.time() * 1000

    def progress(self) -> None:
        if self.accepted != self._shown:
            self._shown = self.accepted
            sys.stdout.write(f"P {self.accepted}\n")
            sys.stdout.flush()

    def result(self, **extra: Any) -> Result:
        return {
            "polled": self.polled,
            "value_bytes": self.value_bytes,
            "accepted": self.accepted,
            "failed": self.failed,
            "first_record_epoch_ms": self.first_ms,
            "last_record_epoch_ms": self.last_ms,
            "last_confirmed_epoch_ms": self.confirmed_ms,
            **extra,
        }


def _our_config(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": f"bench-{os.getpid()}",
        "share.acknowledgement.mode": args.ack_mode,
        "max.poll.records": args.max_poll_records[0],
    }


def child_sync(args: argparse.Namespace, stop: threading.Event) -> Result:
    from asyncconsumer import AcknowledgeType, ShareConsumer

    tally = Tally()
    explicit = args.ack_mode == "explicit"
    polls = 0
    consumer = ShareConsumer(_our_config(args))
    consumer.set_acknowledgement_commit_callback(tally.confirmed)
    consumer.subscribe([args.topic])
    cpu0 = _wait_start(args.start_file, stop)
    accept = AcknowledgeType.ACCEPT
    while not stop.is_set():
        batch = consumer.poll(POLL_TIMEOUT_S * 1000)
        polls += 1
        if batch:
            n = size = 0
            for record in batch.records():
                n += 1
                size += len(record.value or b"")
                if explicit:
                    consumer.acknowledge(record, accept)
            tally.got(n, size)
        tally.progress()
    cpu_run = _cpu_s() - cpu0
    metrics = consumer.metrics()
    consumer.commit_sync()
    consumer.close()
    return tally.result(
        cpu_run_s=cpu_run, polls=polls, share_fetches=metrics.share_fetches, records_acquired=metrics.records_acquired
    )


def child_async(args: argparse.Namespace, stop: threading.Event) -> Result:
    from asyncconsumer import AcknowledgeType, AsyncShareConsumer

    async def run() -> Result:
        tally = Tally()
        explicit = args.ack_mode == "explicit"
        polls = 0
        consumer = AsyncShareConsumer(_our_config(args))
        consumer.set_acknowledgement_commit_callback(tally.confirmed)
        await consumer.subscribe([args.topic])
        cpu0 = await asyncio.to_thread(_wait_start, args.start_file, stop)
        accept = AcknowledgeType.ACCEPT
        while not stop.is_set():
            batch = await consumer.poll(POLL_TIMEOUT_S * 1000)
            polls += 1
            if batch:
                n = size = 0
                for record in batch.records():
                    n += 1
                    size += len(record.value or b"")
                    if explicit:
                        consumer.acknowledge(record, accept)
                tally.got(n, size)
            tally.progress()
        cpu_run = _cpu_s() - cpu0
        metrics = consumer.metrics()
        await consumer.commit_sync()
        await consumer.close()
        return tally.result(
            cpu_run_s=cpu_run,
            polls=polls,
            share_fetches=metrics.share_fetches,
            records_acquired=metrics.records_acquired,
        )

    return asyncio.run(run())


def child_confluent(args: argparse.Namespace, stop: threading.Event) -> Result:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    tally = Tally()
    explicit = args.ack_mode == "explicit"
    polls = 0
    consumer = ShareConsumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": f"bench-{os.getpid()}",
            "share.acknowledgement.mode": args.ack_mode,
            "max.poll.records": args.max_poll_records[0],
        }
    )
    consumer.set_acknowledgement_commit_callback(tally.confirmed)
    consumer.subscribe([args.topic])
    cpu0 = _wait_start(args.start_file, stop)
    accept = AcknowledgeType.ACCEPT
    while not stop.is_set():
        batch = consumer.poll(POLL_TIMEOUT_S)
        polls += 1
        n = size = 0
        for message in batch:
            if message.error() is not None:
                sys.stderr.write(f"poll error: {message.error()}\n")
                continue
            n += 1
            size += len(message.value() or b"")
            if explicit:
                consumer.acknowledge(message, accept)
        if n:
            tally.got(n, size)
        tally.progress()
    cpu_run = _cpu_s() - cpu0
    consumer.commit_sync(30)
    consumer.close()
    return tally.result(cpu_run_s=cpu_run, polls=polls)


CHILDREN: Mapping[str, Callable[[argparse.Namespace, threading.Event], Result]] = {
    "asyncconsumer": child_async,
    "asyncconsumer-sync": child_sync,
    "confluent": child_confluent,
}


def _profile_threads(path: Path) -> None:
    """Every thread started from now on (the consumer's background thread among them) runs under its own
    cProfile, its stats written beside ``path`` as ``<stem>.<thread name>.prof`` when the thread ends."""
    import cProfile

    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            original(self)
        finally:
            profiler.disable()
            name = "".join(c if c.isalnum() else "-" for c in self.name)
            profiler.dump_stats(str(path.with_name(f"{path.stem}.{name}.prof")))

    threading.Thread.run = run  # type: ignore[method-assign]


def child_main(args: argparse.Namespace) -> int:
    stop = threading.Event()
    _watch_stdin(stop)
    run = CHILDREN[args.child]
    if args.profile_out is not None:
        _profile_threads(args.profile_out)
        import cProfile

        profiler = cProfile.Profile()
        result = profiler.runcall(run, args, stop)
        profiler.dump_stats(str(args.profile_out))
    else:
        result = run(args, stop)
    result["client"] = args.child
    result["peak_rss_self_mb"] = peak_rss_bytes()[0] / 1e6
    sys.stdout.write("SHARE_RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


# --- the parent --------------------------------------------------------------------------------------------------
class Member:
    """One measured process: its output read as it comes, its peak RSS sampled, its CPU from ``wait4``."""

    def __init__(self, argv: Sequence[str], log: Path) -> None:
        self._log: IO[bytes] = log.open("wb")
        self.log_path = log
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1
        )
        self.accepted = 0
        self.ready = False
        self.lines: list[str] = []
        self.result: Result | None = None
        self.peak_rss = 0
        self.cpu_s: float | None = None
        self.returncode: int | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("P "):
                self.accepted = int(line[2:])
            elif line.startswith("READY"):
                self.ready = True
            elif line.startswith("SHARE_RESULT "):
                self.result = json.loads(line[len("SHARE_RESULT ") :])
            else:
                self.lines.append(line)

    def sample_rss(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_rss = max(self.peak_rss, int(line.split()[1]) * 1024)

    def exited(self) -> bool:
        if self.returncode is not None:
            return True
        pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
        if pid == 0:
            return False
        self._reaped(status, usage)
        return True

    def _reaped(self, status: int, usage: Any) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.returncode
        self.cpu_s = usage.ru_utime + usage.ru_stime

    def stop(self, timeout_s: float = 60.0) -> None:
        """Closes its standard input and waits (kills it after ``timeout_s``)."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        deadline = time.monotonic() + timeout_s
        while not self.exited():
            if time.monotonic() > deadline:
                self.proc.kill()
                _, status, usage = os.wait4(self.proc.pid, 0)
                self._reaped(status, usage)
                break
            time.sleep(0.02)
        self._reader.join(10)
        self._log.close()

    def log_tail(self, n: int = 20) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])


class Bench:
    """The broker, the produced topics and how to run one case."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.cluster: Any = None
        if args.bootstrap:
            self.bootstrap = args.bootstrap
            self.broker_pid: int | None = None
            self.broker_name = f"Kafka at {args.bootstrap}"
        else:
            kb = kafka_broker_module()
            # the group's lock limit may then be raised up to 10,000 (the default and the group's default stay 2,000)
            self.cluster = kb.KafkaCluster.start(
                nodes=1, settings={"group.share.max.partition.max.record.locks": "10000"}
            )
            self.bootstrap = self.cluster.bootstrap_servers
            self.broker_pid = self.cluster.nodes[0].pid
            self.broker_name = f"Apache Kafka {self.cluster.version}"
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self.topics: dict[str, str] = {}
        self._java: Result | None = None

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    def produce(self, w: Workload) -> float:
        import bench_consume
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        topic = f"share-{w.name}-{uuid.uuid4().hex[:8]}"
        self.admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(60)
        t0 = time.perf_counter()
        bench_consume.produce(self.bootstrap, topic, PARTITIONS, w.records, w.size, 256 * 1024)
        self.topics[w.name] = topic
        return time.perf_counter() - t0

    def set_group_config(self, group: str, config: Mapping[str, object]) -> None:
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        entries = [ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in config.items()]
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
        for future in self.admin.incremental_alter_configs([resource]).values():
            future.result(30)

    def java(self) -> Result:
        """The compiled ``JavaShareConsume`` and the jars of both Java clients (built on first use)."""
        if self._java is None:
            import javapeer
            import javashare

            kb = kafka_broker_module()
            libs = kb.fetch_jars()
            classes = javashare.build(libs, kb.cache_root())
            self._java = {
                "classes": classes,
                "jars": javapeer.runtime_jars(libs),
                "tools": kb.fetch_tools_jars(),
                "version": subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0],
            }
        return self._java

    def argv(self, case: Case, topic: str, group: str, start_file: Path, records: int, index: int) -> list[str]:
        if case.client in PYTHON_CLIENTS:
            argv = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                case.client,
                "--bootstrap",
                self.bootstrap,
                "--topic",
                topic,
                "--group",
                group,
                "--ack-mode",
                case.ack,
                "--max-poll-records",
                str(case.max_poll_records),
                "--start-file",
                str(start_file),
            ]
            if self.args.profile is not None and case.client in OURS:
                self.args.profile.mkdir(parents=True, exist_ok=True)
                name = f"{case.key().replace('/', '_')}-{index}-{group[-6:]}.prof"
                argv += ["--profile-out", str(self.args.profile / name)]
            return argv
        import javashare

        java = self.java()
        if case.client == "java-perf":
            return [
                *javashare.performance_command(
                    java["tools"],
                    bootstrap=self.bootstrap,
                    topic=topic,
                    group=group,
                    num_records=records,
                    threads=case.consumers,
                    timeout_ms=60_000,
                    properties={"max.poll.records": str(case.max_poll_records)},
                ),
                "--show-detailed-stats",
                "--reporting-interval",
                "100",
            ]
        return javashare.command(
            java["classes"],
            java["jars"],
            bootstrap=self.bootstrap,
            topic=topic,
            group=group,
            ack_mode=case.ack,
            commit="poll",
            stdin_eof=True,
            progress=True,
            start_file=start_file,
            max_poll_records=case.max_poll_records,
            client_id=f"bench-java-{index}",
        )

    def run(self, case: Case, w: Workload) -> Result:
        import bench_consume

        # the machine is shared: wait (up to 20 s) for others' load to drop, and record it during the run
        quiet = wait_until_quiet(self.broker_pid, 0.3, 20.0)
        load = bench_consume.Load(self.broker_pid)
        out = self._run(case, w)
        noise = load.finish()
        out["other_cpu_cores"] = noise["other_cpu_cores"]
        out["other_cpu_cores_before"] = quiet
        return out

    def _run(self, case: Case, w: Workload) -> Result:
        topic = self.topics[w.name]
        group = f"bench-share-{uuid.uuid4().hex[:10]}"
        config: dict[str, object] = {"share.auto.offset.reset": "earliest"}
        if case.record_locks is not None:
            config["share.partition.max.record.locks"] = case.record_locks
        self.set_group_config(group, config)
        start_file = self.workdir / f"{group}.start"
        processes = 1 if case.client == "java-perf" else case.consumers
        broker0 = process_cpu_s(self.broker_pid)
        spawned_ms = time.time() * 1000
        members = [
            Member(self.argv(case, topic, group, start_file, w.records, i), self.workdir / f"{group}-{i}.log")
            for i in range(processes)
        ]
        deadline = time.monotonic() + self.args.timeout
        error: str | None = None
        perf: Result | None = None
        try:
            if case.client == "java-perf":
                while not members[0].exited():
                    members[0].sample_rss()
                    if time.monotonic() > deadline:
                        raise TimeoutError("no end within the timeout")
                    time.sleep(0.1)
                members[0].stop()
                perf = parse_perf_output("".join(members[0].lines))
            else:
                while not all(m.ready for m in members):
                    for m in members:
                        if m.exited():
                            raise RuntimeError(f"a member exited early ({m.returncode}):\n{m.log_tail()}")
                    if time.monotonic() > deadline:
                        raise TimeoutError("members not up within the timeout")
                    time.sleep(0.01)
                start_file.touch()
                last_sample = 0.0
                while sum(m.accepted for m in members) < w.records:
                    if any(m.exited() for m in members):
                        raise RuntimeError(f"a member exited early:\n{members[0].log_tail()}")
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{sum(m.accepted for m in members)} of {w.records} accepted")
                    if time.monotonic() - last_sample > 0.1:
                        for m in members:
                            m.sample_rss()
                        last_sample = time.monotonic()
                    time.sleep(0.005)
                done_ms = time.time() * 1000
                for m in members:
                    m.sample_rss()
                for m in members:
                    m.stop()
        except Exception as exc:  # a failed run is recorded, the others go on
            error = f"{type(exc).__name__}: {exc}"
            for m in members:
                m.stop(timeout_s=10)
        broker1 = process_cpu_s(self.broker_pid)
        results = [m.result or {} for m in members]
        out: Result = {
            "key": case.key(),
            "case": case.__dict__,
            "records": w.records,
            "size": w.size,
            "group": group,
            "members": results,
            "member_cpu_s": [m.cpu_s for m in members],
            "member_peak_rss_mb": [m.peak_rss / 1e6 for m in members],
        }
        if error is None and case.client != "java-perf":
            bad = [m for m in members if m.returncode != 0 or m.result is None]
            if bad:
                error = f"a member ended with {bad[0].returncode}:\n{bad[0].log_tail()}"
        if error is None:
            problems = check_run(case, w.records, results, perf)
            if problems:
                error = "; ".join(problems)
        if error is not None:
            out["error"] = error
            return out
        out.update(group_figures(w.records, results, perf=perf, spawned_epoch_ms=spawned_ms))
        if perf is not None:
            out["perf"] = perf
            out["wall_s"] = (perf["end_epoch_ms"] - spawned_ms) / 1000
        else:
            out["wall_s"] = (done_ms - spawned_ms) / 1000
        cpu = sum(c or 0.0 for c in out["member_cpu_s"])
        out["cpu_s"] = cpu
        out["cpu_s_per_m"] = cpu / (w.records / 1e6)
        run_cpu = [float(r.get("cpu_run_s", -1.0)) for r in results]
        if run_cpu and min(run_cpu) >= 0:
            out["cpu_run_s_per_m"] = sum(run_cpu) / (w.records / 1e6)
        out["peak_rss_mb"] = max(out["member_peak_rss_mb"])
        out["peak_rss_mb_sum"] = sum(out["member_peak_rss_mb"])
        if broker0 is not None and broker1 is not None:
            out["broker_cpu_s_per_m"] = (broker1 - broker0) / (w.records / 1e6)
        fetches = sum(r.get("share_fetches", 0) for r in results)
        if fetches:
            out["share_fetches"] = fetches
            out["records_per_fetch"] = sum(r.get("records_acquired", 0) for r in results) / fetches
        return out


def write_outputs(report: Result, path: Path) -> None:
    write_json(path, report, indent=1, end="\n", default=str)
    path.with_suffix(".md").write_text(markdown(report))


def parent_main(args: argparse.Namespace) -> int:
    workloads = workloads_of(args)
    args.workload = [w.name for w in workloads]
    plan = cases(args)
    code = code_version()
    path = args.json or default_results_path("share", code, broker="kafka")
    workdir = Path(tempfile.mkdtemp(prefix="bench-share-"))
    bench = Bench(args, workdir)
    report: Result = {
        "code": code,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "reps": args.reps,
        "workloads": [w.__dict__ for w in workloads],
        "argv": sys.argv[1:],
        "runs": [],
    }
    try:
        report["machine"] = {**machine(("confluent_kafka",)), "broker": bench.broker_name}
        if any(c.client in ("java", "java-perf") for c in plan):
            report["machine"]["java"] = bench.java()["version"]
        for w in workloads:
            print(f"producing {w.name}: {w.records:,} x {w.size} B ... {bench.produce(w):.1f} s", flush=True)
        for w in workloads:
            # untimed: the first runs over a freshly produced topic pay the broker's cold start (its JIT, the share
            # coordinator's first group, the log's first reads): one run left the broker's CPU per record 3-5x
            # above the later reps', whichever client came first
            first = next((c for c in plan if c.workload == w.name), None)
            readings: list[float] = []
            for _ in range(WARM_UP_MAX if first is not None else 0):
                assert first is not None
                warm = bench.run(replace(first, consumers=1, ack="implicit"), w)
                readings.append(warm.get("broker_cpu_s_per_m") or 0.0)
                print(
                    f"warm-up {w.name} ({first.client}): {warm.get('records_per_s') or 0:,.0f} records/s, "
                    f"broker {readings[-1]:.2f} CPU-s/M",
                    flush=True,
                )
                if warmed(readings):
                    break
            report.setdefault("warm_up_runs", {})[w.name] = len(readings)
        for rep in range(1, args.reps + 1):
            for case in plan:
                w = next(x for x in workloads if x.name == case.workload)
                run = bench.run(case, w)
                run["rep"] = rep
                report["runs"].append(run)
                if run.get("error"):
                    print(f"rep {rep} {case.key()}: FAILED {run['error'].splitlines()[0]}", flush=True)
                else:
                    print(
                        f"rep {rep} {case.key()}: {run['records_per_s']:,.0f} records/s, "
                        f"{run['cpu_s_per_m']:.2f} CPU-s/M, {run['peak_rss_mb']:.0f} MB, wall {run['wall_s']:.1f} s",
                        flush=True,
                    )
                write_outputs(report, path)
    finally:
        bench.close()
    print(markdown(report))
    print(f"written: {path} and {path.with_suffix('.md')}")
    return 1 if any(r.get("error") for r in report["runs"]) else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if str(REPO_ROOT) not in sys.path:
        # members too measure this tree's code, not an installed copy (an editable install of another checkout)
        sys.path.insert(1, str(REPO_ROOT))
    if args.child:
        return child_main(args)
    if args.report:
        report = json.loads(args.report.read_text())
        print(markdown(report))
        args.report.with_suffix(".md").write_text(markdown(report))
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
