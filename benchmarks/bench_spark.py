"""Spark read throughput of the ``asyncconsumer`` data source, against our plain consumer, in one run.

    python benchmarks/bench_spark.py                              # 1M x 100 B, 4 partitions, local[2], 5 reps
    python benchmarks/bench_spark.py --records 200000 --reps 5 --variants spark-arrow,consumer
    python benchmarks/bench_spark.py --report benchmarks/results/spark-XXXXXXX.json   # print a saved run again

Starts an embedded Tansu broker, produces ``--records`` values of ``--size`` bytes into one topic of
``--partitions`` partitions (the last record of every partition in a batch of its own, so that Tansu's
ListOffsets LATEST is the log end), starts one local Spark session (its start-up is reported, not timed), runs
one unmeasured pass of every Spark variant, then the reps, interleaved (rep 1: every variant, rep 2: ...):

- ``spark-arrow``: ``spark.read.format("asyncconsumer")...load().count()``, the Arrow record batch path (the
  executors' batches made from ``Consumer.poll_arrow``'s columns);
- ``spark-tuples``: the same with ``useArrow=false`` (one tuple per row, from ``poll``'s records);
- ``stream-arrow``: ``readStream`` with ``trigger(availableNow=True)`` and ``foreachBatch`` doing
  ``batch.count()``, a fresh checkpoint per run;
- ``consumer``: the non-Spark reference, a fresh subprocess with ``asyncconsumer.Consumer``, manual assignment of
  every partition, ``poll(max_records=10000)`` until the end, summing ``len(value)``.

Every run must see exactly the produced rows, or the run fails (exit 1). Prints rows/s medians and each variant's
ratio to ``consumer`` as a markdown table, and writes every run to ``benchmarks/results/spark-<code>.json``.
See benchmarks/README.md.
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
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_consume import _busy_cpu_s, _process_cpu_s, produce, wait_until_quiet
from benchcommon import RESULT_MARKER, ChildFailed, child_argv, code_version, machine, spawn_child

Result = dict[str, Any]

VARIANTS: dict[str, str] = {
    "spark-arrow": "(a) batch read, `count()`, Arrow batches",
    "spark-tuples": "(b) batch read, `count()`, `useArrow=false`",
    "stream-arrow": "(c) `availableNow` stream, `foreachBatch` `count()`",
    "consumer": "(d) `asyncconsumer.Consumer`, manual assign, no Spark",
}
SPARK_VARIANTS = ("spark-arrow", "spark-tuples", "stream-arrow")
BASELINE = "consumer"
TARGET_ROWS_PER_S = 300_000
"""The first Spark issue's target for every Spark variant on local[2]."""
ARROW_TARGET_ROWS_PER_S = 2 * 903_000
"""Issue 22's target for ``spark-arrow`` on local[2]: twice its 903k rows/s in results/spark-41b3e04.json."""
STALL_S = 30.0
POLL_MAX_RECORDS = 10_000
RESULTS = Path(__file__).resolve().parent / "results"


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


def start_spark(master: str, shuffle_partitions: int) -> tuple[Any, float, dict[str, str]]:
    """A local session on loopback; returns it, the seconds it took (imports included) and its settings."""
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
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession

    import asyncconsumer.spark

    builder = SparkSession.builder.master(master).appName("asyncconsumer-bench-spark")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    asyncconsumer.spark.register(spark)
    return spark, time.perf_counter() - t0, conf


def source_options(bootstrap: str, topic: str, arrow_batch_rows: int | None) -> dict[str, str]:
    """What every Spark variant reads: the whole topic."""
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    if arrow_batch_rows is not None:
        options["arrowBatchRows"] = str(arrow_batch_rows)
    return options


def spark_batch(spark: Any, options: dict[str, str], *, use_arrow: bool) -> Result:
    """From ``load()`` to ``count()``'s answer: driver planning (metadata, offsets), tasks, the reads, the count."""
    t0 = time.perf_counter()
    df = spark.read.format("asyncconsumer").options(**options, useArrow=str(use_arrow).lower()).load()
    rows = df.count()
    return {"rows": rows, "wall_s": time.perf_counter() - t0}


def spark_stream(spark: Any, options: dict[str, str], *, use_arrow: bool, timeout_s: float) -> Result:
    """From ``load()`` to the end of an ``availableNow`` query: offsets, every micro-batch, checkpoint writes."""
    batches: list[tuple[int, int]] = []
    spans: list[tuple[float, float]] = []  # each foreachBatch call: (start, end) seconds after t0

    def count(batch: Any, batch_id: int) -> None:
        begin = time.perf_counter() - t0
        batches.append((batch_id, batch.count()))
        spans.append((begin, time.perf_counter() - t0))

    with tempfile.TemporaryDirectory(prefix="bench-spark-checkpoint-") as checkpoint:
        t0 = time.perf_counter()
        df = spark.readStream.format("asyncconsumer").options(**options, useArrow=str(use_arrow).lower()).load()
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


def measure(run: Callable[[], Result], broker_pid: int | None) -> Result:
    """``run()`` plus what the machine did meanwhile: busy CPU-s of every core, and the broker's share."""
    busy0, broker0, t0 = _busy_cpu_s(), _process_cpu_s(broker_pid), time.perf_counter()
    result = run()
    interval = time.perf_counter() - t0
    busy1, broker1 = _busy_cpu_s(), _process_cpu_s(broker_pid)
    broker = None if broker0 is None or broker1 is None else broker1 - broker0
    busy = None if busy0 is None or busy1 is None else busy1 - busy0
    result["broker_cpu_s"] = broker
    # Spark's JVM, its Python workers and the driver (or the consumer child, imports included), and anyone else
    result["machine_cpu_s"] = None if busy is None else max(0.0, busy - (broker or 0.0))
    result["interval_s"] = interval
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
    args: argparse.Namespace,
) -> Result:
    if variant == "spark-arrow":
        return spark_batch(spark, options, use_arrow=True)
    if variant == "spark-tuples":
        return spark_batch(spark, options, use_arrow=False)
    if variant == "stream-arrow":
        return spark_stream(spark, options, use_arrow=True, timeout_s=args.timeout)
    argv = child_argv(__file__, child="consumer", bootstrap=bootstrap, topic=topic, partitions=len(counts))
    argv += ["--expect", str(sum(counts))]
    result = spawn_child(argv, variant, args.timeout)
    problems = []
    if result["value_bytes"] != sum(counts) * args.size:
        problems.append(f"summed {result['value_bytes']} value bytes, expected {sum(counts) * args.size}")
    positions = {int(p): o for p, o in result["positions"].items()}
    if positions != dict(enumerate(counts)):
        problems.append(f"final positions {positions}, expected {dict(enumerate(counts))}")
    if problems:
        raise ChildFailed(f"{variant}: " + "; ".join(problems))
    return result


def summarise(runs: dict[str, list[Result]]) -> dict[str, Result]:
    summary: dict[str, Result] = {}
    for variant, results in runs.items():
        if not results:
            continue
        rates = [r["rows"] / r["wall_s"] for r in results]
        cpu = [r["client_cpu_s"] / r["rows"] * 1e6 for r in results if r.get("client_cpu_s") is not None]
        broker = [r["broker_cpu_s"] for r in results if r.get("broker_cpu_s") is not None]
        summary[variant] = {
            "reps": len(results),
            "rows_per_s": statistics.median(rates),
            "rows_per_s_min": min(rates),
            "rows_per_s_max": max(rates),
            "wall_s": statistics.median(r["wall_s"] for r in results),
            "client_cpu_s_per_m_rows": statistics.median(cpu) if cpu else None,
            "broker_cpu_s": statistics.median(broker) if broker else None,
        }
    base = summary.get(BASELINE)
    for entry in summary.values():
        entry["ratio_to_consumer"] = entry["rows_per_s"] / base["rows_per_s"] if base else None
    return summary


def _fmt(value: float | None, spec: str) -> str:
    return "?" if value is None else format(value, spec)


def table(summary: dict[str, Result], target: int) -> str:
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
            f"| {_fmt(entry['ratio_to_consumer'], '.2f')}x "
            f"| {entry['wall_s']:.2f} "
            f"| {entry['rows_per_s_min'] / 1e3:,.0f}-{entry['rows_per_s_max'] / 1e3:,.0f} k "
            f"| {entry['reps']} "
            f"| {_fmt(entry['client_cpu_s_per_m_rows'], '.2f')} "
            f"| {_fmt(entry['broker_cpu_s'], '.2f')} | {met} |"
        )
    return "\n".join(lines)


def verdict(summary: dict[str, Result], target: int, master: str) -> str:
    spark = {v: e["rows_per_s"] for v, e in summary.items() if v in SPARK_VARIANTS}
    if not spark:
        return "no Spark variant ran: target not assessed"
    missed = sorted(v for v, rate in spark.items() if rate < target)
    listed = ", ".join(f"{v} {rate / 1e3:,.0f}k" for v, rate in spark.items())
    if not missed:
        return f"target >= {target:,} rows/s on {master}: MET by every Spark variant ({listed})"
    return f"target >= {target:,} rows/s on {master}: NOT MET by {', '.join(missed)} ({listed})"


def arrow_verdict(summary: dict[str, Result], master: str) -> str:
    entry = summary.get("spark-arrow")
    if entry is None:
        return "spark-arrow did not run: the Arrow target not assessed"
    met = "MET" if entry["rows_per_s"] >= ARROW_TARGET_ROWS_PER_S else "NOT MET"
    return f"Arrow target >= {ARROW_TARGET_ROWS_PER_S:,} rows/s on {master}: {met} ({entry['rows_per_s'] / 1e3:,.0f}k)"


def print_report(report: Result) -> None:
    info, spark, workload = report["machine"], report["spark"], report["workload"]
    summary = summarise(report["runs"])
    print(
        f"\n### {workload['records']:,} x {workload['value_size']} B in {workload['partitions']} partitions, ", end=""
    )
    print(f"Spark {spark['master']}, medians of {report['args']['reps']} reps (ratio to consumer)\n")
    print(table(summary, report["target_rows_per_s"]))
    cold = ", ".join(f"{v} {s:.1f} s" for v, s in spark["cold_s"].items())
    print(
        f"\nSpark session start-up (excluded from every timing): {spark['startup_s']:.1f} s; "
        f"first, unmeasured pass of each Spark variant: {cold or 'none'}"
    )
    base = report["runs"].get(BASELINE)
    if base:
        poll = statistics.median(r["rows"] / r["poll_wall_s"] for r in base)
        print(f"consumer from its first poll only (as bench_consume.py measures): {poll / 1e3:,.0f} k rows/s")
    stream = [r for r in report["runs"].get("stream-arrow", []) if r.get("foreach_batch_s")]
    if stream:
        before = statistics.median(r["foreach_batch_s"][0][0] for r in stream)
        inside = statistics.median(sum(end - begin for begin, end in r["foreach_batch_s"]) for r in stream)
        print(
            f"stream-arrow: {before:.2f} s from load() to the first foreachBatch call (query start, offsets, "
            f"checkpoint), {inside:.2f} s inside foreachBatch (medians)"
        )
    print(verdict(summary, report["target_rows_per_s"], spark["master"]))
    print(arrow_verdict(summary, spark["master"]))
    print(f"machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, code {info['code']}")


def java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = done.stderr.strip().splitlines()
    return lines[0] if lines else "unknown"


def parent_main(args: argparse.Namespace) -> int:
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        print(f"unknown variant(s) {unknown}; choose from {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    if args.records < args.partitions:
        print("--records must be at least --partitions", file=sys.stderr)
        return 2
    from asyncconsumer.tools.embedded_broker import EmbeddedBroker

    info = machine(("aiokafka", "pyspark", "pyarrow"))
    info["java"] = java_version()
    info["code"] = code_version()
    out = Path(args.json) if args.json else RESULTS / f"spark-{info['code']}.json"
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(
        f"# pyspark {info['pyspark']}, pyarrow {info['pyarrow']}, {info['java']}; asyncconsumer code at {info['code']}"
    )
    broker = EmbeddedBroker.start()
    spark: Any = None
    try:
        version = subprocess.run([broker.binary, "--version"], capture_output=True, text=True, check=False)
        info["broker"] = version.stdout.strip() or "tansu (version unknown)"
        bootstrap = broker.bootstrap_servers
        topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, args.partitions)
        t0 = time.perf_counter()
        counts = produce_topic(bootstrap, topic, args.partitions, args.records, args.size, args.batch_bytes)
        produce_s = time.perf_counter() - t0
        check_log_ends(bootstrap, topic, counts)
        print(
            f"# broker {bootstrap} ({info['broker']}); topic {topic}: {args.records:,} x {args.size} B in "
            f"{args.partitions} partitions, produced in {produce_s:.1f} s, log ends {counts}"
        )
        spark_info: Result = {"master": args.master, "startup_s": None, "cold_s": {}, "conf": {}}
        options = source_options(bootstrap, topic, args.arrow_batch_rows)
        if any(v in SPARK_VARIANTS for v in variants):
            spark, spark_info["startup_s"], spark_info["conf"] = start_spark(args.master, args.shuffle_partitions)
            print(f"# Spark {args.master} session started in {spark_info['startup_s']:.1f} s (not timed below)")
        report: Result = {
            "machine": info,
            "args": vars(args),
            "workload": {
                "records": args.records,
                "value_size": args.size,
                "partitions": args.partitions,
                "topic": topic,
                "produce_s": produce_s,
                "counts": counts,
            },
            "spark": spark_info,
            "target_rows_per_s": TARGET_ROWS_PER_S,
            "runs": {v: [] for v in variants},
        }
        for variant in [v for v in variants if v in SPARK_VARIANTS] * args.warmup:
            result = run_variant(variant, spark, options, bootstrap, topic, counts, args)  # Python workers, JIT
            spark_info["cold_s"].setdefault(variant, result["wall_s"])
            print(f"  warm-up {variant:<13} {result['wall_s']:6.2f} s (not counted)", flush=True)
        for rep in range(1, args.reps + 1):
            for variant in variants:
                load = wait_until_quiet(broker.pid, args.quiet_cores, args.quiet_wait)
                if load is not None and load >= args.quiet_cores:
                    print(f"  (machine still busy: {load:.2f} cores used by others; measuring anyway)")
                run = functools.partial(run_variant, variant, spark, options, bootstrap, topic, counts, args)
                result = measure(run, broker.pid)
                result["others_before_cores"] = load
                if result["rows"] != sum(counts):
                    raise ChildFailed(f"{variant} rep {rep}: {result['rows']} rows, expected exactly {sum(counts)}")
                report["runs"][variant].append(result)
                print(
                    f"  rep {rep} {variant:<13} {result['rows'] / result['wall_s'] / 1e3:7.0f} k rows/s "
                    f"{result['wall_s']:6.2f} s  CPU (all but broker) {_fmt(result['client_cpu_s'], '.2f')} s  "
                    f"broker CPU {_fmt(result['broker_cpu_s'], '.2f')} s",
                    flush=True,
                )
        summary = summarise(report["runs"])
        report["summary"] = summary
        report["verdict"] = verdict(summary, TARGET_ROWS_PER_S, args.master)
        report["arrow_verdict"] = arrow_verdict(summary, args.master)
        info["code_at_end"] = code_version()
        if info["code_at_end"] != info["code"]:
            print(
                f"\nWARNING: asyncconsumer's code changed during the run ({info['code']} -> {info['code_at_end']}); "
                "Spark's Python workers may have measured either",
                file=sys.stderr,
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2))
        print_report(report)
        print(f"results: {out}")
    except ChildFailed as exc:
        print(f"FAILED {exc}", file=sys.stderr)
        return 1
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured passes of each Spark variant first")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated: {', '.join(VARIANTS)}")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    parser.add_argument("--arrow-batch-rows", type=int, help="the source's arrowBatchRows (default: the source's)")
    parser.add_argument("--batch-bytes", type=int, default=262_144, help="producer batch size")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    parser.add_argument("--quiet-cores", type=float, default=0.3, help="wait for others to use fewer cores first")
    parser.add_argument("--quiet-wait", type=float, default=60.0, help="longest wait for quiet, seconds")
    parser.add_argument("--json", help="write the results here (default: benchmarks/results/spark-<code>.json)")
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
