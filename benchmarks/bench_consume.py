"""Consume throughput of asyncconsumer against its peers, each client in its own process.

    python benchmarks/bench_consume.py                        # both workloads, every client, 5 interleaved reps
    python benchmarks/bench_consume.py --workload small --clients asyncconsumer,aiokafka --reps 3 --json out.json

The parent starts an embedded Tansu broker (or uses ``--bootstrap``), creates one topic per workload, produces
it once with aiokafka's producer, then runs every client in a fresh subprocess per repetition, interleaved
(rep 1: a, b, c...; rep 2: a, b, c...). Each child consumes the whole topic from the beginning with manual
assignment of all partitions, touches every value (sums ``len(value)``), and prints one JSON result line. The
parent checks each child consumed exactly what was produced, and prints per-client medians and ratios to
asyncconsumer as a markdown table (and JSON with ``--json``). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchcommon import RESULT_MARKER, ChildFailed, child_argv, code_version, machine, report_failures, spawn_child

CHILD_TIMEOUT_S = 300.0
STALL_S = 30.0  # a child that sees no record for this long gives up and reports what it got
POLL_MAX_RECORDS = 10_000

ALL_CLIENTS = (
    "asyncconsumer",
    "asyncconsumer-iter",
    "asyncconsumer-sync",
    "aiokafka",
    "confluent",
    "confluent-tuned",
    "raw",
)
BASELINE = "asyncconsumer"

# name -> (records, value size); --records/--size/--partitions override the "small" one.
WORKLOADS: dict[str, tuple[int, int]] = {"small": (1_000_000, 100), "large": (200_000, 1_000)}

Result = dict[str, Any]


# ==========================================================================================================
# child side: one client consumes the topic and reports
# ==========================================================================================================


class Meter:
    """Wall and CPU time of the consume phase: from the first poll call to the last record."""

    def __init__(self) -> None:
        self.t0 = 0.0
        self.ru0: resource.struct_rusage | None = None
        self.first: float | None = None
        self.first_batch = 0
        self.last_progress = 0.0

    def begin(self) -> None:
        self.ru0 = resource.getrusage(resource.RUSAGE_SELF)
        self.t0 = self.last_progress = time.perf_counter()

    def got(self, records: int) -> None:
        """``records`` more arrived (the first call also marks the first batch, for the steady-state rate)."""
        now = time.perf_counter()
        if self.first is None:
            self.first = now
            self.first_batch = records
        self.last_progress = now

    def stalled(self) -> bool:
        return time.perf_counter() - self.last_progress > STALL_S

    def result(self, client: str, records: int, value_bytes: int, **extra: Any) -> Result:
        end = time.perf_counter()
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        assert self.ru0 is not None
        user = ru1.ru_utime - self.ru0.ru_utime
        system = ru1.ru_stime - self.ru0.ru_stime
        return {
            "client": client,
            "records": records,
            "value_bytes": value_bytes,
            "wall_s": end - self.t0,
            "cpu_s": user + system,
            "cpu_user_s": user,
            "cpu_sys_s": system,
            "first_record_s": None if self.first is None else self.first - self.t0,
            "first_batch_records": self.first_batch,
            **extra,
        }


class Stalled(Exception):
    def __init__(self, records: int, positions: dict[int, int]) -> None:
        super().__init__(f"no record for {STALL_S:.0f} s after {records} records; positions {positions}")
        self.records = records
        self.positions = positions


def _check_contiguous(expected_next: dict[int, int], partition: int, first: int, last: int, n: int) -> None:
    """Each partition's records must continue exactly where the last batch ended, without gaps or repeats."""
    want = expected_next.get(partition, 0)
    if first != want or last != first + n - 1:
        raise RuntimeError(
            f"partition {partition}: got offsets {first}..{last} ({n} records), expected to start at {want}"
        )
    expected_next[partition] = last + 1


async def child_asyncconsumer(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    from asyncconsumer import AsyncConsumer, TopicPartition

    consumer = AsyncConsumer(bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    await consumer.assign(tps)
    meter = Meter()
    count = value_bytes = 0
    next_offset: dict[int, int] = {}
    meter.begin()
    while count < expect:
        batch = await consumer.poll(timeout_ms=1_000, max_records=POLL_MAX_RECORDS)
        if not batch:
            if meter.stalled():
                raise Stalled(count, next_offset)
            continue
        before = count
        for tp, records in batch.items():
            for record in records:
                value_bytes += len(record.value)
            _check_contiguous(next_offset, tp.partition, records[0].offset, records[-1].offset, len(records))
            count += len(records)
        meter.got(count - before)
    result = meter.result("asyncconsumer", count, value_bytes)
    result["positions"] = {tp.partition: await consumer.position(tp) for tp in tps}
    await consumer.close()
    return result


async def child_asyncconsumer_iter(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    """``async for`` with default settings (max_poll_records=500 per underlying poll)."""
    from asyncconsumer import AsyncConsumer, TopicPartition

    consumer = AsyncConsumer(bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    await consumer.assign(tps)
    meter = Meter()
    count = value_bytes = 0

    async def consume() -> None:
        nonlocal count, value_bytes
        async for record in consumer:
            if count == 0:
                meter.got(1)
            value_bytes += len(record.value)
            count += 1
            if count >= expect:
                break

    meter.begin()
    try:
        # The iterator never returns by itself; bound it by the stall time overall (it is far beyond any run).
        await asyncio.wait_for(consume(), CHILD_TIMEOUT_S - 20)
    except TimeoutError:
        raise Stalled(count, {}) from None
    meter.got(0)
    result = meter.result("asyncconsumer-iter", count, value_bytes)
    result["positions"] = {tp.partition: await consumer.position(tp) for tp in tps}
    await consumer.close()
    return result


def child_asyncconsumer_sync(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    from asyncconsumer import Consumer, TopicPartition

    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    meter = Meter()
    count = value_bytes = 0
    next_offset: dict[int, int] = {}
    meter.begin()
    while count < expect:
        batch = consumer.poll(timeout_ms=1_000, max_records=POLL_MAX_RECORDS)
        if not batch:
            if meter.stalled():
                raise Stalled(count, next_offset)
            continue
        before = count
        for tp, records in batch.items():
            for record in records:
                value_bytes += len(record.value)
            _check_contiguous(next_offset, tp.partition, records[0].offset, records[-1].offset, len(records))
            count += len(records)
        meter.got(count - before)
    result = meter.result("asyncconsumer-sync", count, value_bytes)
    result["positions"] = {tp.partition: consumer.position(tp) for tp in tps}
    consumer.close()
    return result


async def child_aiokafka(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    meter = Meter()
    count = value_bytes = 0
    next_offset: dict[int, int] = {}
    meter.begin()
    while count < expect:
        batch = await consumer.getmany(timeout_ms=1_000, max_records=POLL_MAX_RECORDS)
        if not batch:
            if meter.stalled():
                raise Stalled(count, next_offset)
            continue
        before = count
        for tp, records in batch.items():
            for record in records:
                value_bytes += len(record.value)
            _check_contiguous(next_offset, tp.partition, records[0].offset, records[-1].offset, len(records))
            count += len(records)
        meter.got(count - before)
    result = meter.result("aiokafka", count, value_bytes)
    result["positions"] = {tp.partition: await consumer.position(tp) for tp in tps}
    await consumer.stop()
    return result


CONFLUENT_TUNED = {"fetch.queue.backoff.ms": 0, "queued.min.messages": 1_000_000}


def child_confluent(bootstrap: str, topic: str, partitions: int, expect: int, *, tuned: bool) -> Result:
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException
    from confluent_kafka import TopicPartition as CTopicPartition

    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4().hex}",  # required by the client; unused with assign()
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if tuned:
        config.update(CONFLUENT_TUNED)
    consumer = confluent_kafka.Consumer(config)
    consumer.assign([CTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    meter = Meter()
    count = value_bytes = 0
    meter.begin()
    while count < expect:
        messages = consumer.consume(num_messages=POLL_MAX_RECORDS, timeout=1.0)
        if not messages:
            if meter.stalled():
                raise Stalled(count, {})
            continue
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(error)
            value = message.value()
            assert value is not None
            value_bytes += len(value)
            count += 1
        meter.got(len(messages))
    result = meter.result("confluent-tuned" if tuned else "confluent", count, value_bytes)
    positions = consumer.position([CTopicPartition(topic, p) for p in range(partitions)])
    result["positions"] = {tp.partition: tp.offset for tp in positions}
    consumer.close()
    return result


# --- raw: one Fetch v4 in flight, a blocking socket, no record decoding -------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART_HEAD = struct.Struct(">ihqq")  # partition, error code, high watermark, last stable offset


def _fetch_v4(correlation_id: int, topic: bytes, offsets: Sequence[int], partition_max_bytes: int) -> bytes:
    body = bytearray()
    body += struct.pack(">hhih", 1, 4, correlation_id, len(b"bench-raw")) + b"bench-raw"
    # replica id, max wait ms, min bytes, max bytes, isolation level (read_uncommitted), one topic
    body += struct.pack(">iiiibi", -1, 500, 1, 52_428_800, 0, 1)
    body += struct.pack(">h", len(topic)) + topic + struct.pack(">i", len(offsets))
    for partition, offset in enumerate(offsets):
        body += struct.pack(">iqi", partition, offset, partition_max_bytes)
    return _I32.pack(len(body)) + bytes(body)


def _recv_exactly(sock: socket.socket, view: memoryview) -> None:
    got = 0
    n = len(view)
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("broker closed the connection")
        got += k


def child_raw(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    """Fetch v4 to the bootstrap broker (it must lead every partition, as a single Tansu does), counting bytes.

    Only the response headers are parsed; each partition's records are handed to ``complete_prefix`` for the
    offset after the last complete batch, which becomes the next fetch offset.
    """
    from asyncconsumer.protocol.records import complete_prefix

    host, _, port = bootstrap.rpartition(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    name = topic.encode()
    offsets = [0] * partitions
    buffer = bytearray(1 << 20)
    size_view = memoryview(bytearray(4))
    meter = Meter()
    count = wire_bytes = 0
    correlation_id = 0
    meter.begin()
    while count < expect:
        correlation_id += 1
        sock.sendall(_fetch_v4(correlation_id, name, offsets, 1_048_576))
        _recv_exactly(sock, size_view)
        size = _I32.unpack_from(size_view)[0]
        if size > len(buffer):
            buffer = bytearray(size)
        frame = memoryview(buffer)[:size]
        _recv_exactly(sock, frame)
        wire_bytes += size + 4
        if _I32.unpack_from(frame, 0)[0] != correlation_id:
            raise RuntimeError("correlation id mismatch")
        pos = 8  # correlation id, throttle time
        got = 0
        for _ in range(_I32.unpack_from(frame, pos)[0]):
            pos += 4
            pos += 2 + _I16.unpack_from(frame, pos)[0]  # topic name
            n_partitions = _I32.unpack_from(frame, pos)[0]
            pos += 4
            for _ in range(n_partitions):
                partition, error, _hw, _lso = _PART_HEAD.unpack_from(frame, pos)
                pos += _PART_HEAD.size
                if error:
                    raise RuntimeError(f"partition {partition}: fetch error code {error}")
                aborted = _I32.unpack_from(frame, pos)[0]
                pos += 4 + 16 * max(aborted, 0)
                length = _I32.unpack_from(frame, pos)[0]
                pos += 4
                if length > 0:
                    _, next_offset = complete_prefix(frame[pos : pos + length])
                    if next_offset is not None:
                        got += next_offset - offsets[partition]
                        offsets[partition] = next_offset
                    pos += length
        if got:
            count += got
            meter.got(got)
        elif meter.stalled():
            raise Stalled(count, dict(enumerate(offsets)))
    result = meter.result("raw", count, 0, wire_bytes=wire_bytes)  # values are never decoded: 0 value bytes
    result["positions"] = dict(enumerate(offsets))
    sock.close()
    return result


def run_child(client: str, bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    runners: dict[str, Callable[[], Result]] = {
        "asyncconsumer": lambda: asyncio.run(child_asyncconsumer(bootstrap, topic, partitions, expect)),
        "asyncconsumer-iter": lambda: asyncio.run(child_asyncconsumer_iter(bootstrap, topic, partitions, expect)),
        "asyncconsumer-sync": lambda: child_asyncconsumer_sync(bootstrap, topic, partitions, expect),
        "aiokafka": lambda: asyncio.run(child_aiokafka(bootstrap, topic, partitions, expect)),
        "confluent": lambda: child_confluent(bootstrap, topic, partitions, expect, tuned=False),
        "confluent-tuned": lambda: child_confluent(bootstrap, topic, partitions, expect, tuned=True),
        "raw": lambda: child_raw(bootstrap, topic, partitions, expect),
    }
    result = runners[client]()
    # ru_maxrss is in KiB on Linux (bytes on macOS); the peak of the whole child, setup and imports included.
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result["peak_rss_mb"] = maxrss / (1 << 20) if sys.platform == "darwin" else maxrss / 1024
    return result


def child_main(args: argparse.Namespace) -> int:
    try:
        result = run_child(args.child, args.bootstrap, args.topic, args.partitions, args.expect)
    except Stalled as exc:
        print(RESULT_MARKER + json.dumps({"client": args.child, "error": str(exc), "records": exc.records}))
        return 2
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


# ==========================================================================================================
# parent side: broker, workloads, interleaved runs, report
# ==========================================================================================================


def produce(bootstrap: str, topic: str, partitions: int, records: int, size: int, batch_bytes: int) -> list[int]:
    """Writes ``records`` values of ``size`` bytes spread evenly over the partitions; returns per-partition counts."""
    from aiokafka import AIOKafkaProducer

    counts = [records // partitions + (1 if p < records % partitions else 0) for p in range(partitions)]
    value = os.urandom(size)

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks=1,
            linger_ms=50,
            max_batch_size=batch_bytes,
            max_request_size=max(1_048_576, 2 * batch_bytes),
            compression_type=None,
            enable_idempotence=False,
            request_timeout_ms=120_000,
        )
        await producer.start()
        try:
            pending: list[asyncio.Future[Any]] = []
            left = list(counts)
            while any(left):
                for p in range(partitions):  # round-robin, one batch per partition at a time
                    if not left[p]:
                        continue
                    batch = producer.create_batch()
                    n = 0
                    while n < left[p] and batch.append(timestamp=None, key=None, value=value) is not None:
                        n += 1
                    left[p] -= n
                    pending.append(await producer.send_batch(batch, topic, partition=p))
                    if len(pending) >= 64:
                        await asyncio.gather(*pending)
                        pending.clear()
            await asyncio.gather(*pending)
        finally:
            await producer.stop()

    asyncio.run(run())
    return counts


def create_topic(broker: Any, bootstrap: str, topic: str, partitions: int) -> None:
    if broker is not None:
        broker.create_topic(topic, partitions)
        return
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, partitions, 1)])
        finally:
            await admin.close()

    asyncio.run(run())


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _busy_cpu_s() -> float | None:
    """CPU seconds every core of the machine spent busy since boot (None off Linux)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / _CLOCK_TICKS  # user..steal; guest time is already inside user


def _process_cpu_s(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime


def wait_until_quiet(broker_pid: int | None, max_cores: float, max_wait_s: float) -> float | None:
    """Waits (up to ``max_wait_s``) until processes other than the broker use less than ``max_cores``.

    On a shared machine other people's test runs would otherwise land in the middle of a measurement. Returns
    the last load seen (cores), None when it cannot be measured.
    """
    deadline = time.perf_counter() + max_wait_s
    while True:
        t0, busy0, broker0 = time.perf_counter(), _busy_cpu_s(), _process_cpu_s(broker_pid)
        time.sleep(0.5)
        busy1, broker1 = _busy_cpu_s(), _process_cpu_s(broker_pid)
        if busy0 is None or busy1 is None:
            return None
        broker = 0.0 if broker0 is None or broker1 is None else broker1 - broker0
        load = max(0.0, busy1 - busy0 - broker) / (time.perf_counter() - t0)
        if load < max_cores or time.perf_counter() >= deadline:
            return load
        time.sleep(1.0)


class Load:
    """What the machine did while one child ran: the broker's CPU, and everybody else's (noise)."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.t0 = time.perf_counter()
        self.busy0 = _busy_cpu_s()
        self.broker0 = _process_cpu_s(broker_pid)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.children0 = ru.ru_utime + ru.ru_stime

    def finish(self) -> Result:
        interval = time.perf_counter() - self.t0
        busy1, broker1 = _busy_cpu_s(), _process_cpu_s(self.broker_pid)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        child = ru.ru_utime + ru.ru_stime - self.children0
        broker = None if broker1 is None or self.broker0 is None else broker1 - self.broker0
        other = None
        if busy1 is not None and self.busy0 is not None:
            other = max(0.0, busy1 - self.busy0 - child - (broker or 0.0))
        return {
            "child_process_s": interval,
            "child_process_cpu_s": child,
            "broker_cpu_s": broker,
            "other_cpu_cores": None if other is None else other / interval,
        }


def spawn(
    client: str,
    bootstrap: str,
    topic: str,
    partitions: int,
    expect: int,
    timeout_s: float,
    broker_pid: int | None = None,
) -> Result:
    argv = child_argv(__file__, child=client, bootstrap=bootstrap, topic=topic, partitions=partitions, expect=expect)
    load = Load(broker_pid)
    result = spawn_child(argv, client, timeout_s)
    result.update(load.finish())
    return result


def verify(result: Result, expect: int, size: int, counts: list[int]) -> None:
    """Exactly the produced records, every value touched, and every partition's position at its end."""
    client = result["client"]
    problems = []
    if result["records"] != expect:
        problems.append(f"consumed {result['records']} records, expected exactly {expect}")
    if client != "raw" and result["value_bytes"] != expect * size:
        problems.append(f"summed {result['value_bytes']} value bytes, expected {expect * size}")
    positions = {int(p): o for p, o in result.get("positions", {}).items()}
    want = dict(enumerate(counts))
    if positions != want:
        problems.append(f"final positions {positions}, expected {want}")
    if problems:
        raise ChildFailed(f"{client}: " + "; ".join(problems))


def _fmt(value: float | None, spec: str) -> str:
    return "?" if value is None else format(value, spec)


def derive(result: Result, size: int) -> Result:
    records = result["records"]
    wall = result["wall_s"]
    first = result["first_record_s"] or 0.0
    first_batch = result.get("first_batch_records", 0)
    return {
        "records_per_s": records / wall,
        "mb_per_s": records * size / wall / 1e6,
        "cpu_s_per_m": result["cpu_s"] / records * 1e6,
        "peak_rss_mb": result["peak_rss_mb"],
        "first_record_ms": first * 1000,
        # throughput once records flow: start-up (metadata, offsets, the first fetch) and the first batch left out
        "steady_mb_per_s": (
            (records - first_batch) * size / (wall - first) / 1e6 if wall > first and records > first_batch else None
        ),
        "wall_s": wall,
        "cpu_s": result["cpu_s"],
    }


METRICS = (
    "records_per_s",
    "mb_per_s",
    "steady_mb_per_s",
    "cpu_s_per_m",
    "peak_rss_mb",
    "first_record_ms",
    "wall_s",
    "cpu_s",
)
RATIOS = ("records_per_s", "mb_per_s", "steady_mb_per_s", "cpu_s_per_m", "peak_rss_mb")


def summarise(runs: dict[str, list[Result]], size: int) -> dict[str, Result]:
    summary: dict[str, Result] = {}
    for client, results in runs.items():
        derived = [derive(r, size) for r in results]
        if not derived:
            continue
        entry: Result = {"reps": len(derived), "median": {}, "min": {}, "max": {}}
        for metric, values in [(m, [d[m] for d in derived]) for m in METRICS] + [
            (key, [r.get(key) for r in results]) for key in ("broker_cpu_s", "other_cpu_cores")
        ]:
            known = [v for v in values if v is not None]
            entry["median"][metric] = statistics.median(known) if known else None
            entry["min"][metric] = min(known) if known else None
            entry["max"][metric] = max(known) if known else None
        summary[client] = entry
    base = summary.get(BASELINE)
    if base is not None:
        for entry in summary.values():
            entry["ratio_to_asyncconsumer"] = {
                m: entry["median"][m] / base["median"][m]
                if entry["median"][m] is not None and base["median"][m]
                else None
                for m in RATIOS
            }
    return summary


def _ratio(entry: Result, metric: str) -> str:
    ratio = entry.get("ratio_to_asyncconsumer", {}).get(metric)
    return "" if ratio is None else f" ({ratio:.2f}x)"


def table(summary: dict[str, Result]) -> str:
    lines = [
        "| client | records/s | MB/s | MB/s after 1st record | CPU-s / M records | peak RSS MB | 1st record ms "
        "| reps | records/s min-max | broker CPU-s | others' load (cores) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for client, entry in summary.items():
        med, lo, hi = entry["median"], entry["min"], entry["max"]
        lines.append(
            f"| {client} "
            f"| {med['records_per_s'] / 1e6:.3f} M{_ratio(entry, 'records_per_s')} "
            f"| {med['mb_per_s']:.1f}{_ratio(entry, 'mb_per_s')} "
            f"| {_fmt(med['steady_mb_per_s'], '.1f')}{_ratio(entry, 'steady_mb_per_s')} "
            f"| {med['cpu_s_per_m']:.2f}{_ratio(entry, 'cpu_s_per_m')} "
            f"| {med['peak_rss_mb']:.0f}{_ratio(entry, 'peak_rss_mb')} "
            f"| {med['first_record_ms']:.0f} "
            f"| {entry['reps']} "
            f"| {lo['records_per_s'] / 1e6:.3f}-{hi['records_per_s'] / 1e6:.3f} M "
            f"| {_fmt(med['broker_cpu_s'], '.2f')} | {_fmt(med['other_cpu_cores'], '.2f')} |"
        )
    return "\n".join(lines)


def parent_main(args: argparse.Namespace) -> int:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings and up only
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = sorted(set(clients) - set(ALL_CLIENTS))
    if unknown:
        print(f"unknown client(s) {unknown}; choose from {', '.join(ALL_CLIENTS)}", file=sys.stderr)
        return 2
    workloads = ["small", "large"] if args.workload == "both" else [args.workload]
    shapes = {"small": (args.records, args.size), "large": (args.large_records, args.large_size)}

    broker: Any = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from asyncconsumer.embedded_broker import EmbeddedBroker

        broker = EmbeddedBroker.start()
        bootstrap = broker.bootstrap_servers
    broker_pid: int | None = None if broker is None else broker.pid
    info = machine(("aiokafka", "confluent_kafka"))
    info["code"] = code_version()
    if broker is not None:
        version = subprocess.run([broker.binary, "--version"], capture_output=True, text=True, check=False)
        info["broker"] = version.stdout.strip() or "tansu (version unknown)"
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(f"# broker: {bootstrap} ({info.get('broker', 'external')}); asyncconsumer code at {info['code']}")
    report: Result = {"machine": info, "args": vars(args), "workloads": {}}
    failures: list[str] = []
    served: list[str] = []
    try:
        for name in workloads:
            records, size = shapes[name]
            topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
            create_topic(broker, bootstrap, topic, args.partitions)
            started = time.perf_counter()
            counts = produce(bootstrap, topic, args.partitions, records, size, args.batch_bytes)
            produce_s = time.perf_counter() - started
            print(
                f"\n## {name}: {records:,} x {size} B in {args.partitions} partitions (topic {topic}); "
                f"produced in {produce_s:.1f} s ({records / produce_s / 1e6:.2f} M rec/s)"
            )
            if args.serve:
                served.append(
                    f"{sys.executable} {Path(__file__).resolve()} --child asyncconsumer --bootstrap {bootstrap} "
                    f"--topic {topic} --partitions {args.partitions} --expect {records}"
                )
                continue
            for _ in range(args.warmup):  # one unmeasured pass so every client meets a warm broker
                spawn("raw", bootstrap, topic, args.partitions, records, args.timeout)
            runs: dict[str, list[Result]] = {c: [] for c in clients}
            for rep in range(1, args.reps + 1):
                for client in clients:
                    waited = time.perf_counter()
                    before = wait_until_quiet(broker_pid, args.quiet_cores, args.quiet_wait)
                    waited = time.perf_counter() - waited
                    if before is not None and before >= args.quiet_cores:
                        print(f"  (machine still busy: {before:.2f} cores used by others; measuring anyway)")
                    try:
                        result = spawn(client, bootstrap, topic, args.partitions, records, args.timeout, broker_pid)
                        verify(result, records, size, counts)
                    except ChildFailed as exc:
                        message = f"FAILED [{name} rep {rep}] {exc}"
                        print(message, file=sys.stderr, flush=True)
                        if not args.keep_going:
                            raise
                        failures.append(message)
                        continue
                    result["quiet_wait_s"] = waited
                    runs[client].append(result)
                    d = derive(result, size)
                    print(
                        f"  rep {rep} {client:<19} {d['records_per_s'] / 1e6:6.3f} M rec/s "
                        f"{d['mb_per_s']:7.1f} MB/s  cpu {result['cpu_s']:5.2f} s  "
                        f"rss {result['peak_rss_mb']:5.0f} MB  first {d['first_record_ms']:5.0f} ms  "
                        f"broker cpu {_fmt(result['broker_cpu_s'], '.2f')} s  "
                        f"others {_fmt(result['other_cpu_cores'], '.2f')} cores",
                        flush=True,
                    )
            summary = summarise(runs, size)
            print(f"\n### {name} — medians of {args.reps} reps (ratio to asyncconsumer)\n")
            print(table(summary))
            report["workloads"][name] = {
                "records": records,
                "value_size": size,
                "partitions": args.partitions,
                "topic": topic,
                "produce_s": produce_s,
                "runs": runs,
                "summary": summary,
            }
        if served:
            print("\nbroker up with the workloads; run one client (any --child) under a profiler, e.g.:\n")
            for command in served:
                print(f"  py-spy record -o /tmp/profile.svg -- {command}")
            print("\nCtrl-C (or SIGTERM) stops the broker.", flush=True)
            signal.signal(signal.SIGTERM, signal.default_int_handler)  # so the broker is stopped below
            signal.signal(signal.SIGINT, signal.default_int_handler)  # background jobs start with SIGINT ignored
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    except ChildFailed:
        return 1
    finally:
        if broker is not None:
            broker.stop()
        info["code_at_end"] = code_version()
        if info["code_at_end"] != info["code"]:
            print(
                f"\nWARNING: asyncconsumer's code changed during the run ({info['code']} -> {info['code_at_end']}); "
                "later runs measured the new code",
                file=sys.stderr,
            )
        if args.json:
            report["failures"] = failures
            Path(args.json).write_text(json.dumps(report, indent=2))
    return report_failures(failures)


def report_main(path: str) -> int:
    """Prints the tables of a saved ``--json`` file again (with this version's columns)."""
    saved = json.loads(Path(path).read_text())
    info = saved["machine"]
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    for name, workload in saved["workloads"].items():
        summary = summarise(workload["runs"], workload["value_size"])
        reps = max((entry["reps"] for entry in summary.values()), default=0)
        print(
            f"\n### {name}: {workload['records']:,} x {workload['value_size']} B in {workload['partitions']} "
            f"partitions; produced in {workload['produce_s']:.1f} s; medians of {reps} reps "
            "(ratio to asyncconsumer)\n"
        )
        print(table(summary))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=WORKLOADS["small"][0], help="records of the small workload")
    parser.add_argument("--size", type=int, default=WORKLOADS["small"][1], help="value bytes, small workload")
    parser.add_argument("--large-records", type=int, default=WORKLOADS["large"][0])
    parser.add_argument("--large-size", type=int, default=WORKLOADS["large"][1])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured raw passes per workload before the reps")
    parser.add_argument("--clients", default=",".join(ALL_CLIENTS), help=f"comma-separated: {', '.join(ALL_CLIENTS)}")
    parser.add_argument("--workload", choices=("small", "large", "both"), default="both")
    parser.add_argument("--batch-bytes", type=int, default=262_144, help="producer batch size")
    parser.add_argument("--bootstrap", help="use this broker instead of starting an embedded Tansu")
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds per child run")
    parser.add_argument(
        "--quiet-cores",
        type=float,
        default=0.3,
        help="before each run, wait until other processes use fewer cores than this (shared machines)",
    )
    parser.add_argument("--quiet-wait", type=float, default=60.0, help="longest wait for quiet, seconds")
    parser.add_argument("--keep-going", action="store_true", help="record a failed run and go on (exit 1 at end)")
    parser.add_argument("--json", help="write every run and the summary here")
    parser.add_argument("--report", metavar="JSON", help="print the tables of a saved --json file and exit")
    parser.add_argument(
        "--serve", action="store_true", help="produce the workloads, print child commands to profile, and wait"
    )
    parser.add_argument("--child", choices=ALL_CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if not (args.bootstrap and args.topic and args.expect):
            parser.error("--child needs --bootstrap, --topic and --expect")
        return child_main(args)
    if args.report:
        return report_main(args.report)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
