"""Exactly once into PostgreSQL (issue 47) against at-least-once and a hand-written Java-style loop, in one run on
one broker and one server, over batch sizes.

    python benchmarks/bench_eos.py                          # Tansu, 20,000 records, batch sizes 10,100,500
    python benchmarks/bench_eos.py --records 50000 --sizes 1,10,100,1000 --broker kafka

Every mode inserts one row per record (COPY into a table without keys) from a topic of 4 partitions:

- ``exactly-once``: ``process_transactionally(handler, dsn, batch_size=N)``: one transaction per run of N records
  of one partition, with the guarded offset UPDATE; partitions side by side (4 connections).
- ``at-least-once``: ``process(handler, batch_size=N, ordering="none")`` (a batch takes one record per lane, so
  ``"partition"`` would cap it at 4 records), the handler inserting its batch in a transaction of its own on one of
  4 connections, offsets committed to Kafka every 5 s.
- ``java-style``: the loop Java users write: a rebalance listener that reads the offsets table and seeks, then
  ``poll(max_records=N)`` and, per partition polled, one transaction (rows + ``UPDATE offsets``), one after another.

Each mode consumes the whole topic in a new group and database; records/s is records over the time from the first
record handled to the last row committed. Rows are counted after each run: one per record, or the run fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from benchcommon import code_version, default_results_path, start_broker, test_support

from asyncconsumer import AsyncConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition

PARTITIONS = 4
MODES = ("exactly-once", "at-least-once", "java-style")
COPY = 'COPY rows_t (partition, "offset", value) FROM STDIN'


async def _copy(tx: Any, records: list[ConsumerRecord]) -> None:
    async with tx.cursor() as cursor, cursor.copy(COPY) as copy:
        for r in records:
            await copy.write_row((r.partition, r.offset, r.value))


def _count(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute('SELECT count(*), count(DISTINCT (partition, "offset")) FROM rows_t').fetchone()
    assert row is not None
    total, distinct = row
    assert total == distinct, f"{total - distinct} rows doubled"
    return int(total)


async def run_mode(mode: str, bootstrap: str, topic: str, dsn: str, records: int, size: int) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute('DROP TABLE IF EXISTS rows_t; CREATE TABLE rows_t (partition int, "offset" bigint, value bytea)')
        conn.execute("DROP TABLE IF EXISTS asyncconsumer_offsets")
    group = f"bench-eos-{mode}-{uuid.uuid4().hex[:6]}"
    handled = 0
    first: float | None = None
    async with AsyncConsumer(bootstrap, group_id=group, auto_offset_reset="earliest", max_poll_records=10_000) as c:
        if mode == "java-style":
            rate = await _java_style(c, topic, dsn, records, size)
            return {"mode": mode, "batch_size": size, "records_per_s": rate, "rows": _count(dsn)}
        await c.subscribe([topic])
        pool: list[psycopg.AsyncConnection[Any]] = [
            await psycopg.AsyncConnection.connect(dsn, autocommit=True) for _ in range(PARTITIONS)
        ]

        def done(count: int) -> None:
            nonlocal handled, first
            if first is None:
                first = time.perf_counter()
            handled += count
            if handled >= records:
                c.stop_processing()

        async def eos(batch: list[ConsumerRecord], tx: Any) -> None:
            await _copy(tx, batch)
            done(len(batch))

        async def alo(batch: list[ConsumerRecord]) -> None:
            conn = pool.pop()
            try:
                async with conn.transaction():
                    await _copy(conn, batch)
            finally:
                pool.append(conn)
            done(len(batch))

        if mode == "exactly-once":
            await c.process_transactionally(eos, dsn, batch_size=size, concurrency=PARTITIONS)
        else:
            await c.process(alo, batch_size=size, ordering="none", concurrency=PARTITIONS)
        ended = time.perf_counter()
        for conn in pool:
            await conn.close()
    assert first is not None
    return {"mode": mode, "batch_size": size, "records_per_s": records / (ended - first), "rows": _count(dsn)}


async def _java_style(c: AsyncConsumer, topic: str, dsn: str, records: int, size: int) -> float:
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    await conn.execute("DROP TABLE IF EXISTS offsets")
    await conn.execute("CREATE TABLE offsets (partition int PRIMARY KEY, next_offset bigint NOT NULL)")

    class SeekToStored(ConsumerRebalanceListener):
        async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            for tp in partitions:
                row = await (
                    await conn.execute("SELECT next_offset FROM offsets WHERE partition = %s", (tp.partition,))
                ).fetchone()
                if row is not None:
                    await c.seek(tp, row[0])

    await c.subscribe([topic], listener=SeekToStored())
    handled = 0
    first: float | None = None
    while handled < records:
        polled = await c.poll(timeout_ms=500, max_records=size)
        for tp, batch in polled.items():
            if first is None:
                first = time.perf_counter()
            async with conn.transaction():
                await _copy(conn, batch)
                await conn.execute(
                    "INSERT INTO offsets VALUES (%s, %s) ON CONFLICT (partition) DO UPDATE SET next_offset = %s",
                    (tp.partition, batch[-1].offset + 1, batch[-1].offset + 1),
                )
            handled += len(batch)
    ended = time.perf_counter()
    await conn.close()
    assert first is not None
    return records / (ended - first)


async def amain(args: argparse.Namespace) -> list[dict[str, Any]]:
    broker = start_broker(args.broker)
    server = test_support("postgres").PostgresServer.launch()
    try:
        dsn = server.create_database("bench_eos").dsn
        topic = f"bench-eos-{uuid.uuid4().hex[:6]}"
        broker.create_topic(topic, PARTITIONS)
        produce = test_support("produce")
        await produce.produce_values_async(broker.bootstrap_servers, topic, args.records, PARTITIONS, value_size=100)
        results = []
        for size in [int(s) for s in args.sizes.split(",")]:
            for mode in MODES:
                result = await run_mode(mode, broker.bootstrap_servers, topic, dsn, args.records, size)
                assert result["rows"] == args.records, result
                print(f"{mode:>14} batch {size:>5}: {result['records_per_s']:>9,.0f} records/s", flush=True)
                results.append({**result, "broker": broker.description})
        return results
    finally:
        server.close()
        broker.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--sizes", default="10,100,500")
    parser.add_argument("--broker", default="tansu", choices=("tansu", "kafka"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results = asyncio.run(amain(args))
    code = code_version()
    out = args.out or default_results_path("eos", code, broker=args.broker)
    out.write_text(
        json.dumps(
            {"when": datetime.now(UTC).isoformat(), "code": code, "load_before": load, "results": results}, indent=1
        )
    )
    print(f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
