"""PostgreSQL drivers for the exactly-once offset store (issue 47): psycopg 3 async, psycopg 3 sync and asyncpg on the
workload one exactly-once transaction does.

    python benchmarks/bench_pg_drivers.py                      # every driver, method and batch size, 9 reps of 0.5 s
    python benchmarks/bench_pg_drivers.py --seconds 0.5 --reps 1 --sizes 1,100   # a quick check
    python benchmarks/bench_pg_drivers.py --dsn postgresql://me@127.0.0.1:5432/bench   # another server

Without ``--dsn`` it starts a server as the tests do (``tests/support/postgres.py``: Debian's PostgreSQL in a temp
directory on loopback, PostgreSQL's defaults: ``fsync = on``, ``synchronous_commit = on``) and stops it at the end.

One transaction, as the exactly-once path writes it: ``N`` inserts of one row each (a ``bigint`` key and a ~100 B text
payload into a table with a primary key), then one ``UPDATE offsets SET next_offset = ... WHERE part = ... AND
epoch = <token>`` (the fencing token: it must update exactly one row, or the transaction is refused), then COMMIT.
``N`` = 1, 10, 100, 1000. The ``N`` rows go in as the driver allows a batch: ``executemany`` (psycopg 3 and asyncpg
both pipeline it: one round trip), ``copy`` (psycopg's ``cursor.copy`` text COPY, asyncpg's
``copy_records_to_table`` binary COPY) or ``unnest`` (one ``INSERT ... SELECT * FROM unnest($1::bigint[],
$2::text[])``); ``N`` = 1 is one plain ``execute``. One connection, transactions back to back for ``--seconds`` per
cell; cells interleaved over ``--reps`` repetitions, the median reported with the slowest and fastest repetition (on a
shared machine the spread is the load's: short cells and many repetitions give every driver the same conditions).
The table is truncated before every cell (outside the measured time) and its row count checked after it: nothing
lost, nothing doubled.

Measured per cell: transactions/s, rows/s, this process's CPU (``time.process_time``: the driver, and the event loop
for the async ones) and the server's CPU (the postmaster and its children from ``/proc``, when the server is on this
machine), each as CPU-seconds per 100,000 rows. See benchmarks/README.md, "bench_pg_drivers.py".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from benchcommon import code_version, default_results_path, machine, median, test_support, write_json

Result = dict[str, Any]
Rows = list[tuple[int, str]]

DRIVERS = ("psycopg-async", "psycopg-sync", "asyncpg")
METHODS = ("executemany", "copy", "unnest")
SIZES = (1, 10, 100, 1000)
PAYLOAD_BYTES = 100
PART = 0
EPOCH = 7
"""The fencing token the offsets row carries; every measured UPDATE names it."""

SCHEMA = """
DROP TABLE IF EXISTS rows_t;
DROP TABLE IF EXISTS offsets;
CREATE TABLE rows_t (id bigint PRIMARY KEY, payload text NOT NULL);
CREATE TABLE offsets (part int PRIMARY KEY, next_offset bigint NOT NULL, epoch bigint NOT NULL);
INSERT INTO offsets VALUES (0, 0, 7);
"""
INSERT_PS = "INSERT INTO rows_t (id, payload) VALUES (%s, %s)"
INSERT_PG = "INSERT INTO rows_t (id, payload) VALUES ($1, $2)"
UNNEST_PS = "INSERT INTO rows_t (id, payload) SELECT * FROM unnest(%s::bigint[], %s::text[])"
UNNEST_PG = "INSERT INTO rows_t (id, payload) SELECT * FROM unnest($1::bigint[], $2::text[])"
COPY_PS = "COPY rows_t (id, payload) FROM STDIN"
UPDATE_PS = "UPDATE offsets SET next_offset = %s WHERE part = %s AND epoch = %s"
UPDATE_PG = "UPDATE offsets SET next_offset = $1 WHERE part = $2 AND epoch = $3"


class Fenced(RuntimeError):
    """The offsets UPDATE matched no row: the token is stale (what the store will raise, typed, in the library)."""


def batch(first: int, n: int) -> Rows:
    """``n`` rows from id ``first``: the id, then a payload of ``PAYLOAD_BYTES`` bytes."""
    return [(i, f"{i:012d}".ljust(PAYLOAD_BYTES, "x")) for i in range(first, first + n)]


def cells(sizes: Sequence[int], drivers: Sequence[str], methods: Sequence[str]) -> list[tuple[str, str, int]]:
    return [
        (driver, method, n) for n in sizes for driver in drivers for method in (("execute",) if n == 1 else methods)
    ]


# --- one transaction per driver -----------------------------------------------------------------------------------


def psycopg_sync_txn(conn: psycopg.Connection[Any], method: str, rows: Rows, epoch: int = EPOCH) -> None:
    with conn.cursor() as cur:
        if method == "execute":
            cur.execute(INSERT_PS, rows[0])
        elif method == "executemany":
            cur.executemany(INSERT_PS, rows)
        elif method == "copy":
            with cur.copy(COPY_PS) as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cur.execute(UNNEST_PS, ([r[0] for r in rows], [r[1] for r in rows]))
        cur.execute(UPDATE_PS, (rows[-1][0] + 1, PART, epoch))
        if cur.rowcount != 1:
            conn.rollback()
            raise Fenced(f"offsets row of partition {PART} not at epoch {epoch}")
    conn.commit()


async def psycopg_async_txn(conn: psycopg.AsyncConnection[Any], method: str, rows: Rows, epoch: int = EPOCH) -> None:
    async with conn.cursor() as cur:
        if method == "execute":
            await cur.execute(INSERT_PS, rows[0])
        elif method == "executemany":
            await cur.executemany(INSERT_PS, rows)
        elif method == "copy":
            async with cur.copy(COPY_PS) as copy:
                for row in rows:
                    await copy.write_row(row)
        else:
            await cur.execute(UNNEST_PS, ([r[0] for r in rows], [r[1] for r in rows]))
        await cur.execute(UPDATE_PS, (rows[-1][0] + 1, PART, epoch))
        if cur.rowcount != 1:
            await conn.rollback()
            raise Fenced(f"offsets row of partition {PART} not at epoch {epoch}")
    await conn.commit()


async def asyncpg_txn(conn: Any, method: str, rows: Rows, epoch: int = EPOCH) -> None:
    async with conn.transaction():
        if method == "execute":
            await conn.execute(INSERT_PG, *rows[0])
        elif method == "executemany":
            await conn.executemany(INSERT_PG, rows)
        elif method == "copy":
            await conn.copy_records_to_table("rows_t", records=rows, columns=["id", "payload"])
        else:
            await conn.execute(UNNEST_PG, [r[0] for r in rows], [r[1] for r in rows])
        status = await conn.execute(UPDATE_PG, rows[-1][0] + 1, PART, epoch)
        if status != "UPDATE 1":  # raising inside the block rolls the transaction back
            raise Fenced(f"offsets row of partition {PART} not at epoch {epoch} ({status})")


# --- measuring ----------------------------------------------------------------------------------------------------


def server_cpu_s(postmaster: int | None) -> float:
    """CPU-seconds of the postmaster and its children so far (0.0 when the server is not on this machine)."""
    if postmaster is None:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(entry.name) == postmaster or int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


class Meter:
    """Counts transactions and rows of one cell, with wall time and both CPUs."""

    def __init__(self, postmaster: int | None) -> None:
        self.postmaster = postmaster
        self.wall = time.perf_counter()
        self.cpu = time.process_time()
        self.server = server_cpu_s(postmaster)

    def result(self, driver: str, method: str, n: int, txns: int) -> Result:
        wall = time.perf_counter() - self.wall
        cpu = time.process_time() - self.cpu
        server = server_cpu_s(self.postmaster) - self.server
        rows = txns * n
        return {
            "driver": driver,
            "method": method,
            "n": n,
            "transactions": txns,
            "rows": rows,
            "seconds": wall,
            "txn_per_s": txns / wall,
            "rows_per_s": rows / wall,
            "client_cpu_s_per_100k_rows": cpu / rows * 100_000,
            "server_cpu_s_per_100k_rows": server / rows * 100_000 if self.postmaster is not None else None,
        }


def reset(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE rows_t")
        conn.execute("UPDATE offsets SET next_offset = 0, epoch = %s WHERE part = %s", (EPOCH, PART))


def check(dsn: str, result: Result) -> None:
    """Every row of the cell landed once, and the offsets row points past the last."""
    with psycopg.connect(dsn) as conn:
        count, low, high = conn.execute("SELECT count(*), min(id), max(id) FROM rows_t").fetchone() or (0, 0, 0)
        (next_offset,) = conn.execute("SELECT next_offset FROM offsets WHERE part = 0").fetchone() or (None,)
    rows = result["rows"]
    if (count, low, high, next_offset) != (rows, 0, rows - 1, rows):
        raise RuntimeError(
            f"{result['driver']} {result['method']} n={result['n']}: {count} rows {low}..{high}, "
            f"offset {next_offset}; expected {rows} rows 0..{rows - 1}, offset {rows}"
        )


def run_sync(dsn: str, method: str, n: int, seconds: float, postmaster: int | None) -> Result:
    with psycopg.connect(dsn) as conn:
        psycopg_sync_txn(conn, method, batch(10**12, n))  # warm: prepared statements, first round trips
        conn.execute("DELETE FROM rows_t")
        conn.commit()
        meter, txns, deadline = Meter(postmaster), 0, time.perf_counter() + seconds
        while time.perf_counter() < deadline or txns < 3:
            psycopg_sync_txn(conn, method, batch(txns * n, n))
            txns += 1
        return meter.result("psycopg-sync", method, n, txns)


async def run_async(driver: str, dsn: str, method: str, n: int, seconds: float, postmaster: int | None) -> Result:
    txn: Callable[[Any, str, Rows], Any]
    if driver == "asyncpg":
        import asyncpg  # only in [bench]: the bench's pure parts are tested with [test]

        conn: Any = await asyncpg.connect(dsn)
        txn, close = asyncpg_txn, conn.close
    else:
        conn = await psycopg.AsyncConnection.connect(dsn)
        txn, close = psycopg_async_txn, conn.close
    try:
        await txn(conn, method, batch(10**12, n))
        await (conn.execute("DELETE FROM rows_t") if driver == "asyncpg" else _psycopg_delete(conn))
        meter, txns, deadline = Meter(postmaster), 0, time.perf_counter() + seconds
        while time.perf_counter() < deadline or txns < 3:
            await txn(conn, method, batch(txns * n, n))
            txns += 1
        return meter.result(driver, method, n, txns)
    finally:
        await close()


async def _psycopg_delete(conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.execute("DELETE FROM rows_t")
    await conn.commit()


def run_cell(driver: str, dsn: str, method: str, n: int, seconds: float, postmaster: int | None) -> Result:
    reset(dsn)
    if driver == "psycopg-sync":
        result = run_sync(dsn, method, n, seconds, postmaster)
    else:
        result = asyncio.run(run_async(driver, dsn, method, n, seconds, postmaster))
    check(dsn, result)
    return result


def check_fencing(dsn: str) -> dict[str, bool]:
    """Each driver's transaction with a stale token raises Fenced and leaves none of its rows behind."""
    outcomes: dict[str, bool] = {}
    for driver in DRIVERS:
        reset(dsn)
        try:
            if driver == "psycopg-sync":
                with psycopg.connect(dsn) as conn:
                    psycopg_sync_txn(conn, "executemany", batch(0, 10), epoch=EPOCH - 1)
            else:
                asyncio.run(_fenced_async(driver, dsn))
            outcomes[driver] = False
        except Fenced:
            with psycopg.connect(dsn) as conn:
                (count,) = conn.execute("SELECT count(*) FROM rows_t").fetchone() or (None,)
            outcomes[driver] = count == 0
    return outcomes


async def _fenced_async(driver: str, dsn: str) -> None:
    if driver == "asyncpg":
        import asyncpg

        conn = await asyncpg.connect(dsn)
        try:
            await asyncpg_txn(conn, "executemany", batch(0, 10), epoch=EPOCH - 1)
        finally:
            await conn.close()
    else:
        async with await psycopg.AsyncConnection.connect(dsn) as aconn:
            await psycopg_async_txn(aconn, "executemany", batch(0, 10), epoch=EPOCH - 1)


# --- the run --------------------------------------------------------------------------------------------------------


def summarize(results: list[Result]) -> list[Result]:
    """The median of each cell's repetitions (by rows/s), in the order the cells were first run."""
    grouped: dict[tuple[str, str, int], list[Result]] = {}
    for result in results:
        grouped.setdefault((result["driver"], result["method"], result["n"]), []).append(result)
    summary = []
    for (driver, method, n), reps in grouped.items():
        row: Result = {"driver": driver, "method": method, "n": n, "reps": len(reps)}
        for key in ("txn_per_s", "rows_per_s", "client_cpu_s_per_100k_rows", "server_cpu_s_per_100k_rows"):
            row[key] = median([r[key] for r in reps])
        row["txn_per_s_min"] = min(r["txn_per_s"] for r in reps)
        row["txn_per_s_max"] = max(r["txn_per_s"] for r in reps)
        summary.append(row)
    return summary


def markdown(summary: list[Result], context: Result) -> str:
    lines = [
        f"PostgreSQL {context['server_version']} ({context['server']}), fsync={context['fsync']}, "
        f"synchronous_commit={context['synchronous_commit']}; {context['machine']['cpus']} CPUs, "
        f"load average {context['load_before']:.1f} before, {context['load_after']:.1f} after; "
        f"psycopg {context['machine']['psycopg']} ({context['psycopg_impl']}), "
        f"asyncpg {context['machine']['asyncpg']}; "
        f"median of {context['reps']} x {context['seconds']} s per cell",
        "",
        "| N rows/txn | driver | method | txn/s (min-max) | rows/s | client CPU-s/100k rows | server CPU-s/100k rows |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    for row in summary:
        server = row["server_cpu_s_per_100k_rows"]
        lines.append(
            f"| {row['n']} | {row['driver']} | {row['method']} | {row['txn_per_s']:,.0f} "
            f"({row['txn_per_s_min']:,.0f}-{row['txn_per_s_max']:,.0f}) | {row['rows_per_s']:,.0f} "
            f"| {row['client_cpu_s_per_100k_rows']:.2f} | {'-' if server is None else f'{server:.2f}'} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="an existing server's database (default: start one as the tests do)")
    parser.add_argument("--seconds", type=float, default=0.5, help="measured time per cell and repetition")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="rows per transaction, comma-separated")
    parser.add_argument("--drivers", default=",".join(DRIVERS))
    parser.add_argument("--methods", default=",".join(METHODS), help="batch methods for N > 1")
    parser.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/pg-drivers-<code>.json)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    drivers = [d for d in args.drivers.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted({*drivers} - {*DRIVERS}) + sorted({*methods} - {*METHODS})
    if unknown:
        print(f"unknown drivers or methods: {', '.join(unknown)}", file=sys.stderr)
        return 2
    server = None
    if args.dsn:
        dsn, postmaster, where = args.dsn, None, "given by --dsn"
    else:
        postgres = test_support("postgres")
        server = postgres.PostgresServer.launch()
        dsn, postmaster = server.create_database("bench").dsn, server.pid
        where = "started by the bench on loopback (tests/support/postgres.py)"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(SCHEMA)
            settings = {
                name: str((conn.execute(f"SHOW {name}").fetchone() or ("?",))[0])
                for name in ("server_version", "fsync", "synchronous_commit", "wal_sync_method", "shared_buffers")
            }
        fencing = check_fencing(dsn)
        if not all(fencing.values()):
            print(f"a stale token was not refused cleanly: {fencing}", file=sys.stderr)
            return 1
        load_before = os.getloadavg()[0]
        plan = cells(sizes, drivers, methods)
        results: list[Result] = []
        for rep in range(args.reps):
            for driver, method, n in plan:
                result = run_cell(driver, dsn, method, n, args.seconds, postmaster)
                result["rep"] = rep
                result["load"] = os.getloadavg()[0]
                results.append(result)
                print(
                    f"rep {rep} n={n:<5} {driver:<14} {method:<12} {result['txn_per_s']:>8,.0f} txn/s "
                    f"{result['rows_per_s']:>10,.0f} rows/s",
                    flush=True,
                )
        load_after = os.getloadavg()[0]
    finally:
        if server is not None:
            server.close()
    code = code_version()
    context: Result = {
        "bench": "bench_pg_drivers",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "code": code,
        "server": where,
        **settings,
        "psycopg_impl": psycopg.pq.__impl__,
        "machine": machine(("psycopg", "asyncpg")),
        "load_before": load_before,
        "load_after": load_after,
        "reps": args.reps,
        "seconds": args.seconds,
        "payload_bytes": PAYLOAD_BYTES,
        "fencing_refused": fencing,
    }
    summary = summarize(results)
    table = markdown(summary, context)
    print("\n" + table)
    out = args.out or default_results_path("pg-drivers", code)
    write_json(out, {"context": context, "summary": summary, "results": results}, indent=1, end="\n")
    out.with_suffix(".md").write_text(table)
    print(f"results: {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
