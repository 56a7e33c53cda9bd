"""Polling a consumer in integration tests: until a count of records, exactly a count and nothing more, and the
offsets it returned per partition."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from asyncconsumer import AsyncConsumer, Consumer, ConsumerRecord, KafkaError


async def consume_until(
    consumer: AsyncConsumer,
    count: int,
    timeout_s: float = 20.0,
    max_records: int | None = None,
    *,
    poll_s: float = 1.0,
) -> list[ConsumerRecord]:
    """Polls (at most ``poll_s`` at a time) until ``count`` records arrived, failing at the deadline; returns them
    in arrival order."""
    got: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"only {len(got)} of {count} records within {timeout_s} s"
        records = await consumer.poll(timeout_ms=int(min(remaining, poll_s) * 1000), max_records=max_records)
        got.extend(records.records())
    return got


def consume_blocking(consumer: Consumer, count: int, timeout_s: float = 20.0) -> list[ConsumerRecord]:
    """``consume_until`` for the blocking consumer: polls of at most 0.5 s."""
    got: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} records within {timeout_s} s"
        got.extend(consumer.poll(timeout_ms=500).records())
    return got


def records_of(table: Any) -> list[ConsumerRecord]:
    """A ``poll_arrow`` table's rows as ``ConsumerRecord``s (no leader epoch), to compare with ``poll``'s."""
    out: list[ConsumerRecord] = []
    stamps = table.column("timestamp").cast("int64").to_pylist()
    for row, stamp in zip(table.to_pylist(), stamps, strict=True):
        headers = tuple((h["key"], h["value"]) for h in row.get("headers", ()))
        key, value = row["key"], row["value"]
        out.append(
            ConsumerRecord(
                row["topic"],
                row["partition"],
                row["offset"],
                stamp,
                row["timestamp_type"],
                key,
                value,
                headers,
                None,
                -1 if key is None else len(key),
                -1 if value is None else len(value),
            )
        )
    return out


async def consume_exactly(
    consumer: AsyncConsumer,
    count: int,
    timeout_s: float = 8,
    *,
    errors: list[KafkaError] | None = None,
    arrow: bool = False,
) -> list[ConsumerRecord]:
    """``count`` records, then polls until three in a row bring nothing more (a duplicate would show up here).

    With ``errors``, what ``poll`` raises meanwhile is collected there instead of failing the call. With ``arrow``,
    ``poll_arrow`` is polled instead, its rows made records.
    """
    got: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    quiet = 0
    while len(got) < count or quiet < 3:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} records within {timeout_s} s"
        try:
            if arrow:
                records = records_of(await consumer.poll_arrow(timeout_ms=100, include_headers=True))
            else:
                records = list((await consumer.poll(timeout_ms=100)).records())
        except KafkaError as exc:
            if errors is None:
                raise
            errors.append(exc)
            quiet = 0
            continue
        got.extend(records)
        quiet = quiet + 1 if len(got) >= count and not records else 0
    return got


def by_partition(records: Iterable[ConsumerRecord]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for r in records:
        out[r.partition].append(r.offset)
    return dict(out)
