"""Consume throughput of asyncconsumer against its peers, each client in its own process.

    python benchmarks/bench_consume.py                        # every workload, every client, 5 interleaved reps
    python benchmarks/bench_consume.py --workload small,lz4 --clients asyncconsumer,aiokafka --reps 3
    python benchmarks/bench_consume.py --broker kafka            # the same against a one-node Apache Kafka
    python benchmarks/bench_consume.py --broker kafka --clients asyncconsumer,java,java-async   # Java's consumer
    python benchmarks/bench_consume.py --report benchmarks/results/consume-XXXXXXX.json   # tables, .md, .png again

The parent starts a broker (``--broker tansu``, the default: an embedded Tansu; ``--broker kafka``: a one-node
Apache Kafka from ``tests/support/kafka_broker.py``) or uses ``--bootstrap``, creates one topic per workload,
produces it once with aiokafka's producer, then runs every client in a fresh subprocess per repetition,
interleaved (rep 1: a, b, c...; rep 2: a, b, c...). Each child consumes the whole topic from the beginning with
manual assignment of all partitions, touches every value (sums ``len(value)``), and prints one JSON result line.
The parent checks each child consumed exactly what was produced, prints per-client medians and ratios to
asyncconsumer as markdown tables, and writes every run to ``benchmarks/results/consume-<code>.json`` (Kafka:
``consume-<code>-kafka.json``) with the tables (``.md``) and a bar chart (``.png``, needs matplotlib) beside it.
On ``--broker kafka`` Java's KafkaConsumer runs too (``java``, ``java-async``, and warm in one JVM ``java-warm``,
``java-async-warm``: see ``javapeer.py``).
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib.util
import json
import os
import random
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import javapeer
from benchcommon import (
    BROKERS,
    CLOCK_TICKS,
    RESULT_MARKER,
    ChildFailed,
    busy_cpu_s,
    child_argv,
    code_version,
    default_results_path,
    fmt_cell,
    kafka_broker_module,
    machine,
    median_min_max,
    note_failure,
    peak_rss_bytes,
    process_cpu_s,
    quiet_before_run,
    report_failures,
    spawn_child,
    start_broker,
    write_json,
)

CHILD_TIMEOUT_S = 300.0
STALL_S = 30.0  # a child that sees no record for this long gives up and reports what it got
POLL_MAX_RECORDS = 10_000

ALL_CLIENTS = (
    "asyncconsumer",
    "asyncconsumer-arrow",
    "asyncconsumer-iter",
    "asyncconsumer-sync",
    "asyncconsumer-4m",
    "asyncconsumer-nosessions",
    "asyncconsumer-64m",
    "aiokafka",
    "confluent",
    "confluent-tuned",
    "kafka-python",
    "java",
    "java-async",
    "java-warm",
    "java-async-warm",
    "raw",
)
OPTIONAL_CLIENTS = {"kafka-python": "kafka", "asyncconsumer-arrow": "pyarrow"}
"""Clients in the default list only when their module is importable (client -> module)."""
NOT_BY_DEFAULT = ("asyncconsumer-nosessions", "asyncconsumer-64m")
"""Clients run only when ``--clients`` names them: ``bench_curves.py``'s fetch sessions off and large buffer."""
BASELINE = "asyncconsumer"


def default_clients(broker: str = "tansu", java_ok: bool | None = None) -> tuple[str, ...]:
    """Every client that can run here: kafka-python when it is installed, Java's consumer on ``--broker kafka``
    when a JDK 17+ is there (``java_ok``; None: ask ``javapeer.unavailable_reason()``)."""
    clients = [
        c
        for c in ALL_CLIENTS
        if c not in NOT_BY_DEFAULT and (c not in OPTIONAL_CLIENTS or importlib.util.find_spec(OPTIONAL_CLIENTS[c]))
    ]
    if broker not in javapeer.JAVA_BROKERS or not (
        java_ok if java_ok is not None else javapeer.unavailable_reason() is None
    ):
        clients = [c for c in clients if c not in javapeer.JAVA_CLIENTS]
    return tuple(clients)


@dataclass(frozen=True)
class Workload:
    """One topic: ``records`` values of exactly ``size`` bytes spread evenly over ``partitions``.

    ``compression`` is the producer's ``compression_type``; a compressed workload's values are drawn in turn from
    ``compressible_values`` (identical values would compress far better than real data), the others repeat one
    random value.
    """

    records: int
    size: int
    partitions: int
    compression: str | None = None

    def describe(self) -> str:
        text = f"{self.records:,} x {self.size} B in {self.partitions} partitions"
        return text + (f", {self.compression}" if self.compression else "")


# The defaults; --records/--size set every 100 B workload, --large-* the large one, --partitions all but small16.
WORKLOADS: dict[str, Workload] = {
    "small": Workload(1_000_000, 100, 4),
    "large": Workload(200_000, 1_000, 4),
    "small16": Workload(1_000_000, 100, 16),
    "lz4": Workload(1_000_000, 100, 4, "lz4"),
    "zstd": Workload(1_000_000, 100, 4, "zstd"),
}

Result = dict[str, Any]


# ==========================================================================================================
# child side: one client consumes the topic and reports
# ==========================================================================================================


class Meter:
    """Wall and CPU time of the consume phase: from the first poll call to the last record."""

    def __init__(self) -> None:
        self.t0 = 0.0
        self.ru0: resource.struct_rusage | None = None
        self.thread0: float | None = None
        self.rss_at_start: int | None = None
        self.first: float | None = None
        self.first_batch = 0
        self.last_progress = 0.0

    def begin(self) -> None:
        self.rss_at_start = current_rss_bytes()
        self.ru0 = resource.getrusage(resource.RUSAGE_SELF)
        self.thread0 = _thread_cpu_s()
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
        thread1 = _thread_cpu_s()
        return {
            "client": client,
            "records": records,
            "value_bytes": value_bytes,
            "wall_s": end - self.t0,
            "cpu_s": user + system,
            "cpu_user_s": user,
            "cpu_sys_s": system,
            # the caller's thread (the one polling; decoding happens there), the rest is the client's own threads
            "main_thread_cpu_s": None if thread1 is None or self.thread0 is None else thread1 - self.thread0,
            "first_record_s": None if self.first is None else self.first - self.t0,
            "first_batch_records": self.first_batch,
            "rss_at_start_mb": None if self.rss_at_start is None else self.rss_at_start / (1 << 20),
            **extra,
        }


def _thread_cpu_s() -> float | None:
    """The calling thread's CPU seconds, user+sys (``RUSAGE_THREAD``; None where it does not exist)."""
    who = getattr(resource, "RUSAGE_THREAD", None)
    if who is None:
        return None
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def current_rss_bytes() -> int | None:
    """This process's resident set now (``VmRSS``; None off Linux): at the start of the consume phase, imports and
    connection done, so the peak minus it is what consuming added."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


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


LARGE_BUFFER = 64 << 20
"""``asyncconsumer-64m``'s ``fetch_buffer_bytes``: eight times the default, for many partitions, where each fetch
round costs the broker and the consumer in proportion to the partitions (see ``bench_curves.py``)."""
SMALL_BUFFER = 4 << 20
"""``asyncconsumer-4m``'s ``fetch_buffer_bytes``: half the default (its limit starts at 2 MiB), to show what the
default's headroom buys."""


async def child_asyncconsumer(
    bootstrap: str,
    topic: str,
    partitions: int,
    expect: int,
    *,
    fetch_buffer_bytes: int | None = None,
    fetch_sessions: bool = True,
    name: str = "asyncconsumer",
) -> Result:
    from asyncconsumer import AsyncConsumer, TopicPartition

    settings: dict[str, Any] = {} if fetch_buffer_bytes is None else {"fetch_buffer_bytes": fetch_buffer_bytes}
    if not fetch_sessions:
        settings["fetch_sessions"] = False
    consumer = AsyncConsumer(bootstrap, auto_offset_reset="earliest", **settings)
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
    result = meter.result(name, count, value_bytes, decoder=decoder_implementation())
    result["positions"] = {tp.partition: await consumer.position(tp) for tp in tps}
    await consumer.close()
    return result


ARROW_MAX_RECORDS = 100_000
"""``asyncconsumer-arrow``'s ``max_records``: more than a full fetch buffer holds (8 MiB of 100 B records, wire framing
included, is ~75,000), so each ``poll_arrow`` takes everything buffered and the cap never splits what was fetched.
A columnar caller wants few large tables (a table's fixed cost, a few pyarrow objects per column, is paid per
poll, not per row), and its memory stays bounded by ``fetch_buffer_bytes`` plus one table either way; the
per-record clients' 10,000 would make ~8x as many tables on ``small`` for no benefit to such a caller."""


def decoder_implementation() -> str:
    """Which v2 record decoder asyncconsumer runs with here: ``c`` (the compiled one) or ``python`` (the reference
    fallback, same output, far slower). Recorded with every run so a fallback run is never read as a compiled one."""
    from asyncconsumer.protocol import v2decode

    return str(v2decode.IMPLEMENTATION)


def value_bytes_of(column: Any) -> int:
    """Total value bytes of a binary column (a ``pyarrow.Array`` or ``ChunkedArray``), nulls counting 0: the
    offsets buffer's entry after the last row minus the first row's, per chunk, so no Python object per value
    (a sliced chunk's own ``offset`` is honoured; ``large_binary`` has 64-bit offsets)."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    total = 0
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        entry = _I64LE if pa.types.is_large_binary(chunk.type) else _I32LE
        offsets = chunk.buffers()[1]
        first = entry.unpack_from(offsets, chunk.offset * entry.size)[0]
        end = entry.unpack_from(offsets, (chunk.offset + len(chunk)) * entry.size)[0]
        total += end - first
    return total


_I32LE = struct.Struct("<i")  # Arrow buffers are little-endian
_I64LE = struct.Struct("<q")


def _numpy_view(np: Any, array: Any, dtype: Any) -> Any:
    """A numpy view of a fixed-width ``pyarrow.Array``'s values (no nulls). Not ``Array.to_numpy``: its first call
    imports pandas when it is installed (~250 ms and ~45 MB, which poll_arrow itself does not pay)."""
    size = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * size)


def partition_runs(partitions: Any, offsets: Any) -> list[tuple[int, int, int, int]]:
    """The runs of one partition in a record batch's ``partition`` and ``offset`` columns (``pyarrow.Array``s without
    nulls): ``(partition, first offset, last offset, rows)`` each, in order. Found in numpy (already imported by
    pyarrow; cheaper per call than ``pyarrow.compute``, ~30 us per 75,000 rows) over zero-copy views of the columns,
    with one Python step per run, never per row; the per-record clients check the same (first, last, count) per
    partition and poll with ``_check_contiguous``."""
    import numpy as np

    n = len(partitions)
    if n == 0:
        return []
    part, offs = _numpy_view(np, partitions, np.int32), _numpy_view(np, offsets, np.int64)
    changes = np.flatnonzero(part[1:] != part[:-1]).tolist()
    starts = [0, *(i + 1 for i in changes)]
    ends = [*changes, n - 1]
    return [(int(part[s]), int(offs[s]), int(offs[e]), e - s + 1) for s, e in zip(starts, ends, strict=True)]


async def child_asyncconsumer_arrow(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    """``asyncconsumer``'s loop with ``await poll_arrow(max_records=ARROW_MAX_RECORDS)``: rows counted with
    ``num_rows``, value bytes summed from the value column's offsets, partition runs checked for gaps. The result
    says whether pandas got imported meanwhile (pyarrow imports it on some first calls: ~250 ms, ~45 MB)."""
    import pyarrow  # noqa: F401  (before the clock starts, as the other clients' modules are; it imports numpy)

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
        table = await consumer.poll_arrow(timeout_ms=1_000, max_records=ARROW_MAX_RECORDS)
        rows = table.num_rows
        if not rows:
            if meter.stalled():
                raise Stalled(count, next_offset)
            continue
        value_bytes += value_bytes_of(table.column("value"))
        for batch in table.to_batches():
            for partition, first, last, n in partition_runs(batch.column("partition"), batch.column("offset")):
                _check_contiguous(next_offset, partition, first, last, n)
        count += rows
        meter.got(rows)
    result = meter.result("asyncconsumer-arrow", count, value_bytes, decoder=decoder_implementation())
    result["pandas_imported"] = "pandas" in sys.modules
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
    result = meter.result("asyncconsumer-iter", count, value_bytes, decoder=decoder_implementation())
    result["positions"] = {tp.partition: await consumer.position(tp) for tp in tps}
    await consumer.close()
    return result


def _poll_loop(poll: Callable[[], Mapping[Any, Sequence[Any]]], expect: int, meter: Meter) -> tuple[int, int]:
    """The blocking clients' loop (asyncconsumer-sync, kafka-python): records and value bytes consumed."""
    count = value_bytes = 0
    next_offset: dict[int, int] = {}
    meter.begin()
    while count < expect:
        batch = poll()
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
    return count, value_bytes


def child_asyncconsumer_sync(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    from asyncconsumer import Consumer, TopicPartition

    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    meter = Meter()
    poll = lambda: consumer.poll(timeout_ms=1_000, max_records=POLL_MAX_RECORDS)  # noqa: E731
    count, value_bytes = _poll_loop(poll, expect, meter)
    result = meter.result("asyncconsumer-sync", count, value_bytes, decoder=decoder_implementation())
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


def child_kafka_python(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    """kafka-python's ``KafkaConsumer`` with its defaults (``check_crcs=True``, as aiokafka and asyncconsumer)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    tps = [KTopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    meter = Meter()
    poll = lambda: consumer.poll(timeout_ms=1_000, max_records=POLL_MAX_RECORDS)  # noqa: E731
    count, value_bytes = _poll_loop(poll, expect, meter)
    result = meter.result("kafka-python", count, value_bytes)
    result["positions"] = {tp.partition: consumer.position(tp) for tp in tps}
    consumer.close()
    return result


# --- raw: one Fetch v4 in flight, a blocking socket, no record decoding -------------------------------------
# Fetch v4 is the oldest version Kafka 4 still serves (KIP-896 removed v0-v3), and Tansu serves it too.

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
    """Fetch v4 to the bootstrap broker (it must lead every partition, as a single Tansu or a one-node Kafka
    does), counting bytes.

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
        "asyncconsumer-arrow": lambda: asyncio.run(child_asyncconsumer_arrow(bootstrap, topic, partitions, expect)),
        "asyncconsumer-iter": lambda: asyncio.run(child_asyncconsumer_iter(bootstrap, topic, partitions, expect)),
        "asyncconsumer-sync": lambda: child_asyncconsumer_sync(bootstrap, topic, partitions, expect),
        "asyncconsumer-4m": lambda: asyncio.run(
            child_asyncconsumer(
                bootstrap, topic, partitions, expect, fetch_buffer_bytes=SMALL_BUFFER, name="asyncconsumer-4m"
            )
        ),
        "asyncconsumer-64m": lambda: asyncio.run(
            child_asyncconsumer(
                bootstrap, topic, partitions, expect, fetch_buffer_bytes=LARGE_BUFFER, name="asyncconsumer-64m"
            )
        ),
        # every fetch names every partition (KIP-227 off): what sessions save as partitions grow (bench_curves.py)
        "asyncconsumer-nosessions": lambda: asyncio.run(
            child_asyncconsumer(
                bootstrap, topic, partitions, expect, fetch_sessions=False, name="asyncconsumer-nosessions"
            )
        ),
        "aiokafka": lambda: asyncio.run(child_aiokafka(bootstrap, topic, partitions, expect)),
        "confluent": lambda: child_confluent(bootstrap, topic, partitions, expect, tuned=False),
        "confluent-tuned": lambda: child_confluent(bootstrap, topic, partitions, expect, tuned=True),
        "kafka-python": lambda: child_kafka_python(bootstrap, topic, partitions, expect),
        "raw": lambda: child_raw(bootstrap, topic, partitions, expect),
    }
    result = runners[client]()
    # The peak of the whole child, setup and imports included (not ru_maxrss alone: see peak_rss_bytes).
    peak, source = peak_rss_bytes()
    result["peak_rss_mb"] = peak / (1 << 20)
    result["peak_rss_source"] = source
    return result


def exec_java_child(args: argparse.Namespace) -> None:
    """Replaces this process with the Java harness's JVM (compiled already by the parent; else here, once), so
    the child's result line, CPU and ``VmHWM`` are the JVM's own (``exec`` starts a fresh memory image)."""
    kafka_broker = kafka_broker_module()
    libs = kafka_broker.fetch_jars()
    classes = javapeer.build(libs, kafka_broker.cache_root())
    argv = javapeer.command(
        args.child,
        classes,
        javapeer.runtime_jars(libs),
        bootstrap=args.bootstrap,
        topic=args.topic,
        partitions=args.partitions,
        expect=args.expect,
        clk_tck=CLOCK_TICKS,
        stall_s=STALL_S,
        java=shutil.which("java") or "java",
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


def child_main(args: argparse.Namespace) -> int:
    if args.child in javapeer.JAVA_CLIENTS:
        exec_java_child(args)  # does not return
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


# Repeated parts of the compressible values: what log lines and events share from one record to the next.
_PHRASES = (
    "level=INFO",
    "level=WARN",
    "service=checkout",
    "service=search",
    "service=payments",
    "region=eu-west-1",
    "region=us-east-1",
    "method=GET",
    "method=POST",
    "path=/api/v2/orders",
    "path=/api/v2/users/profile",
    "status=200",
    "status=404",
    "status=503",
    "client=mobile-ios",
    "client=web",
    "cache=hit",
    "cache=miss",
)
COMPRESSIBLE_POOL = 4_096
RANDOM_SHARE = 0.45  # of the tokens: random hex or base64 (the rest are _PHRASES); ~2:1 with lz4 at 100 B


def compressible_values(size: int, count: int = COMPRESSIBLE_POOL, seed: int = 20261123) -> list[bytes]:
    """``count`` values of exactly ``size`` bytes, log-line-like text that compresses about 2:1 (a bit more with
    zstd, which also squeezes the hex): space-separated tokens, ~45% random ``id=<hex>``/``tok=<base64>``, the
    rest repeated phrases. Deterministic (``seed``); distinct unless ``size`` is tiny."""
    rng = random.Random(seed)
    values = []
    for _ in range(count):
        tokens: list[str] = []
        length = -1  # of " ".join(tokens)
        while length < size:
            if rng.random() < RANDOM_SHARE:
                raw = rng.randbytes(9)
                token = "id=" + raw[:8].hex() if rng.random() < 0.5 else "tok=" + base64.b64encode(raw).decode()
            else:
                token = rng.choice(_PHRASES)
            tokens.append(token)
            length += len(token) + 1
        values.append(" ".join(tokens).encode()[:size])
    return values


def compression_ratio(values: Sequence[bytes], compression: str, sample_bytes: int) -> float:
    """Uncompressed / compressed size of about ``sample_bytes`` of ``values`` in turn, with aiokafka's codec (the
    producer's), as one batch would hold them (record framing left out)."""
    from aiokafka import codec

    encode: dict[str, Callable[[bytes], bytes]] = {
        "gzip": codec.gzip_encode,
        "snappy": codec.snappy_encode,
        "lz4": codec.lz4_encode,
        "zstd": codec.zstd_encode,
    }
    n = max(1, sample_bytes // max(1, len(values[0])))
    data = b"".join(values[i % len(values)] for i in range(n))
    return len(data) / len(encode[compression](data))


def produce(
    bootstrap: str,
    topic: str,
    partitions: int,
    records: int,
    size: int,
    batch_bytes: int,
    *,
    compression: str | None = None,
    values: Sequence[bytes] | None = None,
) -> list[int]:
    """Writes ``records`` values of ``size`` bytes spread evenly over the partitions; returns per-partition counts.

    The values are ``values`` in turn (each must be ``size`` bytes), or one random value repeated. ``compression``
    is the producer's ``compression_type``; ``batch_bytes`` bounds a batch's uncompressed size.
    """
    from aiokafka import AIOKafkaProducer

    counts = [records // partitions + (1 if p < records % partitions else 0) for p in range(partitions)]
    pool = list(values) if values else [os.urandom(size)]
    if any(len(v) != size for v in pool):
        raise ValueError(f"every value must be {size} bytes")

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks=1,
            linger_ms=50,
            max_batch_size=batch_bytes,
            max_request_size=max(1_048_576, 2 * batch_bytes),
            compression_type=compression,
            enable_idempotence=False,
            request_timeout_ms=120_000,
        )
        await producer.start()
        try:
            pending: list[asyncio.Future[Any]] = []
            left = list(counts)
            i = 0
            while any(left):
                for p in range(partitions):  # round-robin, one batch per partition at a time
                    if not left[p]:
                        continue
                    batch = producer.create_batch()
                    n = 0
                    while n < left[p] and batch.append(timestamp=None, key=None, value=pool[i % len(pool)]) is not None:
                        n += 1
                        i += 1
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


class Load:
    """What the machine did while one child ran: the broker's CPU, and everybody else's (noise)."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.t0 = time.perf_counter()
        self.busy0 = busy_cpu_s()
        self.broker0 = process_cpu_s(broker_pid)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.children0 = ru.ru_utime + ru.ru_stime

    def finish(self) -> Result:
        interval = time.perf_counter() - self.t0
        busy1, broker1 = busy_cpu_s(), process_cpu_s(self.broker_pid)
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


def derive(result: Result, size: int) -> Result:
    records = result["records"]
    wall = result["wall_s"]
    first = result["first_record_s"] or 0.0
    first_batch = result.get("first_batch_records", 0)
    return {
        "records_per_s": records / wall,
        "mb_per_s": records * size / wall / 1e6,
        "cpu_s_per_m": result["cpu_s"] / records * 1e6,
        "main_cpu_s_per_m": (
            None if result.get("main_thread_cpu_s") is None else result["main_thread_cpu_s"] / records * 1e6
        ),
        "peak_rss_mb": result["peak_rss_mb"],
        "first_record_ms": first * 1000,
        # throughput once records flow: start-up (metadata, offsets, the first fetch) and the first batch left out
        "steady_mb_per_s": (
            (records - first_batch) * size / (wall - first) / 1e6 if wall > first and records > first_batch else None
        ),
        "steady_records_per_s": (
            (records - first_batch) / (wall - first) if wall > first and records > first_batch else None
        ),
        "wall_s": wall,
        "cpu_s": result["cpu_s"],
    }


METRICS = (
    "records_per_s",
    "mb_per_s",
    "steady_mb_per_s",
    "steady_records_per_s",
    "cpu_s_per_m",
    "main_cpu_s_per_m",
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
            (key, [r.get(key) for r in results]) for key in ("broker_cpu_s", "other_cpu_cores", "rss_at_start_mb")
        ]:
            for stat, value in median_min_max(values).items():
                entry[stat][metric] = value
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
            f"| {fmt_cell(med['steady_mb_per_s'], '.1f')}{_ratio(entry, 'steady_mb_per_s')} "
            f"| {med['cpu_s_per_m']:.2f}{_ratio(entry, 'cpu_s_per_m')} "
            f"| {med['peak_rss_mb']:.0f}{_ratio(entry, 'peak_rss_mb')} "
            f"| {med['first_record_ms']:.0f} "
            f"| {entry['reps']} "
            f"| {lo['records_per_s'] / 1e6:.3f}-{hi['records_per_s'] / 1e6:.3f} M "
            f"| {fmt_cell(med['broker_cpu_s'], '.2f')} | {fmt_cell(med['other_cpu_cores'], '.2f')} |"
        )
    return "\n".join(lines)


def unsupported(client: str, compression: str | None) -> str | None:
    """Why ``client`` cannot read a workload compressed with ``compression`` here (None: it can).

    Only kafka-python's codecs are optional extras (``lz4``, ``zstandard``, ``python-snappy``); aiokafka, and so
    asyncconsumer, decode with cramjam, librdkafka has its own.
    """
    if client != "kafka-python" or compression is None:
        return None
    from kafka import codec

    checks: dict[str, tuple[Callable[[], bool], str]] = {
        "gzip": (codec.has_gzip, ""),
        "snappy": (codec.has_snappy, "python-snappy"),
        "lz4": (codec.has_lz4, "lz4"),
        "zstd": (codec.has_zstd, "zstandard"),
    }
    has, package = checks[compression]
    return None if has() else f"kafka-python has no {compression} codec here (pip install {package})"


def parse_workloads(text: str) -> list[str]:
    """``--workload``: a comma list of names, ``all``, or ``both`` (small and large, as before)."""
    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        expanded = {"all": list(WORKLOADS), "both": ["small", "large"]}.get(part, [part])
        for name in expanded:
            if name not in WORKLOADS:
                raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}, all")
            if name not in names:
                names.append(name)
    if not names:
        raise ValueError("no workload given")
    return names


def workloads_from(args: argparse.Namespace) -> dict[str, Workload]:
    return {
        "small": Workload(args.records, args.size, args.partitions),
        "large": Workload(args.large_records, args.large_size, args.partitions),
        "small16": Workload(args.records, args.size, args.partitions16),
        "lz4": Workload(args.records, args.size, args.partitions, "lz4"),
        "zstd": Workload(args.records, args.size, args.partitions, "zstd"),
    }


# ==========================================================================================================
# output: markdown tables and a bar chart, from a run's report (also a saved JSON one)
# ==========================================================================================================


def summaries_of(report: Result) -> dict[str, dict[str, Result]]:
    """Every workload's summary, recomputed from its runs (so a saved report gets this version's columns)."""
    return {name: summarise(w["runs"], w["value_size"]) for name, w in report["workloads"].items()}


def describe_entry(entry: Result) -> str:
    """A report's workload entry in words (entries saved before compression existed have none)."""
    shape = Workload(entry["records"], entry["value_size"], entry["partitions"], entry.get("compression"))
    return shape.describe()


def header(report: Result) -> str:
    info = report["machine"]
    code, end = info.get("code", "unknown"), info.get("code_at_end")
    labels = {"aiokafka": "aiokafka", "confluent_kafka": "confluent-kafka", "librdkafka": "librdkafka"}
    labels |= {"kafka": "kafka-python", "cramjam": "cramjam"}
    versions = ", ".join(f"{label} {info[key]}" for key, label in labels.items() if key in info)
    if "kafka_crc32c" in info:
        versions += f" (kafka-python's CRC32C: {info['kafka_crc32c']})"
    when = f"{report['started']}; " if report.get("started") else ""
    lines = [
        f"# bench_consume.py: asyncconsumer at `{code}`"
        + (f" (`{end}` at the end: code changed during the run)" if end and end != code else ""),
        "",
        f"{when}{info['cpus']} CPUs ({info['cpu_model']}), {info['platform']}, Python {info['python']}; {versions}; "
        f"broker {info.get('broker', 'external')}.",
    ]
    if "java_clients" in info:
        variants = ", ".join(f"`{c}` {what}" for c, what in info["java_clients"].items())
        lines.append(
            f"Java's KafkaConsumer: kafka-clients {info.get('kafka_clients', '?')} on {info['java']}, "
            f"JVM flags `{' '.join(info['jvm_flags'])}`, a fresh JVM per rep; {variants}."
        )
    decoder = decoder_note(report)
    if decoder is not None:
        lines.append(decoder)
    if report.get("command") is not None:
        lines.append(f"Command: `bench_consume.py {' '.join(report['command'])}`.")
    return "\n".join(lines)


def run_decoders(report: Result) -> list[str]:
    """The v2 decoders asyncconsumer's children ran with (``decoder`` in each run), sorted; none before it existed."""
    return sorted(
        {
            r["decoder"]
            for w in report.get("workloads", {}).values()
            for rs in w["runs"].values()
            for r in rs
            if "decoder" in r
        }
    )


def decoder_note(report: Result) -> str | None:
    """The line naming the v2 record decoder the run measured, loud when it was the pure-Python fallback or the
    children disagree with the parent (the extension was built or removed during the run). None for reports
    saved before the decoder was recorded."""
    parent = report["machine"].get("decoder")
    seen = run_decoders(report)
    if parent is None and not seen:
        return None
    every = sorted({*seen, *([parent] if parent else [])})
    if len(every) > 1:
        return (
            f"asyncconsumer's v2 record decoder: **mixed** (parent `{parent}`, children {', '.join(seen)}): "
            "the extension changed during the run; these figures mix both."
        )
    (only,) = every
    if only == "python":
        return (
            "asyncconsumer's v2 record decoder: **`python`, the pure-Python fallback** (no compiled extension): "
            "asyncconsumer's figures are not the compiled decoder's."
        )
    return f"asyncconsumer's v2 record decoder: `{only}` (`v2decode.IMPLEMENTATION`)."


@dataclass(frozen=True)
class Target:
    """One of issue 32's targets: ``client``'s median ``metric`` over ``reference``'s, a ratio of at least ``bound``
    (at most, for a cost: ``lower_is_better``), on ``workload`` (set for ``records`` x ``size`` B; another shape only
    hints)."""

    workload: str
    client: str
    reference: str
    metric: str
    bound: float
    what: str
    records: int
    size: int
    lower_is_better: bool = False


SMALL_SHAPE = (5_000_000, 100)
LARGE_SHAPE = (1_000_000, 1_000)
TARGETS = (
    # A warm JVM: the last of several passes in one JVM (javapeer.WARM_PASSES), both group protocols' delegates,
    # compared once records flow: after seekToBeginning the classic consumer first waits out the fetch it had sent
    # at the end of the previous pass (fetch.max.wait.ms, 500 ms), which no steady consumer pays.
    Target(
        "small",
        "asyncconsumer",
        "java-warm",
        "steady_records_per_s",
        1.0,
        "poll vs a warm Java (classic)",
        *SMALL_SHAPE,
    ),
    Target(
        "small",
        "asyncconsumer",
        "java-async-warm",
        "steady_records_per_s",
        1.0,
        "poll vs a warm Java (consumer)",
        *SMALL_SHAPE,
    ),
    Target(
        "small",
        "asyncconsumer",
        "java-warm",
        "cpu_s_per_m",
        1.0,
        "poll's CPU-s per M records vs a warm Java (classic)",
        *SMALL_SHAPE,
        lower_is_better=True,
    ),
    Target(
        "small",
        "asyncconsumer",
        "java-async-warm",
        "cpu_s_per_m",
        1.0,
        "poll's CPU-s per M records vs a warm Java (consumer)",
        *SMALL_SHAPE,
        lower_is_better=True,
    ),
    # librdkafka starts fetching ~0.55 s after assign() (see README), a fixed cost that alone halves its whole-run
    # rate on short workloads: compared once records flow.
    Target(
        "large",
        "asyncconsumer",
        "confluent-tuned",
        "steady_records_per_s",
        1.2,
        "poll vs tuned librdkafka",
        *LARGE_SHAPE,
    ),
    Target(
        "small", "asyncconsumer-arrow", "raw", "records_per_s", 0.9, "poll_arrow vs the raw fetch loop", *SMALL_SHAPE
    ),
    Target(
        "large", "asyncconsumer-arrow", "raw", "records_per_s", 0.9, "poll_arrow vs the raw fetch loop", *LARGE_SHAPE
    ),
)
RSS_TARGET_MB = 60.0
"""Issue 32: ``poll``'s peak RSS stays at or under this (imports included)."""
REPORTED = ("asyncconsumer", "asyncconsumer-arrow")
"""The two paths whose CPU-s per million records and peak RSS the issue asks to see side by side."""

_METRIC_NAMES = {
    "records_per_s": "records/s",
    "steady_records_per_s": "records/s after 1st record",
    "cpu_s_per_m": "CPU-s per M records",
}


def _decoder_of(runs: Sequence[Result]) -> str | None:
    kinds = sorted({r["decoder"] for r in runs if "decoder" in r})
    return "/".join(kinds) if kinds else None


def target_results(name: str, entry: Result, summary: dict[str, Result]) -> list[Result]:
    """Every target of workload ``name`` whose two clients both have results: the ratio, met or not, and caveats."""
    out: list[Result] = []
    for target in TARGETS:
        mine, theirs = summary.get(target.client), summary.get(target.reference)
        if target.workload != name or mine is None or theirs is None:
            continue
        value, reference = mine["median"][target.metric], theirs["median"][target.metric]
        if value is None or not reference:
            continue
        ratio = value / reference
        whole = None
        if target.metric == "steady_records_per_s":
            whole = mine["median"]["records_per_s"] / theirs["median"]["records_per_s"]
        out.append(
            {
                "target": target,
                "value": value,
                "reference_value": reference,
                "ratio": ratio,
                "met": ratio <= target.bound if target.lower_is_better else ratio >= target.bound,
                "whole_run_ratio": whole,
                "same_shape": (entry["records"], entry["value_size"]) == (target.records, target.size),
                "decoder": _decoder_of(entry["runs"].get(target.client, [])),
                "pandas_imported": any(r.get("pandas_imported") for r in entry["runs"].get(target.client, [])),
            }
        )
    return out


def target_lines(name: str, entry: Result, summary: dict[str, Result]) -> list[str]:
    """The markdown lines under a workload's table: each target with its ratio and verdict, then CPU-s per
    million records and peak RSS of both asyncconsumer paths."""
    lines = []
    for t in target_results(name, entry, summary):
        target: Target = t["target"]
        verdict = "**met**" if t["met"] else "**not met**"
        margin = t["ratio"] / target.bound - 1
        scale, unit = (1.0, "") if target.lower_is_better else (1e6, " M")
        line = (
            f"- target: {target.what}: {target.client} / {target.reference} "
            f"{_METRIC_NAMES.get(target.metric, target.metric)} = {t['ratio']:.2f}x "
            f"({t['value'] / scale:.3f}{unit} / {t['reference_value'] / scale:.3f}{unit}), "
            f"wanted {'<=' if target.lower_is_better else '>='} {target.bound:.2f}x: {verdict} ({margin:+.0%})"
        )
        if t["whole_run_ratio"] is not None:
            line += f"; whole run, start included: {t['whole_run_ratio']:.2f}x"
        if t["decoder"] == "python":
            line += "; pure-Python decoder"
        if t["pandas_imported"]:
            line += "; pandas was imported during the run (~250 ms, ~45 MB)"
        if not t["same_shape"]:
            line += f"; measured on another shape than the target's {target.records:,} x {target.size} B"
        lines.append(line)
    paths = [c for c in REPORTED if c in summary]
    if paths:
        cpu = ", ".join(f"{c} {_cpu_text(summary[c]['median'])}" for c in paths)
        rss = ", ".join(f"{c} {_rss_text(summary[c]['median'])}" for c in paths)
        lines.append(f"- CPU-s per million records: {cpu}")
        lines.append(f"- peak RSS MB: {rss}")
    if "asyncconsumer" in summary:
        peak = summary["asyncconsumer"]["median"]["peak_rss_mb"]
        verdict = "**met**" if peak <= RSS_TARGET_MB else "**not met**"
        lines.append(f"- target: poll's peak RSS <= {RSS_TARGET_MB:.0f} MB: {peak:.0f} MB, {verdict}")
    return lines


def _cpu_text(median: Result) -> str:
    """``0.61`` or, when the run recorded it, ``0.61 (0.40 in the polling thread)``."""
    main = median.get("main_cpu_s_per_m")
    return f"{median['cpu_s_per_m']:.2f}" + ("" if main is None else f" ({main:.2f} in the polling thread)")


def _rss_text(median: Result) -> str:
    """``63`` or, when the run recorded it, ``63 (+28 while consuming)``: the peak and its growth over the resident
    set at the first poll (imports and connection done)."""
    peak, start = median["peak_rss_mb"], median.get("rss_at_start_mb")
    return f"{peak:.0f}" + ("" if start is None else f" (+{peak - start:.0f} while consuming)")


def workload_section(name: str, entry: Result, summary: dict[str, Result]) -> str:
    reps = max((e["reps"] for e in summary.values()), default=0)
    ratio = entry.get("compression_ratio")
    compressed = f"; values compress {ratio:.1f}:1" if ratio else ""
    lines = [
        f"### {name}: {describe_entry(entry)}{compressed}; produced in {entry['produce_s']:.1f} s; "
        f"medians of {reps} reps (ratio to asyncconsumer)",
        "",
        table(summary),
    ]
    targets = target_lines(name, entry, summary)
    if targets:
        lines += ["", *targets]
    notes = [f"{client} skipped: {why}" for client, why in entry.get("skipped", {}).items()]
    notes += [f"{client}: no successful run" for client, runs in entry["runs"].items() if not runs]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def markdown(report: Result, summaries: dict[str, dict[str, Result]]) -> str:
    parts = [header(report)]
    parts += [workload_section(name, entry, summaries[name]) for name, entry in report["workloads"].items()]
    if report.get("failures"):
        parts.append("### Failed runs\n\n" + "\n".join(f"- {f.splitlines()[0]}" for f in report["failures"]))
    return "\n\n".join(parts) + "\n"


_CLIENT_COLOURS = {
    "asyncconsumer": "#1d4f91",
    "asyncconsumer-arrow": "#0f9ba8",
    "asyncconsumer-iter": "#3f7fcf",
    "asyncconsumer-sync": "#86b3ea",
    "asyncconsumer-4m": "#b9d3f2",
    "asyncconsumer-nosessions": "#7fa7d9",
    "asyncconsumer-64m": "#1f4e8c",
    "aiokafka": "#e0861b",
    "confluent": "#2b8f4e",
    "confluent-tuned": "#86cf9b",
    "kafka-python": "#8e63b8",
    "java": "#b03a2e",
    "java-async": "#e6877e",
    "java-warm": "#6e1f17",
    "java-async-warm": "#c0564a",
    "raw": "#8a8a8a",
}
_PANELS: tuple[tuple[str, float, str, str], ...] = (  # metric, scale, panel title, label format
    ("records_per_s", 1e-6, "M records/s (higher is better)", ".2f"),
    ("cpu_s_per_m", 1.0, "CPU-s per M records (lower is better)", ".2f"),
    ("peak_rss_mb", 1.0, "peak RSS MB (lower is better)", ".0f"),
)
_CUT_ABOVE, _CUT_AT = 2.5, 2.0
"""A ``raw`` bar longer than 2.5 times every client's is cut at twice the longest (it is the ceiling, not a peer)."""


def write_chart(report: Result, summaries: dict[str, dict[str, Result]], path: Path) -> bool:
    """One row of bar panels per workload (records/s, CPU-s per M records, peak RSS), every bar labelled with its
    median and its ratio to asyncconsumer, thin whiskers for the min-max of the reps. False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        print("note: matplotlib is not installed (it is in the bench extra); no chart written", file=sys.stderr)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["workloads"])
    if not names:
        return False
    clients: list[str] = []
    for name in names:
        entry = report["workloads"][name]
        for client in [*entry["runs"], *entry.get("skipped", {})]:
            if client not in clients:
                clients.append(client)
    clients.sort(key=lambda c: ALL_CLIENTS.index(c) if c in ALL_CLIENTS else len(ALL_CLIENTS))
    info = report["machine"]
    reps = max((e["reps"] for s in summaries.values() for e in s.values()), default=0)
    row_height = 0.75 + 0.3 * len(clients)
    fig = plt.figure(figsize=(15, 0.9 + row_height * len(names)), layout="constrained")
    when = f"{report['started']}, " if report.get("started") else ""
    decoders = sorted({*run_decoders(report), *([info["decoder"]] if info.get("decoder") else [])})
    decoder = f"; v2 decoder {'/'.join(decoders)}" + (" (PURE-PYTHON FALLBACK)" if "python" in decoders else "")
    decoder = decoder if decoders else ""
    fig.suptitle(
        f"bench_consume.py: asyncconsumer at {info.get('code', 'unknown')}; {when}{info['cpus']} CPUs "
        f"({info['cpu_model']}), broker {info.get('broker', 'external')}{decoder}\nbars: medians of {reps} reps; "
        f"whiskers: min-max; N.NNx: ratio to asyncconsumer's median",
        fontsize=11,
    )
    rows = fig.subfigures(len(names), 1, squeeze=False)
    for i, name in enumerate(names):
        entry, summary = report["workloads"][name], summaries[name]
        row = rows[i, 0]
        verdicts = "; ".join(
            f"{t['target'].client} / {t['target'].reference} {t['ratio']:.2f}x "
            f"({'met' if t['met'] else 'not met'}: {'<=' if t['target'].lower_is_better else '>='} "
            f"{t['target'].bound:.1f}x)"
            for t in target_results(name, entry, summary)
        )
        row.suptitle(
            f"{name}: {describe_entry(entry)}" + (f"    targets: {verdicts}" if verdicts else ""),
            fontsize=10,
            fontweight="bold",
            x=0.01,
            ha="left",
        )
        axes = row.subplots(1, len(_PANELS), sharey=True)
        for ax, (metric, scale, title, spec) in zip(axes, _PANELS, strict=True):
            ends = {c: max(s["max"][metric] or 0.0, s["median"][metric]) * scale for c, s in summary.items()}
            top = max(ends.values(), default=1.0) or 1.0
            peers = max((v for c, v in ends.items() if c != "raw"), default=0.0)
            cut = peers * _CUT_AT if peers and top > peers * _CUT_ABOVE else None
            top = cut or top
            pad = top * 0.02
            for y, client in enumerate(clients):
                stats = summary.get(client)
                if stats is None:
                    why = "skipped" if client in entry.get("skipped", {}) else "no result"
                    ax.text(pad, y, why, va="center", fontsize=8, color="#777777", style="italic")
                    continue
                value, lo, hi = (
                    None if v is None else v * scale
                    for v in (stats["median"][metric], stats["min"][metric], stats["max"][metric])
                )
                assert value is not None
                ratio = stats.get("ratio_to_asyncconsumer", {}).get(metric)
                label = format(value, spec) + ("" if ratio is None else f"  {ratio:.2f}x")
                colour = _CLIENT_COLOURS.get(client, "#bbbbbb")
                if cut is not None and ends[client] > cut:  # the raw ceiling: cut, hatched, said so
                    ax.barh(y, cut, height=0.7, color=colour, hatch="//", edgecolor="white", linewidth=0)
                    ax.text(cut + pad, y, label + "  (bar cut)", va="center", fontsize=8)
                    continue
                ax.barh(y, value, height=0.7, color=colour)
                if lo is not None and hi is not None and hi > lo:
                    ax.plot([lo, hi], [y, y], color="black", linewidth=0.8)
                weight = "bold" if client == BASELINE else "normal"
                ax.text(max(value, hi or value) + pad, y, label, va="center", fontsize=8, fontweight=weight)
            ax.set_xlim(0, top * 1.5)
            ax.set_title(title, fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
            ax.grid(axis="x", alpha=0.3)
            ax.set_axisbelow(True)
        axes[0].set_yticks(range(len(clients)), clients, fontsize=8)
        axes[0].set_ylim(len(clients) - 0.5, -0.5)  # first client on top (shared by the row's panels)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_outputs(report: Result, json_path: Path) -> None:
    """The markdown tables and the chart beside ``json_path`` (same name, ``.md`` and ``.png``)."""
    summaries = summaries_of(report)
    md = json_path.with_suffix(".md")
    md.write_text(markdown(report, summaries))
    written = [json_path, md]
    png = json_path.with_suffix(".png")
    if write_chart(report, summaries, png):
        written.append(png)
    print("results: " + ", ".join(str(p) for p in written))


# ==========================================================================================================
# parent: the run
# ==========================================================================================================


def prepare_java() -> Result:
    """Compiles the Java harness (once: cached) before any run, and says what the Java clients run with."""
    kafka_broker = kafka_broker_module()
    libs = kafka_broker.fetch_jars()
    classes = javapeer.build(libs, kafka_broker.cache_root())
    jars = javapeer.runtime_jars(libs)
    text = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    info = javapeer.describe(text)
    info["kafka_clients"] = jars[0].stem.removeprefix("kafka-clients-")
    print(f"# Java's consumer: kafka-clients {info['kafka_clients']}, {info['java']}, {' '.join(javapeer.JVM_FLAGS)}")
    print(f"#   harness classes: {classes}")
    return info


def parent_main(args: argparse.Namespace) -> int:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings and up only
    java_reason = javapeer.unavailable_reason() if args.broker in javapeer.JAVA_BROKERS else None
    if args.clients:
        clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    else:
        clients = list(default_clients(args.broker, java_ok=java_reason is None))
        if java_reason is not None:
            print(f"note: Java's consumer left out: {java_reason}")
    unknown = sorted(set(clients) - set(ALL_CLIENTS))
    if unknown:
        print(f"unknown client(s) {unknown}; choose from {', '.join(ALL_CLIENTS)}", file=sys.stderr)
        return 2
    missing = [c for c in clients if c in OPTIONAL_CLIENTS and not importlib.util.find_spec(OPTIONAL_CLIENTS[c])]
    if missing:
        print(f"client(s) {missing} not installed (pip install kafka-python, or the bench extra)", file=sys.stderr)
        return 2
    java_note = javapeer.java_client_note(clients, args.broker)
    if java_note is not None:
        print(f"note: {java_note}")
        clients = [c for c in clients if c not in javapeer.JAVA_CLIENTS]
        if not clients:
            print("no client left to run", file=sys.stderr)
            return 2
    java_info: Result | None = None
    if any(c in javapeer.JAVA_CLIENTS for c in clients):
        try:
            java_info = prepare_java()
        except RuntimeError as exc:  # JavaUnavailable, KafkaUnavailable
            print(f"Java's consumer cannot run: {exc}", file=sys.stderr)
            return 2
    try:
        names = parse_workloads(args.workload)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    shapes = workloads_from(args)

    broker: Any = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = start_broker(args.broker)
        bootstrap = broker.bootstrap_servers
    broker_pid: int | None = None if broker is None else broker.pid
    info = machine(("aiokafka", "confluent_kafka", "kafka", "cramjam"))
    info["code"] = code_version()
    info["decoder"] = decoder_implementation()
    if info["decoder"] != "c" and any(c.startswith("asyncconsumer") for c in clients):
        print(
            f"note: asyncconsumer's v2 decoder is {info['decoder']!r}, the pure-Python fallback (build the extension: "
            "python setup.py build_ext --inplace); its figures are not the compiled decoder's"
        )
    if "kafka-python" in clients:
        # kafka-python checks CRCs (check_crcs=True) with the crc32c package if it can import it, else in pure
        # Python, which makes it ~3x slower on uncompressed data here.
        info["kafka_crc32c"] = "crc32c package" if importlib.util.find_spec("crc32c") else "pure Python"
        if info["kafka_crc32c"] == "pure Python":
            print("note: kafka-python will check CRCs in pure Python (pip install crc32c, in the bench extra)")
    if java_info is not None:
        info.update(java_info)
    info["broker_kind"] = args.broker
    if broker is not None:
        info["broker"] = broker.description
        if broker.settings:
            info["broker_settings"] = broker.settings
    elif args.broker != "tansu":
        info["broker"] = f"external ({args.broker})"
    out = Path(args.json) if args.json else default_results_path("consume", info["code"], broker=args.broker)
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(f"# broker: {bootstrap} ({info.get('broker', 'external')}); asyncconsumer code at {info['code']}")
    report: Result = {
        "machine": info,
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": args.command,
        "args": vars(args),
        "clients": clients,
        "workloads": {},
    }
    failures: list[str] = []
    served: list[str] = []
    try:
        for name in names:
            shape = shapes[name]
            values = compressible_values(shape.size) if shape.compression else None
            topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
            create_topic(broker, bootstrap, topic, shape.partitions)
            started = time.perf_counter()
            counts = produce(
                bootstrap,
                topic,
                shape.partitions,
                shape.records,
                shape.size,
                args.batch_bytes,
                compression=shape.compression,
                values=values,
            )
            produce_s = time.perf_counter() - started
            ratio = (
                compression_ratio(values, shape.compression, args.batch_bytes) if values and shape.compression else None
            )
            print(
                f"\n## {name}: {shape.describe()} (topic {topic}); produced in {produce_s:.1f} s "
                f"({shape.records / produce_s / 1e6:.2f} M rec/s)"
                + (f"; values compress {ratio:.2f}:1 ({shape.compression}, one batch's worth)" if ratio else "")
            )
            if args.serve:
                served.append(
                    f"{sys.executable} {Path(__file__).resolve()} --child asyncconsumer --bootstrap {bootstrap} "
                    f"--topic {topic} --partitions {shape.partitions} --expect {shape.records}"
                )
                continue
            skipped = {c: why for c in clients if (why := unsupported(c, shape.compression)) is not None}
            for client, why in skipped.items():
                print(f"  note: skipping {client} on {name}: {why}")
            active = [c for c in clients if c not in skipped]
            runs: dict[str, list[Result]] = {c: [] for c in active}
            entry: Result = {
                "records": shape.records,
                "value_size": shape.size,
                "partitions": shape.partitions,
                "compression": shape.compression,
                "compression_ratio": ratio,
                "topic": topic,
                "produce_s": produce_s,
                "counts": counts,
                "skipped": skipped,
                "runs": runs,
            }
            report["workloads"][name] = entry  # now, so a failure below still leaves the runs so far in the JSON
            for _ in range(args.warmup):  # one unmeasured pass so every client meets a warm broker
                spawn("raw", bootstrap, topic, shape.partitions, shape.records, args.timeout)
            for rep in range(1, args.reps + 1):
                for client in active:
                    waited = time.perf_counter()
                    quiet_before_run(broker_pid, args.quiet_cores, args.quiet_wait)
                    waited = time.perf_counter() - waited
                    try:
                        result = spawn(
                            client, bootstrap, topic, shape.partitions, shape.records, args.timeout, broker_pid
                        )
                        verify(result, shape.records, shape.size, counts)
                    except ChildFailed as exc:
                        if not note_failure(f"FAILED [{name} rep {rep}] {exc}", failures, args.keep_going):
                            raise
                        continue
                    result["quiet_wait_s"] = waited
                    if result.get("decoder", info["decoder"]) != info["decoder"]:
                        print(
                            f"  WARNING: {client} ran with the {result['decoder']!r} decoder, the parent has "
                            f"{info['decoder']!r}: the extension changed during the run",
                            flush=True,
                        )
                    runs[client].append(result)
                    d = derive(result, shape.size)
                    print(
                        f"  rep {rep} {client:<19} {d['records_per_s'] / 1e6:6.3f} M rec/s "
                        f"{d['mb_per_s']:7.1f} MB/s  cpu {result['cpu_s']:5.2f} s  "
                        f"rss {result['peak_rss_mb']:5.0f} MB  first {d['first_record_ms']:5.0f} ms  "
                        f"broker cpu {fmt_cell(result['broker_cpu_s'], '.2f')} s  "
                        f"others {fmt_cell(result['other_cpu_cores'], '.2f')} cores",
                        flush=True,
                    )
            summary = summarise(runs, shape.size)
            entry["summary"] = summary
            print("\n" + workload_section(name, entry, summary), flush=True)
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
        if report["workloads"] and (args.json or not args.serve):
            report["failures"] = failures
            write_json(out, report)
            write_outputs(report, out)
    return report_failures(failures)


def report_main(path: str) -> int:
    """Prints the tables of a saved JSON report again (with this version's columns) and rewrites its .md/.png."""
    saved = json.loads(Path(path).read_text())
    summaries = summaries_of(saved)
    print(markdown(saved, summaries), end="")
    write_outputs(saved, Path(path))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    small, large, small16 = WORKLOADS["small"], WORKLOADS["large"], WORKLOADS["small16"]
    parser.add_argument("--records", type=int, default=small.records, help="records of small, small16, lz4, zstd")
    parser.add_argument("--size", type=int, default=small.size, help="value bytes of small, small16, lz4, zstd")
    parser.add_argument("--large-records", type=int, default=large.records)
    parser.add_argument("--large-size", type=int, default=large.size)
    parser.add_argument("--partitions", type=int, default=small.partitions, help="partitions of all but small16")
    parser.add_argument("--partitions16", type=int, default=small16.partitions, help="partitions of small16")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured raw passes per workload before the reps")
    parser.add_argument(
        "--clients",
        help=f"comma-separated: {', '.join(ALL_CLIENTS)} (default: all; kafka-python only if it is installed; "
        "java and java-async, Java's KafkaConsumer, only on --broker kafka with a JDK 17+)",
    )
    parser.add_argument(
        "--workload", default="all", help=f"comma-separated: {', '.join(WORKLOADS)}; or all (default), both"
    )
    parser.add_argument("--batch-bytes", type=int, default=262_144, help="producer batch size (uncompressed)")
    parser.add_argument(
        "--broker",
        choices=BROKERS,
        default="tansu",
        help="the broker to start: tansu (embedded Tansu, the default) or kafka (one-node Apache Kafka from "
        "tests/support/kafka_broker.py); the results file is then consume-<code>-kafka.json",
    )
    parser.add_argument(
        "--bootstrap", help="use this broker instead of starting one (--broker then only names it in the results)"
    )
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds per child run")
    parser.add_argument(
        "--quiet-cores",
        type=float,
        default=0.3,
        help="before each run, wait until other processes use fewer cores than this (shared machines)",
    )
    parser.add_argument("--quiet-wait", type=float, default=60.0, help="longest wait for quiet, seconds")
    parser.add_argument("--keep-going", action="store_true", help="record a failed run and go on (exit 1 at end)")
    parser.add_argument(
        "--json",
        help="write every run and the summary here, the .md and .png beside it "
        "(default: benchmarks/results/consume-<code>.json, consume-<code>-kafka.json with --broker kafka)",
    )
    parser.add_argument(
        "--report", metavar="JSON", help="print the tables of a saved JSON again, rewrite its .md and .png, and exit"
    )
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
    args.command = list(sys.argv[1:] if argv is None else argv)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
