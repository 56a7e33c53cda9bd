"""Executor side: read exactly ``[start, end)`` of one partition with a manually assigned consumer.

Runs in Spark's Python workers: the client is created here, from plain options, and closed when the range is
read. Records leave as Arrow record batches (the fast path) or as tuples.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from typing import Any

from asyncconsumer.errors import KafkaTimeoutError
from asyncconsumer.records import ConsumerRecord, TopicPartition
from asyncconsumer.spark.offsets import OffsetRange
from asyncconsumer.spark.options import SourceOptions
from asyncconsumer.sync import Consumer

SCHEMA = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
"""Spark's Kafka source schema, column for column."""
HEADERS = "headers array<struct<key: string, value: binary>>"

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def schema(include_headers: bool) -> str:
    return f"{SCHEMA}, {HEADERS}" if include_headers else SCHEMA


def arrow_schema(include_headers: bool) -> Any:
    import pyarrow as pa

    fields = [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    return pa.schema(fields)


def records(options: SourceOptions, r: OffsetRange) -> Iterator[list[ConsumerRecord]]:
    """The records of ``r`` in order, in chunks; ``KafkaTimeoutError`` if the broker stops giving any."""
    config = {"max.poll.records": "100000", "fetch.max.wait.ms": "100", **options.consumer}  # the user's win
    tp = TopicPartition(r.topic, r.partition)
    with Consumer(**config) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, r.start)
        position = r.start
        last_progress = time.monotonic()
        while position < r.end:
            batch = consumer.poll(timeout_ms=500).get(tp, [])
            if batch and batch[-1].offset >= r.end:
                batch = [rec for rec in batch if rec.offset < r.end]
            if batch:
                yield batch
            now_position = consumer.position(tp)
            if now_position > position:
                position, last_progress = now_position, time.monotonic()
            elif (time.monotonic() - last_progress) * 1000 > options.poll_timeout_ms:
                raise KafkaTimeoutError(
                    f"{tp}: no progress past offset {position} (reading up to {r.end}) for {options.poll_timeout_ms} ms"
                )


def read_arrow(options: SourceOptions, r: OffsetRange) -> Iterator[Any]:
    """``records`` as Arrow record batches of up to ``arrowBatchRows`` rows."""
    import pyarrow as pa

    target = arrow_schema(options.include_headers)
    columns: dict[str, list[Any]] = {name: [] for name in target.names}

    def flush() -> Any:
        count = len(columns["offset"])
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(columns["key"], pa.binary()),
                pa.array(columns["value"], pa.binary()),
                pa.array([r.topic] * count, pa.string()),
                pa.array([r.partition] * count, pa.int32()),
                pa.array(columns["offset"], pa.int64()),
                pa.array(columns["timestamp"], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                pa.array(columns["timestampType"], pa.int32()),
                *([pa.array(columns["headers"], target.field("headers").type)] if options.include_headers else []),
            ],
            schema=target,
        )
        for values in columns.values():
            values.clear()
        return batch

    for chunk in records(options, r):
        columns["key"] += [rec.key for rec in chunk]
        columns["value"] += [rec.value for rec in chunk]
        columns["offset"] += [rec.offset for rec in chunk]
        columns["timestamp"] += [rec.timestamp * 1000 for rec in chunk]
        columns["timestampType"] += [rec.timestamp_type for rec in chunk]
        if options.include_headers:
            columns["headers"] += [[{"key": k, "value": v} for k, v in rec.headers] for rec in chunk]
        if len(columns["offset"]) >= options.arrow_batch_rows:
            yield flush()
    if columns["offset"]:
        yield flush()


def read_tuples(options: SourceOptions, r: OffsetRange) -> Iterator[tuple[Any, ...]]:
    """``records`` as one tuple per row (the slow path, kept for comparison and for old Sparks)."""
    for chunk in records(options, r):
        for rec in chunk:
            row: tuple[Any, ...] = (
                rec.key,
                rec.value,
                rec.topic,
                rec.partition,
                rec.offset,
                _EPOCH + datetime.timedelta(milliseconds=rec.timestamp),
                rec.timestamp_type,
            )
            if options.include_headers:
                row += ([(k, v) for k, v in rec.headers],)
            yield row
