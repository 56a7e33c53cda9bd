"""The consumer against the real broker (Tansu): manual assignment, positions, offsets, pause, reset, metadata."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import time

import anyio
import pytest

from asyncconsumer import (
    AsyncConsumer,
    ConsumerRecord,
    IllegalStateError,
    InvalidOffsetError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    TopicPartition,
    UnknownTopicOrPartitionError,
)
from asyncconsumer._background.builder import BackgroundParts
from tests.conftest import Broker, TopicFactory
from tests.support.background import on_background_async
from tests.support.consume import by_partition, consume_until
from tests.support.produce import ProducedRecord, ProduceHelper, Record
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


def all_partitions(topic: str, n: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(n)]


async def test_consumes_every_record_of_every_partition_exactly_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = produce.values(
        name, 2_000, 4, value_size=64, key=lambda i: b"k%d" % i, headers=lambda i: [("i", str(i).encode())]
    )
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign(all_partitions(name, 4))
        got = await consume_until(consumer, 2_000, max_records=300)
        assert (await consumer.poll(timeout_ms=300)).count() == 0  # nothing more, nothing twice
        positions = {tp.partition: await consumer.position(tp) for tp in consumer.assignment()}
    expected = {p: [r.offset for r in recs] for p, recs in produced.items()}
    assert by_partition(got) == expected
    wanted = {(r.partition, r.offset): r for recs in produced.values() for r in recs}
    for record in got:
        source = wanted[(record.partition, record.offset)]
        assert (record.key, record.value, tuple(record.headers)) == (source.key, source.value, source.headers)
        assert record.timestamp == source.timestamp_ms
        assert record.topic == name
    assert positions == {p: len(recs) for p, recs in produced.items()}


async def test_async_for_yields_records_in_offset_order_per_partition(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.values(name, 100, 2)
    got: list[ConsumerRecord] = []
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign(all_partitions(name, 2))
        async for record in consumer:
            got.append(record)
            if len(got) == 100:
                break
    assert by_partition(got) == {0: list(range(50)), 1: list(range(50))}


async def test_seek_rewinds_and_skips_without_loss_or_duplicates(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produce.values(name, 100, 1)
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([tp])
        first = await consume_until(consumer, 10, max_records=10)
        assert [r.offset for r in first] == list(range(10))
        await consumer.seek(tp, 95)
        tail = await consume_until(consumer, 5)
        assert [r.offset for r in tail] == [95, 96, 97, 98, 99]
        await consumer.seek(tp, 3)
        again = await consume_until(consumer, 97)
        assert [r.offset for r in again] == list(range(3, 100))
        with pytest.raises(InvalidOffsetError, match=str(tp)):
            await consumer.seek(tp, -5)
        with pytest.raises(IllegalStateError, match="not assigned"):
            await consumer.seek(TopicPartition(name, 7), 0)


async def test_seek_to_end_then_new_records_only(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(1)
    # Tansu answers LATEST with the last batch's base offset + 1, so the last batch is one record (see shared
    # README); on Kafka the same test holds either way.
    produce.batches(name, [[Record(b"old-%d" % i, partition=0) for i in range(20)], [Record(b"last", partition=0)]])
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([tp])
        await consumer.seek_to_end(tp)
        assert await consumer.position(tp) == 21
        produce(name, [Record(b"new", partition=0)])
        got = await consume_until(consumer, 1)
        assert [(r.offset, r.value) for r in got] == [(21, b"new")]
        await consumer.seek_to_beginning(tp)
        assert await consumer.position(tp) == 0


async def test_beginning_and_end_offsets(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(2)
    # Tansu answers LATEST with the last batch's base offset + 1: make the last batch one record.
    produce.batches(name, [[Record(b"a%d" % i, partition=0) for i in range(10)], [Record(b"tail", partition=0)]])
    tp0, tp1 = TopicPartition(name, 0), TopicPartition(name, 1)
    async with AsyncConsumer(broker.bootstrap_servers) as consumer:
        assert await consumer.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
        assert await consumer.end_offsets([tp0, tp1]) == {tp0: 11, tp1: 0}
        with pytest.raises(InvalidOffsetError):
            await consumer.offsets_for_times({tp0: -7})


@pytest.mark.xfail_on_tansu(
    "answers ListOffsets with a timestamp (v1+, Timestamp=base+4500) with the partition's first "
    "offset (Offset=0, Timestamp=base) whatever the timestamp; aiokafka's offsets_for_times sees the same answer. "
    "Kafka answers offset 5 here.",
)
async def test_offsets_for_times_finds_the_first_record_at_or_after_the_timestamp(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    base = int(time.time() * 1000) - 100_000
    produce.batches(name, [[Record(b"a%d" % i, partition=0, timestamp_ms=base + i * 1000)] for i in range(11)])
    tp0 = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers) as consumer:
        found = await consumer.offsets_for_times({tp0: base + 4_500})
        hit = found[tp0]
        assert hit is not None and hit.offset == 5 and hit.timestamp == base + 5_000
        beyond = await consumer.offsets_for_times({tp0: base + 1_000_000})
        assert beyond[tp0] is None


@pytest.mark.xfail_on_tansu(
    "answers ListOffsets with a timestamp with the partition's first offset whatever the timestamp (see "
    "test_offsets_for_times_finds_the_first_record_at_or_after_the_timestamp), so a by_duration reset starts at 0",
)
async def test_a_by_duration_reset_starts_at_the_first_record_that_recent_or_at_the_log_end(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """KIP-1106: records written 2 h ago and every 10 minutes since (the last 30 minutes ago). ``PT65M`` starts at
    the first of the last 65 minutes (offset 6); ``PT1M`` finds none that recent and starts at the log end, where the
    next record is read."""
    name = topic(1)
    base = int(time.time() * 1000) - 2 * 3_600_000
    produce.batches(name, [[Record(b"r%d" % i, partition=0, timestamp_ms=base + i * 600_000)] for i in range(10)])
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="by_duration:PT65M") as consumer:
        await consumer.assign([tp])
        assert await consumer.position(tp) == 6
        got = await consume_until(consumer, 4)
        assert [r.value for r in got] == [b"r6", b"r7", b"r8", b"r9"]
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="by_duration:PT1M") as consumer:
        await consumer.assign([tp])
        assert await consumer.position(tp) == 10
        produce(name, [Record(b"now", partition=0)])
        assert [(r.offset, r.value) for r in await consume_until(consumer, 1)] == [(10, b"now")]


@pytest.mark.xfail_on_tansu(
    "answers ListOffsets LATEST with the last batch's base offset + 1 (11 here, after batches of 10 and 5), not the "
    "log end offset; its Fetch high watermark is right",
)
async def test_end_offsets_is_the_log_end_whatever_the_last_batch_holds(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produce.batches(name, [[Record(b"a%d" % i, partition=0) for i in range(10)], [Record(b"b", partition=0)] * 5])
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers) as consumer:
        assert await consumer.end_offsets([tp]) == {tp: 15}
        assert await consumer.beginning_offsets([tp]) == {tp: 0}


@pytest.mark.xfail_on_tansu("answers a fetch past the log end with no records and no error, not OFFSET_OUT_OF_RANGE")
@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
async def test_a_position_past_the_log_end_is_out_of_range_and_the_reset_policy_applies(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, reset: str
) -> None:
    name = topic(1)
    produce.values(name, 10, 1)
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset=reset) as consumer:
        await consumer.assign([tp])
        await consumer.seek(tp, 1_000)
        if reset == "none":
            with pytest.raises(OffsetOutOfRangeError) as raised:
                for _ in range(50):
                    await consumer.poll(timeout_ms=200)
            assert f"{name}-0" in str(raised.value) and "1000" in str(raised.value)
            return
        if reset == "earliest":
            got = await consume_until(consumer, 10)
            assert [r.offset for r in got] == list(range(10))
        else:

            async def reset_to_the_end() -> bool:
                assert (await consumer.poll(timeout_ms=100)).count() == 0
                return await consumer.position(tp) == 10

            await wait_for_async(reset_to_the_end, 10, message="the position stayed past the end")


async def test_pause_stops_one_partition_and_resume_continues_where_it_stopped(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.values(name, 400, 2)
    tp0, tp1 = TopicPartition(name, 0), TopicPartition(name, 1)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest", max_poll_records=50) as consumer:
        await consumer.assign([tp0, tp1])
        first = await consume_until(consumer, 50)
        await consumer.pause(tp0)
        assert consumer.paused() == {tp0}
        paused_at = await consumer.position(tp0)
        rest1 = [r for r in await consume_until(consumer, 200 - len([r for r in first if r.partition == 1]))]
        assert all(r.partition == 1 for r in rest1)
        assert (await consumer.poll(timeout_ms=300)).count() == 0
        assert await consumer.position(tp0) == paused_at
        await consumer.resume(tp0)
        rest0 = await consume_until(consumer, 200 - paused_at)
    offsets0 = [r.offset for r in first + rest0 if r.partition == 0]
    offsets1 = [r.offset for r in first + rest1 if r.partition == 1]
    assert offsets0 == list(range(200))
    assert offsets1 == list(range(200))


async def test_a_partition_without_position_and_no_reset_strategy_must_be_sought(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produce.values(name, 10, 1)
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="none") as consumer:
        await consumer.assign([tp])
        with pytest.raises(NoOffsetForPartitionError, match=name):
            await consumer.poll(timeout_ms=100)
        with pytest.raises(NoOffsetForPartitionError, match=name):
            await consumer.position(tp)
        await consumer.seek(tp, 8)  # the way out: seek somewhere valid
        assert [r.offset for r in await consume_until(consumer, 2)] == [8, 9]


async def test_metadata_finds_a_topic_created_after_start_and_refreshes_on_its_own(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    async with AsyncConsumer(broker.bootstrap_servers, metadata_max_age_ms=200) as consumer:
        assert await consumer.partitions_for("never-created-topic") == []
        name = topic(3)
        infos = await consumer.partitions_for(name)
        assert [p.partition for p in infos] == [0, 1, 2]
        assert all(p.leader >= 0 for p in infos)
        all_topics = await consumer.topics()
        assert name in all_topics and len(all_topics[name]) == 3

        def last_refresh(parts: BackgroundParts) -> int | None:
            return parts.metadata._last_refresh_ms

        refreshed = await on_background_async(consumer, last_refresh)
        deadline = time.monotonic() + 5
        while await on_background_async(consumer, last_refresh) == refreshed:
            assert time.monotonic() < deadline, "no periodic metadata refresh within 5 s at metadata_max_age_ms=200"
            await asyncio.sleep(0.05)  # nothing assigned: no poll to wait in, the refresh comes on its own


async def test_assigning_an_unknown_topic_raises_a_typed_error_naming_it(broker: Broker) -> None:
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([TopicPartition("no-such-topic", 0)])
        with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
            for _ in range(50):
                await consumer.poll(timeout_ms=200)
        with pytest.raises(UnknownTopicOrPartitionError, match="no-such-topic"):
            await consumer.end_offsets([TopicPartition("no-such-topic", 0)])


async def test_records_produced_while_consuming_arrive_in_order(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=100) as consumer:
        await consumer.assign([tp])
        got: list[ConsumerRecord] = []
        for round_ in range(5):
            produced: list[ProducedRecord] = await produce.produce_async(
                name, [Record(b"r%d-%d" % (round_, i), partition=0) for i in range(20)]
            )
            got.extend(await consume_until(consumer, 20))
            assert [r.value for r in got[-20:]] == [p.value for p in produced]
    assert [r.offset for r in got] == list(range(100))


async def test_metrics_count_what_poll_returned_and_show_positions_and_lag(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.values(name, 200, 2)
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        before = consumer.metrics()
        assert (before.records_consumed_total, before.partitions, before.coordinator_id) == (0, {}, None)
        await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        got = 0
        for _ in range(200):
            got += (await consumer.poll(timeout_ms=200, max_records=30)).count()
            if got >= 200:
                break
        metrics = consumer.metrics()
    assert metrics.records_consumed_total == 200
    assert metrics.bytes_consumed_total > 200 * 32
    assert metrics.records_consumed_rate > 0
    assert metrics.fetch_latency_avg_ms is not None and metrics.fetch_latency_max_ms is not None
    assert metrics.connection_count >= 1
    assert {tp.partition: m.position for tp, m in metrics.partitions.items()} == {0: 100, 1: 100}
    assert all(m.lag == 0 for m in metrics.partitions.values())  # nothing left behind the high watermark


async def test_a_caller_that_takes_more_than_is_buffered_grows_the_buffer_limit_to_its_bound(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """A slow caller whose polls want more than the limit lets the background fetch ahead (here: all of it) finds
    the buffer full and runs it dry on every poll; the limit doubles to ``fetch_buffer_bytes``, losing nothing."""
    name = topic(2)
    produced = produce.values(name, 3_000, 2, value_size=1_000)
    bound = 256 << 10
    async with AsyncConsumer(
        broker.bootstrap_servers,
        auto_offset_reset="earliest",
        fetch_buffer_bytes=bound,
        max_partition_fetch_bytes=32 << 10,
    ) as consumer:
        assert consumer.metrics().fetch_buffer_limit_bytes == bound // 2
        await consumer.assign(all_partitions(name, 2))
        got: list[ConsumerRecord] = []
        limits = []
        deadline = time.monotonic() + 30
        while len(got) < 3_000:
            assert time.monotonic() < deadline, f"{len(got)} of 3000 records within 30 s"
            limit = consumer.metrics().fetch_buffer_limit_bytes
            limits.append(limit)
            # the slow caller's work: meanwhile the background fills what the limit allows, minus one fetch's room
            full = limit - (32 << 10)
            await wait_for_async(
                lambda full=full: (
                    consumer.metrics().buffered_bytes > full
                    or consumer.metrics().buffered_bytes + len(got) * 1_000 >= 2_900_000
                ),
                message=lambda: f"buffered {consumer.metrics().buffered_bytes} of {limits[-1]}",
            )
            got.extend((await consumer.poll(timeout_ms=1_000, max_records=10_000)).records())
        assert (await consumer.poll(timeout_ms=200)).count() == 0
    assert limits[0] == bound // 2 and bound in limits, f"limits seen: {sorted(set(limits))}"
    assert by_partition(got) == {p: [r.offset for r in recs] for p, recs in produced.items()}


CONSUMER_PROCESS = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from asyncconsumer import AsyncConsumer, TopicPartition

    async def main(bootstrap, topic, n):
        values = []
        async with AsyncConsumer(bootstrap, auto_offset_reset="earliest") as consumer:
            await consumer.assign([TopicPartition(topic, 0)])
            deadline = time.monotonic() + 30
            while len(values) < n and time.monotonic() < deadline:
                values += [r.value.hex() for r in (await consumer.poll(timeout_ms=1_000)).records()]
        return values

    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))))
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "aiokafka")))
    """
)


async def test_a_consumer_process_reads_every_codec_without_importing_aiokafka(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """The whole path, connections to decoding, in a fresh interpreter (this one has aiokafka's producer loaded):
    batches of every codec and none come back, and no aiokafka module was imported. About 2 s."""
    name = topic(1)
    produced: list[ProducedRecord] = []
    for codec in ("gzip", "snappy", "lz4", "zstd", None):
        produced += produce.values(name, 20, 1, start=len(produced), value_size=32, compression_type=codec)[0]
    command = [sys.executable, "-c", CONSUMER_PROCESS, broker.bootstrap_servers, name, str(len(produced))]
    with anyio.fail_after(60):
        child = await anyio.run_process(command, check=False)
    assert child.returncode == 0, child.stderr.decode()
    values, aiokafka = (json.loads(line) for line in child.stdout.decode().splitlines())
    assert values == [p.value.hex() for p in produced if p.value is not None]
    assert aiokafka == []
