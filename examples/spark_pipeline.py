"""A whole Spark pipeline over Kafka with the ``asyncconsumer`` data source, against an embedded broker.

    .venv/bin/python examples/spark_pipeline.py                 # everything in a temporary directory
    .venv/bin/python examples/spark_pipeline.py --out /tmp/pipe # keep the checkpoint and the Parquet output

1. Starts an embedded Tansu broker and produces ``--events`` JSON events ``{"user", "amount", "ts"}`` (``ts`` in
   epoch milliseconds) to a topic, each user's events to one partition (as a producer keyed by user would).
2. Runs a streaming query, ``trigger(availableNow=True)`` with ``maxOffsetsPerTrigger``: every micro-batch
   parses the JSON (``from_json``), sums the amounts per 10-second event-time window and user, and writes the
   result to Parquet at ``aggregates/batch_id=N`` with mode overwrite, so a batch Spark replays after a failure
   replaces its own output instead of adding to it. ``with_group_commit`` then commits the batch's end offsets
   to a Kafka consumer group (lag tools see the pipeline; Spark's checkpoint stays the source of truth).
3. Reads the Parquet output back and checks it against what was produced: every (window, user) total, the sum
   of all amounts, the event count; and that the group's committed offsets are the log ends. Exit code 0 and
   a line starting with ``SUCCESS`` if everything checks out, 1 otherwise.

Each batch's Parquet holds that batch's aggregates; a window whose events span two batches has a row in each,
so readers sum over ``batch_id`` (as step 3 does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from asyncconsumer import Consumer, TopicPartition
from asyncconsumer.spark import with_group_commit
from asyncconsumer.tools.embedded_broker import EmbeddedBroker

WINDOW_MS = 10_000
BASE_TS_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: a fixed start, so every run produces the same events
MARKER = ".spark_pipeline"
"""Written into ``--out``: a directory holding it is this script's, and a new run may replace it."""

Event = dict[str, Any]


def make_events(count: int, users: int, span_s: int, seed: int) -> list[Event]:
    """``count`` events over ``span_s`` seconds of event time, in time order, amounts 1..500."""
    rng = random.Random(seed)
    names = [f"user-{i:02d}" for i in range(users)]
    events: list[Event] = [
        {
            "user": rng.choice(names),
            "amount": rng.randint(1, 500),
            "ts": BASE_TS_MS + rng.randrange(span_s * 1000),
        }
        for _ in range(count)
    ]
    events.sort(key=lambda e: e["ts"])
    return events


def partition_of(user: str, partitions: int) -> int:
    return int(user.rsplit("-", 1)[1]) % partitions


async def produce_async(bootstrap: str, topic: str, partitions: int, events: list[Event]) -> dict[int, int]:
    """Every event as JSON to its user's partition; returns how many went to each partition.

    Tansu answers ListOffsets LATEST with the last batch's base offset + 1, so each partition's last event is sent
    alone, after the rest was acknowledged: the log end Spark plans up to is then every produced event.
    """
    by_partition: dict[int, list[bytes]] = defaultdict(list)
    keys: dict[int, list[bytes]] = defaultdict(list)
    for event in events:
        p = partition_of(event["user"], partitions)
        by_partition[p].append(json.dumps(event).encode())
        keys[p].append(event["user"].encode())
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, max_batch_size=262_144)
    await producer.start()
    try:
        pending = [
            await producer.send(topic, value, key=key, partition=p)
            for p, values in by_partition.items()
            for key, value in zip(keys[p][:-1], values[:-1], strict=True)
        ]
        await asyncio.gather(*pending)
        for p, values in by_partition.items():  # one single-record batch per partition, last
            await producer.send_and_wait(topic, values[-1], key=keys[p][-1], partition=p)
    finally:
        await producer.stop()
    return {p: len(values) for p, values in by_partition.items()}


def expected_totals(events: list[Event]) -> dict[tuple[int, str], tuple[int, int]]:
    """(window start ms, user) -> (sum of amounts, events), computed without Spark."""
    totals: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    for event in events:
        entry = totals[(event["ts"] - event["ts"] % WINDOW_MS, event["user"])]
        entry[0] += event["amount"]
        entry[1] += 1
    return {key: (amount, n) for key, (amount, n) in totals.items()}


def start_spark() -> Any:
    """A local[2] session on loopback, quiet, with the ``asyncconsumer`` format registered."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # Spark's Python workers must import asyncconsumer too
    from pyspark.sql import SparkSession

    import asyncconsumer.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("asyncconsumer-spark-pipeline")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    asyncconsumer.spark.register(spark)
    return spark


class WindowedTotals:
    """The ``foreachBatch`` function: JSON -> per (10 s window, user) totals -> Parquet, by batch id."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self.batches: list[dict[str, Any]] = []

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        t0 = time.perf_counter()
        events = batch.select(
            F.from_json(F.col("value").cast("string"), "user string, amount long, ts long").alias("e")
        ).select("e.user", "e.amount", F.timestamp_millis(F.col("e.ts")).alias("event_time"))
        totals = (
            events.groupBy(F.window("event_time", f"{WINDOW_MS // 1000} seconds"), "user")
            .agg(F.sum("amount").alias("amount"), F.count("*").alias("events"))
            .select(
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                "user",
                "amount",
                "events",
            )
        )
        path = self.output / f"batch_id={batch_id}"
        totals.coalesce(1).write.mode("overwrite").parquet(str(path))  # a replayed batch replaces its output
        self.batches.append({"batch_id": batch_id, "rows": batch.count(), "seconds": time.perf_counter() - t0})


@contextmanager
def work_dir(out: str | None) -> Iterator[Path]:
    """A temporary directory, or ``--out`` (made fresh: a kept run's checkpoint names offsets of a broker that is
    gone with the run)."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix="spark-pipeline-") as tmp:
            yield Path(tmp)
        return
    path = Path(out)
    if path.exists() and any(path.iterdir()):
        if not (path / MARKER).exists():
            raise SystemExit(f"--out {path}: not empty and not an earlier output of this script; choose another")
        for child in ("checkpoint", "aggregates"):
            shutil.rmtree(path / child, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text("output of examples/spark_pipeline.py; replaced by its next run with this --out\n")
    yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=12)
    parser.add_argument("--span", type=int, default=120, help="seconds of event time the events cover")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=6_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", help="keep the checkpoint and Parquet output here (default: a temporary directory)")
    args = parser.parse_args(argv)

    events = make_events(args.events, args.users, args.span, args.seed)
    produced_amount = sum(e["amount"] for e in events)
    topic = f"events-{uuid.uuid4().hex[:6]}"
    group_id = f"spark-pipeline-{uuid.uuid4().hex[:6]}"
    with EmbeddedBroker.start() as broker, work_dir(args.out) as root:
        bootstrap = broker.bootstrap_servers
        broker.create_topic(topic, args.partitions)
        t0 = time.perf_counter()
        per_partition = asyncio.run(produce_async(bootstrap, topic, args.partitions, events))
        print(
            f"produced {len(events):,} events ({args.users} users, {args.span} s of event time, sum of amounts "
            f"{produced_amount:,}) to {topic} on {bootstrap} in {time.perf_counter() - t0:.2f} s; "
            f"per partition {dict(sorted(per_partition.items()))}"
        )

        t0 = time.perf_counter()
        spark = start_spark()
        print(f"Spark local[2] session started in {time.perf_counter() - t0:.1f} s; working in {root}")
        try:
            sink = WindowedTotals(root / "aggregates")
            source = (
                spark.readStream.format("asyncconsumer")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic)
                .option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
                .load()
            )
            process = with_group_commit(sink, group_id=group_id, bootstrap_servers=bootstrap)
            totals_s: dict[int, float] = {}

            def timed(batch: Any, batch_id: int) -> None:  # only to print how long each batch took, commit included
                started = time.perf_counter()
                process(batch, batch_id)
                totals_s[batch_id] = time.perf_counter() - started

            t0 = time.perf_counter()
            query = (
                source.writeStream.foreachBatch(timed)
                .option("checkpointLocation", str(root / "checkpoint"))
                .trigger(availableNow=True)
                .start()
            )
            if not query.awaitTermination(600):
                query.stop()
                print("FAILED: the query did not finish within 600 s")
                return 1
            query_s = time.perf_counter() - t0
            rows = sum(b["rows"] for b in sink.batches)
            print(f"\nstreaming query: {len(sink.batches)} micro-batches, {rows:,} rows in {query_s:.1f} s")
            for b in sink.batches:
                commit_s = totals_s.get(b["batch_id"], b["seconds"]) - b["seconds"]
                print(
                    f"  batch {b['batch_id']}: {b['rows']:,} rows, {b['seconds']:.2f} s to parse, aggregate and "
                    f"write Parquet, {commit_s:.2f} s to commit the group offsets"
                )
            return check(spark, root / "aggregates", events, produced_amount, rows, bootstrap, topic, group_id, query_s)
        finally:
            spark.stop()


def check(
    spark: Any,
    aggregates: Path,
    events: list[Event],
    produced_amount: int,
    rows: int,
    bootstrap: str,
    topic: str,
    group_id: str,
    query_s: float,
) -> int:
    """What the pipeline wrote and committed, against what was produced; prints it all, returns the exit code."""
    from pyspark.sql import functions as F

    problems: list[str] = []
    written = spark.read.parquet(str(aggregates))  # batch_id comes back as a column from the directory names
    parquet_rows = written.count()
    batch_ids = sorted(r.batch_id for r in written.select("batch_id").distinct().collect())
    totals = {
        (r.window_ms, r.user): (r.amount, r.events)
        for r in written.groupBy(F.unix_millis("window_start").alias("window_ms"), "user")
        .agg(F.sum("amount").alias("amount"), F.sum("events").alias("events"))
        .collect()
    }
    expected = expected_totals(events)
    aggregated_amount = sum(amount for amount, _ in totals.values())
    aggregated_events = sum(n for _, n in totals.values())
    print(
        f"\nParquet in {aggregates}: {parquet_rows} rows over batch_id {batch_ids}, "
        f"{len(totals)} (window, user) totals in {len({w for w, _ in totals})} windows of {WINDOW_MS // 1000} s"
    )
    print(f"  sum of amounts: aggregated {aggregated_amount:,}, produced {produced_amount:,}")
    print(f"  events:         aggregated {aggregated_events:,}, produced {len(events):,} (rows read {rows:,})")
    if aggregated_amount != produced_amount:
        problems.append(f"sum of amounts {aggregated_amount} != produced {produced_amount}")
    if aggregated_events != len(events) or rows != len(events):
        problems.append(f"{aggregated_events} events aggregated and {rows} rows read; {len(events)} produced")
    wrong = sorted(k for k in expected.keys() | totals.keys() if expected.get(k) != totals.get(k))
    if wrong:
        problems.append(f"{len(wrong)} (window, user) totals differ from the produced events, e.g. {wrong[:3]}")
    else:
        print(f"  every one of the {len(expected)} (window, user) totals equals the produced events'")
    top = sorted(totals.items(), key=lambda kv: -kv[1][0])[:3]
    for (window_ms, user), (amount, n) in top:
        start = time.strftime("%H:%M:%S", time.gmtime(window_ms / 1000))
        print(f"  largest: window {start} UTC, {user}: {amount:,} over {n} events")

    with Consumer(bootstrap, group_id=group_id, enable_auto_commit=False) as consumer:
        tps = [TopicPartition(topic, p.partition) for p in consumer.partitions_for(topic)]
        ends = consumer.end_offsets(tps)
        committed = consumer.committed(tps)
    print(f"\nconsumer group {group_id!r}: committed offset / log end per partition")
    for tp in sorted(tps):
        offset = committed.get(tp)
        got = None if offset is None else offset.offset
        print(f"  {tp.topic}-{tp.partition}: {got} / {ends[tp]}{'' if got == ends[tp] else '  <- lag'}")
        if got != ends[tp]:
            problems.append(f"{tp}: committed {got}, log end {ends[tp]}")

    print(
        f"\nthroughput: {rows / query_s:,.0f} rows/s end to end over the query ({query_s:.1f} s); at this size Spark's "
        "fixed costs dominate (Python workers starting in the first batch, a few jobs per batch): "
        "benchmarks/bench_spark.py measures the source's throughput"
    )
    if problems:
        print("\nFAILED:\n  " + "\n  ".join(problems))
        return 1
    print(
        f"\nSUCCESS: {rows:,} events in {len(batch_ids)} micro-batches -> {len(totals)} windowed totals, "
        f"sum of amounts {aggregated_amount:,} as produced, group offsets at the log ends"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
