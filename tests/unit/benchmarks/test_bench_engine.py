"""benchmarks/bench_engine.py: the prebuilt records keep each key in one partition with offsets from 0, and both
loops handle every record exactly (``process`` raises otherwise)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.bench_scripts import script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from script("bench_engine")


def test_each_key_lives_in_one_partition_and_offsets_count_from_zero(bench: ModuleType) -> None:
    records = bench.records_of(30, keys=6, partitions=4)
    assert sum(map(len, records.values())) == 30
    for tp, batch in records.items():
        assert [r.offset for r in batch] == list(range(len(batch)))
        assert {int(r.key[1:]) % 4 for r in batch} <= {tp.partition}


def test_both_loops_run_every_record_and_report_a_rate(bench: ModuleType) -> None:
    args = argparse.Namespace(
        records=1_200, keys=10, partitions=2, concurrency=4, ordering="key", loops="loop,process", reps=1
    )
    best = bench.measure(args)
    assert set(best) == {"loop", "process"} and all(rate > 0 and cpu >= 0 for rate, cpu in best.values())
    with pytest.raises(SystemExit):
        bench.main(["--loops", "nope"])
