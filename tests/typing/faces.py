"""What a type checker sees of the two faces of each client (``mypy --strict`` checks this file in CI; it never runs):
on the asyncio face a waiting call is a coroutine of its value, on the blocking face the value itself, with the
parameters of the one declaration. A wrong argument is an error on both (each ``type: ignore`` must be needed)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, assert_type

from asyncconsumer import (
    AsyncConsumer,
    AsyncShareConsumer,
    Consumer,
    ConsumerMetrics,
    ConsumerRecord,
    ConsumerRecords,
    OffsetAndMetadata,
    PartitionInfo,
    ShareConsumer,
    ShareRecord,
    ShareRecords,
    TopicPartition,
)
from asyncconsumer.errors import KafkaError

TP = TopicPartition("t", 0)


async def asyncio_face(consumer: AsyncConsumer) -> None:
    polling = assert_type(consumer.poll(100), Coroutine[Any, Any, ConsumerRecords])
    assert_type(await polling, ConsumerRecords)
    assert_type(await consumer.poll(timeout_ms=100, max_records=5), ConsumerRecords)
    assert_type(await consumer.position(TP, timeout_ms=1_000), int)
    assert_type(await consumer.committed([TP]), dict[TopicPartition, OffsetAndMetadata | None])
    assert_type(await consumer.partitions_for("t"), list[PartitionInfo])
    assert_type(await consumer.seek(TP, 0), None)
    assert_type(consumer.assignment(), set[TopicPartition])
    assert_type(consumer.metrics(), ConsumerMetrics)
    await consumer.seek(TP, "0")  # type: ignore[arg-type]
    await consumer.subscribe(["t"], listener=None, patern="t.*")  # type: ignore[call-arg]
    async with consumer as same:
        assert_type(same, AsyncConsumer)
    async for record in consumer:
        assert_type(record, ConsumerRecord)


def blocking_face(consumer: Consumer) -> None:
    assert_type(consumer.poll(100), ConsumerRecords)
    assert_type(consumer.poll(timeout_ms=100, max_records=5), ConsumerRecords)
    assert_type(consumer.position(TP, timeout_ms=1_000), int)
    assert_type(consumer.committed([TP]), dict[TopicPartition, OffsetAndMetadata | None])
    assert_type(consumer.partitions_for("t"), list[PartitionInfo])
    assert_type(consumer.seek(TP, 0), None)
    assert_type(consumer.assignment(), set[TopicPartition])
    consumer.seek(TP, "0")  # type: ignore[arg-type]
    consumer.subscribe(["t"], listener=None, patern="t.*")  # type: ignore[call-arg]
    consumer.wakeup()
    with consumer as same:
        assert_type(same, Consumer)
    for record in consumer:
        assert_type(record, ConsumerRecord)


async def share_faces(asynchronous: AsyncShareConsumer, blocking: ShareConsumer) -> None:
    assert_type(await asynchronous.poll(100), ShareRecords)
    assert_type(blocking.poll(100), ShareRecords)
    assert_type(await asynchronous.commit_sync(), dict[TopicPartition, KafkaError | None])
    assert_type(blocking.commit_sync(timeout_ms=1_000), dict[TopicPartition, KafkaError | None])
    committing = assert_type(asynchronous.commit_async(), Coroutine[Any, Any, None])
    await committing
    assert_type(blocking.commit_async(), None)
    blocking.poll("100")  # type: ignore[arg-type]
    await asynchronous.poll("100")  # type: ignore[arg-type]
    async for share_record in asynchronous:
        assert_type(share_record, ShareRecord)
    for share_record in blocking:
        assert_type(share_record, ShareRecord)
