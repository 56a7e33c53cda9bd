"""Fetch sessions (KIP-227) against full fetches: one consumer of a topic with 1,000 partitions.

    python benchmarks/bench_fetch_sessions.py --broker kafka                       # 3 interleaved reps of each mode
    python benchmarks/bench_fetch_sessions.py --broker kafka --partitions 200 --seconds 5 --reps 1   # a quick check
    python benchmarks/bench_fetch_sessions.py --report benchmarks/results/fetch-sessions-XXXXXXX-kafka.json

The parent starts a broker (``--broker kafka``, the default: Tansu gives no sessions, so both modes would fetch in
full there), creates a topic of ``--partitions`` partitions and produces ``--records`` records to each. Every run is
a fresh child consuming all partitions from the beginning, with ``fetch_sessions`` on (``sessions``) or off
(``full``), the two modes interleaved rep by rep, through three phases:

1. ``catchup``: the backlog, until every produced record arrived;
2. ``trickle``: ``--seconds`` while the parent produces ``--rate`` records/s, one at a time to random partitions: a
   few partitions with something new per fetch, the others idle;
3. ``idle``: ``--seconds`` with nothing produced: each fetch waits ``fetch_max_wait_ms`` at the broker.

Per phase the child counts fetch requests and their encoded size (``FetchRequest.encode``: the body, without the
request header), response bytes (what ``FetchResponse.decode`` read, record data included), records and its own
CPU time (both threads); the parent reads the broker's CPU from ``/proc/<pid>/stat`` at the phase boundaries the
child announces. The child checks every partition's offsets continue without a gap or a repeat. Results:
``benchmarks/results/fetch-sessions-<commit>[-kafka].json`` and ``.md``, medians per mode and ratios full/sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchcommon import (
    BROKERS,
    RESULT_MARKER,
    ChildFailed,
    child_argv,
    code_version,
    default_results_path,
    kafka_broker_module,
    machine,
    process_cpu_s,
    report_failures,
    start_broker,
    table_row,
    table_rule,
)

MODES = ("sessions", "full")
PHASES = ("catchup", "trickle", "idle")
PHASE_MARKER = "PHASE "
CHILD_TIMEOUT_S = 300.0


# --- the child: one consumer, one mode ------------------------------------------------------------------------


class _Counts:
    """Fetch bytes as the background encodes and decodes them (written by that thread only)."""

    def __init__(self) -> None:
        self.requests = 0
        self.request_bytes = 0
        self.responses = 0
        self.response_bytes = 0

    def snapshot(self) -> dict[str, int]:
        return dict(vars(self))


def _count_fetch_bytes() -> _Counts:
    """Wraps the Fetch request's encoder and the response's decoder to count their bytes."""
    from asyncconsumer.protocol.messages.fetch import FetchRequest, FetchResponse

    counts = _Counts()
    encode = FetchRequest.encode
    decode = FetchResponse.decode.__func__  # type: ignore[attr-defined]

    def counting_encode(self: Any, w: Any, version: int) -> None:
        before = len(w.buf)
        encode(self, w, version)
        counts.requests += 1
        counts.request_bytes += len(w.buf) - before

    def counting_decode(cls: Any, r: Any, version: int) -> Any:
        before = r.pos
        response = decode(cls, r, version)
        counts.responses += 1
        counts.response_bytes += r.pos - before
        return response

    FetchRequest.encode = counting_encode  # type: ignore[method-assign]
    FetchResponse.decode = classmethod(counting_decode)  # type: ignore[method-assign,assignment]
    return counts


async def _child(args: argparse.Namespace) -> dict[str, Any]:
    from asyncconsumer import AsyncConsumer, TopicPartition

    counts = _count_fetch_bytes()
    expected = args.partitions * args.records
    next_offset = [0] * args.partitions
    phases: dict[str, dict[str, Any]] = {}
    async with AsyncConsumer(
        args.bootstrap, auto_offset_reset="earliest", fetch_sessions=args.mode == "sessions", max_poll_records=10_000
    ) as consumer:
        await consumer.assign([TopicPartition(args.topic, p) for p in range(args.partitions)])
        consumed = 0

        def mark() -> dict[str, Any]:
            m = consumer.metrics()
            return {
                "t": time.perf_counter(),
                "cpu": time.process_time(),
                "records": consumed,
                "full": m.fetch_requests_full,
                "incremental": m.fetch_requests_incremental,
                "session_errors": m.fetch_session_errors,
                **counts.snapshot(),
            }

        async def consume(until: float | None) -> None:
            nonlocal consumed
            while (consumed < expected) if until is None else (time.perf_counter() < until):
                if until is None and time.perf_counter() > start["t"] + args.timeout:
                    raise RuntimeError(f"caught up to {consumed} of {expected} records only")
                for record in (await consumer.poll(timeout_ms=100)).records():
                    p = record.partition
                    if record.offset != next_offset[p]:
                        raise RuntimeError(f"partition {p}: offset {record.offset} where {next_offset[p]} was next")
                    next_offset[p] = record.offset + 1
                    consumed += 1

        def announce(phase: str) -> None:
            print(PHASE_MARKER + phase, flush=True)

        start = mark()
        await consume(None)
        caught_up = mark()
        announce("trickle")
        trickle = mark()
        await consume(trickle["t"] + args.seconds)
        trickle_end = mark()
        announce("drain")
        await consume(time.perf_counter() + 1.0)  # the last trickled records, in no phase
        announce("idle")
        idle = mark()
        await consume(idle["t"] + args.seconds)
        idle_end = mark()
        announce("end")
    windows = {"catchup": (start, caught_up), "trickle": (trickle, trickle_end), "idle": (idle, idle_end)}
    for name, (a, b) in windows.items():
        phases[name] = {key: b[key] - a[key] for key in a}
    return {"mode": args.mode, "phases": phases, "records": consumed}


def child_main(args: argparse.Namespace) -> int:
    try:
        result = asyncio.run(_child(args))
    except Exception as exc:
        print(RESULT_MARKER + json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


# --- the parent -----------------------------------------------------------------------------------------------


def produce_backlog(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": 1})
    value = os.urandom(size)
    for p in range(partitions):
        for _ in range(records):
            while True:
                try:
                    producer.produce(topic, value, partition=p)
                    break
                except BufferError:
                    producer.poll(0.1)
        producer.poll(0)
    if producer.flush(60):
        raise ChildFailed("the backlog was not all acknowledged within 60 s")


class Trickle:
    """Produces ``rate`` records/s, one at a time to random partitions, on a thread, until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float, size: int) -> None:
        from confluent_kafka import Producer

        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
        self._args = (topic, partitions, rate, os.urandom(size))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trickle", daemon=True)
        self.produced = 0

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        topic, partitions, rate, value = self._args
        rng = random.Random()
        t0 = time.perf_counter()
        while not self._stop.is_set():
            self._producer.produce(topic, value, partition=rng.randrange(partitions))
            self._producer.poll(0)
            self.produced += 1
            self._stop.wait(max(0.0, t0 + self.produced / rate - time.perf_counter()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._producer.flush(30)


def run_child(
    args: argparse.Namespace, mode: str, bootstrap: str, topic: str, broker_pid: int | None
) -> dict[str, Any]:
    argv = child_argv(
        __file__,
        child=mode,
        bootstrap=bootstrap,
        topic=topic,
        partitions=args.partitions,
        records=args.records,
        seconds=args.seconds,
        timeout=args.timeout,
    )
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    broker_cpu: dict[str, float | None] = {"start": process_cpu_s(broker_pid)}
    trickle: Trickle | None = None
    result: dict[str, Any] | None = None
    timer = threading.Timer(args.timeout + 3 * args.seconds, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(PHASE_MARKER):
                phase = line[len(PHASE_MARKER) :].strip()
                broker_cpu[phase] = process_cpu_s(broker_pid)
                if phase == "trickle":
                    trickle = Trickle(bootstrap, topic, args.partitions, args.rate, args.size)
                    trickle.start()
                elif phase == "drain" and trickle is not None:
                    trickle.stop()
            elif line.startswith(RESULT_MARKER):
                result = json.loads(line[len(RESULT_MARKER) :])
        proc.wait()
    finally:
        timer.cancel()
        if trickle is not None:
            trickle.stop()
    stderr = proc.stderr.read() if proc.stderr is not None else ""
    if proc.returncode != 0 or result is None or "error" in result:
        raise ChildFailed(f"{mode}: exit code {proc.returncode}: {result}\n--- stderr ---\n{stderr[-3000:]}")
    bounds = {"catchup": ("start", "trickle"), "trickle": ("trickle", "drain"), "idle": ("idle", "end")}
    for phase, (a, b) in bounds.items():
        before, after = broker_cpu.get(a), broker_cpu.get(b)
        result["phases"][phase]["broker_cpu"] = None if before is None or after is None else after - before
    result["trickled"] = trickle.produced if trickle is not None else 0
    return result


def topic_at(topic: str, offsets: dict[int, int], max_bytes: int) -> tuple[Any, ...]:
    """One FetchTopic asking each partition from its offset."""
    from asyncconsumer.protocol.messages.fetch import FetchPartition, FetchTopic

    parts = tuple(
        FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=max_bytes) for p, o in offsets.items()
    )
    return (FetchTopic(topic=topic, partitions=parts),)


def broker_probe(broker: Any, topic: str, partitions: int, fetches: int, rounds: int = 3) -> dict[str, list[float]]:
    """The broker's CPU per fetch of every (idle, caught-up) partition answered at once (``max_wait_ms`` 0, so no
    fetch waits in the broker's purgatory): ``fetches`` sessionless full fetches, then as many incremental ones in
    one session, ``rounds`` times; milliseconds of broker CPU per fetch, per round."""
    kafka_broker_module()  # puts the repository root on sys.path for tests.support
    from asyncconsumer.protocol.messages.fetch import FetchRequest, FetchResponse
    from tests.support.raw_client import RawClient

    client = RawClient(broker.bootstrap_servers, "broker-probe")
    ends: dict[int, int] = {}
    out: dict[str, list[float]] = {"full": [], "sessions": []}
    try:
        probe = client.call(
            FetchRequest(
                max_wait_ms=0, min_bytes=1, max_bytes=1, topics=topic_at(topic, dict.fromkeys(range(partitions), 0), 1)
            ),
            12,
        )
        assert isinstance(probe, FetchResponse)
        ends = {p.partition_index: p.high_watermark for t in probe.responses for p in t.partitions}
        at_end = topic_at(topic, ends, 1 << 20)
        for _ in range(rounds):
            before = process_cpu_s(broker.pid)
            for _ in range(fetches):
                client.call(FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, topics=at_end), 12)
            after = process_cpu_s(broker.pid)
            if before is not None and after is not None:
                out["full"].append((after - before) * 1000 / fetches)
            opened = client.call(
                FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, topics=at_end, session_epoch=0), 12
            )
            assert isinstance(opened, FetchResponse) and opened.session_id, "no fetch session given"
            before = process_cpu_s(broker.pid)
            for epoch in range(1, fetches + 1):
                answer = client.call(
                    FetchRequest(
                        max_wait_ms=0,
                        min_bytes=1,
                        max_bytes=50 << 20,
                        session_id=opened.session_id,
                        session_epoch=epoch,
                    ),
                    12,
                )
                assert isinstance(answer, FetchResponse) and not answer.error_code, answer
            after = process_cpu_s(broker.pid)
            if before is not None and after is not None:
                out["sessions"].append((after - before) * 1000 / fetches)
            closing = FetchRequest(
                max_wait_ms=0, min_bytes=1, max_bytes=1, session_id=opened.session_id, session_epoch=-1
            )
            client.call(closing, 12)  # close it
    finally:
        client.close()
    return out


def _per(value: float | None, base: float) -> float | None:
    return None if value is None or base <= 0 else value / base


def summarise(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Per mode and phase, the median over reps of: requests/s, bytes per request and per response, client and
    broker CPU-s per second, client CPU-µs per request."""
    summary: dict[str, dict[str, dict[str, float | None]]] = {}
    for mode in MODES:
        summary[mode] = {}
        for phase in PHASES:
            rows = [r["phases"][phase] for r in runs if r["mode"] == mode]
            figures: dict[str, list[float]] = {}
            for row in rows:
                seconds = row["t"]
                values = {
                    "seconds": seconds,
                    "requests_per_s": _per(row["requests"], seconds),
                    "request_bytes": _per(row["request_bytes"], row["requests"]),
                    "response_bytes": _per(row["response_bytes"], row["responses"]),
                    "client_cpu_per_s": _per(row["cpu"], seconds),
                    "client_cpu_us_per_request": _per(row["cpu"] * 1e6, row["requests"]),
                    "broker_cpu_per_s": _per(row["broker_cpu"], seconds),
                    "incremental_share": _per(row["incremental"], row["full"] + row["incremental"]),
                    "records": row["records"],
                }
                for key, value in values.items():
                    if value is not None:
                        figures.setdefault(key, []).append(value)
            summary[mode][phase] = {key: statistics.median(values) for key, values in figures.items()}
    return summary


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def table(summary: dict[str, dict[str, dict[str, float | None]]]) -> str:
    columns = [
        ("requests/s", "requests_per_s", 1),
        ("bytes/request", "request_bytes", 0),
        ("bytes/response", "response_bytes", 0),
        ("client CPU-s/s", "client_cpu_per_s", 3),
        ("client CPU-µs/request", "client_cpu_us_per_request", 0),
        ("broker CPU-s/s", "broker_cpu_per_s", 3),
    ]
    lines = []
    for phase in PHASES:
        lines.append(f"\n**{phase}**\n")
        lines.append(table_row(["mode", *(title for title, _, _ in columns)]))
        lines.append(table_rule(1 + len(columns)))
        for mode in MODES:
            row = summary[mode][phase]
            lines.append(table_row([mode, *(_fmt(row.get(key), d) for _, key, d in columns)]))
        ratio = []
        for _, key, _ in columns:
            full, sessions = summary["full"][phase].get(key), summary["sessions"][phase].get(key)
            ratio.append("-" if not full or not sessions else f"{full / sessions:.2f}x")
        lines.append(table_row(["full / sessions", *ratio]))
    return "\n".join(lines)


def parent_main(args: argparse.Namespace) -> int:
    broker = start_broker(args.broker)
    bootstrap = broker.bootstrap_servers
    broker_pid = broker.pid
    description = broker.description
    failures: list[str] = []
    runs: list[dict[str, Any]] = []
    try:
        topic = f"bench-fetch-sessions-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, args.partitions)
        t0 = time.perf_counter()
        produce_backlog(bootstrap, topic, args.partitions, args.records, args.size)
        print(
            f"{description}: {args.partitions} partitions x {args.records} records of {args.size} B produced "
            f"in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        for rep in range(args.reps):
            for mode in MODES:
                try:
                    result = run_child(args, mode, bootstrap, topic, broker_pid)
                except ChildFailed as exc:
                    failures.append(str(exc))
                    if not args.keep_going:
                        raise
                    continue
                runs.append(result)
                trickle = result["phases"]["trickle"]
                print(
                    f"rep {rep + 1} {mode:8}: catch-up {result['phases']['catchup']['t']:.1f} s; trickle "
                    f"{trickle['requests']} requests, {trickle['request_bytes'] / max(1, trickle['requests']):,.0f} "
                    f"B each, client {trickle['cpu']:.2f} CPU-s; {result['trickled']} trickled",
                    flush=True,
                )
        probe = {}
        if args.probe_fetches and args.broker == "kafka":  # Tansu gives no sessions
            probe = broker_probe(broker, topic, args.partitions, args.probe_fetches)
    finally:
        broker.stop()
    summary = summarise(runs)
    header = (
        f"Fetch sessions vs full fetches, {args.partitions} partitions, {args.records} records each of {args.size} B, "
        f"trickle {args.rate}/s for {args.seconds} s, idle {args.seconds} s; {description}; medians of {args.reps} "
        f"reps; commit {code_version()}; {datetime.now(UTC):%Y-%m-%d}"
    )
    text = header + "\n" + table(summary) + probe_table(probe)
    print("\n" + text)
    path = Path(args.json) if args.json else default_results_path("fetch-sessions", code_version(), broker=args.broker)
    payload = {
        "machine": {**machine(("confluent_kafka",)), "broker": description, "broker_kind": args.broker},
        "args": {k: v for k, v in vars(args).items() if k not in ("json", "report")},
        "runs": runs,
        "summary": summary,
        "broker_probe_ms_per_fetch": probe,
    }
    path.write_text(json.dumps(payload, indent=1))
    path.with_suffix(".md").write_text(text + "\n")
    print(f"\nwrote {path} and {path.with_suffix('.md')}")
    return report_failures(failures)


def probe_table(probe: dict[str, list[float]]) -> str:
    if not probe.get("full") or not probe.get("sessions"):
        return ""
    full, sessions = statistics.median(probe["full"]), statistics.median(probe["sessions"])
    return (
        "\n\n**broker CPU per fetch answered at once** (raw fetches of every caught-up partition, max_wait_ms 0; "
        f"median of {len(probe['full'])} rounds)\n\n"
        "| mode | broker CPU-ms/fetch |\n|---|---:|\n"
        f"| sessions | {sessions:.2f} |\n| full | {full:.2f} |\n| full / sessions | {full / sessions:.2f}x |"
    )


def report_main(path: str) -> int:
    payload = json.loads(Path(path).read_text())
    print(table(summarise(payload["runs"])) + probe_table(payload.get("broker_probe_ms_per_fetch", {})))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=BROKERS, default="kafka")
    parser.add_argument("--partitions", type=int, default=1_000)
    parser.add_argument("--records", type=int, default=5, help="records per partition in the backlog")
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--rate", type=float, default=100.0, help="trickle records/s")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of the trickle and idle phases")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--probe-fetches", type=int, default=300, help="raw fetches per mode and round for the broker probe (0: none)"
    )
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds for a child's catch-up")
    parser.add_argument("--keep-going", action="store_true")
    parser.add_argument("--json", help="where to write the results (default benchmarks/results/...)")
    parser.add_argument("--report", metavar="JSON", help="print the tables of a saved run and exit")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.report:
        return report_main(args.report)
    if args.child:
        args.mode = args.child
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
