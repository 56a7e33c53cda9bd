"""benchmarks/bench_pg_drivers.py's pure parts: the rows it inserts, the cells it plans, the medians and spreads it
reports, the table. Synthetic results only: nothing here starts PostgreSQL (the bench itself does, through the
tests' server, and checks every cell's rows against the database)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import bench_pg_drivers  # type: ignore[import-not-found,unused-ignore]

        yield bench_pg_drivers
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_a_batch_is_consecutive_ids_with_payloads_of_the_set_size(bench: ModuleType) -> None:
    rows = bench.batch(1000, 3)
    assert [row[0] for row in rows] == [1000, 1001, 1002]
    assert {len(row[1].encode()) for row in rows} == {bench.PAYLOAD_BYTES}
    assert rows[0][1].startswith("000000001000")


def test_one_row_transactions_run_once_per_driver_and_batches_once_per_method(bench: ModuleType) -> None:
    plan = bench.cells([1, 10], ["psycopg-sync", "asyncpg"], ["copy", "unnest"])
    assert plan == [
        ("psycopg-sync", "execute", 1),
        ("asyncpg", "execute", 1),
        ("psycopg-sync", "copy", 10),
        ("psycopg-sync", "unnest", 10),
        ("asyncpg", "copy", 10),
        ("asyncpg", "unnest", 10),
    ]


def test_the_summary_takes_each_cells_median_and_spread(bench: ModuleType) -> None:
    def result(txn_per_s: float, cpu: float) -> dict[str, object]:
        return {
            "driver": "asyncpg",
            "method": "copy",
            "n": 10,
            "txn_per_s": txn_per_s,
            "rows_per_s": txn_per_s * 10,
            "client_cpu_s_per_100k_rows": cpu,
            "server_cpu_s_per_100k_rows": None,
        }

    summary = bench.summarize([result(100, 3.0), result(300, 1.0), result(200, 2.0)])
    assert len(summary) == 1
    row = summary[0]
    assert (row["txn_per_s"], row["txn_per_s_min"], row["txn_per_s_max"], row["reps"]) == (200, 100, 300, 3)
    assert row["rows_per_s"] == 2000
    assert row["client_cpu_s_per_100k_rows"] == 2.0
    assert row["server_cpu_s_per_100k_rows"] is None
    context = {
        "server_version": "15.18",
        "server": "given by --dsn",
        "fsync": "on",
        "synchronous_commit": "on",
        "machine": {"cpus": 2, "psycopg": "3.3.9", "asyncpg": "0.32.0"},
        "psycopg_impl": "binary",
        "load_before": 1.0,
        "load_after": 2.0,
        "reps": 3,
        "seconds": 0.5,
    }
    table = bench.markdown(summary, context)
    assert "fsync=on, synchronous_commit=on" in table
    assert "| 10 | asyncpg | copy | 200 (100-300) | 2,000 | 2.00 | - |" in table
