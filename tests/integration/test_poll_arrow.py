"""``poll_arrow`` against the real brokers: the same rows, positions, commits, seeks, pauses and groups as ``poll``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

import pyarrow as pa
import pytest

from asyncconsumer import AsyncConsumer, Consumer, TopicPartition
from tests.conftest import Broker, TopicFactory
from tests.support.groups import group_consumer, new_group_id
from tests.support.produce import ProducedRecord, ProduceHelper
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

TIMEOUT_S = 30.0

Row = tuple[int, int, bytes | None, bytes | None]


def rows(tables: Iterable[pa.Table]) -> list[Row]:
    """(partition, offset, key, value) of every row, in the order returned."""
    out: list[Row] = []
    for table in tables:
        cols = table.select(["partition", "offset", "key", "value"]).to_pydict()
        out += zip(cols["partition"], cols["offset"], cols["key"], cols["value"], strict=True)
    return out


def by_partition(got: Iterable[Row]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for partition, offset, _, _ in got:
        out.setdefault(partition, []).append(offset)
    return out


def produced_offsets(produced: dict[int, list[ProducedRecord]]) -> dict[int, list[int]]:
    return {p: [r.offset for r in recs] for p, recs in produced.items() if recs}


async def arrow_until(consumer: AsyncConsumer, count: int, max_records: int = 500, **kw: bool) -> list[pa.Table]:
    """Tables from ``poll_arrow`` until ``count`` rows came (fails past ``TIMEOUT_S``)."""
    tables: list[pa.Table] = []
    got = 0
    deadline = time.monotonic() + TIMEOUT_S
    while got < count:
        assert time.monotonic() < deadline, f"{got} of {count} rows within {TIMEOUT_S} s"
        table = await consumer.poll_arrow(timeout_ms=200, max_records=max_records, **kw)
        assert table.num_rows <= max_records
        got += table.num_rows
        if table.num_rows:
            tables.append(table)
    assert got == count, f"{got} rows, {count} wanted"
    return tables


async def test_poll_arrow_returns_every_record_once_with_every_column(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = produce.values(
        name,
        1_000,
        4,
        value_size=40,
        key=lambda i: None if i % 7 == 0 else b"k%d" % i,
        headers=lambda i: [("i", str(i).encode()), ("none", None)] if i % 2 else [],
    )
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(4)])
        tables = await arrow_until(consumer, 1_000, max_records=300, include_headers=True)
        assert (await consumer.poll_arrow(timeout_ms=300)).num_rows == 0  # nothing more, nothing twice
        positions = {tp.partition: await consumer.position(tp) for tp in consumer.assignment()}
    table = pa.concat_tables(tables)
    assert table.schema.names == [
        "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers"
    ]  # fmt: skip
    assert table.schema.field("topic").type == pa.dictionary(pa.int32(), pa.string())
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert by_partition(rows(tables)) == produced_offsets(produced)
    wanted = {(r.partition, r.offset): r for recs in produced.values() for r in recs}
    for row in table.to_pylist():
        source = wanted[(row["partition"], row["offset"])]
        assert row["topic"] == name
        assert (row["key"], row["value"]) == (source.key, source.value)
        assert [(h["key"], h["value"]) for h in row["headers"]] == list(source.headers)
        assert int(row["timestamp"].timestamp() * 1000) == source.timestamp_ms
        assert row["timestamp_type"] == 0
    assert positions == {p: len(recs) for p, recs in produced.items()}


async def test_poll_and_poll_arrow_interleaved_lose_and_repeat_nothing(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produced = produce.values(name, 600, 2, value_size=20)
    got: list[Row] = []
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        deadline = time.monotonic() + TIMEOUT_S
        turn = 0
        while len(got) < 600:
            assert time.monotonic() < deadline, f"{len(got)} of 600 records"
            if turn % 2:
                got += rows([await consumer.poll_arrow(timeout_ms=200, max_records=37)])
            else:
                batch = await consumer.poll(timeout_ms=200, max_records=23)
                got += [(r.partition, r.offset, r.key, r.value) for r in batch.records()]
            turn += 1
    assert {p: sorted(offsets) for p, offsets in by_partition(got).items()} == produced_offsets(produced)
    assert len(got) == len(set(got)) == 600


async def test_seek_and_pause_apply_to_poll_arrow(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(2)
    produce.values(name, 40, 2)
    p0, p1 = TopicPartition(name, 0), TopicPartition(name, 1)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([p0, p1])
        await consumer.pause(p1)
        first = await arrow_until(consumer, 20)
        assert set(pa.concat_tables(first).column("partition").to_pylist()) == {0}
        await consumer.seek(p0, 15)
        await consumer.resume(p1)
        again = rows(await arrow_until(consumer, 25))
        assert by_partition(again) == {0: list(range(15, 20)), 1: list(range(20))}


async def test_commit_after_poll_arrow_commits_exactly_the_rows_returned(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(3)
    produced = produce.values(name, 300, 3)
    group_id = new_group_id()
    first = group_consumer(broker.bootstrap_servers, group_id)
    async with first:
        await first.subscribe([name])
        taken = rows(await arrow_until(first, 120, max_records=40))
        await first.commit()
        committed = {tp.partition: (await first.committed([tp]))[tp] for tp in first.assignment()}
    taken_by_partition = by_partition(taken)
    assert {p: c.offset if c else 0 for p, c in committed.items()} == {
        p: (max(taken_by_partition[p]) + 1 if p in taken_by_partition else 0) for p in range(3)
    }
    second = group_consumer(broker.bootstrap_servers, group_id)
    async with second:
        await second.subscribe([name])
        rest = rows(await arrow_until(second, 180, max_records=1_000))
        assert (await second.poll_arrow(timeout_ms=300)).num_rows == 0
    union: dict[int, list[int]] = {}
    for p, offsets in [*by_partition(taken).items(), *by_partition(rest).items()]:
        union.setdefault(p, []).extend(offsets)
    assert {p: sorted(o) for p, o in union.items()} == produced_offsets(produced)
    assert len(taken) + len(rest) == 300  # nothing twice


async def test_two_group_members_on_poll_arrow_share_the_partitions_and_every_record(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = produce.values(name, 400, 4)
    group_id = new_group_id()
    a = group_consumer(broker.bootstrap_servers, group_id, enable_auto_commit=True)
    b = group_consumer(broker.bootstrap_servers, group_id, enable_auto_commit=True)
    got: dict[str, list[Row]] = {"a": [], "b": []}
    async with a, b:
        await a.subscribe([name])
        await b.subscribe([name])

        async def both_poll() -> bool:
            for label, consumer in (("a", a), ("b", b)):
                got[label] += rows([await consumer.poll_arrow(timeout_ms=50, max_records=50)])
            return len(got["a"]) + len(got["b"]) >= 400 and bool(a.assignment()) and bool(b.assignment())

        await wait_until(both_poll, 60, lambda: f"{len(got['a'])} + {len(got['b'])} of 400")
        assert not a.assignment() & b.assignment()
    everything = got["a"] + got["b"]
    # At-least-once across the rebalance (a partition may be read again from its last commit), nothing lost.
    seen = {(p, o) for p, o, _, _ in everything}
    assert seen == {(p, o) for p, offsets in produced_offsets(produced).items() for o in offsets}


def test_the_blocking_consumer_polls_arrow_tables_too(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produce.values(name, 50, 1, key=lambda i: b"k%d" % i)
    with Consumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(name, 0)])
        tables: list[pa.Table] = []
        deadline = time.monotonic() + TIMEOUT_S
        while sum(t.num_rows for t in tables) < 50:
            assert time.monotonic() < deadline
            tables.append(consumer.poll_arrow(timeout_ms=200, max_records=20))
        assert consumer.position(TopicPartition(name, 0)) == 50
    table = pa.concat_tables(tables)
    assert table.column("offset").to_pylist() == list(range(50))
    assert table.column("key").to_pylist() == [b"k%d" % i for i in range(50)]
    assert "headers" not in table.schema.names


async def test_poll_arrow_waits_for_records_like_poll(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([TopicPartition(name, 0)])
        assert (await consumer.poll_arrow(timeout_ms=200)).num_rows == 0
        waiting = asyncio.ensure_future(consumer.poll_arrow(timeout_ms=20_000))
        await asyncio.sleep(0)
        await produce.values_async(name, 3, 1)
        table = await asyncio.wait_for(waiting, TIMEOUT_S)
        assert table.num_rows >= 1
