"""Is the consumer's memory bounded by its configuration, whatever the topic holds?

    python benchmarks/bench_memory.py                          # 2 GB backlog; 4 to 64 MiB buffers; aiokafka too
    python benchmarks/bench_memory.py --gb 0.5 --settings 4M,64M --no-aiokafka
    python benchmarks/bench_memory.py --report benchmarks/results/memory-XXXXXXX.json   # print a saved run again

The issue's requirement: "a 2 GB backlog consumed with RSS staying under the configured bound + a fixed overhead".
The parent starts an embedded Tansu broker (memory storage: it holds the whole backlog in RAM), creates one topic,
produces the backlog once (``--gb``, 1,000 B values, 256 KiB batches), then runs every measurement in a fresh
subprocess:

- ``baseline``: imports asyncconsumer, connects and consumes the first 1,000 records of partition 0 with a one-byte
  fetch buffer: the fixed overhead (interpreter, imports, threads, connections) with next to no data held;
- ``asyncconsumer`` for each ``--settings`` entry (``fetch_buffer_bytes[:fetch_max_bytes[:max_partition_fetch_
  bytes]]``), twice: a caller that polls as fast as it can, and a slow one that sleeps ``--slow-ms`` after every
  poll (I/O-bound processing) so the background thread runs ahead and keeps the buffer full. The blocking
  ``Consumer``, manual assignment of every partition from the beginning, ``poll(timeout_ms=1000,
  max_records=10000)`` to the end, touching every value;
- ``aiokafka`` (for context, no bound checked) with its defaults, both callers.

Each child samples its own RSS (``/proc/self/statm``) every ``--sample-ms`` from a thread and reports the sampled
peak, the kernel's high-water mark ``VmHWM`` (nothing between samples escapes it; the larger is checked), ``ru_maxrss``
(for reference only: Linux carries the spawning parent's high-water mark into it), the most ``buffered_bytes`` it
saw, and must consume exactly the produced records (count, value bytes, offsets contiguous per partition, final
positions); any child that does not fails the run (exit 1).
The parent prints a markdown table with each run's peak against the baseline's overhead plus the bound derived
from the configuration (see ``bound()``), and writes everything to ``benchmarks/results/memory-<code>.json``.
A run over its bound is reported loudly, but does not change the exit code. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench_consume import produce
from benchcommon import (
    RESULT_MARKER,
    ChildFailed,
    child_argv,
    code_version,
    default_results_path,
    machine,
    peak_rss_bytes,
    quiet_before_run,
    report_failures,
    spawn_child,
    write_json,
)

Result = dict[str, Any]

MiB = 1 << 20
CHILD_TIMEOUT_S = 900.0
STALL_S = 30.0
BASELINE_RECORDS = 1_000
DEFAULT_SETTINGS = "4M,8M,16M,64M,16M:32M:8M"
CONSUMER_DEFAULTS = {"fetch_max_bytes": 52_428_800, "max_partition_fetch_bytes": 1_048_576}
"""asyncconsumer's (and Java's) defaults, used where a setting leaves them out."""
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


# ==========================================================================================================
# child side
# ==========================================================================================================


class RssSampler(threading.Thread):
    """Reads the process's resident set size every ``interval_s`` until stopped; keeps every sample."""

    def __init__(self, interval_s: float) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.interval_s = interval_s
        self.samples: list[tuple[float, int]] = []
        self.probe: Callable[[], int] | None = None
        """Also sampled when set: the consumer's buffered (+ reserved) bytes."""
        self.probe_max = 0
        self._stop_event = threading.Event()
        self._fd = os.open("/proc/self/statm", os.O_RDONLY)

    def read(self) -> int:
        """RSS in bytes, now."""
        return int(os.pread(self._fd, 128, 0).split()[1]) * _PAGE

    def run(self) -> None:
        while True:
            self.samples.append((time.perf_counter(), self.read()))
            probe = self.probe
            if probe is not None:
                self.probe_max = max(self.probe_max, probe())
            if self._stop_event.wait(self.interval_s):
                return

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self.samples.append((time.perf_counter(), self.read()))
        os.close(self._fd)


def _record_footprint(records: Sequence[Any]) -> float:
    """Average bytes one returned record holds on its own: the record, its value and key, its non-cached ints,
    and its list slot (``sys.getsizeof``, so without malloc's own rounding)."""
    total = 0
    sample = records[:1000]
    for record in sample:
        total += sys.getsizeof(record) + 8
        fields: Iterable[Any] = record
        if not isinstance(record, tuple):  # aiokafka's ConsumerRecord is a dataclass
            fields = vars(record).values()
            total += sys.getsizeof(vars(record))
        for field in fields:
            if field is None or isinstance(field, str) or field == ():
                continue  # shared: None, the topic string, the empty headers tuple
            if isinstance(field, int) and -5 <= field <= 256:
                continue  # cached small ints
            total += sys.getsizeof(field)
    return total / max(1, len(sample))


class Progress:
    """What the consume loop saw: records, value bytes, offsets per partition, and when."""

    def __init__(self) -> None:
        self.count = 0
        self.value_bytes = 0
        self.next_offset: dict[int, int] = {}
        self.marks: list[tuple[float, int]] = []
        self.last_progress = time.perf_counter()
        self.footprint: float | None = None
        self.largest_poll = 0

    def add(self, partition: int, records: Sequence[Any]) -> None:
        for record in records:
            self.value_bytes += len(record.value)
        first, last = records[0].offset, records[-1].offset
        want = self.next_offset.get(partition, 0)
        if first != want or last != first + len(records) - 1:
            raise RuntimeError(
                f"partition {partition}: got offsets {first}..{last} ({len(records)} records), expected {want}.."
            )
        self.next_offset[partition] = last + 1
        self.count += len(records)

    def consume(self, batch: Any) -> None:
        """One poll's records (a mapping of partition to records); no reference to them is kept."""
        n = 0
        for tp, records in batch.items():
            self.add(tp.partition, records)
            n += len(records)
        if self.footprint is None and n >= 100:
            self.footprint = _record_footprint([r for records in batch.values() for r in records])
        self.largest_poll = max(self.largest_poll, n)
        now = time.perf_counter()
        if n:
            self.last_progress = now
        self.marks.append((now, self.count))
        if now - self.last_progress > STALL_S:
            raise RuntimeError(f"no record for {STALL_S:.0f} s after {self.count} records; at {self.next_offset}")


def _summarise_rss(sampler: RssSampler, progress: Progress, t_consume: float, t_end: float) -> Result:
    """Peaks: whole child, before the first poll, and over each half of the consumed records (a peak that keeps
    growing from the first half to the second means memory grows with the backlog)."""
    samples = sampler.samples
    half_at = next((t for t, n in progress.marks if n >= progress.count / 2), t_end)

    def peak(t0: float, t1: float) -> int | None:
        return max((rss for t, rss in samples if t0 <= t <= t1), default=None)

    # A coarse series for the JSON: the running peak at every 10% of the records.
    series = []
    for tenth in range(1, 11):
        at = next((t for t, n in progress.marks if n >= progress.count * tenth / 10), t_end)
        series.append(round((peak(0.0, at) or 0) / MiB, 1))
    return {
        "rss_samples": len(samples),
        "peak_sampled_rss": max(rss for _, rss in samples),
        "rss_before_poll": peak(0.0, t_consume),
        "peak_rss_first_half": peak(t_consume, half_at),
        "peak_rss_second_half": peak(half_at, t_end),
        "running_peak_mib_by_tenth": series,
    }


def _maxrss_bytes() -> int:
    """``ru_maxrss``. Not the child's own peak: Linux carries the RSS high-water mark of the process that spawned
    it across fork/vfork + exec (a child of a parent that once held 500 MiB reports >= 500 MiB)."""
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss if sys.platform == "darwin" else maxrss * 1024


def child_asyncconsumer(args: argparse.Namespace, sampler: RssSampler) -> Result:
    from asyncconsumer import Consumer, TopicPartition

    config = {
        "auto_offset_reset": "earliest",
        "fetch_buffer_bytes": args.buffer,
        "fetch_max_bytes": args.fetch_max,
        "max_partition_fetch_bytes": args.part_max,
    }
    consumer = Consumer(args.bootstrap, **config)
    # Internals, read for the report only: what the buffer counts plus what it reserved for the fetches in flight,
    # sampled with the RSS. The public metric is read before every poll.
    buffer: Any = getattr(getattr(consumer, "_core", None), "buffer", None)
    if buffer is not None:
        sampler.probe = lambda: int(buffer.buffered_bytes) + int(buffer.reserved_bytes)
    consumer.start()
    partitions = range(args.partitions) if args.kind != "baseline" else range(1)
    tps = [TopicPartition(args.topic, p) for p in partitions]
    consumer.assign(tps)
    leaders: dict[int, int] = {}
    for info in consumer.partitions_for(args.topic):
        if info.partition in partitions:
            leaders[info.leader] = leaders.get(info.leader, 0) + 1
    progress = Progress()
    max_buffered = 0
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    hwm_before_poll = peak_rss_bytes()[0]
    t_consume = time.perf_counter()
    while progress.count < args.expect:
        max_buffered = max(max_buffered, consumer.metrics().buffered_bytes)
        batch = consumer.poll(timeout_ms=1_000, max_records=min(args.max_records, args.expect - progress.count))
        progress.consume(batch)
        del batch  # the caller holds one poll's records at a time
        if args.slow_ms:
            # Sleep (I/O-bound processing), not busy-wait: a busy caller holds the GIL and starves the background
            # thread, which then never fills the buffer (measured: 5-10 MiB buffered at most of 64 MiB).
            time.sleep(args.slow_ms / 1000)
    t_end = time.perf_counter()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    positions = {tp.partition: consumer.position(tp) for tp in tps}
    core: Any = getattr(consumer, "_core", None)  # internals, for the report only: the average response size
    fetch = getattr(core, "fetch", None)
    responses = getattr(fetch, "fetches_completed", None)
    fetched = getattr(fetch, "bytes_fetched", None)
    consumer.close()
    return {
        "records": progress.count,
        "value_bytes": progress.value_bytes,
        "positions": positions,
        "leaders": leaders,
        "wall_s": t_end - t_consume,
        "cpu_s": ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime,
        "max_buffered_bytes": max_buffered,
        "hwm_before_poll": hwm_before_poll,
        "record_footprint_bytes": progress.footprint,
        "largest_poll_records": progress.largest_poll,
        "fetch_responses": responses,
        "avg_response_bytes": fetched / responses if responses and fetched is not None else None,
        "_times": (t_consume, t_end),
        "_progress": progress,
    }


async def child_aiokafka(args: argparse.Namespace, sampler: RssSampler) -> Result:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_bytes=args.fetch_max,
        max_partition_fetch_bytes=args.part_max,
    )
    await consumer.start()
    tps = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer.assign(tps)
    progress = Progress()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t_consume = time.perf_counter()
    while progress.count < args.expect:
        batch = await consumer.getmany(
            timeout_ms=1_000, max_records=min(args.max_records, args.expect - progress.count)
        )
        progress.consume(batch)
        del batch
        if args.slow_ms:
            await asyncio.sleep(args.slow_ms / 1000)  # lets aiokafka's fetcher, on this loop, run ahead
    t_end = time.perf_counter()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    positions = {tp.partition: await consumer.position(tp) for tp in tps}
    await consumer.stop()
    return {
        "records": progress.count,
        "value_bytes": progress.value_bytes,
        "positions": positions,
        "leaders": {},
        "wall_s": t_end - t_consume,
        "cpu_s": ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime,
        "max_buffered_bytes": None,
        "record_footprint_bytes": progress.footprint,
        "largest_poll_records": progress.largest_poll,
        "_times": (t_consume, t_end),
        "_progress": progress,
    }


def child_main(args: argparse.Namespace) -> int:
    sampler = RssSampler(args.sample_ms / 1000)
    sampler.start()
    try:
        if args.kind == "aiokafka":
            result = asyncio.run(child_aiokafka(args, sampler))
        else:
            result = child_asyncconsumer(args, sampler)
    except Exception as exc:
        print(RESULT_MARKER + json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        raise
    sampler.stop()
    t_consume, t_end = result.pop("_times")
    result.update(_summarise_rss(sampler, result.pop("_progress"), t_consume, t_end))
    result["max_held_and_reserved_bytes"] = sampler.probe_max if sampler.probe is not None else None
    result["peak_rss"], result["peak_rss_source"] = peak_rss_bytes()
    result["ru_maxrss"] = _maxrss_bytes()
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


# ==========================================================================================================
# parent side
# ==========================================================================================================


def parse_size(text: str) -> int:
    """``4M`` -> 4 MiB, ``512K`` -> 512 KiB, ``1G``, or plain bytes."""
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    for suffix, factor in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * factor)
    return int(text)


def parse_settings(text: str) -> list[dict[str, int]]:
    """``4M,16M:32M:8M`` -> one dict per entry (fetch_buffer_bytes[:fetch_max_bytes[:max_partition_fetch_bytes]])."""
    settings = []
    for entry in text.split(","):
        if not entry.strip():
            continue
        parts = [parse_size(p) for p in entry.split(":")]
        if len(parts) > 3:
            raise ValueError(f"setting {entry!r}: at most buffer:fetch_max:partition_max")
        settings.append(
            {
                "fetch_buffer_bytes": parts[0],
                "fetch_max_bytes": parts[1] if len(parts) > 1 else CONSUMER_DEFAULTS["fetch_max_bytes"],
                "max_partition_fetch_bytes": parts[2]
                if len(parts) > 2
                else CONSUMER_DEFAULTS["max_partition_fetch_bytes"],
            }
        )
    return settings


def bound(
    setting: dict[str, int], leaders: dict[int, int], max_records: int, footprint: float, batch_bytes: int
) -> Result:
    """What asyncconsumer can hold at most, from its configuration, plus the caller's one poll.

    Buffered responses plus what fetches in flight may bring stay within ``fetch_buffer_bytes`` (a fetch reserves
    its request's ``max_bytes``; a response is counted whole until its last partition is drained). The caller's
    one poll is on top: ``max_records x`` the bytes one returned record holds (measured in the child). Transients
    on top of that: the broker may overshoot a request's ``max_bytes`` (Kafka only with a first batch larger than
    it; Tansu by up to one batch per partition, measured), and the batch being decoded: (partitions + 1) x
    ``batch_bytes``.
    """
    poll = int(max_records * footprint)
    buffered = setting["fetch_buffer_bytes"]
    return {
        "buffered_and_in_flight": buffered,
        "poll_records": poll,
        "bound": buffered + poll,
        "transients": (sum(leaders.values()) + 1) * batch_bytes,
    }


def verify(result: Result, expect: int, size: int, positions: dict[int, int]) -> list[str]:
    problems = []
    if result["records"] != expect:
        problems.append(f"consumed {result['records']} records, expected exactly {expect}")
    if result["value_bytes"] != expect * size:
        problems.append(f"summed {result['value_bytes']} value bytes, expected {expect * size}")
    got = {int(p): o for p, o in result.get("positions", {}).items()}
    if got != positions:
        problems.append(f"final positions {got}, expected {positions}")
    return problems


def _mib(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value / MiB, spec)


def _setting_label(run: Result) -> str:
    s = run.get("setting")
    if s is None:
        return "aiokafka defaults" if run["kind"] == "aiokafka" else "1 B buffer, 1 partition"
    return f"{_mib(s['fetch_buffer_bytes'])} / {_mib(s['fetch_max_bytes'])} / {_mib(s['max_partition_fetch_bytes'])}"


def table(report: Result) -> str:
    overhead = report["overhead_bytes"]
    slack = report["slack_bytes"]
    lines = [
        "| client | buffer / fetch_max / partition_max MiB | caller | bound MiB (held + poll) | allowance MiB "
        "(transients + slack) | peak RSS MiB | peak sampled MiB | peak - overhead MiB | within? "
        "| 1st → 2nd half peak MiB | max buffered MiB (metric / held+reserved) | MB/s |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for run in report["runs"]:
        if "error" in run:
            lines.append(
                f"| {run['kind']} | {_setting_label(run)} | {run.get('caller', '')} | FAILED: {run['error']} |"
            )
            continue
        b = run.get("bound")
        peak = max(run["peak_rss"], run["peak_sampled_rss"])  # VmHWM can lag a sample by a few pages
        over = peak - overhead
        if b is None:
            verdict = "- (context)" if run["kind"] == "aiokafka" else "- (baseline)"
            bound_text = allowance_text = "-"
        else:
            limit = b["bound"]
            allowance = b["transients"] + slack
            if over <= limit:
                verdict = "yes"
            elif over <= limit + allowance:
                verdict = f"within allowance (+{_mib(over - limit, '.1f')} over bound)"
            else:
                verdict = f"**NO** (+{_mib(over - limit - allowance, '.1f')} over bound + allowance)"
            bound_text = (
                f"{_mib(limit, '.1f')} ({_mib(b['buffered_and_in_flight'])} + {_mib(b['poll_records'], '.1f')})"
            )
            allowance_text = f"{_mib(allowance)} ({_mib(b['transients'], '.1f')} + {_mib(slack)})"
        if run.get("code_changed"):
            verdict += " (asyncconsumer changed during the run!)"
        mb_s = run["value_bytes"] / run["wall_s"] / 1e6 if run.get("wall_s") else None
        lines.append(
            f"| {run['kind']} | {_setting_label(run)} | {run['caller']} | {bound_text} | {allowance_text} "
            f"| {_mib(peak)} "
            f"| {_mib(run['peak_sampled_rss'])} | {_mib(over)} | {verdict} "
            f"| {_mib(run['peak_rss_first_half'])} → {_mib(run['peak_rss_second_half'])} "
            f"| {_mib(run.get('max_buffered_bytes'), '.1f')} / {_mib(run.get('max_held_and_reserved_bytes'), '.1f')} "
            f"| {'-' if mb_s is None else f'{mb_s:.0f}'} |"
        )
    return "\n".join(lines)


def print_report(report: Result) -> None:
    info = report["machine"]
    w = report["workload"]
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(f"# asyncconsumer code at {info['code']}; broker {info.get('broker', 'external')}")
    print(
        f"\n## {w['records']:,} x {w['value_size']} B = {w['records'] * w['value_size'] / 1e9:.2f} GB in "
        f"{w['partitions']} partitions, produced in {w['produce_s']:.1f} s; max_records={report['max_records']}, "
        f"the slow caller sleeps {report['slow_ms']} ms after each poll\n"
    )
    print(
        f"overhead (baseline child's VmHWM) = {_mib(report['overhead_bytes'], '.1f')} MiB; peak = the larger of a "
        "run's VmHWM and its sampled peak; a run is within its bound when peak - overhead <= bound, within its "
        "allowance when <= bound + transients + "
        f"{_mib(report['slack_bytes'], '.0f')} MiB (allocator slack); see bound() in bench_memory.py\n"
    )
    print(table(report))
    over = [r for r in report["runs"] if r.get("over_bound")]
    if over:
        print(
            f"\n!!! {len(over)} run(s) went over overhead + bound + allowance: "
            + "; ".join(f"{r['kind']} {_setting_label(r)} {r['caller']}" for r in over)
            + " !!!"
        )


def tree_fingerprint() -> str:
    """Changes whenever a file of asyncconsumer's working tree does (``code_version`` only says "+dirty")."""
    root = Path(__file__).resolve().parent.parent / "asyncconsumer"
    entries = []
    for path in sorted(root.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        entries.append(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha1("\n".join(entries).encode()).hexdigest()[:12]


def _spawn(args: argparse.Namespace, label: str, **options: object) -> Result:
    argv = child_argv(__file__, **options)
    return spawn_child(argv, label, args.timeout)


def parent_main(args: argparse.Namespace) -> int:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    settings = parse_settings(args.settings)
    records = round(args.gb * 1e9 / args.size)
    broker: Any = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from asyncconsumer.tools.embedded_broker import EmbeddedBroker

        broker = EmbeddedBroker.start()
        bootstrap = broker.bootstrap_servers
    info = machine(("aiokafka",))
    info["code"] = code_version()
    info["tree"] = tree_fingerprint()
    if broker is not None:
        version = subprocess.run([broker.binary, "--version"], capture_output=True, text=True, check=False)
        info["broker"] = version.stdout.strip() or "tansu (version unknown)"
    out = Path(args.json) if args.json else default_results_path("memory", info["code"])
    started_all = time.perf_counter()
    report: Result = {
        "machine": info,
        "args": vars(args),
        "max_records": args.max_records,
        "slow_ms": args.slow_ms,
        "slack_bytes": int(args.slack_mb * MiB),
        "runs": [],
    }
    failures: list[str] = []
    try:
        topic = f"bench-memory-{uuid.uuid4().hex[:8]}"
        if broker is not None:
            broker.create_topic(topic, args.partitions)
        else:
            from aiokafka.admin import AIOKafkaAdminClient, NewTopic

            async def create() -> None:
                admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
                await admin.start()
                try:
                    await admin.create_topics([NewTopic(topic, args.partitions, 1)])
                finally:
                    await admin.close()

            asyncio.run(create())
        print(f"# broker: {bootstrap} ({info.get('broker', 'external')}); asyncconsumer code at {info['code']}")
        print(f"producing {records:,} x {args.size} B ({records * args.size / 1e9:.2f} GB) into {topic}...", flush=True)
        t0 = time.perf_counter()
        values = [os.urandom(args.size) for _ in range(16)]  # 16 distinct values, in turn
        counts = produce(bootstrap, topic, args.partitions, records, args.size, args.batch_bytes, values=values)
        produce_s = time.perf_counter() - t0
        print(f"produced in {produce_s:.1f} s ({records * args.size / produce_s / 1e6:.0f} MB/s)", flush=True)
        report["workload"] = {
            "records": records,
            "value_size": args.size,
            "partitions": args.partitions,
            "topic": topic,
            "produce_s": produce_s,
            "counts": counts,
        }
        common = {"bootstrap": bootstrap, "topic": topic, "partitions": args.partitions}
        common |= {"max-records": args.max_records, "sample-ms": args.sample_ms}
        plan: list[tuple[str, str, dict[str, int] | None, float]] = [("baseline", "-", None, 0)]
        for entry in settings:
            plan += [("asyncconsumer", "fast", entry, 0), ("asyncconsumer", "slow", entry, args.slow_ms)]
        if args.aiokafka:
            plan += [("aiokafka", "fast", None, 0), ("aiokafka", "slow", None, args.slow_ms)]
        overhead: int | None = None
        for kind, caller, setting, slow_ms in plan:
            if kind == "baseline":
                expect, positions = BASELINE_RECORDS, {0: BASELINE_RECORDS}
                fetch = {"buffer": 1, "fetch-max": args.batch_bytes, "part-max": args.batch_bytes}
            else:
                expect, positions = records, dict(enumerate(counts))
                s = setting if setting is not None else CONSUMER_DEFAULTS | {"fetch_buffer_bytes": 0}
                fetch = {
                    "buffer": s["fetch_buffer_bytes"],
                    "fetch-max": s["fetch_max_bytes"],
                    "part-max": s["max_partition_fetch_bytes"],
                }
            label = f"{kind} {caller} {'' if setting is None else _setting_label({'setting': setting, 'kind': kind})}"
            # no broker pid: the broker idles between runs, so it counts too
            quiet_before_run(None, args.quiet_cores, args.quiet_wait, who="in use", flush=True)
            run: Result = {"kind": kind, "caller": caller, "setting": setting, "slow_ms": slow_ms}
            run["tree"] = tree_fingerprint()
            try:
                result = _spawn(args, label, child=kind, expect=expect, **{"slow-ms": slow_ms}, **common, **fetch)
            except ChildFailed as exc:
                message = f"FAILED {label}: {exc}"
                print(message, file=sys.stderr, flush=True)
                failures.append(message)
                run["error"] = str(exc).splitlines()[0]
                report["runs"].append(run)
                continue
            run.update(result)
            if tree_fingerprint() != run["tree"]:
                run["code_changed"] = True
                print(f"WARNING: asyncconsumer's files changed while {label} ran", file=sys.stderr, flush=True)
            problems = verify(result, expect, args.size, positions)
            if problems:
                message = f"FAILED {label}: " + "; ".join(problems)
                print(message, file=sys.stderr, flush=True)
                failures.append(message)
                run["error"] = "; ".join(problems)
                report["runs"].append(run)
                continue
            if kind == "baseline":
                overhead = result["peak_rss"]
                report["overhead_bytes"] = overhead
            elif kind == "asyncconsumer" and setting is not None:
                run["bound"] = bound(
                    setting,
                    result["leaders"],
                    args.max_records,
                    result["record_footprint_bytes"] or 0.0,
                    args.batch_bytes,
                )
                if overhead is not None:
                    b = run["bound"]
                    limit = b["bound"] + b["transients"] + report["slack_bytes"]
                    peak = max(result["peak_rss"], result["peak_sampled_rss"])
                    run["over_bound"] = peak - overhead > limit
            report["runs"].append(run)
            print(
                f"  {label:<40} VmHWM {_mib(result['peak_rss'], '6.1f')} MiB (ru_maxrss {_mib(result['ru_maxrss'])})  "
                f"sampled peak "
                f"{_mib(result['peak_sampled_rss'], '6.1f')} MiB  halves {_mib(result['peak_rss_first_half'])}"
                f" -> {_mib(result['peak_rss_second_half'])} MiB  max buffered "
                f"{_mib(result.get('max_buffered_bytes'), '.1f')} MiB  {result['wall_s']:.1f} s",
                flush=True,
            )
        if overhead is None:
            print("no baseline: cannot check any bound", file=sys.stderr)
            report["overhead_bytes"] = 0
        report["total_s"] = time.perf_counter() - started_all
        print()
        print_report(report)
    finally:
        if broker is not None:
            broker.stop()
        info["code_at_end"] = code_version()
        info["tree_at_end"] = tree_fingerprint()
        if info["tree_at_end"] != info["tree"]:
            print(
                f"\nWARNING: asyncconsumer's files changed during the run ({info['code']} -> {info['code_at_end']}); "
                "later runs measured the new code (see each run's code_changed)",
                file=sys.stderr,
            )
        elif info["code_at_end"] != info["code"]:
            print(f"\n(HEAD moved from {info['code']} to {info['code_at_end']}; asyncconsumer's files did not change)")
        report["failures"] = failures
        write_json(out, report)
        print(f"\nwrote {out}")
    return report_failures(failures)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=2.0, help="backlog size, 10^9 value bytes (default 2)")
    parser.add_argument("--size", type=int, default=1_000, help="value bytes per record")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch-bytes", type=int, default=262_144, help="producer batch size")
    parser.add_argument(
        "--settings",
        default=DEFAULT_SETTINGS,
        help="comma-separated fetch_buffer_bytes[:fetch_max_bytes[:max_partition_fetch_bytes]], e.g. 4M,16M:32M:8M "
        f"(default {DEFAULT_SETTINGS}; left out: 50 MiB and 1 MiB, the defaults)",
    )
    parser.add_argument("--max-records", type=int, default=10_000, help="max_records per poll")
    parser.add_argument("--slow-ms", type=float, default=50.0, help="the slow caller's sleep after each poll")
    parser.add_argument("--sample-ms", type=float, default=20.0, help="RSS sampling interval in the children")
    parser.add_argument(
        "--slack-mb",
        type=float,
        default=16.0,
        help="allocator slack (fragmentation, memory malloc keeps) allowed over overhead + bound + 2R",
    )
    parser.add_argument("--no-aiokafka", dest="aiokafka", action="store_false", help="leave out aiokafka")
    parser.add_argument("--bootstrap", help="use this broker instead of starting an embedded Tansu")
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds per child")
    parser.add_argument("--quiet-cores", type=float, default=0.3, help="wait for other load below this before a run")
    parser.add_argument("--quiet-wait", type=float, default=60.0, help="longest wait for quiet, seconds")
    parser.add_argument("--json", help="write the results here (default: benchmarks/results/memory-<code>.json)")
    parser.add_argument("--report", metavar="JSON", help="print the table of a saved run and exit")
    parser.add_argument(
        "--child", dest="kind", choices=("baseline", "asyncconsumer", "aiokafka"), help=argparse.SUPPRESS
    )
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--buffer", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--fetch-max", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--part-max", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.kind:
        if not (args.bootstrap and args.topic and args.expect):
            parser.error("a child needs --bootstrap, --topic and --expect")
        return child_main(args)
    if args.report:
        print_report(json.loads(Path(args.report).read_text()))
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
