"""Spark read throughput of the ``asyncconsumer`` data source against Spark's own Kafka source and our plain
consumer, in one run.

    python benchmarks/bench_spark.py --broker kafka              # both sources, 1M x 100 B and 200k x 1 KB, 5 reps
    python benchmarks/bench_spark.py --broker kafka --shapes 1000000x100 --variants spark-arrow,kafka-count
    python benchmarks/bench_spark.py                             # Tansu: our source against our consumer
    python benchmarks/bench_spark.py --broker kafka --master local[2],standalone   # also on a standalone cluster
    python benchmarks/bench_spark.py --report benchmarks/results/spark-XXXXXXX-kafka.json   # print a saved run again

Starts a broker (``--broker tansu``, the default: an embedded Tansu; ``--broker kafka``: a one-node Apache Kafka
from ``tests/support/kafka_broker.py``), produces one topic per ``--shapes`` entry (``RECORDSxBYTES``; default
``--records`` x ``--size``, and on Kafka 1M x 100 B and 200k x 1,000 B) of ``--partitions`` partitions (the last
record of every partition in a batch of its own, so that Tansu's ListOffsets LATEST is the log end), starts one
local Spark session (its start-up is reported, not timed; on Kafka with Spark's Kafka source,
``spark-sql-kafka-0-10`` from ``tests/support/spark_kafka.py``, on ``spark.jars``), and per shape runs one
unmeasured pass of every Spark variant, then the reps, interleaved (rep 1: every variant, rep 2: ...):

- ``spark-arrow``: ``spark.read.format("asyncconsumer")...load().count()``, the Arrow record batch path (the
  executors' batches made from ``Consumer.poll_arrow``'s columns);
- ``spark-tuples``: the same with ``useArrow=false`` (one tuple per row, from ``poll``'s records);
- ``stream-arrow``: ``readStream`` with ``trigger(availableNow=True)`` and ``foreachBatch`` doing
  ``batch.count()``, a fresh checkpoint per run;
- ``agg-arrow``: ``sum(length(value))`` and ``count(*)`` over our source (the values are read and summed);
- ``kafka-count``, ``kafka-agg``, ``kafka-stream``: the same three queries on Spark's Kafka source
  (``format("kafka")``), the reference our ``spark-arrow``, ``agg-arrow`` and ``stream-arrow`` are compared with;
- ``stream-floor``: the ``stream-arrow`` query on a do-nothing Python streaming source (``floor_source``) that
  yields the same rows from one pre-built Arrow batch, no Kafka: what Spark's Python data source machinery alone
  costs, the least any Python source can take;
- ``consumer``: the non-Spark reference, a fresh subprocess with ``asyncconsumer.Consumer``, manual assignment of
  every partition, ``poll(max_records=10000)`` until the end, summing ``len(value)``.

``--master`` takes one master or several, comma-separated (``local[2]`` by default). ``standalone`` is a Spark
standalone cluster the script starts on loopback with ``tests/support/spark_cluster.py``'s class: a master and
``--workers`` (2) workers of one core each, so one executor JVM per worker, each with its own Python workers, which
run this interpreter (``spark.pyspark.python``) and import asyncconsumer from the tree this script imported
(``spark.executorEnv.PYTHONPATH``); it is stopped after its leg. The topics are produced once; each master then runs
every shape (warm-up and reps) in its own session, one master after the other (a process holds one SparkContext at a
time), and the report adds a table of each pair on every master, against the first. On a cluster, Spark's CPU is the
driver's JVM tree plus the cluster's daemons' trees (executors, their Python workers), and the largest executor JVM's
peak RSS is kept beside the driver's.

Every run must see exactly the produced rows (and the aggregations exactly the produced value bytes), or the run
fails (exit 1). Per run it measures the CPU of Spark's process tree (the JVM, its Python workers) and of the
driver's Python, and the peak RSS of the JVM and of the driver's Python. Prints rows/s medians, each variant's
ratio to ``consumer`` and ours to Spark's Kafka source as markdown tables, and writes every run to
``benchmarks/results/spark-<code>.json`` (Kafka: ``spark-<code>-kafka.json``; with a ``standalone`` leg
``...-standalone.json``). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_consume import produce
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
    median,
    process_cpu_s,
    quiet_before_run,
    spawn_child,
    start_broker,
    write_json,
)

Result = dict[str, Any]

VARIANTS: dict[str, str] = {
    "spark-arrow": "(a) ours: batch read, `count()`, Arrow batches",
    "spark-tuples": "(b) ours: batch read, `count()`, `useArrow=false`",
    "stream-arrow": "(c) ours: `availableNow` stream, `foreachBatch` `count()`",
    "agg-arrow": "(e) ours: batch read, `sum(length(value))`, `count(*)`",
    "kafka-count": "(a') Spark's Kafka source: batch read, `count()`",
    "kafka-agg": "(e') Spark's Kafka source: batch read, `sum(length(value))`, `count(*)`",
    "kafka-stream": "(c') Spark's Kafka source: `availableNow` stream, `foreachBatch` `count()`",
    "stream-floor": "(c0) a do-nothing Python streaming source, same rows from one pre-built Arrow batch, no Kafka",
    "consumer": "(d) `asyncconsumer.Consumer`, manual assign, no Spark",
}
OURS = ("spark-arrow", "spark-tuples", "stream-arrow", "agg-arrow")
SPARKS = ("kafka-count", "kafka-agg", "kafka-stream")
"""Variants on Spark's own Kafka source (``format("kafka")``): they need its jars on ``spark.jars``."""
FLOOR = "stream-floor"
SPARK_VARIANTS = (*OURS, *SPARKS, FLOOR)
STREAMS = ("stream-arrow", "kafka-stream", FLOOR)
PAIRS: dict[str, str] = {"spark-arrow": "kafka-count", "agg-arrow": "kafka-agg", "stream-arrow": "kafka-stream"}
"""Ours -> Spark's Kafka source running the same query on the same topic."""
DEFAULT_VARIANTS = {
    "tansu": ("spark-arrow", "spark-tuples", "stream-arrow", "consumer"),
    "kafka": ("spark-arrow", "kafka-count", "agg-arrow", "kafka-agg", "stream-arrow", "kafka-stream", "consumer"),
}
DEFAULT_SHAPES = {"kafka": ((1_000_000, 100), (200_000, 1_000))}
"""Issue 23's two workloads (bench_consume.py's ``small`` and ``large``); on Tansu: ``--records`` x ``--size``."""
BASELINE = "consumer"
STANDALONE = "standalone"
"""``--master standalone``: a standalone cluster started by the script (``tests/support/spark_cluster.py``)."""
TARGET_ROWS_PER_S = 300_000
"""The first Spark issue's target for every Spark variant on local[2]."""
ARROW_TARGET_ROWS_PER_S = 2 * 903_000
"""Issue 22's target for ``spark-arrow`` on local[2]: twice its 903k rows/s in results/spark-41b3e04.json."""
PAIR_TARGET = 1.0
"""Issue 23's target: ours at least as fast as Spark's Kafka source, in rows/s, for each pair."""
STALL_S = 30.0
POLL_MAX_RECORDS = 10_000
RSS_SAMPLE_S = 0.05


# ==========================================================================================================
# child side: the plain consumer reads the whole topic
# ==========================================================================================================


def child_consumer(bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    """Timed from the consumer's construction (connecting and offset lookups included, as in a Spark query) to
    the last record; ``poll_wall_s`` is from the first poll only, as bench_consume.py measures."""
    from asyncconsumer import Consumer, TopicPartition

    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    t_poll = last_progress = time.perf_counter()
    rows = value_bytes = 0
    while rows < expect:
        batch = consumer.poll(timeout_ms=1_000, max_records=POLL_MAX_RECORDS)
        if not batch:
            if time.perf_counter() - last_progress > STALL_S:
                raise RuntimeError(f"no record for {STALL_S:.0f} s after {rows} rows")
            continue
        for records in batch.values():
            for record in records:
                value_bytes += len(record.value)
            rows += len(records)
        last_progress = time.perf_counter()
    end = time.perf_counter()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    positions = {tp.partition: consumer.position(tp) for tp in tps}
    consumer.close()
    return {
        "rows": rows,
        "value_bytes": value_bytes,
        "wall_s": end - t0,
        "poll_wall_s": end - t_poll,
        "process_cpu_s": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        "positions": positions,
    }


def child_main(args: argparse.Namespace) -> int:
    try:
        result = child_consumer(args.bootstrap, args.topic, args.partitions, args.expect)
    except Exception as exc:
        print(RESULT_MARKER + json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 2
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


# ==========================================================================================================
# parent side: broker, data, Spark session, interleaved runs, report
# ==========================================================================================================


def produce_topic(bootstrap: str, topic: str, partitions: int, records: int, size: int, batch_bytes: int) -> list[int]:
    """``records`` values in all, evenly spread; every partition's last record is sent alone (its own batch)."""
    from aiokafka import AIOKafkaProducer

    counts = produce(bootstrap, topic, partitions, records - partitions, size, batch_bytes)

    async def tail() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False)
        await producer.start()
        try:
            for p in range(partitions):
                await producer.send_and_wait(topic, os.urandom(size), partition=p)
        finally:
            await producer.stop()

    asyncio.run(tail())
    return [c + 1 for c in counts]


def check_log_ends(bootstrap: str, topic: str, counts: list[int]) -> None:
    """The source plans up to ListOffsets LATEST: it must be the true end, or every variant would read less."""
    from asyncconsumer import Consumer, TopicPartition

    with Consumer(bootstrap) as consumer:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(len(counts))])
    got = {tp.partition: offset for tp, offset in ends.items()}
    if got != dict(enumerate(counts)):
        raise ChildFailed(f"log ends {got}, expected {dict(enumerate(counts))} (Tansu's LATEST quirk?)")


# --- what a run cost: CPU of Spark's process tree, peak RSS -------------------------------------------------


def parse_stat(text: str) -> tuple[int, int, int]:
    """``(pid, ppid, CPU ticks)`` from one ``/proc/<pid>/stat`` line: utime + stime + cutime + cstime, so that a
    child that exited and was reaped by a process of the tree (a Python worker) stays counted in its parent."""
    pid = int(text.split(" ", 1)[0])
    fields = text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces and parentheses
    return pid, int(fields[1]), sum(int(x) for x in fields[11:15])


def descendants(stats: Mapping[int, tuple[int, int]], *roots: int) -> set[int]:
    """The ``roots`` still in ``stats`` (pid -> (ppid, ticks)) and every descendant of theirs, each once."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    todo, seen = list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        todo.extend(children.get(pid, ()))
    return seen


def tree_ticks(stats: Mapping[int, tuple[int, int]], *roots: int) -> int:
    """CPU ticks of the ``roots`` and every descendant in ``stats`` (pid -> (ppid, ticks)), a process under two
    roots counted once."""
    return sum(stats[pid][1] for pid in descendants(stats, *roots))


def _all_stats() -> dict[int, tuple[int, int]]:
    stats: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            pid, ppid, ticks = parse_stat((entry / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        stats[pid] = (ppid, ticks)
    return stats


def tree_cpu_s(root: int | None, *more: int) -> float | None:
    """CPU seconds of ``root``'s process tree so far, and of the trees of ``more`` roots (a standalone cluster's
    master and workers: its executors and their Python workers are the workers' descendants, not the driver's);
    None off Linux or without a root."""
    if root is None or not Path("/proc/self/stat").exists():
        return None
    return tree_ticks(_all_stats(), root, *more) / CLOCK_TICKS


def executor_pids(worker_pids: Sequence[int]) -> list[int]:
    """The executor JVMs (``CoarseGrainedExecutorBackend``) under a standalone cluster's workers, found in
    ``/proc``; empty off Linux."""
    if not Path("/proc/self/stat").exists():
        return []
    found = []
    for pid in sorted(descendants(_all_stats(), *worker_pids) - set(worker_pids)):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"CoarseGrainedExecutorBackend" in command:
            found.append(pid)
    return found


def rss_bytes(pid: int | str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@contextmanager
def peak_rss(pids: Mapping[str, int | str | None]) -> Iterator[dict[str, int | None]]:
    """Samples ``VmRSS`` of each named process every 50 ms while the block runs; the dict holds the peaks."""
    peaks: dict[str, int | None] = {name: None for name in pids}
    stop = threading.Event()

    def sample() -> None:
        while True:
            for name, pid in pids.items():
                value = None if pid is None else rss_bytes(pid)
                if value is not None and (peaks[name] is None or value > (peaks[name] or 0)):
                    peaks[name] = value
            if stop.wait(RSS_SAMPLE_S):
                return

    thread = threading.Thread(target=sample, name="bench-rss", daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()
        sample_once = {name: None if pid is None else rss_bytes(pid) for name, pid in pids.items()}
        for name, value in sample_once.items():
            if value is not None and (peaks[name] is None or value > (peaks[name] or 0)):
                peaks[name] = value


def spark_jvm_pid(spark: Any) -> int | None:
    """The Spark JVM (``spark-submit`` execs into it); in ``local`` mode driver and executors in one, and the
    parent of the Python workers."""
    try:
        return int(spark.sparkContext._gateway.proc.pid)
    except AttributeError:
        return None


# --- the Spark side -------------------------------------------------------------------------------------------


def spark_kafka_jars() -> list[str]:
    """``spark-sql-kafka-0-10`` and its dependencies (fetched by Maven into the jar cache on first use)."""
    kafka_broker_module()  # puts the repository root on sys.path
    from tests.support.spark_kafka import jars

    jars_list: list[str] = jars()
    return jars_list


def spark_kafka_version() -> str:
    kafka_broker_module()
    from tests.support.spark_kafka import SPARK_KAFKA_VERSION

    return str(SPARK_KAFKA_VERSION)


def parse_masters(text: str) -> list[str]:
    """``--master``: one or more Spark masters, comma-separated, each run in turn on the same topics; ``standalone``
    stands for a standalone cluster this script starts (``tests/support/spark_cluster.py``)."""
    masters = [m.strip() for m in text.split(",") if m.strip()]
    if not masters:
        raise ValueError("--master: name at least one master, e.g. local[2] or local[2],standalone")
    repeated = sorted({m for m in masters if masters.count(m) > 1})
    if repeated:
        raise ValueError(f"--master: {', '.join(repeated)} given twice")
    return masters


def tree_root() -> str:
    """The directory holding the ``asyncconsumer`` this process imported (the tree under test, which the venv's
    editable install may not point at)."""
    import asyncconsumer

    return str(Path(asyncconsumer.__file__).resolve().parent.parent)


def cluster_conf(workers: int, cores: int, executor_memory: str, pythonpath: Sequence[str]) -> dict[str, str]:
    """The session's settings on a standalone cluster of ``workers`` workers of ``cores`` cores: one executor per
    worker, every core taken, and executors whose Python workers run this interpreter and import asyncconsumer from
    ``pythonpath`` (the tree under test first). The cluster is on this machine, so the driver's interpreter path is
    valid on every executor; on a real cluster it would be an interpreter installed at that path on every node."""
    conf = {
        "spark.cores.max": str(workers * cores),
        "spark.executor.cores": str(cores),
        "spark.executor.memory": executor_memory,
        "spark.pyspark.python": sys.executable,
    }
    if pythonpath:
        conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(pythonpath)
    return conf


def executor_pythonpath() -> list[str]:
    """The tree under test, then this process's own PYTHONPATH entries."""
    root = tree_root()
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    return [root, *extra]


def start_cluster(workers: int, cores: int, memory: str) -> Any:
    """A standalone master and ``workers`` workers on loopback, returned once all are alive (the tests' class)."""
    kafka_broker_module()  # puts the repository root on sys.path
    from tests.support.spark_cluster import SparkCluster

    return SparkCluster.start(workers=workers, cores=cores, memory=memory)


def wait_for_executors(spark: Any, count: int, timeout_s: float) -> float:
    """Waits until ``count`` executors have registered with the driver (its memory status lists the driver too);
    returns the seconds it took. Without this the first query's tasks would all land on the first executor up."""
    t0 = time.perf_counter()
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus
    while status().size() <= count:
        if time.perf_counter() - t0 > timeout_s:
            raise ChildFailed(f"only {status().size() - 1} of {count} executors registered in {timeout_s:.0f} s")
        time.sleep(0.2)
    return time.perf_counter() - t0


def start_spark(
    master: str, shuffle_partitions: int, jars: Sequence[str], extra_conf: Mapping[str, str]
) -> tuple[Any, float, dict[str, str]]:
    """A session on loopback (local, or the ``spark://`` URL of a cluster with ``extra_conf`` from
    ``cluster_conf``); returns it, the seconds it took (imports included) and its settings."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the Python workers import asyncconsumer from this environment
    conf = {
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
    }
    if jars:
        conf["spark.jars"] = ",".join(jars)
    conf.update(extra_conf)
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession

    import asyncconsumer.spark

    builder = SparkSession.builder.master(master).appName("asyncconsumer-bench-spark")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    asyncconsumer.spark.register(spark)
    spark.dataSource.register(floor_source())
    return spark, time.perf_counter() - t0, conf


def floor_source() -> Any:
    """``format("bench-floor")``: a streaming source whose one micro-batch is ``counts`` rows per partition of
    ``size``-byte values in our schema, yielded as one pre-built Arrow batch (sliced at the end), in batches of 8 MiB
    as our reader yields them. No Kafka and no decoding: what is left is Spark's own cost for a Python source (its
    per-query Python runner, the Arrow handover to the JVM). It imports no asyncconsumer, in its runner or its
    workers. Defined in a function, so that Spark pickles the classes by value and its Python workers need not import
    this script."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class FloorSource(DataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "bench-floor"

        def schema(self) -> str:  # our schema without headers, spelled out: nothing here imports asyncconsumer
            return (
                "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
                "timestampType int"
            )

        def streamReader(self, schema: Any) -> Any:
            counts = [int(c) for c in self.options["counts"].split(",")]
            return FloorReader(counts, int(self.options["size"]))

    class FloorReader(DataSourceStreamReader):  # type: ignore[misc]
        def __init__(self, counts: list[int], size: int) -> None:
            self.counts, self.size = counts, size

        def initialOffset(self) -> dict[str, int]:
            return {"batch": 0}

        def latestOffset(self) -> dict[str, int]:
            return {"batch": 1}

        def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Any]:
            return [InputPartition((p, n)) for p, n in enumerate(self.counts)]

        def read(self, partition: Any) -> Iterator[Any]:
            import datetime

            import pyarrow as pa

            p, n = partition.value
            rows = max(1, min(n, (8 << 20) // (self.size + 40)))
            stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
            columns = [
                pa.nulls(rows, pa.binary()),
                pa.array([b"x" * self.size] * rows, pa.binary()),
                pa.array(["t"] * rows),
                pa.array([p] * rows, pa.int32()),
                pa.array(range(rows), pa.int64()),
                pa.array([stamp] * rows, pa.timestamp("us", tz="UTC")),
                pa.array([0] * rows, pa.int32()),
            ]
            names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
            batch = pa.RecordBatch.from_arrays(columns, names=names)
            for begin in range(0, n, rows):
                yield batch if begin + rows <= n else batch.slice(0, n - begin)

        def commit(self, end: dict[str, int]) -> None:
            pass

    return FloorSource


def source_options(bootstrap: str, topic: str, arrow_batch_rows: int | None) -> dict[str, str]:
    """What every Spark variant reads: the whole topic. Spark's Kafka source gets the same minus ours's own."""
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    if arrow_batch_rows is not None:
        options["arrowBatchRows"] = str(arrow_batch_rows)
    return options


_OUR_OWN = ("arrowBatchRows", "useArrow")


def spark_source(variant: str, options: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The format and options of ``variant``'s source: Spark's Kafka source for ``kafka-*``, else ours."""
    if variant in SPARKS:
        return "kafka", {k: v for k, v in options.items() if k not in _OUR_OWN}
    return "asyncconsumer", {**options, "useArrow": "false" if variant == "spark-tuples" else "true"}


def spark_batch(spark: Any, fmt: str, options: Mapping[str, str]) -> Result:
    """From ``load()`` to ``count()``'s answer: driver planning (metadata, offsets), tasks, the reads, the count."""
    t0 = time.perf_counter()
    rows = spark.read.format(fmt).options(**options).load().count()
    return {"rows": rows, "wall_s": time.perf_counter() - t0}


def spark_agg(spark: Any, fmt: str, options: Mapping[str, str]) -> Result:
    """From ``load()`` to the answer of ``sum(length(value))`` and ``count(*)``: every value is read and measured."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    df = spark.read.format(fmt).options(**options).load()
    row = df.agg(F.sum(F.length("value")).alias("value_bytes"), F.count(F.lit(1)).alias("rows")).collect()[0]
    return {"rows": row["rows"], "value_bytes": row["value_bytes"], "wall_s": time.perf_counter() - t0}


def spark_stream(spark: Any, fmt: str, options: Mapping[str, str], timeout_s: float) -> Result:
    """From ``load()`` to the end of an ``availableNow`` query: offsets, every micro-batch, checkpoint writes."""
    batches: list[tuple[int, int]] = []
    spans: list[tuple[float, float]] = []  # each foreachBatch call: (start, end) seconds after t0

    def count(batch: Any, batch_id: int) -> None:
        begin = time.perf_counter() - t0
        batches.append((batch_id, batch.count()))
        spans.append((begin, time.perf_counter() - t0))

    with tempfile.TemporaryDirectory(prefix="bench-spark-checkpoint-") as checkpoint:
        t0 = time.perf_counter()
        df = spark.readStream.format(fmt).options(**options).load()
        query = (
            df.writeStream.foreachBatch(count)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        finished = query.awaitTermination(timeout_s)  # raises StreamingQueryException if the query failed
        wall = time.perf_counter() - t0
        if not finished:
            query.stop()
            raise ChildFailed(f"stream: not finished within {timeout_s:.0f} s; batches so far {batches}")
    return {"rows": sum(n for _, n in batches), "wall_s": wall, "batches": len(batches), "foreach_batch_s": spans}


def measure(
    run: Callable[[], Result],
    broker_pid: int | None,
    jvm_pid: int | None,
    cluster_pids: Sequence[int] = (),
    executors: Sequence[int] = (),
) -> Result:
    """``run()`` plus what the machine did meanwhile: busy CPU-s of every core, the broker's share, Spark's
    process tree's (JVM and Python workers; on a standalone cluster also the trees of ``cluster_pids``, its master
    and workers, which hold the executors), the driver's Python, and the peak RSS of the (driver's) JVM, the
    driver's Python and, on a cluster, of the largest of the ``executors`` JVMs."""
    busy0, broker0, tree0 = busy_cpu_s(), process_cpu_s(broker_pid), tree_cpu_s(jvm_pid, *cluster_pids)
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    sampled: dict[str, int | str | None] = {"jvm": jvm_pid, "driver_py": "self"}
    sampled.update({f"executor-{pid}": pid for pid in executors})
    with peak_rss(sampled) as peaks:
        result = run()
    interval = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    busy1, broker1, tree1 = busy_cpu_s(), process_cpu_s(broker_pid), tree_cpu_s(jvm_pid, *cluster_pids)
    broker = None if broker0 is None or broker1 is None else broker1 - broker0
    busy = None if busy0 is None or busy1 is None else busy1 - busy0
    result["broker_cpu_s"] = broker
    # Spark's JVM, its Python workers and the driver (or the consumer child, imports included), and anyone else
    result["machine_cpu_s"] = None if busy is None else max(0.0, busy - (broker or 0.0))
    result["interval_s"] = interval
    if jvm_pid is not None and tree0 is not None and tree1 is not None:
        driver = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)  # includes the RSS sampler's
        result["spark_tree_cpu_s"] = tree1 - tree0
        result["driver_py_cpu_s"] = driver
        result["jvm_peak_rss"] = peaks["jvm"]
        result["driver_py_peak_rss"] = peaks["driver_py"]
        executor_peaks = [v for k, v in peaks.items() if k.startswith("executor-") and v is not None]
        if executor_peaks:
            result["executor_peak_rss"] = max(executor_peaks)
        if result["machine_cpu_s"] is not None:
            result["others_cpu_s"] = max(0.0, result["machine_cpu_s"] - result["spark_tree_cpu_s"] - driver)
    # The consumer child's own getrusage over its timed interval; for Spark, everything but the broker.
    result["client_cpu_s"] = result.get("process_cpu_s", result["machine_cpu_s"])
    return result


def run_variant(
    variant: str,
    spark: Any,
    options: dict[str, str],
    bootstrap: str,
    topic: str,
    counts: list[int],
    size: int,
    timeout_s: float,
) -> Result:
    if variant in SPARK_VARIANTS:
        if variant == FLOOR:  # the same rows per partition as the topic holds
            fmt, opts = "bench-floor", {"counts": ",".join(map(str, counts)), "size": str(size)}
        else:
            fmt, opts = spark_source(variant, options)
        if variant in STREAMS:
            return spark_stream(spark, fmt, opts, timeout_s)
        if variant in ("agg-arrow", "kafka-agg"):
            result = spark_agg(spark, fmt, opts)
            if result["value_bytes"] != sum(counts) * size:
                raise ChildFailed(
                    f"{variant}: summed {result['value_bytes']} value bytes, expected {sum(counts) * size}"
                )
            return result
        return spark_batch(spark, fmt, opts)
    argv = child_argv(__file__, child="consumer", bootstrap=bootstrap, topic=topic, partitions=len(counts))
    argv += ["--expect", str(sum(counts))]
    result = spawn_child(argv, variant, timeout_s)
    problems = []
    if result["value_bytes"] != sum(counts) * size:
        problems.append(f"summed {result['value_bytes']} value bytes, expected {sum(counts) * size}")
    positions = {int(p): o for p, o in result["positions"].items()}
    if positions != dict(enumerate(counts)):
        problems.append(f"final positions {positions}, expected {dict(enumerate(counts))}")
    if problems:
        raise ChildFailed(f"{variant}: " + "; ".join(problems))
    return result


# --- the report -----------------------------------------------------------------------------------------------


def summarise(runs: Mapping[str, list[Result]]) -> dict[str, Result]:
    summary: dict[str, Result] = {}
    for variant, results in runs.items():
        if not results:
            continue
        rates = [r["rows"] / r["wall_s"] for r in results]
        cpu = [r["client_cpu_s"] / r["rows"] * 1e6 for r in results if r.get("client_cpu_s") is not None]

        def spark_cpu(r: Result) -> float | None:
            if r.get("spark_tree_cpu_s") is None:
                return None
            return float(r["spark_tree_cpu_s"] + r["driver_py_cpu_s"])

        summary[variant] = {
            "reps": len(results),
            "rows": results[0]["rows"],  # every run read exactly the produced rows
            "rows_per_s": statistics.median(rates),
            "rows_per_s_min": min(rates),
            "rows_per_s_max": max(rates),
            "wall_s": statistics.median(r["wall_s"] for r in results),
            "client_cpu_s_per_m_rows": statistics.median(cpu) if cpu else None,
            "broker_cpu_s": median([r.get("broker_cpu_s") for r in results]),
            "spark_cpu_s": median([spark_cpu(r) for r in results]),
            "spark_tree_cpu_s": median([r.get("spark_tree_cpu_s") for r in results]),
            "driver_py_cpu_s": median([r.get("driver_py_cpu_s") for r in results]),
            "others_cpu_s": median([r.get("others_cpu_s") for r in results]),
            "jvm_peak_rss": median([r.get("jvm_peak_rss") for r in results]),
            "driver_py_peak_rss": median([r.get("driver_py_peak_rss") for r in results]),
        }
    base = summary.get(BASELINE)
    for entry in summary.values():
        entry["ratio_to_consumer"] = entry["rows_per_s"] / base["rows_per_s"] if base else None
    for ours, theirs in PAIRS.items():
        if ours in summary and theirs in summary:
            summary[ours]["ratio_to_spark_kafka"] = summary[ours]["rows_per_s"] / summary[theirs]["rows_per_s"]
    return summary


def _mb(value: float | None) -> str:
    return "?" if value is None else f"{value / 2**20:,.0f}"


def table(summary: Mapping[str, Result], target: int) -> str:
    lines = [
        "| variant | what | rows/s | ratio to consumer | wall s | rows/s min-max | reps "
        f"| CPU-s / M rows (all but broker) | broker CPU-s | >= {target / 1000:.0f}k rows/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for variant, entry in summary.items():
        met = "-" if variant == BASELINE else ("yes" if entry["rows_per_s"] >= target else "**no**")
        lines.append(
            f"| {variant} | {VARIANTS.get(variant, '')} "
            f"| {entry['rows_per_s'] / 1e3:,.0f} k "
            f"| {fmt_cell(entry['ratio_to_consumer'], '.2f')}x "
            f"| {entry['wall_s']:.2f} "
            f"| {entry['rows_per_s_min'] / 1e3:,.0f}-{entry['rows_per_s_max'] / 1e3:,.0f} k "
            f"| {entry['reps']} "
            f"| {fmt_cell(entry['client_cpu_s_per_m_rows'], '.2f')} "
            f"| {fmt_cell(entry.get('broker_cpu_s'), '.2f')} | {met} |"
        )
    return "\n".join(lines)


PAIR_QUERIES = {
    "spark-arrow": "batch `count()`",
    "agg-arrow": "batch `sum(length(value))`",
    "stream-arrow": "`availableNow` stream",
}


def pair_table(summary: Mapping[str, Result]) -> str:
    """Ours against Spark's Kafka source, query by query: rows/s, the ratio, CPU per run and peak RSS."""
    lines = [
        "| query | ours rows/s | Spark's rows/s | ours / Spark's | >= 1.0x "
        "| Spark CPU-s ours / Spark's | per M rows ours / Spark's | JVM peak RSS MB ours / Spark's "
        "| driver Python RSS MB ours / Spark's |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for ours, theirs in PAIRS.items():
        if ours not in summary or theirs not in summary:
            continue
        a, b = summary[ours], summary[theirs]
        ratio = a["ratio_to_spark_kafka"]
        per_m = [None if e["spark_cpu_s"] is None else e["spark_cpu_s"] / e["rows"] * 1e6 for e in (a, b)]
        lines.append(
            f"| {PAIR_QUERIES[ours]} | {a['rows_per_s'] / 1e3:,.0f} k | {b['rows_per_s'] / 1e3:,.0f} k "
            f"| {ratio:.2f}x | {'yes' if ratio >= PAIR_TARGET else '**no**'} "
            f"| {fmt_cell(a['spark_cpu_s'], '.2f')} / {fmt_cell(b['spark_cpu_s'], '.2f')} "
            f"| {fmt_cell(per_m[0], '.2f')} / {fmt_cell(per_m[1], '.2f')} "
            f"| {_mb(a['jvm_peak_rss'])} / {_mb(b['jvm_peak_rss'])} "
            f"| {_mb(a['driver_py_peak_rss'])} / {_mb(b['driver_py_peak_rss'])} |"
        )
    return "\n".join(lines)


def pair_verdict(summary: Mapping[str, Result], label: str) -> str | None:
    ratios = {o: summary[o]["ratio_to_spark_kafka"] for o in PAIRS if "ratio_to_spark_kafka" in summary.get(o, {})}
    if not ratios:
        return None
    listed = ", ".join(f"{PAIR_QUERIES[o]} {r:.2f}x" for o, r in ratios.items())
    missed = [o for o, r in ratios.items() if r < PAIR_TARGET]
    state = "MET" if not missed else f"NOT MET by {len(missed)} of {len(ratios)}"
    return f"{label}: ours >= {PAIR_TARGET:.1f}x Spark's Kafka source: {state} ({listed})"


def verdict(summary: Mapping[str, Result], target: int, master: str) -> str:
    spark = {v: e["rows_per_s"] for v, e in summary.items() if v in OURS}
    if not spark:
        return "no Spark variant on our source ran: target not assessed"
    missed = sorted(v for v, rate in spark.items() if rate < target)
    listed = ", ".join(f"{v} {rate / 1e3:,.0f}k" for v, rate in spark.items())
    if not missed:
        return f"target >= {target:,} rows/s on {master}: MET by every Spark variant ({listed})"
    return f"target >= {target:,} rows/s on {master}: NOT MET by {', '.join(missed)} ({listed})"


def arrow_verdict(summary: Mapping[str, Result], master: str) -> str:
    entry = summary.get("spark-arrow")
    if entry is None:
        return "spark-arrow did not run: the Arrow target not assessed"
    met = "MET" if entry["rows_per_s"] >= ARROW_TARGET_ROWS_PER_S else "NOT MET"
    return f"Arrow target >= {ARROW_TARGET_ROWS_PER_S:,} rows/s on {master}: {met} ({entry['rows_per_s'] / 1e3:,.0f}k)"


def shapes_of(report: Result) -> list[Result]:
    """A report's shapes: one per topic (a report from before shapes existed is its own single shape)."""
    if "shapes" in report:
        shapes: list[Result] = report["shapes"]
        return shapes
    return [{"workload": report["workload"], "runs": report["runs"]}]


def legs_of(report: Result) -> list[Result]:
    """A report's legs, one per Spark master, each ``{"master", "spark", "shapes"}``; a report from before
    ``--master`` took several is its own single leg."""
    if "legs" in report:
        legs: list[Result] = report["legs"]
        return legs
    return [{"master": report["spark"]["master"], "spark": report["spark"], "shapes": shapes_of(report)}]


def master_table(legs: Sequence[Result]) -> str:
    """Each pair's rows/s on every master, the same topics: ours, Spark's Kafka source, their ratio, and each
    source's rows/s over its own on the first master (the reference, e.g. ``local[2]``). Empty with one leg."""
    if len(legs) < 2:
        return ""
    reference = legs[0]["master"]
    lines = [
        f"| workload | query | master | ours rows/s | Spark's rows/s | ours / Spark's | ours / ours on {reference} "
        f"| Spark's / Spark's on {reference} |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    by_topic = [
        {s["workload"]["topic"]: s.get("summary") or summarise(s["runs"]) for s in leg["shapes"]} for leg in legs
    ]
    for shape in legs[0]["shapes"]:
        workload = shape["workload"]
        label = f"{workload['records']:,} x {workload['value_size']} B"
        base = by_topic[0][workload["topic"]]
        for ours, theirs in PAIRS.items():
            for leg, summaries in zip(legs, by_topic, strict=True):
                summary = summaries.get(workload["topic"], {})
                a, b = summary.get(ours), summary.get(theirs)
                if a is None and b is None:
                    continue
                cells = []
                for entry, variant in ((a, ours), (b, theirs)):
                    ref = base.get(variant)
                    cells.append(
                        "-" if entry is None or ref is None else f"{entry['rows_per_s'] / ref['rows_per_s']:.2f}x"
                    )
                ratio = "-" if a is None or b is None else f"{a['rows_per_s'] / b['rows_per_s']:.2f}x"
                lines.append(
                    f"| {label} | {PAIR_QUERIES[ours]} | {leg['master']} "
                    f"| {_rate(a)} | {_rate(b)} | {ratio} | {cells[0]} | {cells[1]} |"
                )
    return "\n".join(lines)


def _rate(entry: Result | None) -> str:
    return "-" if entry is None else f"{entry['rows_per_s'] / 1e3:,.0f} k"


def print_report(report: Result) -> None:
    info = report["machine"]
    target = report.get("target_rows_per_s", TARGET_ROWS_PER_S)
    legs = legs_of(report)
    for leg in legs:
        print_leg(leg, info, target, report["args"]["reps"])
    across = master_table(legs)
    if across:
        masters = ", ".join(leg["master"] for leg in legs)
        print(f"\n### Ours and Spark's Kafka source on each master ({masters}; same topics, same run), medians\n")
        print(across)
    for leg in legs:
        spark = leg["spark"]
        cold = ", ".join(f"{v} {s:.1f} s" for v, s in spark["cold_s"].items())
        print(
            f"\nSpark {leg['master']}: session start-up (excluded from every timing) "
            f"{fmt_cell(spark['startup_s'], '.1f')} "
            f"s; first, unmeasured pass of each Spark variant: {cold or 'none'}"
        )
        cluster = spark.get("cluster")
        if cluster:
            print(
                f"standalone cluster ({spark['master_url']}): master and {cluster['workers']} workers of "
                f"{cluster['cores_per_worker']} core, executors of {cluster['executor_memory']}, all on this machine; "
                f"started in {cluster['start_s']:.1f} s, executors registered {spark.get('executors_wait_s', 0):.1f} s "
                "after the session"
            )
    broker = info.get("broker", "?")
    print(
        f"machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, code {info['code']}, "
        f"broker {broker}, pyspark {info.get('pyspark', '?')}, spark-sql-kafka {info.get('spark_sql_kafka', '-')}"
    )


def print_leg(leg: Result, info: Result, target: int, reps: int) -> None:
    """One master's tables, shape by shape."""
    master = leg["master"]
    for shape in leg["shapes"]:
        workload = shape["workload"]
        summary = summarise(shape["runs"])
        label = f"{workload['records']:,} x {workload['value_size']} B in {workload['partitions']} partitions"
        print(f"\n### {label}, Spark {master}, medians of {reps} reps (ratio to consumer)\n")
        print(table(summary, target))
        pairs = pair_table(summary)
        if pairs.count("\n") > 1:
            print(f"\nOurs against Spark's Kafka source ({label}, Spark {master}):\n")
            print(pairs)
        executor_rss = {v: median([r.get("executor_peak_rss") for r in rs]) for v, rs in shape["runs"].items() if rs}
        if any(value is not None for value in executor_rss.values()):
            listed = ", ".join(f"{v} {_mb(value)}" for v, value in executor_rss.items() if value is not None)
            print(f"\nJVM peak RSS above is the driver's; the largest executor JVM's peak, MB (median): {listed}")
        base = shape["runs"].get(BASELINE)
        if base:
            poll = statistics.median(r["rows"] / r["poll_wall_s"] for r in base)
            print(f"\nconsumer from its first poll only (as bench_consume.py measures): {poll / 1e3:,.0f} k rows/s")
        for variant in STREAMS:
            stream = [r for r in shape["runs"].get(variant, []) if r.get("foreach_batch_s")]
            if stream:
                before = statistics.median(r["foreach_batch_s"][0][0] for r in stream)
                inside = statistics.median(sum(end - begin for begin, end in r["foreach_batch_s"]) for r in stream)
                print(
                    f"{variant}: {before:.2f} s from load() to the first foreachBatch call (query start, offsets, "
                    f"checkpoint), {inside:.2f} s inside foreachBatch (medians)"
                )
        if all(shape["runs"].get(v) for v in STREAMS):
            walls = {v: statistics.median(r["wall_s"] for r in shape["runs"][v]) for v in STREAMS}
            print(
                f"streams, median wall: ours {walls['stream-arrow']:.2f} s, Spark's Kafka source "
                f"{walls['kafka-stream']:.2f} s, the do-nothing Python source {walls[FLOOR]:.2f} s: ours is "
                f"{walls['stream-arrow'] - walls[FLOOR]:.2f} s above what any Python source takes here"
            )
        others = [
            r["others_cpu_s"] / r["interval_s"] for rs in shape["runs"].values() for r in rs if "others_cpu_s" in r
        ]
        if others:
            print(
                f"load from other processes during the Spark runs: median {statistics.median(others):.2f} cores, "
                f"max {max(others):.2f} (of {info['cpus']})"
            )
        print(verdict(summary, target, master))
        print(arrow_verdict(summary, master))
        pv = pair_verdict(summary, f"{label}, Spark {master}")
        if pv:
            print(pv)


def java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = done.stderr.strip().splitlines()
    return lines[0] if lines else "unknown"


def parse_shapes(text: str | None, broker: str, records: int, size: int) -> list[tuple[int, int]]:
    """``--shapes`` (``RECORDSxBYTES,...``, ``k``/``m`` suffixes on the count) or the broker's default."""
    if not text:
        return list(DEFAULT_SHAPES.get(broker, ((records, size),)))
    shapes = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        count, sep, value = part.partition("x")
        scale = {"k": 1_000, "m": 1_000_000}.get(count[-1:], 1)
        try:
            shape = (int(count.rstrip("km")) * scale, int(value))
        except ValueError:
            raise ValueError(f"--shapes: {part!r} is not RECORDSxBYTES (e.g. 1mx100, 200000x1000)") from None
        if not sep or shape[0] < 1 or shape[1] < 1:
            raise ValueError(f"--shapes: {part!r} is not RECORDSxBYTES (e.g. 1mx100, 200000x1000)")
        shapes.append(shape)
    return shapes


def parse_variants(text: str | None, broker: str) -> list[str]:
    if not text:
        return list(DEFAULT_VARIANTS[broker])
    variants = [v.strip() for v in text.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; choose from {', '.join(VARIANTS)}")
    return variants


def prepare_topic(args: argparse.Namespace, broker: Any, records: int, size: int) -> Result:
    """A fresh topic of ``records`` x ``size``, produced and checked; its workload (every master reads it)."""
    bootstrap = broker.bootstrap_servers
    topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, args.partitions)
    t0 = time.perf_counter()
    counts = produce_topic(bootstrap, topic, args.partitions, records, size, args.batch_bytes)
    produce_s = time.perf_counter() - t0
    check_log_ends(bootstrap, topic, counts)
    print(
        f"# topic {topic}: {records:,} x {size} B in {args.partitions} partitions, produced in {produce_s:.1f} s, "
        f"log ends {counts}",
        flush=True,
    )
    return {
        "records": records,
        "value_size": size,
        "partitions": args.partitions,
        "topic": topic,
        "produce_s": produce_s,
        "counts": counts,
    }


def run_shape(
    args: argparse.Namespace,
    broker: Any,
    spark: Any,
    spark_info: Result,
    variants: Sequence[str],
    workload: Result,
    cluster_pids: Sequence[int] = (),
    executors: Sequence[int] = (),
) -> Result:
    """One topic on one master: warm up, interleaved reps; its runs. ``cluster_pids`` and ``executors``: a
    standalone cluster's daemons and executor JVMs, measured with the driver's JVM."""
    bootstrap, topic, counts = broker.bootstrap_servers, workload["topic"], workload["counts"]
    records, size = workload["records"], workload["value_size"]
    shape: Result = {"workload": workload, "runs": {v: [] for v in variants}}
    options = source_options(bootstrap, topic, args.arrow_batch_rows)
    options.update(kv.split("=", 1) for kv in args.option)
    run = functools.partial(
        run_variant,
        spark=spark,
        options=options,
        bootstrap=bootstrap,
        topic=topic,
        counts=counts,
        size=size,
        timeout_s=args.timeout,
    )
    jvm = spark_jvm_pid(spark) if spark is not None else None
    for variant in [v for v in variants if v in SPARK_VARIANTS] * args.warmup:
        result = run(variant)  # Python workers, JIT
        spark_info["cold_s"].setdefault(f"{variant} {records}x{size}", result["wall_s"])
        print(f"  {spark_info['master']} warm-up {variant:<13} {result['wall_s']:6.2f} s (not counted)", flush=True)
    for rep in range(1, args.reps + 1):
        for variant in variants:
            load = quiet_before_run(broker.pid, args.quiet_cores, args.quiet_wait)
            if variant in SPARK_VARIANTS:
                result = measure(functools.partial(run, variant), broker.pid, jvm, cluster_pids, executors)
            else:
                result = measure(functools.partial(run, variant), broker.pid, None)
            result["others_before_cores"] = load
            if result["rows"] != sum(counts):
                raise ChildFailed(f"{variant} rep {rep}: {result['rows']} rows, expected exactly {sum(counts)}")
            shape["runs"][variant].append(result)
            spark_cpu = None
            if result.get("spark_tree_cpu_s") is not None:
                spark_cpu = result["spark_tree_cpu_s"] + result["driver_py_cpu_s"]
            print(
                f"  {spark_info['master']} rep {rep} {variant:<13} "
                f"{result['rows'] / result['wall_s'] / 1e3:7.0f} k rows/s "
                f"{result['wall_s']:6.2f} s  CPU (all but broker) {fmt_cell(result['client_cpu_s'], '.2f')} s  "
                f"Spark tree+driver {fmt_cell(spark_cpu, '.2f')} s  "
                f"broker {fmt_cell(result['broker_cpu_s'], '.2f')} s  "
                f"others {fmt_cell(result.get('others_cpu_s'), '.2f')} s  JVM RSS {_mb(result.get('jvm_peak_rss'))} MB",
                flush=True,
            )
    shape["summary"] = summarise(shape["runs"])
    return shape


def parent_main(args: argparse.Namespace) -> int:
    try:
        variants = parse_variants(args.variants, args.broker)
        shapes = parse_shapes(args.shapes, args.broker, args.records, args.size)
        masters = parse_masters(args.master)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if any(records < args.partitions for records, _ in shapes):
        print("every shape needs at least --partitions records", file=sys.stderr)
        return 2
    info = machine(("aiokafka", "pyspark", "pyarrow"))
    info["java"] = java_version()
    info["code"] = code_version()
    jars: list[str] = []
    if any(v in SPARKS for v in variants):
        jars = spark_kafka_jars()
        info["spark_sql_kafka"] = spark_kafka_version()
    if args.json:
        out = Path(args.json)
    else:
        suffix = "-standalone.json" if STANDALONE in masters else ".json"
        out = default_results_path("spark", info["code"], suffix, broker=args.broker)
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(
        f"# pyspark {info['pyspark']}, pyarrow {info['pyarrow']}, {info['java']}; asyncconsumer code at {info['code']}"
        + (f"; spark-sql-kafka-0-10 {info['spark_sql_kafka']}" if jars else "")
    )
    broker = start_broker(args.broker)
    try:
        info["broker"] = broker.description
        print(f"# broker {broker.bootstrap_servers} ({broker.description})", flush=True)
        workloads = [prepare_topic(args, broker, records, size) for records, size in shapes]
        report: Result = {
            "machine": info,
            "args": vars(args),
            "variants": variants,
            "masters": masters,
            "target_rows_per_s": TARGET_ROWS_PER_S,
            "legs": [],
        }
        for master in masters:  # one after another: a process holds one SparkContext at a time
            report["legs"].append(run_leg(args, broker, master, jars, variants, workloads))
        info["code_at_end"] = code_version()
        if info["code_at_end"] != info["code"]:
            print(
                f"\nWARNING: asyncconsumer's code changed during the run ({info['code']} -> {info['code_at_end']}); "
                "Spark's Python workers may have measured either",
                file=sys.stderr,
            )
        write_json(out, report)
        print_report(report)
        print(f"results: {out}")
    except ChildFailed as exc:
        print(f"FAILED {exc}", file=sys.stderr)
        return 1
    finally:
        broker.stop()
    return 0


def run_leg(
    args: argparse.Namespace,
    broker: Any,
    master: str,
    jars: Sequence[str],
    variants: Sequence[str],
    workloads: Sequence[Result],
) -> Result:
    """Every workload on one master: a session (and, for ``standalone``, the cluster under it) started for this leg
    and stopped at its end."""
    spark_info: Result = {"master": master, "master_url": master, "startup_s": None, "cold_s": {}, "conf": {}}
    leg: Result = {"master": master, "spark": spark_info, "shapes": []}
    spark: Any = None
    cluster: Any = None
    try:
        cluster_pids: list[int] = []
        executors: list[int] = []
        if any(v in SPARK_VARIANTS for v in variants):
            extra = dict(kv.split("=", 1) for kv in args.conf)
            url = master
            if master == STANDALONE:
                t0 = time.perf_counter()
                cluster = start_cluster(args.workers, 1, args.executor_memory)
                url = cluster.master_url
                spark_info["cluster"] = {
                    "workers": args.workers,
                    "cores_per_worker": 1,
                    "executor_memory": args.executor_memory,
                    "daemon_heap": "256m",
                    "start_s": time.perf_counter() - t0,
                }
                extra = {**cluster_conf(args.workers, 1, args.executor_memory, executor_pythonpath()), **extra}
                print(
                    f"# standalone cluster {url}: master and {args.workers} workers of 1 core, started in "
                    f"{spark_info['cluster']['start_s']:.1f} s",
                    flush=True,
                )
            spark_info["master_url"] = url
            spark, spark_info["startup_s"], spark_info["conf"] = start_spark(url, args.shuffle_partitions, jars, extra)
            print(f"# Spark {master} session started in {spark_info['startup_s']:.1f} s (not timed below)", flush=True)
            if cluster is not None:
                spark_info["executors_wait_s"] = wait_for_executors(spark, args.workers, 120.0)
                cluster_pids = [d.process.pid for d in (cluster.master, *cluster.workers) if d.process is not None]
                executors = executor_pids(cluster_pids[1:])
                spark_info["executor_pids"] = executors
                print(f"# {args.workers} executors registered (JVMs {executors})", flush=True)
        for workload in workloads:
            shape = run_shape(args, broker, spark, spark_info, variants, workload, cluster_pids, executors)
            label = f"{workload['records']:,} x {workload['value_size']} B"
            shape["verdict"] = verdict(shape["summary"], TARGET_ROWS_PER_S, master)
            shape["pair_verdict"] = pair_verdict(shape["summary"], f"{label} on {master}")
            leg["shapes"].append(shape)
    finally:
        if spark is not None:
            spark.stop()
        if cluster is not None:
            cluster.stop()
            left = cluster.pids()
            if left:
                print(f"WARNING: the Spark cluster left processes running: {left}", file=sys.stderr)
    return leg


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=BROKERS, default="tansu", help="tansu (embedded) or kafka (one node)")
    parser.add_argument(
        "--shapes",
        help="comma-separated RECORDSxBYTES topics, e.g. 1mx100,200kx1000 (default: --records x --size on tansu, "
        "1mx100,200kx1000 on kafka)",
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured passes of each Spark variant first")
    parser.add_argument(
        "--variants",
        help=f"comma-separated: {', '.join(VARIANTS)} (default on tansu: {','.join(DEFAULT_VARIANTS['tansu'])}; "
        f"on kafka: {','.join(DEFAULT_VARIANTS['kafka'])})",
    )
    parser.add_argument(
        "--master",
        default="local[2]",
        help="Spark master(s), comma-separated, run in turn on the same topics; 'standalone': a standalone cluster "
        "started here on loopback (a master and --workers one-core workers), e.g. local[2],standalone",
    )
    parser.add_argument("--workers", type=int, default=2, help="workers of the standalone cluster (1 core each)")
    parser.add_argument("--executor-memory", default="1g", help="spark.executor.memory on the standalone cluster")
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more Spark settings")
    parser.add_argument("--arrow-batch-rows", type=int, help="the source's arrowBatchRows (default: the source's)")
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="more options for both sources"
    )
    parser.add_argument("--batch-bytes", type=int, default=262_144, help="producer batch size")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("--quiet-cores", type=float, default=0.3, help="wait for others to use fewer cores first")
    parser.add_argument("--quiet-wait", type=float, default=60.0, help="longest wait for quiet, seconds")
    parser.add_argument(
        "--json", help="write the results here (default: benchmarks/results/spark-<code>.json, -kafka on kafka)"
    )
    parser.add_argument("--report", metavar="JSON", help="print the tables of a saved run and exit")
    parser.add_argument("--child", choices=("consumer",), help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args)
    if args.report:
        print_report(json.loads(Path(args.report).read_text()))
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
