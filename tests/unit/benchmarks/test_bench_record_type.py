"""benchmarks/bench_record_type.py: both record types decode the same records, and the table's share is the
difference over ours."""

from __future__ import annotations

import math
from collections.abc import Iterator
from types import ModuleType

import pytest

from asyncconsumer.protocol import v2decode
from asyncconsumer.records import ConsumerRecord
from tests.support.bench_scripts import script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from script("bench_record_type")


def test_the_two_record_types_hold_the_same_fields(bench: ModuleType) -> None:
    batch = bench.batch_of(5, 10)
    ours: list[ConsumerRecord] = []
    plain: list[tuple[object, ...]] = []
    v2decode.fill_records(batch, -1, 0, 0, 5, ours, ConsumerRecord, "topic", 0, None)
    v2decode.fill_records(batch, -1, 0, 0, 5, plain, tuple, "topic", 0, None)
    assert [type(r) for r in plain] == [tuple] * 5
    assert [tuple(r) for r in ours] == plain and ours[4].key == b"k4" and ours[4].value == b"x" * 10


def test_a_small_run_gives_a_time_per_pass_and_the_share_of_the_record_type(bench: ModuleType) -> None:
    if v2decode.IMPLEMENTATION != "c":
        pytest.skip("the C decoder is not built here")
    ns = bench.measure(records=20, size=10, reps=1, batches=2)
    assert set(ns) == {"ConsumerRecord", "tuple", "ConsumerRecord, decode only", "tuple, decode only"}
    assert all(math.isfinite(v) and v > 0 for v in ns.values())
    table = bench.markdown({**ns, "ConsumerRecord": 200.0, "tuple": 150.0}, 20, 10)
    assert "| decode, then touch each value | 200 | 150 | 25% |" in table
