"""Faults through the fault-injecting proxy: corruption, dropped and stalled connections, dead brokers.

Every test counts records: nothing skipped, nothing delivered twice.
"""

from __future__ import annotations

import time

import pytest

from asyncconsumer import (
    AsyncConsumer,
    ConsumerRecord,
    CorruptRecordError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    TopicPartition,
)
from asyncconsumer.protocol.base import encode_response
from asyncconsumer.protocol.messages.fetch import FetchRequest, FetchResponse
from asyncconsumer.protocol.wire import Reader
from asyncconsumer.tools.embedded_broker import free_port
from tests.conftest import ProxiedBroker
from tests.support.consume import by_partition, consume_until, records_of
from tests.support.faultproxy import API_FETCH, parse_request_header, response_correlation_id

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


@pytest.mark.parametrize("columnar", [False, True], ids=["poll", "poll_arrow"])
async def test_a_flipped_byte_in_record_data_is_a_corrupt_record_error_naming_the_offset(
    proxied_broker: ProxiedBroker, columnar: bool
) -> None:
    name = proxied_broker.create_topic(1)
    proxied_broker.produce.values(name, 20, 1, value_size=40)
    marker = b"CORRUPT-ME-PLEASE"
    produced = proxied_broker.produce(name, [marker])
    proxied_broker.produce.values(name, 5, 1, value_size=40, start=100)
    corrupt_offset = produced[0].offset
    flipped = {"count": 0}

    def corrupt(api_key: int, payload: bytes) -> bytes | None:
        at = payload.find(marker)
        if api_key != API_FETCH or at < 0:
            return None
        flipped["count"] += 1
        data = bytearray(payload)
        data[at + 3] ^= 0xFF
        return bytes(data)

    proxied_broker.proxy.set_response_mutator(corrupt)
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(proxied_broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        await consumer.assign([tp])
        got: list[ConsumerRecord] = []
        with pytest.raises(CorruptRecordError) as info:
            for _ in range(100):
                if columnar:
                    got.extend(records_of(await consumer.poll_arrow(timeout_ms=200)))
                else:
                    got.extend((await consumer.poll(timeout_ms=200)).records())
        assert flipped["count"] >= 1
        assert (info.value.topic, info.value.partition, info.value.offset) == (name, 0, corrupt_offset)
        assert [r.offset for r in got] == list(range(corrupt_offset))  # everything before it, once
        assert await consumer.position(tp) == corrupt_offset
        proxied_broker.proxy.set_response_mutator(None)
        await consumer.seek(tp, corrupt_offset + 1)  # skip it explicitly
        rest = await consume_until(consumer, 5)
        assert [r.offset for r in rest] == list(range(corrupt_offset + 1, corrupt_offset + 6))


async def test_dropped_connections_lose_and_duplicate_nothing(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(4)
    proxied_broker.produce.values(name, 4_000, 4, value_size=200)
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers, auto_offset_reset="earliest", max_partition_fetch_bytes=16_384
    ) as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(4)])
        got: list[ConsumerRecord] = []
        drops = 0
        deadline = time.monotonic() + 30
        while len(got) < 4_000:
            assert time.monotonic() < deadline, f"stalled at {len(got)} records after {drops} drops"
            got.extend((await consumer.poll(timeout_ms=500, max_records=200)).records())
            if len(got) // 500 > drops:
                drops += proxied_broker.proxy.drop_connections() and 1
        assert drops >= 3
        assert proxied_broker.proxy.connections_accepted >= 4
    assert by_partition(got) == {p: list(range(1_000)) for p in range(4)}


async def test_a_response_cut_in_the_middle_is_refetched(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(1)
    proxied_broker.produce.values(name, 500, 1, value_size=500)
    async with AsyncConsumer(proxied_broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        tp = TopicPartition(name, 0)
        await consumer.assign([tp])
        assert await consumer.position(tp) == 0  # connections are up; the next big response is a fetch
        proxied_broker.proxy.drop_mid_response(after_bytes=5_000, count=2)
        got = await consume_until(consumer, 500)
        assert proxied_broker.proxy.responses_cut == 2
    assert [r.offset for r in got] == list(range(500))


async def test_a_stalled_broker_times_the_request_out_and_consumption_resumes(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(1)
    proxied_broker.produce.values(name, 50, 1)
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers, auto_offset_reset="earliest", request_timeout_ms=1_500, fetch_max_wait_ms=100
    ) as consumer:
        tp = TopicPartition(name, 0)
        await consumer.assign([tp])
        first = await consume_until(consumer, 50)
        proxied_broker.proxy.blackhole(True)
        assert (await consumer.poll(timeout_ms=2_500)).count() == 0
        proxied_broker.proxy.blackhole(False)
        accepted = proxied_broker.proxy.connections_accepted
        proxied_broker.produce.values(name, 50, 1, start=50)
        rest = await consume_until(consumer, 50, timeout_s=15)
        assert proxied_broker.proxy.connections_accepted > accepted  # the timed-out connection was replaced
    assert [r.offset for r in first + rest] == list(range(100))


async def test_offset_out_of_range_answer_resets_by_auto_offset_reset(proxied_broker: ProxiedBroker) -> None:
    """Tansu 0.6 answers a fetch beyond the log end with no records and no error, where Kafka answers
    OFFSET_OUT_OF_RANGE; the proxy rewrites Tansu's answer into Kafka's so the reset path meets a real broker."""
    name = proxied_broker.create_topic(1)
    proxied_broker.produce.values(name, 10, 1)
    fetch_versions: dict[int, int] = {}

    def remember(api_key: int, payload: bytes) -> None:
        if api_key == API_FETCH:
            header = parse_request_header(payload)
            fetch_versions[header.correlation_id] = header.api_version
        return None

    def out_of_range(api_key: int, payload: bytes) -> bytes | None:
        if api_key != API_FETCH:
            return None
        correlation_id = response_correlation_id(payload)
        version = fetch_versions.pop(correlation_id)
        reader = Reader(payload, 4)
        if version >= FetchRequest.FLEXIBLE_FROM:
            reader.skip_tags()
        response = FetchResponse.decode(reader, version)
        parts = [p for t in response.responses for p in t.partitions]
        if not any(p.records is None or len(p.records) == 0 for p in parts):
            return None
        import attrs

        rewritten = attrs.evolve(
            response,
            responses=tuple(
                attrs.evolve(t, partitions=tuple(attrs.evolve(p, error_code=1, records=None) for p in t.partitions))
                for t in response.responses
            ),
        )
        return encode_response(rewritten, FetchRequest, version, correlation_id)[4:]

    proxied_broker.proxy.set_request_mutator(remember)
    proxied_broker.proxy.set_response_mutator(out_of_range)
    tp = TopicPartition(name, 0)
    async with AsyncConsumer(
        proxied_broker.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=100
    ) as consumer:
        await consumer.assign([tp])
        await consumer.seek(tp, 5_000)
        got = await consume_until(consumer, 10)
        assert [r.offset for r in got] == list(range(10))
    async with AsyncConsumer(proxied_broker.bootstrap_servers, auto_offset_reset="none", fetch_max_wait_ms=100) as c2:
        await c2.assign([tp])
        await c2.seek(tp, 5_000)
        with pytest.raises(KafkaError, match="5000") as info:
            for _ in range(50):
                await c2.poll(timeout_ms=200)
        assert f"{name}-0" in str(info.value)


async def test_close_returns_within_its_timeout_when_the_broker_is_gone(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(1)
    proxied_broker.produce.values(name, 10, 1)
    consumer = AsyncConsumer(proxied_broker.bootstrap_servers, auto_offset_reset="earliest")
    await consumer.start()
    await consumer.assign([TopicPartition(name, 0)])
    await consume_until(consumer, 10)
    proxied_broker.proxy.blackhole(True)  # requests in flight, answers never come
    started = time.monotonic()
    await consumer.close(timeout_ms=1_000)
    assert time.monotonic() - started < 3.0
    assert not consumer._core.parts.thread.alive


async def test_unreachable_bootstrap_servers_fail_typed_after_the_timeout() -> None:
    port = free_port()  # nothing listens here
    async with AsyncConsumer(f"127.0.0.1:{port}", request_timeout_ms=1_000, reconnect_backoff_max_ms=200) as consumer:
        started = time.monotonic()
        with pytest.raises((KafkaConnectionError, KafkaTimeoutError)) as info:
            await consumer.topics(timeout_ms=2_000)
        assert time.monotonic() - started < 5
        assert f"127.0.0.1:{port}" in str(info.value)
