"""Compressed record batches from the real broker: every Kafka codec decodes out of the box, byte for byte, and
exactly as confluent-kafka (librdkafka) reads the same topic."""

from __future__ import annotations

import time
import uuid
from typing import cast

import anyio
import pytest
from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from asyncconsumer import AsyncConsumer, ConsumerRecord, TopicPartition
from asyncconsumer.protocol import records as records_module
from asyncconsumer.protocol.codecs import decompress
from asyncconsumer.protocol.records import iter_batches
from asyncconsumer.records import TimestampType
from tests.conftest import Broker, ProxiedBroker, TopicFactory, unique_topic_name
from tests.support.fetch_rewrite import FetchTap
from tests.support.kafka_broker import KafkaCluster
from tests.support.produce import ProducedRecord, ProduceHelper, Record, value_for

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

CODECS = ("gzip", "snappy", "lz4", "zstd")


async def consume_all(bootstrap: str, topic: str, partitions: int, count: int) -> list[ConsumerRecord]:
    got: list[ConsumerRecord] = []
    deadline = time.monotonic() + 20.0
    async with AsyncConsumer(bootstrap, auto_offset_reset="earliest") as consumer:
        await consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        while len(got) < count:
            assert time.monotonic() < deadline, f"only {len(got)} of {count} records within 20 s"
            got.extend((await consumer.poll(timeout_ms=500)).records())
    return got


def as_produced(records: list[ConsumerRecord]) -> set[tuple[int, int, bytes | None, bytes | None, tuple[object, ...]]]:
    return {(r.partition, r.offset, r.key, r.value, r.headers) for r in records}


def expected(produced: list[ProducedRecord]) -> set[tuple[int, int, bytes | None, bytes | None, tuple[object, ...]]]:
    return {(p.partition, p.offset, p.key, p.value, p.headers) for p in produced}


@pytest.mark.parametrize("codec", CODECS)
async def test_records_compressed_with_each_codec_come_back_byte_identical(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, codec: str
) -> None:
    name = topic(2)
    produced = produce.values(
        name,
        600,
        2,
        value_size=200,
        key=lambda i: b"key-%d" % i if i % 3 else None,
        headers=lambda i: [("i", str(i).encode()), ("none", None)],
        compression_type=codec,
        max_batch_size=8192,
    )
    flat = [r for records in produced.values() for r in records]
    got = await consume_all(broker.bootstrap_servers, name, 2, len(flat))
    assert len(got) == len(flat)
    assert as_produced(got) == expected(flat)


@pytest.mark.kafka_only("Kafka recompresses a topic's batches with its own Java codecs; Tansu stores them as sent")
@pytest.mark.parametrize("codec", CODECS)
async def test_batches_compressed_by_kafkas_java_codecs_decode_within_the_limit(
    broker: Broker, produce: ProduceHelper, codec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topic with ``compression.type`` set, produced uncompressed: Kafka recompresses every batch with the codecs
    a Java producer uses (zstd-jni streams without a content size, Kafka's own lz4 block stream, snappy-java's
    framing, java.util.zip). Our bounded decompression measures those streams from their block headers: every
    batch must decompress through it, byte for byte, at the default limit."""
    assert isinstance(broker, KafkaCluster)
    name = unique_topic_name(f"java-{codec}")
    broker.create_topic(name, 2, config={"compression.type": codec})
    seen: list[int] = []

    def counted(kind: int, data: memoryview, limit: int, head: int = 0) -> memoryview:
        seen.append(kind)
        return decompress(kind, data, limit, head)

    monkeypatch.setattr(records_module, "decompress", counted)  # poll decodes on this thread
    produced = produce.values(name, 600, 2, value_size=200, max_batch_size=8192)
    flat = [r for records in produced.values() for r in records]
    got = await consume_all(broker.bootstrap_servers, name, 2, len(flat))
    assert as_produced(got) == expected(flat)
    assert seen and set(seen) == {CODECS.index(codec) + 1}, f"batches decompressed with codecs {set(seen)}"


async def test_a_partition_mixing_every_codec_and_none_reads_in_order(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produced: list[ProducedRecord] = []
    for _ in range(2):
        for codec in (*CODECS, None):
            start = len(produced)
            produced += produce.values(name, 50, 1, start=start, value_size=64, compression_type=codec)[0]
    got = await consume_all(broker.bootstrap_servers, name, 1, len(produced))
    assert [r.offset for r in got] == list(range(len(produced)))
    assert [r.value for r in got] == [p.value for p in produced]


# --- against librdkafka: the same topic read by confluent-kafka's consumer --------------------------------------

Seen = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int, int]
"""(partition, offset, key, value, headers, timestamp type, timestamp) of one record as a consumer returned it."""


def varied_records(start: int, n: int) -> list[Record]:
    """Records with every shape a codec must carry: no key, empty key, no value (a tombstone), empty value,
    no headers, headers with empty and None values and non-UTF-8 bytes, values of many sizes."""
    records = []
    for i in range(start, start + n):
        key = None if i % 5 == 0 else b"" if i % 7 == 0 else b"key-%d" % i
        value = None if i % 11 == 0 and key is not None else b"" if i % 13 == 0 else value_for(i, 20 + i * 37 % 900)
        headers = [] if i % 3 == 0 else [("i", str(i).encode()), ("empty", b""), ("none", None), ("bin", b"\xff\x00")]
        records.append(Record(value, key=key, headers=headers, timestamp_ms=1_700_000_000_000 + i * 1_001))
    return records


def our_view(records: list[ConsumerRecord]) -> list[Seen]:
    return sorted(
        (r.partition, r.offset, r.key, r.value, tuple(r.headers), r.timestamp_type, r.timestamp) for r in records
    )


def produced_view(produced: list[ProducedRecord]) -> list[Seen]:
    return sorted(
        (p.partition, p.offset, p.key, p.value, p.headers, TimestampType.CREATE_TIME, p.timestamp_ms) for p in produced
    )


def confluent_read(bootstrap: str, topic: str, partitions: int, count: int, timeout_s: float = 15.0) -> list[Seen]:
    """Every record of ``topic`` as librdkafka's consumer returns it (assigned from the beginning, no group)."""
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"unused-{uuid.uuid4().hex[:8]}",  # required by the client; nothing is committed
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    seen: list[Seen] = []
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        while len(seen) < count:
            assert time.monotonic() < deadline, f"confluent-kafka read only {len(seen)} of {count} within {timeout_s} s"
            for message in consumer.consume(num_messages=1_000, timeout=0.5):
                error = message.error()
                assert error is None, f"confluent-kafka: {error}"
                kind, timestamp = message.timestamp()
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                key, value = message.key(), message.value()
                assert not isinstance(key, str) and not isinstance(value, str)
                headers = cast(list[tuple[str, bytes | None]], message.headers() or [])
                seen.append(
                    (
                        partition,
                        offset,
                        key,
                        value,
                        tuple(headers),
                        {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}.get(kind, -1),
                        timestamp,
                    )
                )
    finally:
        consumer.close()
    return sorted(seen)


_CODEC_IDS = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_ATTRIBUTES_AT = 21
"""A v2 batch's attributes (int16) follow base offset, length, leader epoch, magic and CRC; the codec is bits 0-2."""


@pytest.mark.parametrize("codecs", [*((codec,) for codec in CODECS), (*CODECS, None)], ids=[*CODECS, "mixed"])
async def test_every_codec_reads_byte_identical_to_confluent_kafka(
    proxied_broker: ProxiedBroker, codecs: tuple[str | None, ...]
) -> None:
    """Key, value, headers, offsets, timestamps and timestamp types equal librdkafka's reading of the same topic,
    and what was produced; with several codecs, every batch of a partition uses the next one (checked on the wire)."""
    partitions = 2
    name = proxied_broker.create_topic(partitions)
    produced: list[ProducedRecord] = []
    codec_at: dict[tuple[int, int], int] = {}
    for round_ in range(3):
        for p in range(partitions):
            for c, codec in enumerate(codecs):
                start = len(produced)
                batch = varied_records(start, 40 + 17 * ((round_ + c + p) % 3))
                written = proxied_broker.produce.batches(name, [batch], partition=p, compression_type=codec)[0]
                codec_at[(p, written[0].offset)] = _CODEC_IDS[codec]
                produced += written
    tap = FetchTap(proxied_broker.proxy)
    ours = await consume_all(proxied_broker.bootstrap_servers, name, partitions, len(produced))
    tap.remove()  # librdkafka may speak Fetch versions the tap does not decode
    on_the_wire = {
        (part.partition_index, batch.base_offset): int.from_bytes(batch.buffer[_ATTRIBUTES_AT:23], "big") & 0x7
        for exchange in tap.exchanges()
        for _, part in exchange.partitions()
        for batch in iter_batches(memoryview(part.records or b""))
    }
    theirs = await anyio.to_thread.run_sync(
        lambda: confluent_read(proxied_broker.bootstrap_servers, name, partitions, len(produced))
    )
    mine = our_view(ours)
    print(f"{'+'.join(str(c) for c in codecs)}: {len(mine)} records ours, {len(theirs)} confluent-kafka's")
    assert on_the_wire == codec_at, "the broker did not return each batch with the codec it was produced with"
    assert len(mine) == len(produced), f"{len(mine)} records consumed of {len(produced)} produced"
    assert len({(s[0], s[1]) for s in mine}) == len(mine), "a record was returned twice"
    first_difference = next(((a, b) for a, b in zip(mine, theirs, strict=False) if a != b), None)
    assert mine == theirs, f"{len(mine)} vs {len(theirs)} records; first difference (ours, theirs): {first_difference}"
    assert mine == produced_view(produced)
