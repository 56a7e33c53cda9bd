"""Concurrent processing (issue 34): ``AsyncConsumer.process`` against the ways users process records today.

    python benchmarks/bench_process.py                          # sleep and noop workloads, every client, 3 reps
    python benchmarks/bench_process.py --workload noop --clients poll-loop,process --reps 5
    python benchmarks/bench_process.py --records 20000 --sequential-records 500 --reps 1   # a quick check
    python benchmarks/bench_process.py --kill-test                # SIGKILL mid-run: what create-task loses
    python benchmarks/bench_process.py --broker kafka             # the same against a one-node Apache Kafka

The parent starts a broker (as ``bench_consume.py`` does), produces one keyed topic per workload (``--records``
records over ``--keys`` keys, ``key = b"k%d" % (i % keys)``, placed by the Java partitioner's murmur2 hash of the
key, so each key lives in one partition; each value starts with the record's id), then runs every client in a
fresh subprocess per repetition, interleaved. Each child joins a fresh consumer group, hands every record to the
same async handler (``--sleep-ms`` of ``asyncio.sleep`` on ``sleep``, nothing on ``noop``) and stops once the
handler has completed ``--records`` records (``--sequential-records`` for ``sequential``). The handler counts
duplicates and key overlaps (a record that starts while another of its key is still being handled: per-key order
broken). ``process`` runs ``AsyncConsumer.process`` when the library has it and is recorded as skipped until then.

``--kill-test`` SIGKILLs a ``create-task`` (and ``process``) child in the middle of a run, once its group has
committed and while handlers are in flight, restarts it in the same group until the topic is drained, and counts
the records never handled (lost) and handled twice (duplicates) from the ids the handler wrote to a file.
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_consume import Load, Meter, create_topic, decoder_implementation
from benchcommon import (
    BROKERS,
    RESULT_MARKER,
    ChildFailed,
    child_argv,
    code_version,
    default_results_path,
    fmt_cell,
    machine,
    median_min_max,
    note_failure,
    peak_rss_bytes,
    quiet_before_run,
    report_failures,
    spawn_child,
    start_broker,
    write_json,
)

Result = dict[str, Any]

ALL_CLIENTS = ("sequential", "poll-loop", "create-task", "confluent-aio", "pyrallel", "process")
KILL_CLIENTS = ("create-task", "process")
ORDERINGS = ("key", "partition", "none")
WORKLOADS = ("sleep", "noop")
BASELINES = {"sleep": "sequential", "noop": "poll-loop"}
"""The client each workload's ratios are taken against."""
TARGETS = {"sleep": ("sequential", 100.0), "noop": ("poll-loop", 0.8)}
"""``process`` records/s at least this many times the baseline's: issue 34's 100x on ``sleep``, issue 48's 0.8x on
``noop`` (it was issue 34's 0.5x)."""

NOT_ON = {"sleep": {"poll-loop": "with a 10 ms handler the poll loop is the sequential loop"}}
"""Clients left out of a workload, and why."""

CHILD_TIMEOUT_S = 900.0
ID_DIGITS = 12
PROCESS_UNAVAILABLE = "AsyncConsumer has no process() yet (issue 34 pending)"
PYRALLEL_PYTHON = "/tmp/pyrallel312/bin/python"
"""Where the README's recipe puts a Python 3.12 venv with pyrallel-consumer (it needs Python >= 3.12)."""
PROGRESS = "PROGRESS "
"""In the kill test a child prints this, then the records handled and in flight, every ``PROGRESS_S``."""
PROGRESS_S = 0.05
KILL_COMMIT_INTERVAL_MS = 200


def key_of(i: int, keys: int) -> bytes:
    return b"k%d" % (i % keys)


def value_of(i: int, size: int) -> bytes:
    """The record's id in ``ID_DIGITS`` digits, padded to ``size`` bytes."""
    return (b"%0*d" % (ID_DIGITS, i)).ljust(size, b".")


# ==========================================================================================================
# child side: one client handles the topic and reports
# ==========================================================================================================


class Work:
    """The handler every client runs, with what the harness checks around it.

    ``handle(key, value)`` awaits ``sleep_s`` (nothing when 0), then counts the record done. It notes duplicates
    (a bitmap of ids), key overlaps (a record starting while one of its key is in flight: what ``ordering="key"``
    forbids) and the most handlers in flight. With ``track_fd`` it writes each completed id to that file, one
    ``write`` per record, so a SIGKILL loses none of the ids written (they are in the kernel already).
    """

    def __init__(
        self, meter: Meter, sleep_s: float, expect: int | None, total: int, track_fd: int | None = None
    ) -> None:
        self.meter = meter
        self.t_start = time.perf_counter()
        self.sleep_s = sleep_s
        self.expect = expect
        self.seen = bytearray(total)
        self.track_fd = track_fd
        self.started = self.done = self.duplicates = self.overlaps = self.max_in_flight = 0
        self.in_flight_keys: dict[bytes, int] = {}
        self.finished = asyncio.Event()
        self.t_first: float | None = None
        self.t_last = 0.0

    def arrived(self) -> None:
        """The client has a record. At the first, the measurement starts (wall and CPU): joining the group, which
        takes seconds, is not what is compared, and would swamp the short runs."""
        if self.t_first is None:
            self.meter.begin()
            self.t_first = self.meter.t0

    @property
    def in_flight(self) -> int:
        return self.started - self.done

    async def handle(self, key: bytes, value: bytes) -> None:
        if self.t_first is None:
            self.arrived()
        self.started += 1
        keys = self.in_flight_keys
        busy = keys.get(key, 0)
        if busy:
            self.overlaps += 1
        keys[key] = busy + 1
        if self.started - self.done > self.max_in_flight:
            self.max_in_flight = self.started - self.done
        if self.sleep_s:
            await asyncio.sleep(self.sleep_s)
        if busy:
            keys[key] = busy
        else:
            del keys[key]
        rid = int(value[:ID_DIGITS])
        if self.seen[rid]:
            self.duplicates += 1
        self.seen[rid] = 1
        if self.track_fd is not None:
            os.write(self.track_fd, b"%d\n" % rid)
        self.done += 1
        self.t_last = time.perf_counter()
        if self.expect is not None and self.done >= self.expect:
            self.finished.set()

    async def handle_record(self, record: Any) -> None:
        """The handler an asyncconsumer client runs per record, whichever way it calls it: ``process`` is given
        this very function, so every client pays for the same call."""
        await self.handle(record.key, record.value)

    def result(self, client: str, **extra: Any) -> Result:
        if self.t_first is None:
            self.meter.begin()  # no record came (a drained restart): nothing measured
        result = self.meter.result(client, self.done, 0)
        result.update(
            first_record_s=None if self.t_first is None else self.t_first - self.t_start,
            handled_wall_s=None if self.t_first is None else self.t_last - self.t_first,
            duplicates=self.duplicates,
            key_overlaps=self.overlaps,
            max_in_flight=self.max_in_flight,
            **extra,
        )
        return result


class Options:
    """What a child was told (parsed from its command line)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.client: str = args.child
        self.bootstrap: str = args.bootstrap
        self.topic: str = args.topic
        self.partitions: int = args.partitions
        self.group: str = args.group
        self.expect: int | None = None if args.drain else args.expect
        self.total: int = args.total
        self.sleep_s: float = args.sleep_ms / 1000
        self.concurrency: int = args.concurrency
        self.ordering: str = args.ordering
        self.track: str | None = args.track
        self.drain: bool = args.drain
        self.commit_interval_ms: int | None = args.commit_interval_ms


async def _progress(work: Work) -> None:
    """The kill test's view of the child: records handled and in flight, every ``PROGRESS_S``."""
    while True:
        print(f"{PROGRESS}{work.done} {work.in_flight}", flush=True)
        await asyncio.sleep(PROGRESS_S)


async def _drained(consumer: Any, topic: str, partitions: int, work: Work) -> None:
    """Returns once every partition is assigned, its position is at its end and no handler is in flight: the
    end of a restarted child's run in the kill test."""
    from asyncconsumer import TopicPartition

    tps = [TopicPartition(topic, p) for p in range(partitions)]
    ends = await consumer.end_offsets(tps)
    while True:
        await asyncio.sleep(0.2)
        if len(consumer.assignment()) < partitions or work.in_flight:
            continue
        positions = [await consumer.position(tp) for tp in tps]
        if all(pos >= ends[tp] for pos, tp in zip(positions, tps, strict=True)):
            return


async def _until_done(opts: Options, work: Work, consumer: Any, loop_task: asyncio.Task[Any]) -> None:
    """Waits for ``expect`` records handled (or, draining, for the end of the topic), then stops ``loop_task``;
    a loop that ends first (a failure) raises here."""
    done = asyncio.ensure_future(
        _drained(consumer, opts.topic, opts.partitions, work) if opts.drain else work.finished.wait()
    )
    await asyncio.wait([done, loop_task], return_when=asyncio.FIRST_COMPLETED)
    if loop_task.done():
        done.cancel()
        loop_task.result()  # raises what the loop hit
        raise RuntimeError(f"the client's loop ended after {work.done} records")
    loop_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await loop_task


def _asyncconsumer(opts: Options, **settings: Any) -> Any:
    from asyncconsumer import AsyncConsumer

    if opts.commit_interval_ms is not None:
        settings["auto_commit_interval_ms"] = opts.commit_interval_ms
    return AsyncConsumer(opts.bootstrap, group_id=opts.group, auto_offset_reset="earliest", **settings)


async def child_sequential(opts: Options, work: Work) -> Result:
    """``async for record in consumer: await handle(record)``, auto-commit on (the default)."""
    consumer = _asyncconsumer(opts)
    await consumer.start()
    await consumer.subscribe([opts.topic])

    async def loop() -> None:
        async for record in consumer:
            await work.handle_record(record)

    await _until_done(opts, work, consumer, asyncio.create_task(loop()))
    result = work.result("sequential")
    await consumer.close()
    return result


async def child_poll_loop(opts: Options, work: Work) -> Result:
    """``poll(max_records=10000)`` and the handler awaited per record: the plain loop, the overhead reference."""
    consumer = _asyncconsumer(opts)
    await consumer.start()
    await consumer.subscribe([opts.topic])

    async def loop() -> None:
        while True:
            batch = await consumer.poll(timeout_ms=1_000, max_records=10_000)
            for record in batch.records():
                await work.handle_record(record)

    await _until_done(opts, work, consumer, asyncio.create_task(loop()))
    result = work.result("poll-loop")
    await consumer.close()
    return result


async def child_create_task(opts: Options, work: Work) -> Result:
    """``async for record in consumer: asyncio.create_task(handle(record))`` with auto-commit on: every record's
    handler starts at once, and auto-commit commits positions whose handlers have not finished."""
    consumer = _asyncconsumer(opts)
    await consumer.start()
    await consumer.subscribe([opts.topic])
    tasks: set[asyncio.Task[None]] = set()

    async def loop() -> None:
        async for record in consumer:
            work.arrived()
            task = asyncio.create_task(work.handle_record(record))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    await _until_done(opts, work, consumer, asyncio.create_task(loop()))
    result = work.result("create-task")
    await consumer.close()
    return result


async def child_process(opts: Options, work: Work) -> Result:
    """``await consumer.process(handler, concurrency=C, ordering=O)``, once ``AsyncConsumer`` has it (issue 34).

    The engine is stopped with ``consumer.stop_processing()`` (i34's name; ``stop()``, the issue's, also works)
    once ``expect`` records are handled, or by cancelling the task that awaits ``process`` if it has neither; the
    measurement ends at the ``expect``-th completion, before the stop. ``process`` turns auto-commit off itself; in
    the kill test its ``commit_interval_ms`` is ``--commit-interval-ms`` when it takes one.
    """
    from asyncconsumer import AsyncConsumer

    if not hasattr(AsyncConsumer, "process"):
        return {"client": "process", "unavailable": PROCESS_UNAVAILABLE}
    consumer = _asyncconsumer(opts)
    await consumer.start()
    await consumer.subscribe([opts.topic])

    handler = work.handle_record
    settings: dict[str, Any] = {"concurrency": opts.concurrency, "ordering": opts.ordering}
    if opts.commit_interval_ms is not None and "commit_interval_ms" in inspect.signature(consumer.process).parameters:
        settings["commit_interval_ms"] = opts.commit_interval_ms  # the kill test's: commit within the run
    task = asyncio.create_task(consumer.process(handler, **settings))
    stopped = asyncio.ensure_future(
        _drained(consumer, opts.topic, opts.partitions, work) if opts.drain else work.finished.wait()
    )
    await asyncio.wait([stopped, task], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        stopped.cancel()
        task.result()
        raise RuntimeError(f"process() returned after {work.done} records")
    result = work.result("process", concurrency=opts.concurrency, ordering=opts.ordering)
    stop = getattr(consumer, "stop_processing", None) or getattr(consumer, "stop", None)
    if stop is not None:
        outcome = stop()
        if asyncio.iscoroutine(outcome):
            await outcome
    else:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await consumer.close()
    return result


async def child_confluent_aio(opts: Options, work: Work) -> Result:
    """confluent-kafka's ``AIOConsumer``: ``consume(500)``, a task per record behind a semaphore of
    ``--concurrency``, librdkafka's auto-commit on (its default)."""
    from confluent_kafka.aio import AIOConsumer

    conf = {
        "bootstrap.servers": opts.bootstrap,
        "group.id": opts.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
    }
    consumer = AIOConsumer(conf)
    await consumer.subscribe([opts.topic])
    limit = asyncio.Semaphore(opts.concurrency)
    tasks: set[asyncio.Task[None]] = set()

    async def run(message: Any) -> None:
        try:
            await work.handle(message.key(), message.value())
        finally:
            limit.release()

    async def loop() -> None:
        while True:
            for message in await consumer.consume(num_messages=500, timeout=1.0):
                if message.error():
                    continue
                work.arrived()
                await limit.acquire()
                task = asyncio.create_task(run(message))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    await _until_done(opts, work, consumer, asyncio.create_task(loop()))
    result = work.result("confluent-aio", concurrency=opts.concurrency)
    await consumer.close()
    return result


async def child_pyrallel(opts: Options, work: Work) -> Result:
    """pyrallel-consumer 1.x (``PyrallelConsumer``, asyncio engine): ``ordering_mode`` key_hash / partition /
    unordered for ``--ordering``, ``max_in_flight`` = ``--concurrency``; it commits completed offsets itself."""
    try:
        from pyrallel_consumer import ExecutionMode, KafkaConfig, PyrallelConsumer
    except ImportError as exc:
        return {"client": "pyrallel", "unavailable": f"pyrallel-consumer does not import: {exc}"}
    import logging

    logging.getLogger("pyrallel_consumer").setLevel(logging.WARNING)
    config = KafkaConfig(BOOTSTRAP_SERVERS=opts.bootstrap, CONSUMER_GROUP=opts.group, dlq_enabled=False)
    pc = config.parallel_consumer
    pc.ordering_mode = {"key": "key_hash", "partition": "partition", "none": "unordered"}[opts.ordering]
    pc.execution.mode = ExecutionMode.ASYNC
    pc.execution.max_in_flight = opts.concurrency

    async def worker(item: Any) -> None:
        await work.handle(item.key, item.payload)

    consumer = PyrallelConsumer(config=config, worker=worker, topic=opts.topic)
    await consumer.start()
    closed = asyncio.ensure_future(consumer.wait_closed())
    await asyncio.wait([asyncio.ensure_future(work.finished.wait()), closed], return_when=asyncio.FIRST_COMPLETED)
    if closed.done() and not work.finished.is_set():
        closed.result()
        raise RuntimeError(f"pyrallel-consumer stopped after {work.done} records")
    result = work.result("pyrallel", concurrency=opts.concurrency, ordering=opts.ordering)
    closed.cancel()
    await consumer.stop()
    return result


CHILDREN: dict[str, Callable[[Options, Work], Awaitable[Result]]] = {
    "sequential": child_sequential,
    "poll-loop": child_poll_loop,
    "create-task": child_create_task,
    "confluent-aio": child_confluent_aio,
    "pyrallel": child_pyrallel,
    "process": child_process,
}


async def run_child(opts: Options) -> Result:
    track_fd = None if opts.track is None else os.open(opts.track, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    work = Work(Meter(), opts.sleep_s, opts.expect, opts.total, track_fd)
    progress = asyncio.create_task(_progress(work)) if opts.track is not None else None
    try:
        return await CHILDREN[opts.client](opts, work)
    finally:
        if progress is not None:
            progress.cancel()


def child_main(args: argparse.Namespace) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING)
    with contextlib.suppress(ImportError):
        import structlog

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings and up only
    result = asyncio.run(run_child(Options(args)))
    if "unavailable" not in result:
        peak, source = peak_rss_bytes()
        result["peak_rss_mb"] = peak / (1 << 20)
        result["peak_rss_source"] = source
        with contextlib.suppress(ImportError):
            result["decoder"] = decoder_implementation()
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


# ==========================================================================================================
# parent side: broker, keyed topics, interleaved runs, the kill test, report
# ==========================================================================================================


def produce_keyed(bootstrap: str, topic: str, partitions: int, records: int, keys: int, size: int) -> list[int]:
    """Writes ``records`` records, ``key_of(i)`` and ``value_of(i)``, each to the partition the Java producer's
    default partitioner picks for its key (murmur2), in id order; returns per-partition counts."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.partitioner import murmur2

    placed: list[list[int]] = [[] for _ in range(partitions)]
    home = [(murmur2(key_of(k, keys)) & 0x7FFFFFFF) % partitions for k in range(min(keys, records))]
    for i in range(records):
        placed[home[i % keys]].append(i)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=50, enable_idempotence=False)
        await producer.start()
        try:
            pending = []
            for p, ids in enumerate(placed):
                at = 0
                while at < len(ids):
                    batch = producer.create_batch()
                    while at < len(ids):
                        i = ids[at]
                        if batch.append(timestamp=None, key=key_of(i, keys), value=value_of(i, size)) is None:
                            break
                        at += 1
                    pending.append(await producer.send_batch(batch, topic, partition=p))
                    if len(pending) >= 64:
                        await asyncio.gather(*pending)
                        pending.clear()
            await asyncio.gather(*pending)
        finally:
            await producer.stop()

    asyncio.run(run())
    return [len(ids) for ids in placed]


def pyrallel_python(requested: str | None) -> tuple[str | None, str | None]:
    """The interpreter the ``pyrallel`` child runs under, or why there is none (pyrallel-consumer 1.x needs
    Python >= 3.12; this project's venv is 3.11, so it lives in a venv of its own)."""
    candidates = [requested] if requested else [sys.executable, PYRALLEL_PYTHON]
    for python in candidates:
        if python and Path(python).exists():
            done = _run_quietly([python, "-c", "import pyrallel_consumer"])
            if done == 0:
                return python, None
    where = requested or f"{sys.executable} or {PYRALLEL_PYTHON}"
    return None, (
        f"pyrallel-consumer does not import under {where} (it needs Python >= 3.12: see the README for the venv; "
        "--pyrallel-python PATH names another interpreter)"
    )


def _run_quietly(argv: Sequence[str]) -> int:
    import subprocess

    try:
        return subprocess.run(list(argv), capture_output=True, check=False, timeout=60).returncode
    except (OSError, subprocess.TimeoutExpired):
        return 1


def child_command(client: str, python: str | None = None, **options: object) -> list[str]:
    argv = child_argv(__file__, child=client, **options)
    if python is not None:
        argv[0] = python
    return argv


def derive(result: Result) -> Result:
    records = result["records"]
    wall = result["handled_wall_s"] or result["wall_s"]
    return {
        "records_per_s": records / wall if wall else None,
        "cpu_us_per_record": result["cpu_s"] / records * 1e6 if records else None,
        "peak_rss_mb": result["peak_rss_mb"],
        "first_record_ms": None if result["first_record_s"] is None else result["first_record_s"] * 1000,
        "wall_s": wall,
        "cpu_s": result["cpu_s"],
        "key_overlaps": result["key_overlaps"],
        "duplicates": result["duplicates"],
        "max_in_flight": result["max_in_flight"],
    }


METRICS = (
    "records_per_s",
    "cpu_us_per_record",
    "peak_rss_mb",
    "first_record_ms",
    "wall_s",
    "cpu_s",
    "key_overlaps",
    "duplicates",
    "max_in_flight",
)


def summarise(runs: dict[str, list[Result]], baseline: str) -> dict[str, Result]:
    summary: dict[str, Result] = {}
    for client, results in runs.items():
        if not results:
            continue
        derived = [derive(r) for r in results]
        entry: Result = {"reps": len(derived), "records": results[0]["records"], "median": {}, "min": {}, "max": {}}
        for metric in [*METRICS, "broker_cpu_s", "other_cpu_cores"]:
            values = [d.get(metric, r.get(metric)) for d, r in zip(derived, results, strict=True)]
            for stat, value in median_min_max(values).items():
                entry[stat][metric] = value
        summary[client] = entry
    base = summary.get(baseline)
    for entry in summary.values():
        entry["baseline"] = baseline
        ratio = None
        if base is not None and base["median"]["records_per_s"] and entry["median"]["records_per_s"]:
            ratio = entry["median"]["records_per_s"] / base["median"]["records_per_s"]
        entry["ratio_records_per_s"] = ratio
    return summary


def table(workload: str, entry: Result) -> str:
    summary: dict[str, Result] = entry.get("summary", {})
    baseline = BASELINES[workload]
    lines = [
        f"| client | records/s (x {baseline}) | CPU µs / record | peak RSS MB | key overlaps | duplicates "
        "| max in flight | records measured | reps |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for client, s in summary.items():
        m = s["median"]
        ratio = s.get("ratio_records_per_s")
        rate = fmt_cell(m["records_per_s"], ",.0f") + ("" if ratio is None else f" ({ratio:.2f}x)")
        measured = f"{s['records']:,}" + (" (extrapolated)" if s["records"] < entry["records"] else "")
        lines.append(
            f"| {client} | {rate} | {fmt_cell(m['cpu_us_per_record'], '.1f')} | {fmt_cell(m['peak_rss_mb'], '.0f')} "
            f"| {fmt_cell(m['key_overlaps'], '.0f')} | {fmt_cell(m['duplicates'], '.0f')} "
            f"| {fmt_cell(m['max_in_flight'], '.0f')} "
            f"| {measured} | {s['reps']} |"
        )
    for client, why in entry.get("skipped", {}).items():
        lines.append(f"| {client} | skipped: {why} | | | | | | | |")
    return "\n".join(lines)


def target_line(workload: str, entry: Result) -> str:
    baseline, want = TARGETS[workload]
    summary = entry.get("summary", {})
    what = f"`process` (concurrency={entry['concurrency']}, ordering={entry['ordering']}) >= {want:g}x `{baseline}`"
    if "process" in entry.get("skipped", {}):
        return f"target: {what}: pending ({entry['skipped']['process']})"
    if "process" not in summary or baseline not in summary:
        return f"target: {what}: not measured (both clients must run)"
    ratio = summary["process"]["ratio_records_per_s"]
    verdict = "met" if ratio is not None and ratio >= want else "not met"
    return f"target: {what}: {fmt_cell(ratio, '.2f')}x, {verdict}"


def workload_section(name: str, entry: Result) -> str:
    shape = (
        f"{entry['records']:,} records over {entry['keys']:,} keys in {entry['partitions']} partitions, "
        f"{entry['value_size']} B values, handler: "
        + (f"await asyncio.sleep({entry['sleep_ms'] / 1000:g})" if entry["sleep_ms"] else "no-op")
    )
    notes = [f"### {name}: {shape}", "", table(name, entry), ""]
    seq = entry.get("summary", {}).get("sequential")
    if seq is not None and seq["records"] < entry["records"]:
        rate = seq["median"]["records_per_s"]
        notes.append(
            f"`sequential` ran {seq['records']:,} of the {entry['records']:,} records (`--sequential-records`); its "
            f"rate stands for the whole run, extrapolated: {entry['records'] / rate:,.0f} s for all of them."
        )
    notes.append(target_line(name, entry))
    return "\n".join(notes) + "\n"


def header(report: Result) -> str:
    info = report["machine"]
    return (
        f"# bench_process: {report['started']}, {info.get('broker', 'external broker')}; "
        f"{info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}; asyncconsumer at {info['code']}; "
        f"aiokafka {info.get('aiokafka')}, confluent-kafka {info.get('confluent_kafka')} "
        f"(librdkafka {info.get('librdkafka')}), pyrallel: {info.get('pyrallel', 'not run')}\n"
    )


def kill_section(kill: Result) -> str:
    lines = [
        "### kill test: SIGKILL mid-run, restart in the same group, count what was never handled",
        "",
        "| client | lost | duplicates | handled before the kill | in flight at the kill | committed at the kill "
        "| handled after restart |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for client, r in kill.items():
        if "skipped" in r:
            lines.append(f"| {client} | skipped: {r['skipped']} | | | | | |")
            continue
        lines.append(
            f"| {client} | {r['lost']:,} | {r['duplicates']:,} | {r['handled_before_kill']:,} "
            f"| {r['in_flight_at_kill']:,} | {r['committed_at_kill']:,} | {r['handled_after_restart']:,} |"
        )
    return "\n".join(lines) + "\n"


def markdown(report: Result) -> str:
    parts = [header(report)]
    for name, entry in report["workloads"].items():
        parts.append(workload_section(name, entry))
    if report.get("kill"):
        parts.append(kill_section(report["kill"]))
    return "\n".join(parts)


class Runner:
    """The parent's view of one broker and topic: runs one child and checks its answer."""

    def __init__(self, args: argparse.Namespace, bootstrap: str, broker_pid: int | None, pyrallel: str | None):
        self.args = args
        self.bootstrap = bootstrap
        self.broker_pid = broker_pid
        self.pyrallel = pyrallel

    def options(self, client: str, topic: str, expect: int, total: int, sleep_ms: float) -> dict[str, object]:
        return {
            "bootstrap": self.bootstrap,
            "topic": topic,
            "partitions": self.args.partitions,
            "group": f"bench-process-{client}-{uuid.uuid4().hex[:8]}",
            "expect": expect,
            "total": total,
            "sleep-ms": sleep_ms,
            "concurrency": self.args.concurrency,
            "ordering": self.args.ordering,
        }

    def python_for(self, client: str) -> str | None:
        return self.pyrallel if client == "pyrallel" else None

    def run(self, client: str, topic: str, expect: int, total: int, sleep_ms: float) -> Result:
        argv = child_command(client, self.python_for(client), **self.options(client, topic, expect, total, sleep_ms))
        load = Load(self.broker_pid)
        result = spawn_child(argv, client, self.args.timeout)
        if "unavailable" in result:
            return result
        result.update(load.finish())
        problems = []
        if result["records"] != expect:
            problems.append(f"handled {result['records']} records, expected {expect}")
        if result["duplicates"]:
            problems.append(f"{result['duplicates']} records handled twice in one run")
        if problems:
            raise ChildFailed(f"{client}: " + "; ".join(problems))
        return result


def kill_once(runner: Runner, client: str, topic: str, total: int, sleep_ms: float) -> Result:
    """One kill test of ``client``: start it with ids tracked, SIGKILL it once its group has committed and while
    handlers are in flight, restart it in the same group until the topic is drained, then count."""
    args = runner.args
    fd, track = tempfile.mkstemp(prefix=f"bench-process-{client}-", suffix=".ids")
    os.close(fd)
    options = runner.options(client, topic, total, total, sleep_ms)
    options["track"] = track
    options["commit-interval-ms"] = args.commit_interval_ms or KILL_COMMIT_INTERVAL_MS
    argv = child_command(client, runner.python_for(client), **options)
    at_kill: Result = {}

    def first_run() -> Result | None:
        """Runs the child, reading its progress, and kills it once the group's committed offsets (read with
        aiokafka's admin client on a loop of our own) are past zero while handlers are in flight."""
        import subprocess

        from asyncconsumer import AsyncConsumer, TopicPartition

        state: Result = {"handled": 0, "in_flight": 0, "unavailable": None, "ended": False}

        def read(stdout: Any) -> None:  # the child's lines, in a thread: the parent polls the group meanwhile
            for line in stdout:
                if line.startswith(RESULT_MARKER):
                    state["unavailable"] = json.loads(line[len(RESULT_MARKER) :]).get("unavailable")
                elif line.startswith(PROGRESS):
                    state["handled"], state["in_flight"] = (int(x) for x in line[len(PROGRESS) :].split())
            state["ended"] = True

        deadline = time.perf_counter() + args.timeout
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
            reader = threading.Thread(target=read, args=(proc.stdout,), daemon=True)
            reader.start()

            async def watch() -> None:
                # asyncconsumer's committed(), as a member that never joins (aiokafka's admin client loses its
                # connection to Tansu on the same question)
                admin = AsyncConsumer(runner.bootstrap, group_id=options["group"], enable_auto_commit=False)
                await admin.start()
                tps = [TopicPartition(topic, p) for p in range(args.partitions)]
                try:
                    while not state["ended"] and time.perf_counter() < deadline:
                        await asyncio.sleep(0.02)
                        if not state["in_flight"]:
                            continue
                        offsets = await admin.committed(tps)
                        committed = sum(meta.offset for meta in offsets.values() if meta is not None)
                        if committed > 0 and state["in_flight"] and not state["ended"]:
                            proc.send_signal(signal.SIGKILL)
                            at_kill.update(handled=state["handled"], in_flight=state["in_flight"], committed=committed)
                            return
                finally:
                    await admin.close()

            try:
                asyncio.run(watch())
            finally:
                if proc.poll() is None and not at_kill:
                    proc.kill()
                proc.wait()
                reader.join(5)
            if state["unavailable"] is not None:
                return {"unavailable": state["unavailable"]}
            if not at_kill:
                err.seek(0)
                stderr = err.read().decode(errors="replace")
                raise ChildFailed(
                    f"kill test {client}: the child ended (or timed out) before its group had committed with "
                    f"handlers in flight ({state['handled']} handled); try a larger --records or a smaller "
                    f"--commit-interval-ms\n{stderr[-3000:]}"
                )
        return None

    try:
        unavailable = first_run()
        if unavailable is not None:
            return {"skipped": unavailable["unavailable"]}
        before = Path(track).read_text().split()
        restart = [*child_command(client, runner.python_for(client), **options), "--drain"]
        spawn_child(restart, f"{client} (restart)", args.timeout)
        ids = [int(x) for x in Path(track).read_text().split()]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(track)
    distinct = set(ids)
    return {
        "lost": total - len(distinct),
        "duplicates": len(ids) - len(distinct),
        "handled_before_kill": len(before),
        "in_flight_at_kill": at_kill["in_flight"],
        "committed_at_kill": at_kill["committed"],
        "handled_after_restart": len(ids) - len(before),
        "records": total,
        "sleep_ms": sleep_ms,
        "commit_interval_ms": options["commit-interval-ms"],
    }


def parent_main(args: argparse.Namespace) -> int:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings and up only
    clients = [c.strip() for c in args.clients.split(",") if c.strip()] if args.clients else list(ALL_CLIENTS)
    names = [w.strip() for w in args.workload.split(",") if w.strip()]
    unknown = sorted(set(clients) - set(ALL_CLIENTS)) + sorted(set(names) - set(WORKLOADS))
    if unknown:
        print(f"unknown client(s) or workload(s) {unknown}", file=sys.stderr)
        return 2
    skipped_everywhere: dict[str, str] = {}
    pyrallel, why = (None, None)
    if "pyrallel" in clients:
        pyrallel, why = pyrallel_python(args.pyrallel_python)
        if why is not None:
            print(f"note: skipping pyrallel: {why}")
            skipped_everywhere["pyrallel"] = why
    if "confluent-aio" in clients:
        try:
            import confluent_kafka.aio  # noqa: F401
        except ImportError as exc:
            skipped_everywhere["confluent-aio"] = f"confluent_kafka.aio does not import ({exc})"

    broker: Any = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = start_broker(args.broker)
        bootstrap = broker.bootstrap_servers
    broker_pid = None if broker is None else broker.pid
    info = machine(("aiokafka", "confluent_kafka"))
    info["code"] = code_version()
    info["decoder"] = decoder_implementation()
    info["broker_kind"] = args.broker
    info["broker"] = broker.description if broker is not None else f"external ({args.broker})"
    if pyrallel is not None:
        info["pyrallel"] = pyrallel_version(pyrallel)
    print(header({"machine": info, "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}))
    report: Result = {
        "machine": info,
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": args.command,
        "args": vars(args),
        "clients": clients,
        "workloads": {},
    }
    suffix = "-kill" if args.kill_test else ""
    out = Path(args.json) if args.json else default_results_path("process" + suffix, info["code"], broker=args.broker)
    runner = Runner(args, bootstrap, broker_pid, pyrallel)
    failures: list[str] = []
    try:
        if args.kill_test:
            report["kill"] = kill_tests(runner, clients, broker, failures)
        else:
            for name in names:
                report["workloads"][name] = run_workload(runner, name, clients, skipped_everywhere, broker, failures)
    except ChildFailed:
        return 1
    finally:
        if broker is not None:
            broker.stop()
        if report["workloads"] or report.get("kill"):
            report["failures"] = failures
            write_json(out, report)
            out.with_suffix(".md").write_text(markdown(report))
            print(f"\nwrote {out} and {out.with_suffix('.md').name}")
    return report_failures(failures)


def pyrallel_version(python: str) -> str:
    import subprocess

    done = subprocess.run(
        [python, "-c", "import importlib.metadata as m, sys; print(m.version('pyrallel-consumer'), sys.version[:6])"],
        capture_output=True,
        text=True,
        check=False,
    )
    version, _, py = done.stdout.strip().partition(" ")
    return f"pyrallel-consumer {version} (Python {py.strip()})" if version else "unknown"


def new_topic(runner: Runner, broker: Any, name: str) -> tuple[str, list[int], float]:
    args = runner.args
    topic = f"bench-process-{name}-{uuid.uuid4().hex[:8]}"
    create_topic(broker, runner.bootstrap, topic, args.partitions)
    started = time.perf_counter()
    counts = produce_keyed(runner.bootstrap, topic, args.partitions, args.records, args.keys, args.size)
    return topic, counts, time.perf_counter() - started


def run_workload(
    runner: Runner, name: str, clients: list[str], skipped_everywhere: dict[str, str], broker: Any, failures: list[str]
) -> Result:
    args = runner.args
    sleep_ms = args.sleep_ms if name == "sleep" else 0.0
    topic, counts, produce_s = new_topic(runner, broker, name)
    print(
        f"\n## {name}: {args.records:,} records, {args.keys:,} keys, {args.partitions} partitions (topic {topic}); "
        f"produced in {produce_s:.1f} s; per partition {counts}"
    )
    skipped = dict(skipped_everywhere)
    skipped.update({c: why for c, why in NOT_ON.get(name, {}).items() if c in clients})
    active = [c for c in clients if c not in skipped]
    runs: dict[str, list[Result]] = {c: [] for c in active}
    entry: Result = {
        "records": args.records,
        "keys": args.keys,
        "partitions": args.partitions,
        "value_size": args.size,
        "sleep_ms": sleep_ms,
        "concurrency": args.concurrency,
        "ordering": args.ordering,
        "topic": topic,
        "counts": counts,
        "produce_s": produce_s,
        "skipped": skipped,
        "runs": runs,
    }
    for rep in range(1, args.reps + 1):
        for client in list(active):
            expect = args.records
            if client == "sequential" and name == "sleep" and args.sequential_records:
                expect = min(args.records, args.sequential_records)
            quiet_before_run(runner.broker_pid, args.quiet_cores, args.quiet_wait)
            try:
                result = runner.run(client, topic, expect, args.records, sleep_ms)
            except ChildFailed as exc:
                if not note_failure(f"FAILED [{name} rep {rep}] {exc}", failures, args.keep_going):
                    raise
                continue
            if "unavailable" in result:
                print(f"  note: skipping {client}: {result['unavailable']}")
                skipped[client] = result["unavailable"]
                active.remove(client)
                del runs[client]
                continue
            runs[client].append(result)
            d = derive(result)
            print(
                f"  rep {rep} {client:<14} {d['records_per_s']:>10,.0f} rec/s  cpu {d['cpu_us_per_record']:6.1f} µs/rec"
                f"  rss {d['peak_rss_mb']:4.0f} MB  overlaps {d['key_overlaps']:>6}  in flight {d['max_in_flight']:>5}"
                f"  ({result['records']:,} records, first after {fmt_cell(d['first_record_ms'], '.0f')} ms)",
                flush=True,
            )
    entry["summary"] = summarise(runs, BASELINES[name])
    print("\n" + workload_section(name, entry), flush=True)
    return entry


def kill_tests(runner: Runner, clients: list[str], broker: Any, failures: list[str]) -> Result:
    args = runner.args
    topic, _, _ = new_topic(runner, broker, "kill")
    print(
        f"\n## kill test: {args.records:,} records, {args.keys:,} keys, {args.partitions} partitions, handler "
        f"{args.sleep_ms:g} ms, auto-commit every {args.commit_interval_ms or KILL_COMMIT_INTERVAL_MS} ms "
        f"(topic {topic})"
    )
    kill: Result = {}
    for client in [c for c in clients if c in KILL_CLIENTS] or list(KILL_CLIENTS):
        try:
            kill[client] = kill_once(runner, client, topic, args.records, args.sleep_ms)
        except ChildFailed as exc:
            if not note_failure(f"FAILED [kill {client}] {exc}", failures, args.keep_going):
                raise
            continue
        print(f"  {client}: {kill[client]}", flush=True)
    print("\n" + kill_section(kill), flush=True)
    return kill


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="records per workload topic")
    parser.add_argument("--keys", type=int, default=1_000, help='distinct keys (key = b"k%%d" %% (i %% keys))')
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--size", type=int, default=100, help="value bytes (the record's id, padded)")
    parser.add_argument("--sleep-ms", type=float, default=10.0, help="the sleep workload's handler awaits this long")
    parser.add_argument("--workload", default="sleep,noop", help=f"comma-separated: {', '.join(WORKLOADS)}")
    parser.add_argument("--clients", help=f"comma-separated: {', '.join(ALL_CLIENTS)} (default: all)")
    parser.add_argument("--concurrency", type=int, default=1_000, help="process, confluent-aio, pyrallel")
    parser.add_argument("--ordering", choices=ORDERINGS, default="key", help="process and pyrallel")
    parser.add_argument(
        "--sequential-records",
        type=int,
        default=2_000,
        help="sequential handles only this many records on the sleep workload (0: all); its rate is extrapolated",
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--broker", choices=BROKERS, default="tansu")
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds per child run")
    parser.add_argument("--quiet-cores", type=float, default=0.3, help="wait before each run until others use less")
    parser.add_argument("--quiet-wait", type=float, default=60.0, help="longest wait for quiet, seconds")
    parser.add_argument("--keep-going", action="store_true", help="record a failed run and go on (exit 1 at end)")
    parser.add_argument(
        "--pyrallel-python", help=f"a Python with pyrallel-consumer (default: this one, {PYRALLEL_PYTHON})"
    )
    parser.add_argument("--kill-test", action="store_true", help="run the kill test instead of the throughput runs")
    parser.add_argument(
        "--commit-interval-ms",
        type=int,
        help=f"auto-commit interval of the asyncconsumer clients (default: the library's; {KILL_COMMIT_INTERVAL_MS} "
        "in the kill test, so it commits before the run ends)",
    )
    parser.add_argument("--json", help="results here (default benchmarks/results/process-<code>[-kafka].json)")
    parser.add_argument("--child", choices=ALL_CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--group", help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--total", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--track", help=argparse.SUPPRESS)
    parser.add_argument("--drain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args)
    args.command = list(sys.argv[1:] if argv is None else argv)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
