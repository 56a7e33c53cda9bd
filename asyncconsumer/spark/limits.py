"""How much a micro-batch reads and how a range becomes Spark tasks, as Spark's Kafka source decides them:
``maxOffsetsPerTrigger`` (``rate_limit``), ``minOffsetsPerTrigger`` with ``maxTriggerDelay`` (``TriggerDelay``), and
``minPartitions``/``maxRecordsPerPartition`` (``split``). Pure functions of offsets and a clock reading."""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from asyncconsumer.records import TopicPartition


@attrs.define(frozen=True, slots=True)
class Span:
    """``[start, end)`` of one partition."""

    tp: TopicPartition
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_offsets: int
) -> dict[TopicPartition, int]:
    """Ends for a batch of about ``max_offsets`` offsets, shared by lag: each partition with new offsets advances
    ``floor(max * lag / total)`` (``ceil`` when that is below 1, so a small partition is not starved), capped at its
    latest. As Spark's source, the total may fall short of ``max_offsets`` by the rounding, or pass it by the
    partitions raised to 1. ``start`` has every partition of ``latest`` (new ones at their earliest offset)."""
    lags = {tp: latest[tp] - start[tp] for tp in latest if tp in start and latest[tp] - start[tp] > 0}
    total = sum(lags.values())
    if total < 1:
        return dict(latest)
    out: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        if tp not in lags:
            out[tp] = end
            continue
        share = max_offsets * (lags[tp] / total)
        out[tp] = min(end, start[tp] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out


@attrs.define(slots=True)
class TriggerDelay:
    """``minOffsetsPerTrigger`` with ``maxTriggerDelay``: a batch waits until it has ``min_offsets`` new offsets or
    ``max_delay_ms`` passed since the last batch began. The first call never waits (Spark's source starts its clock
    at 0); state lives in the reader, so a restarted query starts afresh, as Spark's does."""

    min_offsets: int
    max_delay_ms: int
    last_trigger_ms: int | None = None

    def admit(self, now_ms: int, available: int) -> bool:
        """True: run a batch now (and restart the delay); False: hold it back."""
        if self.last_trigger_ms is None or now_ms - self.last_trigger_ms >= self.max_delay_ms:
            self.last_trigger_ms = now_ms
            return True
        if available < self.min_offsets:
            return False
        self.last_trigger_ms = now_ms
        return True


def split(spans: list[Span], *, min_partitions: int | None, max_records: int | None) -> list[Span]:
    """Spark tasks for ``spans`` (empty ones dropped): each span cut into ``ceil(size / max_records)`` pieces, then,
    if there are fewer pieces than ``min_partitions``, one pass cutting each piece into its share of
    ``min_partitions`` (pieces whose share rounds to one stay whole). Pieces of one span differ in size by at most
    one, the remainder going to the last, as Spark's source."""
    spans = [s for s in spans if s.size > 0]
    if (min_partitions is None or len(spans) >= min_partitions) and max_records is None:
        return spans
    if max_records is not None:
        spans = [piece for s in spans for piece in _cut(s, math.ceil(s.size / max_records))]
    if min_partitions is None or min_partitions <= len(spans):
        return spans
    total = sum(s.size for s in spans)
    whole = [s for s in spans if _parts(s.size, total, min_partitions) == 1]
    # by partition, as Spark: a partition cut above stays as it is when one piece is small
    whole_tps = {s.tp for s in whole}
    rest_total = total - sum(s.size for s in whole)
    rest_parts = max(min_partitions - len(whole), 1)
    out: list[Span] = []
    for s in spans:
        out += [s] if s.tp in whole_tps else _cut(s, _parts(s.size, rest_total, rest_parts))
    return [s for s in out if s.size > 0]


def _parts(size: int, total: int, parts: int) -> int:
    """``max(round(size / total * parts), 1)``, rounding halves up (Scala's ``math.round``)."""
    return max(math.floor(size / total * parts + 0.5), 1)


def _cut(span: Span, parts: int) -> list[Span]:
    out = []
    remaining, begin = span.size, span.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(begin + this, span.end)
        out.append(Span(span.tp, begin, end))
        begin = end
    return [s for s in out if s.size > 0]
