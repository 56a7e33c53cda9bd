"""Produce test data to a real broker with aiokafka's producer, and report exactly what was written where.

Every function has a synchronous form (``produce``, ``produce_values``, ``produce_batches``) that can be
called from anywhere, including from inside a running event loop (it then runs on a helper thread), and an
``_async`` form to await. Records carry explicit timestamps (now, unless given), so what is returned is what
the broker stores: topic, partition, offset, key, value, headers, timestamp.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

import attrs
from aiokafka import AIOKafkaProducer

__all__ = [
    "Header",
    "ProduceHelper",
    "ProducedRecord",
    "Record",
    "RecordLike",
    "produce",
    "produce_async",
    "produce_batches",
    "produce_batches_async",
    "produce_values",
    "produce_values_async",
    "value_for",
]

Header = tuple[str, bytes | None]
T = TypeVar("T")

_DEFAULT_TIMEOUT_S = 30.0


def _header_tuple(headers: Iterable[Header]) -> tuple[Header, ...]:
    return tuple(headers)


@attrs.frozen
class Record:
    """A record to produce. ``partition``/``timestamp_ms`` None: the producer's partitioner / now."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[Header, ...] = attrs.field(default=(), converter=_header_tuple)
    partition: int | None = None
    timestamp_ms: int | None = None


RecordLike = Record | bytes
"""A :class:`Record`, or bare value bytes."""


@attrs.frozen
class ProducedRecord:
    """A record the broker acknowledged, and where it went."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp_ms: int


def value_for(index: int, size: int) -> bytes:
    """A deterministic value of ``size`` bytes for record ``index`` (unique per index when size >= 12)."""
    stamp = f"v{index:010d}:".encode()
    repeats = size // len(stamp) + 1
    return (stamp * repeats)[:size]


def _as_record(item: RecordLike) -> Record:
    return Record(value=item) if isinstance(item, bytes | bytearray) else item


def _now_ms() -> int:
    return int(time.time() * 1000)


def _run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine made by ``factory`` to completion; on a helper thread if this thread runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="produce") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _producer(
    bootstrap: str, *, compression_type: str | None, linger_ms: int, max_batch_size: int, timeout_s: float
) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        compression_type=compression_type,
        linger_ms=linger_ms,
        max_batch_size=max_batch_size,
        request_timeout_ms=int(timeout_s * 1000),
        enable_idempotence=False,
    )


# --- produce: any records, batching left to the producer ----------------------------------------------------


async def produce_async(
    bootstrap: str,
    topic: str,
    records: Iterable[RecordLike],
    *,
    partition: int | None = None,
    compression_type: str | None = None,
    linger_ms: int = 5,
    max_batch_size: int = 16384,
    timeout_s: float = _DEFAULT_TIMEOUT_S,
) -> list[ProducedRecord]:
    """Produce ``records`` (in order) and return them with their offsets, in input order.

    ``partition`` applies to records that name none; if both are None the producer's partitioner picks (by key
    hash; randomly when the key is None). How records are grouped into batches is up to the producer.
    """
    specs = [_as_record(item) for item in records]
    producer = _producer(
        bootstrap,
        compression_type=compression_type,
        linger_ms=linger_ms,
        max_batch_size=max_batch_size,
        timeout_s=timeout_s,
    )
    await producer.start()
    try:
        futures = []
        stamped = []
        for spec in specs:
            timestamp_ms = _now_ms() if spec.timestamp_ms is None else spec.timestamp_ms
            stamped.append(timestamp_ms)
            futures.append(
                await producer.send(
                    topic,
                    value=spec.value,
                    key=spec.key,
                    partition=spec.partition if spec.partition is not None else partition,
                    timestamp_ms=timestamp_ms,
                    headers=list(spec.headers),
                )
            )
        metadata = await asyncio.wait_for(asyncio.gather(*futures), timeout_s)
    finally:
        await producer.stop()
    return [
        ProducedRecord(
            topic=topic,
            partition=meta.partition,
            offset=meta.offset,
            key=spec.key,
            value=spec.value,
            headers=spec.headers,
            timestamp_ms=timestamp_ms,
        )
        for spec, meta, timestamp_ms in zip(specs, metadata, stamped, strict=True)
    ]


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[RecordLike],
    *,
    partition: int | None = None,
    compression_type: str | None = None,
    linger_ms: int = 5,
    max_batch_size: int = 16384,
    timeout_s: float = _DEFAULT_TIMEOUT_S,
) -> list[ProducedRecord]:
    """Synchronous :func:`produce_async`."""
    specs = list(records)
    return _run_sync(
        lambda: produce_async(
            bootstrap,
            topic,
            specs,
            partition=partition,
            compression_type=compression_type,
            linger_ms=linger_ms,
            max_batch_size=max_batch_size,
            timeout_s=timeout_s,
        )
    )


# --- produce_batches: the caller decides the record batches -------------------------------------------------


async def produce_batches_async(
    bootstrap: str,
    topic: str,
    batches: Iterable[Sequence[RecordLike]],
    *,
    partition: int = 0,
    compression_type: str | None = None,
    timeout_s: float = _DEFAULT_TIMEOUT_S,
) -> list[list[ProducedRecord]]:
    """Write each inner sequence as exactly one record batch on ``partition``, one after the other.

    E.g. ``[[v0, ..., v9], [v10]]`` makes a 10-record batch then a 1-record batch (Tansu's ListOffsets LATEST
    is right only when the last batch holds one record). A record naming another partition is an error; a
    batch too large for one request (``max_batch_size`` is raised to fit) fails with ValueError.
    """
    groups = [[_as_record(item) for item in batch] for batch in batches]
    for group in groups:
        if not group:
            raise ValueError("a record batch needs at least one record")
        for spec in group:
            if spec.partition is not None and spec.partition != partition:
                raise ValueError(f"a record for partition {spec.partition} in a batch for {partition}")
    largest = max((sum(len(s.value or b"") + len(s.key or b"") + 64 for s in g) for g in groups), default=0)
    producer = _producer(
        bootstrap,
        compression_type=compression_type,
        linger_ms=0,
        max_batch_size=max(16384, largest + 1024),
        timeout_s=timeout_s,
    )
    results: list[list[ProducedRecord]] = []
    await producer.start()
    try:
        for group in groups:
            builder = producer.create_batch()
            stamped = []
            for spec in group:
                timestamp_ms = _now_ms() if spec.timestamp_ms is None else spec.timestamp_ms
                appended = builder.append(
                    timestamp=timestamp_ms, key=spec.key, value=spec.value, headers=list(spec.headers)
                )
                if appended is None:
                    raise ValueError(f"a batch of {len(group)} records does not fit in one record batch")
                stamped.append(timestamp_ms)
            builder.close()
            future = await producer.send_batch(builder, topic, partition=partition)
            meta = await asyncio.wait_for(future, timeout_s)
            results.append(
                [
                    ProducedRecord(
                        topic=topic,
                        partition=partition,
                        offset=meta.offset + i,
                        key=spec.key,
                        value=spec.value,
                        headers=spec.headers,
                        timestamp_ms=timestamp_ms,
                    )
                    for i, (spec, timestamp_ms) in enumerate(zip(group, stamped, strict=True))
                ]
            )
    finally:
        await producer.stop()
    return results


def produce_batches(
    bootstrap: str,
    topic: str,
    batches: Iterable[Sequence[RecordLike]],
    *,
    partition: int = 0,
    compression_type: str | None = None,
    timeout_s: float = _DEFAULT_TIMEOUT_S,
) -> list[list[ProducedRecord]]:
    """Synchronous :func:`produce_batches_async`."""
    groups = [list(batch) for batch in batches]
    return _run_sync(
        lambda: produce_batches_async(
            bootstrap,
            topic,
            groups,
            partition=partition,
            compression_type=compression_type,
            timeout_s=timeout_s,
        )
    )


# --- produce_values: n generated records spread over partitions ---------------------------------------------


def _spread(
    n: int,
    partitions: int,
    *,
    value_size: int,
    key: bytes | Callable[[int], bytes | None] | None,
    headers: Sequence[Header] | Callable[[int], Sequence[Header]] | None,
    start: int,
) -> list[Record]:
    if n < 0 or partitions < 1:
        raise ValueError(f"need n >= 0 and partitions >= 1, got n={n} partitions={partitions}")
    records = []
    for i in range(start, start + n):
        record_key = key(i) if callable(key) else key
        record_headers: Sequence[Header] = headers(i) if callable(headers) else (headers or ())
        records.append(
            Record(
                value=value_for(i, value_size),
                key=record_key,
                headers=record_headers,
                partition=i % partitions,
            )
        )
    return records


def _by_partition(produced: list[ProducedRecord], partitions: int) -> dict[int, list[ProducedRecord]]:
    grouped: dict[int, list[ProducedRecord]] = {p: [] for p in range(partitions)}
    for record in produced:
        grouped[record.partition].append(record)
    for records in grouped.values():
        records.sort(key=lambda r: r.offset)
    return grouped


async def produce_values_async(
    bootstrap: str,
    topic: str,
    n: int,
    partitions: int,
    *,
    value_size: int = 32,
    key: bytes | Callable[[int], bytes | None] | None = None,
    headers: Sequence[Header] | Callable[[int], Sequence[Header]] | None = None,
    start: int = 0,
    compression_type: str | None = None,
    linger_ms: int = 5,
    max_batch_size: int = 16384,
    timeout_s: float = _DEFAULT_TIMEOUT_S,
) -> dict[int, list[ProducedRecord]]:
    """Produce records ``start .. start+n-1``: record i goes to partition ``i % partitions`` with value
    ``value_for(i, value_size)``; ``key``/``headers`` are fixed or a function of i.

    Returns, for every partition 0..partitions-1 (empty lists included), its records in offset order.
    """
    records = _spread(n, partitions, value_size=value_size, key=key, headers=headers, start=start)
    produced = await produce_async(
        bootstrap,
        topic,
        records,
        compression_type=compression_type,
        linger_ms=linger_ms,
        max_batch_size=max_batch_size,
        timeout_s=timeout_s,
    )
    return _by_partition(produced, partitions)


def produce_values(
    bootstrap: str,
    topic: str,
    n: int,
    partitions: int,
    *,
    value_size: int = 32,
    key: bytes | Callable[[int], bytes | None] | None = None,
    headers: Sequence[Header] | Callable[[int], Sequence[Header]] | None = None,
    start: int = 0,
    compression_type: str | None = None,
    linger_ms: int = 5,
    max_batch_size: int = 16384,
    timeout_s: float = _DEFAULT_TIMEOUT_S,
) -> dict[int, list[ProducedRecord]]:
    """Synchronous :func:`produce_values_async`."""
    return _run_sync(
        lambda: produce_values_async(
            bootstrap,
            topic,
            n,
            partitions,
            value_size=value_size,
            key=key,
            headers=headers,
            start=start,
            compression_type=compression_type,
            linger_ms=linger_ms,
            max_batch_size=max_batch_size,
            timeout_s=timeout_s,
        )
    )


# --- bound to one broker, for the `produce` fixture ---------------------------------------------------------


@attrs.frozen
class ProduceHelper:
    """The functions above with ``bootstrap`` filled in: ``produce(topic, records)``,
    ``produce.values(topic, n, partitions)``, ``produce.batches(topic, batches)``, and ``*_async`` twins."""

    bootstrap: str

    def __call__(self, topic: str, records: Iterable[RecordLike], **options: Any) -> list[ProducedRecord]:
        return produce(self.bootstrap, topic, records, **options)

    def values(self, topic: str, n: int, partitions: int, **options: Any) -> dict[int, list[ProducedRecord]]:
        return produce_values(self.bootstrap, topic, n, partitions, **options)

    def batches(
        self, topic: str, batches: Iterable[Sequence[RecordLike]], **options: Any
    ) -> list[list[ProducedRecord]]:
        return produce_batches(self.bootstrap, topic, batches, **options)

    async def produce_async(self, topic: str, records: Iterable[RecordLike], **options: Any) -> list[ProducedRecord]:
        return await produce_async(self.bootstrap, topic, records, **options)

    async def values_async(
        self, topic: str, n: int, partitions: int, **options: Any
    ) -> dict[int, list[ProducedRecord]]:
        return await produce_values_async(self.bootstrap, topic, n, partitions, **options)

    async def batches_async(
        self, topic: str, batches: Iterable[Sequence[RecordLike]], **options: Any
    ) -> list[list[ProducedRecord]]:
        return await produce_batches_async(self.bootstrap, topic, batches, **options)
