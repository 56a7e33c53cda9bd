"""Executor side: read exactly ``[start, end)`` of one partition with a manually assigned consumer.

Runs in Spark's Python workers: the client is created here, from plain options, and closed when the range is
read. Rows leave as Arrow record batches made from ``poll_arrow``'s columns by Arrow casts (the fast path, no Python
object per row), or as tuples made from ``poll``'s records (``useArrow=false``).
"""

from __future__ import annotations

import bisect
import datetime
import time
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from asyncconsumer.errors import KafkaTimeoutError, OffsetOutOfRangeError
from asyncconsumer.records import ConsumerRecord, TopicPartition
from asyncconsumer.spark.offsets import OffsetRange, lost
from asyncconsumer.spark.options import SourceOptions
from asyncconsumer.sync import Consumer

SCHEMA = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
"""Spark's Kafka source schema, column for column."""
HEADERS = "headers array<struct<key: string, value: binary>>"

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def schema(include_headers: bool) -> str:
    return f"{SCHEMA}, {HEADERS}" if include_headers else SCHEMA


@cache
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


_POLL_MS = 500
"""One poll's wait: short, so that the no-progress timeout is checked often."""
_EXECUTOR_CONSUMER = {
    "max.poll.records": "100000",
    "fetch.max.wait.ms": "100",
    "max.partition.fetch.bytes": str(8 << 20),
    "fetch.buffer.bytes": str(32 << 20),
    "auto.offset.reset": "none",
}
"""The executor consumer's settings unless the user's ``kafka.*`` options say otherwise. It reads one partition,
so a fetch carries one partition and fetches are not pipelined across partitions: 8 MiB per fetch (instead of 1 MiB)
takes an eighth of the round trips, and a 32 MiB buffer keeps the next fetches coming while a poll's rows are turned
into Arrow batches (measured on Apache Kafka, 1M x 100 B: less broker and Python worker CPU per row)."""
_BATCH_BYTES = 8 << 20
"""Polls are joined only until their columns hold this much: a poll this large becomes a Spark batch as it is
(no copy), and Spark gets batches while the partition is still being read instead of one at its end."""
_COALESCE_BYTES = 1 << 30
"""Polls are joined into one batch only while their bytes stay under this (Arrow's binary columns hold < 2 GiB)."""
_POLL_ARROW_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestamp_type")
"""``poll_arrow``'s columns in the order of Spark's schema (``headers`` last, when asked)."""


def _polling(options: SourceOptions, r: OffsetRange) -> Iterator[Consumer]:
    """A consumer assigned ``r``'s partition at ``r.start``, yielded for one poll at a time until its position
    reaches ``r.end``; ``KafkaTimeoutError`` when the position stays put for ``pollTimeoutMs``."""
    config = {**_EXECUTOR_CONSUMER, **options.consumer}  # the user's win
    tp = TopicPartition(r.topic, r.partition)
    with Consumer(**config) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, r.start)
        position = r.start
        last_progress = time.monotonic()
        while position < r.end:
            yield consumer
            now_position = consumer.position(tp)
            if now_position > position:
                position, last_progress = now_position, time.monotonic()
            elif (time.monotonic() - last_progress) * 1000 > options.poll_timeout_ms:
                raise KafkaTimeoutError(
                    f"{tp}: no progress past offset {position} (reading up to {r.end}) for {options.poll_timeout_ms} ms"
                )


def records(options: SourceOptions, r: OffsetRange) -> Iterator[list[ConsumerRecord]]:
    """The records of ``r`` in order, in chunks; ``KafkaTimeoutError`` if the broker stops giving any."""
    tp = TopicPartition(r.topic, r.partition)
    for consumer in _polling(options, r):
        try:
            batch = consumer.poll(timeout_ms=_POLL_MS).get(tp, [])
        except OffsetOutOfRangeError:
            _gone(consumer, options, r)
            continue
        if batch and batch[-1].offset >= r.end:
            batch = [rec for rec in batch if rec.offset < r.end]
        if batch:
            yield batch


def tables(options: SourceOptions, r: OffsetRange) -> Iterator[Any]:
    """The rows of ``r`` in order, as ``poll_arrow``'s tables (rows at ``r.end`` and past it included: see ``below``);
    ``KafkaTimeoutError`` if the broker stops giving any."""
    for consumer in _polling(options, r):
        try:
            table = consumer.poll_arrow(timeout_ms=_POLL_MS, include_headers=options.include_headers)
        except OffsetOutOfRangeError:
            _gone(consumer, options, r)
            continue
        if table.num_rows:
            yield table


def _gone(consumer: Consumer, options: SourceOptions, r: OffsetRange) -> None:
    """Offsets of ``r`` vanished after the driver planned it (retention, DeleteRecords, a recreated topic): as Spark's
    source, ``DataLossError`` under ``failOnDataLoss``, else a warning and on from the earliest offset left (which
    ends the range if that is past its end). Without this, ``auto.offset.reset`` would skip them silently."""
    tp = TopicPartition(r.topic, r.partition)
    position = consumer.position(tp)
    earliest = consumer.beginning_offsets([tp])[tp]
    lost(options.fail_on_data_loss, f"{tp}: offsets from {position} are gone while reading [{r.start}, {r.end})")
    # below the log's start: on from there; past its end (a shorter, recreated log): nothing of the range is left
    consumer.seek(tp, earliest if position < earliest else r.end)


def below(table: Any, end: int) -> Any:
    """The rows of a ``poll_arrow`` table of one partition with offsets below ``end``: a prefix, offsets ascending,
    so a slice found by bisection (no pass over the rows)."""
    offsets = table.column("offset")
    if not len(offsets) or offsets[-1].as_py() < end:
        return table
    return table.slice(0, bisect.bisect_left(offsets, end, key=lambda offset: offset.as_py()))


def to_spark(table: Any, include_headers: bool) -> Any:
    """A ``poll_arrow`` table as Spark's Kafka schema (``arrow_schema``): columns reordered and renamed, the topic
    decoded from its dictionary, timestamps to microseconds, ``timestampType`` widened; keys and values untouched.
    A record without headers has null ``headers``, as in Spark's Kafka source (not an empty array)."""
    target = arrow_schema(include_headers)
    names = [*_POLL_ARROW_COLUMNS, "headers"] if include_headers else list(_POLL_ARROW_COLUMNS)
    out = table.select(names).rename_columns(target.names).cast(target)
    if include_headers and out.num_rows:
        out = out.set_column(len(names) - 1, "headers", _null_when_empty(out.column("headers")))
    return out


def _null_when_empty(headers: Any) -> Any:
    """The headers column with its empty lists made null (untouched, no copy, when every record has headers)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = pc.list_value_length(headers)
    if pc.min(lengths).as_py() != 0:
        return headers
    return pc.if_else(pc.equal(lengths, 0), pa.scalar(None, headers.type), headers)


def arrow_batches(
    tables: Iterable[Any], end: int, include_headers: bool, batch_rows: int, batch_bytes: int = _BATCH_BYTES
) -> Iterator[Any]:
    """``poll_arrow`` tables of one partition as Spark record batches of the offsets below ``end``, each of at most
    ``batch_rows`` rows: small polls are joined (their columns copied once) until they hold ``batch_bytes``, a poll
    that large on its own passes as it is, one with more than ``batch_rows`` rows is sliced (no copy)."""
    import pyarrow as pa

    pending: list[Any] = []  # Spark-schema tables, together under _COALESCE_BYTES unless one alone is larger
    rows = size = 0
    for table in tables:
        part = to_spark(below(table, end), include_headers)
        if not part.num_rows:
            continue
        if pending and size + part.nbytes > _COALESCE_BYTES:
            yield from _batches(pa.concat_tables(pending))
            pending, rows, size = [], 0, 0
        pending.append(part)
        rows, size = rows + part.num_rows, size + part.nbytes
        while rows >= batch_rows:
            joined = pa.concat_tables(pending)
            yield from _batches(joined.slice(0, batch_rows))
            rest = joined.slice(batch_rows)
            pending, rows, size = ([rest], rest.num_rows, rest.nbytes) if rest.num_rows else ([], 0, 0)
        if size >= batch_bytes:
            yield from _batches(pa.concat_tables(pending))
            pending, rows, size = [], 0, 0
    if pending:
        yield from _batches(pa.concat_tables(pending))


def _batches(table: Any) -> list[Any]:
    """``table``'s rows as record batches: one, unless its columns hold more than ``_COALESCE_BYTES`` together
    (a table of one chunk per column stays as it is: no copy)."""
    if table.nbytes <= _COALESCE_BYTES:
        table = table.combine_chunks()
    return [batch for batch in table.to_batches() if batch.num_rows]


def read_arrow(options: SourceOptions, r: OffsetRange) -> Iterator[Any]:
    """``r`` as Arrow record batches of up to ``arrowBatchRows`` rows, built from ``poll_arrow``'s columns."""
    return arrow_batches(tables(options, r), r.end, options.include_headers, options.arrow_batch_rows)


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
                row += ([(k, v) for k, v in rec.headers] if rec.headers else None,)
            yield row
