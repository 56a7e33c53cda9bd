"""Bad data against the real broker: records larger than every fetch limit, a deserializer that raises, garbage and
truncated fetch responses, error codes this client has no class for, and input past receive_message_max_bytes (a
response frame announcing 2 GiB, a compression bomb).

Every test counts records: none lost, none delivered twice. (Flipped CRCs, dropped connections and responses cut
mid-frame are in test_faults.py.)
"""

from __future__ import annotations

import random
import re
import struct
import time

import attrs
import pytest

from asyncconsumer import AsyncConsumer, ConsumerRecord, KafkaError, RecordDeserializationError, TopicPartition
from asyncconsumer.errors import RecordBatchTooLargeError, ResponseTooLargeError, UnknownBrokerError
from asyncconsumer.protocol.messages.fetch import FetchPartition, FetchResponse, PartitionData
from asyncconsumer.protocol.records import iter_batches
from tests.conftest import ProxiedBroker
from tests.support.batches import ZSTD, batch_around, compressed_zeros
from tests.support.consume import by_partition, consume_exactly
from tests.support.faultproxy import API_FETCH
from tests.support.fetch_rewrite import FetchExchange, FetchTap, with_partitions
from tests.support.produce import ProducedRecord, Record, value_for
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


def offsets(produced: list[ProducedRecord]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for p in sorted(produced, key=lambda p: (p.partition, p.offset)):
        out.setdefault(p.partition, []).append(p.offset)
    return out


# --- (a) larger than the limits ---------------------------------------------------------------------------------


async def test_a_record_larger_than_every_fetch_limit_is_consumed_whole_and_in_order(
    proxied_broker: ProxiedBroker,
) -> None:
    """Kafka returns the first batch of a fetch whole even when it exceeds max_partition_fetch_bytes and
    fetch_max_bytes, so a consumer never sticks on a large record; the small records after it follow in order, and
    another partition's small records keep coming."""
    name = proxied_broker.create_topic(2)
    limit = 16_384
    big = 200_000  # 12x every limit below
    tap = FetchTap(proxied_broker.proxy)
    batches = [
        [Record(value_for(i, 100)) for i in range(0, 5)],
        [Record(value_for(5, big), key=b"big-1")],
        [Record(value_for(i, 100)) for i in range(6, 30)],
        [Record(value_for(30, big), key=b"big-2"), Record(value_for(31, big), key=b"big-3")],  # one 400 KB batch
        *([Record(value_for(i, 100))] for i in range(32, 40)),
    ]
    produced = [r for b in proxied_broker.produce.batches(name, batches, partition=0) for r in b]
    produced += proxied_broker.produce(name, [value_for(i, 100) for i in range(1000, 1050)], partition=1)
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=limit,
        fetch_max_bytes=limit,
        fetch_buffer_bytes=4 * limit,
    ) as consumer:
        await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        got = await consume_exactly(consumer, len(produced))
    sections = [len(p.records or b"") for x in tap.exchanges() for _, p in x.partitions()]
    print(
        f"{len(got)} of {len(produced)} records, 3 of {big} B, limits {limit} B: {len(sections)} partition answers, "
        f"largest records section {max(sections)} B"
    )
    assert by_partition(got) == offsets(produced), f"{len(got)} records for {len(produced)} produced"
    wanted = {(p.partition, p.offset): (p.key, p.value) for p in produced}
    assert all((r.key, r.value) == wanted[(r.partition, r.offset)] for r in got)
    assert max(sections) >= 2 * big, "the 400 KB batch never came whole in one answer"


# --- (b) a deserializer that raises -----------------------------------------------------------------------------


async def test_a_value_deserializer_error_names_the_record_and_seeking_past_it_loses_nothing_else(
    proxied_broker: ProxiedBroker,
) -> None:
    name = proxied_broker.create_topic(2)
    produced = proxied_broker.produce.values(name, 200, 2, value_size=30)
    bad = produced[1][37]
    bad_tp = TopicPartition(name, 1)

    def decode(value: bytes | None) -> str:
        if value == bad.value:
            raise ValueError("not a value we can read")
        assert value is not None
        return value.decode()

    got: list[ConsumerRecord] = []
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers, auto_offset_reset="earliest", value_deserializer=decode, max_poll_records=25
    ) as consumer:
        await consumer.assign([TopicPartition(name, 0), bad_tp])
        errors: list[RecordDeserializationError] = []
        deadline = time.monotonic() + 8
        while len(errors) < 2:  # met twice: the position stays on the bad record until the caller moves it
            assert time.monotonic() < deadline, f"{len(got)} records and {len(errors)} errors within 8 s"
            try:
                got.extend((await consumer.poll(timeout_ms=200)).records())
            except RecordDeserializationError as exc:
                errors.append(exc)
                assert await consumer.position(bad_tp) == bad.offset
        for error in errors:
            assert (error.topic, error.partition, error.offset, error.part) == (name, 1, bad.offset, "value")
            assert isinstance(error.__cause__, ValueError)
            assert f"{name}-1@{bad.offset}" in str(error)
        await consumer.seek(bad_tp, bad.offset + 1)
        got.extend(await consume_exactly(consumer, 199 - len(got)))
    expected = offsets([p for records in produced.values() for p in records if p is not bad])
    print(f"{len(got)} records after skipping {bad_tp}@{bad.offset} (met {len(errors)} times)")
    assert by_partition(got) == expected, f"{len(got)} records, 199 expected"
    assert all(r.value == value_for_record(produced, r).decode() for r in got)


def value_for_record(produced: dict[int, list[ProducedRecord]], record: ConsumerRecord) -> bytes:
    source = produced[record.partition][record.offset]
    assert source.offset == record.offset and source.value is not None
    return source.value


# --- (c) garbage and truncated responses ------------------------------------------------------------------------


@pytest.mark.parametrize("keep_header", [False, True], ids=["all-garbage", "garbage-after-correlation-id"])
async def test_garbage_fetch_responses_drop_the_connection_and_lose_nothing(
    proxied_broker: ProxiedBroker, keep_header: bool
) -> None:
    """A fetch response replaced by random bytes of the same length (so the framing holds): with its correlation id
    gone too, or kept so the client tries to decode the garbage. Either way the connection is dropped and made
    again, the fetch retried, and the background thread lives on."""
    name = proxied_broker.create_topic(2)
    produced = proxied_broker.produce.values(name, 600, 2, value_size=100)
    total = sum(len(r) for r in produced.values())
    rng = random.Random(8)
    spoiled = {"count": 0}

    def garble(api_key: int, payload: bytes) -> bytes | None:
        if api_key != API_FETCH or spoiled["count"] >= 3 or len(payload) < 1_000:  # only answers with records
            return None
        spoiled["count"] += 1
        noise = rng.randbytes(len(payload))
        return payload[:4] + noise[4:] if keep_header else noise

    async with AsyncConsumer(
        proxied_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=8_192,
        reconnect_backoff_ms=10,
        retry_backoff_ms=10,
    ) as consumer:
        await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        await consumer.position(TopicPartition(name, 0))  # connected; what comes next with records is a fetch
        accepted = proxied_broker.proxy.connections_accepted
        proxied_broker.proxy.set_response_mutator(garble)
        got = await consume_exactly(consumer, total)
        assert consumer._core.parts.thread.alive
        reconnects = proxied_broker.proxy.connections_accepted - accepted
    print(f"{len(got)} of {total} records through {spoiled['count']} garbage responses, {reconnects} reconnections")
    assert spoiled["count"] == 3
    assert reconnects >= 3, f"{reconnects} new connections after 3 garbage responses"
    assert by_partition(got) == offsets([r for records in produced.values() for r in records])


@pytest.mark.parametrize("where", ["inside-the-second-batch", "inside-the-first-batch"])
async def test_a_records_section_cut_inside_a_batch_is_fetched_again_from_that_batch(
    proxied_broker: ProxiedBroker, where: str
) -> None:
    """A well-formed response whose records section ends inside a batch (brokers do this at their size limits):
    the complete batches are returned, the partial one is fetched again from its base offset; with no complete
    batch at all, the partition is fetched again with more room. Nothing is an error, no connection is dropped."""
    name = proxied_broker.create_topic(2)
    produced = [
        r
        for p in range(2)
        for b in proxied_broker.produce.batches(
            name, [[value_for(p * 1000 + i * 10 + j, 150) for j in range(10)] for i in range(30)], partition=p
        )
        for r in b
    ]
    cuts: list[tuple[int, int, int, FetchPartition]] = []
    """(partition, base offset of the batch cut, number of the exchange cut, what its request asked)"""

    def truncate(exchange: FetchExchange) -> FetchResponse | None:
        def cut(topic: str, part: PartitionData) -> PartitionData:
            records = part.records
            views = list(iter_batches(memoryview(records or b"")))
            asked = exchange.requested(topic, part.partition_index)
            if len(cuts) >= 6 or records is None or len(views) < 2 or asked is None:
                return part
            inside = 1 if where == "inside-the-second-batch" else 0
            start = sum(len(v.buffer) for v in views[:inside])
            cuts.append((part.partition_index, views[inside].base_offset, len(tap.seen) - 1, asked))
            return attrs.evolve(part, records=bytes(records[: start + len(views[inside].buffer) // 2]))

        return with_partitions(exchange.response, cut) if len(cuts) < 6 else None

    async with AsyncConsumer(
        proxied_broker.bootstrap_servers, auto_offset_reset="earliest", max_partition_fetch_bytes=8_192
    ) as consumer:
        await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        await consumer.position(TopicPartition(name, 0))
        accepted = proxied_broker.proxy.connections_accepted
        tap = FetchTap(proxied_broker.proxy, truncate)
        got = await consume_exactly(consumer, len(produced))
        reconnects = proxied_broker.proxy.connections_accepted - accepted
    exchanges = tap.exchanges()
    # The partition's next fetch after each cut starts at the cut batch (after a cut inside the first batch, with a
    # larger partition limit than the cut fetch had).
    next_fetch = {
        at: next(asked for x in exchanges[at + 1 :] if (asked := x.requested(name, partition)) is not None)
        for partition, _, at, _ in cuts
    }
    print(f"{len(got)} of {len(produced)} records through {len(cuts)} responses cut {where}")
    assert len(cuts) == 6
    assert all(next_fetch[at].fetch_offset == base for _, base, at, _ in cuts), f"cuts {cuts}, then {next_fetch}"
    if where == "inside-the-first-batch":
        grown = [next_fetch[at].partition_max_bytes > asked.partition_max_bytes for _, _, at, asked in cuts]
        assert all(grown), f"cuts {cuts}, then {next_fetch}"
    assert reconnects == 0
    assert by_partition(got) == offsets(produced)


# --- (d) an error code this client has no class for ------------------------------------------------------------


@pytest.mark.parametrize(("code", "kafka_name"), [(9999, "UNKNOWN_CODE_9999"), (87, "INVALID_RECORD")])
async def test_an_unexpected_partition_error_code_is_raised_once_per_failed_fetch_and_loses_nothing(
    proxied_broker: ProxiedBroker, code: int, kafka_name: str
) -> None:
    """A Fetch answer with an error code the client has no class for (9999, never assigned; 87, a real one unmapped
    here) fails that partition's fetch. Like Java's consumer with a code it does not expect: ``poll`` raises it once
    per failed fetch, the partition is fetched again only after the caller's poll got past it, and other partitions
    go on. So: a typed UnknownBrokerError naming the code, partition and offset; exactly as many errors as failed
    fetches; no new fetch of the partition while the caller does not poll; every record exactly once after."""
    name = proxied_broker.create_topic(2)
    failing = TopicPartition(name, 0)
    first = proxied_broker.produce.values(name, 40, 2)
    state = {"on": False, "failed": 0}

    def inject(exchange: FetchExchange) -> FetchResponse | None:
        if not state["on"] or exchange.requested(name, failing.partition) is None:
            return None
        state["failed"] += 1

        def fail(topic: str, part: PartitionData) -> PartitionData:
            if part.partition_index != failing.partition:
                return part
            return attrs.evolve(part, error_code=code, records=None)

        return with_partitions(exchange.response, fail)

    tap = FetchTap(proxied_broker.proxy, inject)
    errors: list[KafkaError] = []
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=50
    ) as consumer:
        await consumer.assign([failing, TopicPartition(name, 1)])
        got = await consume_exactly(consumer, 40)
        state["on"] = True
        second = proxied_broker.produce.values(name, 40, 2, start=40)
        # While the caller does not poll: one failed fetch of partition 0 and no other, while partition 1 goes on
        # being fetched (its new records wait in the buffer).
        await wait_for_async(lambda: state["failed"] >= 1, 5, message="no fetch of partition 0 failed")
        mark = len(tap.exchanges())
        await wait_for_async(lambda: len(tap.exchanges()) >= mark + 5, 5, message="the background stopped fetching")
        assert state["failed"] == 1, f"{state['failed']} fetches of {failing} while its error waited for the caller"

        deadline = time.monotonic() + 5
        while len(errors) < 3:  # the fault persists: the error comes again, once per failed fetch
            assert time.monotonic() < deadline, f"{len(errors)} errors for {state['failed']} failed fetches in 5 s"
            try:
                got.extend((await consumer.poll(timeout_ms=200)).records())
            except KafkaError as exc:
                errors.append(exc)
        assert await consumer.position(failing) == 20
        assert by_partition(got)[1] == list(range(40)), "partition 1 held up by partition 0's errors"
        state["on"] = False
        got.extend(await consume_exactly(consumer, 80 - len(got), errors=errors))
        assert consumer._core.parts.thread.alive
    print(f"{kafka_name}: {len(errors)} errors for {state['failed']} failed fetches of {failing}; {len(got)} of 80")
    for error in errors:
        assert isinstance(error, UnknownBrokerError), repr(error)
        assert (error.error_code, error.error_name) == (code, kafka_name)
        assert str(code) in str(error) and f"{failing} at offset 20" in str(error), str(error)
    assert len(errors) == state["failed"], f"{len(errors)} errors raised for {state['failed']} failed fetches"
    assert by_partition(got) == offsets([*first[0], *first[1], *second[0], *second[1]])


# --- (e) bounded input: receive_message_max_bytes ---------------------------------------------------------------


async def test_a_response_announcing_2_gib_drops_the_connection_is_raised_once_and_loses_nothing(
    proxied_broker: ProxiedBroker,
) -> None:
    """A fetch response whose size prefix claims 2 GiB (a misbehaving broker; no real one sends that on demand):
    the connection is dropped before anything is allocated for it, ``poll`` raises ``ResponseTooLargeError`` naming
    the broker once, a new connection is made, and every record comes exactly once."""
    name = proxied_broker.create_topic(2)
    produced = proxied_broker.produce.values(name, 600, 2, value_size=100)
    proxy = proxied_broker.proxy
    spoiled = {"count": 0}

    def announce_2_gib(api_key: int, payload: bytes) -> bytes | None:
        if api_key != API_FETCH or spoiled["count"] or len(payload) < 1_000:  # the first answer with records
            return None
        spoiled["count"] += 1
        return struct.pack(">i", 2**31 - 1) + payload  # raw: the size prefix is ours

    errors: list[KafkaError] = []
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=8_192,
        reconnect_backoff_ms=10,
        retry_backoff_ms=10,
    ) as consumer:
        await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        await consumer.position(TopicPartition(name, 0))  # connected; what comes next with records is a fetch
        accepted = proxy.connections_accepted
        proxy.set_response_mutator(announce_2_gib, raw=True)
        got = await consume_exactly(consumer, 600, errors=errors)
        reconnects = proxy.connections_accepted - accepted
        assert consumer._core.parts.thread.alive
    print(f"{len(got)} of 600 records, {len(errors)} error(s), {reconnects} reconnection(s): {errors}")
    assert spoiled["count"] == 1
    assert len(errors) == 1, errors
    error = errors[0]
    assert isinstance(error, ResponseTooLargeError) and error.retriable
    assert (error.size, error.limit) == (2**31 - 1, 100_000_000)
    assert re.search(rf"broker \d+ at 127\.0\.0\.1:{proxy.port} announced a response of 2147483647 bytes", str(error))
    assert reconnects >= 1
    assert by_partition(got) == offsets([r for records in produced.values() for r in records])


async def test_a_compression_bomb_from_the_broker_is_raised_naming_the_partition_until_a_seek(
    proxied_broker: ProxiedBroker,
) -> None:
    """The first batch of partition 0 replaced, once, by a CRC-valid zstd batch of 1 GiB of zeros (32 KB on the
    wire) with the same offsets: at the default limit ``poll`` raises ``RecordBatchTooLargeError`` naming the
    partition and the batch's offsets, again on every poll (nothing is skipped silently), without decompressing
    it; a seek to its offset fetches the batch again, and every record comes exactly once."""
    name = proxied_broker.create_topic(2)
    produced = proxied_broker.produce.values(name, 200, 2, value_size=100)
    bombed = TopicPartition(name, 0)
    planted: dict[str, int] = {}

    def plant(exchange: FetchExchange) -> FetchResponse | None:
        def swap(topic: str, part: PartitionData) -> PartitionData:
            if planted or part.partition_index != 0 or not part.records:
                return part
            first = next(iter_batches(memoryview(part.records)))
            planted.update(base=first.base_offset, next=first.next_offset)
            records = first.next_offset - first.base_offset
            bomb = batch_around(first.base_offset, ZSTD, compressed_zeros(ZSTD, 1024), records)
            return attrs.evolve(part, records=bomb + bytes(part.records[len(first.buffer) :]))

        return None if planted else with_partitions(exchange.response, swap)

    tap = FetchTap(proxied_broker.proxy, plant)
    got: list[ConsumerRecord] = []
    errors: list[RecordBatchTooLargeError] = []
    async with AsyncConsumer(proxied_broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([bombed, TopicPartition(name, 1)])
        deadline = time.monotonic() + 8
        while len(errors) < 3:
            assert time.monotonic() < deadline, f"{len(got)} records and {len(errors)} errors within 8 s"
            try:
                got.extend((await consumer.poll(timeout_ms=200)).records())
            except RecordBatchTooLargeError as exc:
                errors.append(exc)
                assert await consumer.position(bombed) == planted["base"]
        await consumer.seek(bombed, errors[0].offset)
        got.extend(await consume_exactly(consumer, 200 - len(got)))
    tap.remove()
    print(f"{len(got)} of 200 records; the bomb at {bombed}@{planted}: {errors[0]}")
    for error in errors:
        assert (error.topic, error.partition, error.offset) == (name, 0, planted["base"])
        assert error.next_offset == planted["next"]
        assert "receive_message_max_bytes (100000000)" in str(error) and "zstd" in str(error)
    assert by_partition(got) == offsets([r for records in produced.values() for r in records])
