"""Compressed record batches from the real broker: every Kafka codec decodes out of the box, byte for byte."""

from __future__ import annotations

import time

import pytest

from asyncconsumer import AsyncConsumer, ConsumerRecord, TopicPartition
from asyncconsumer.embedded_broker import EmbeddedBroker
from tests.conftest import TopicFactory
from tests.produce import ProducedRecord, ProduceHelper

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
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper, codec: str
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


async def test_a_partition_mixing_every_codec_and_none_reads_in_order(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper
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
