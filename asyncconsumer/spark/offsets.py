"""Driver side: which partitions the source reads, where each range starts and ends, and how to split it.

Offsets travel as Spark checkpoint JSON, ``{"topic": {"0": 42}}`` (partition keys are strings in JSON); here they
are ``dict[TopicPartition, int]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError, KafkaError
from asyncconsumer.records import TopicPartition
from asyncconsumer.spark.options import EARLIEST, LATEST, OffsetSpec, SourceOptions
from asyncconsumer.sync import Consumer

log = get_logger("asyncconsumer.spark")

Offsets = dict[TopicPartition, int]


class DataLossError(KafkaError):
    """Offsets the query needs are gone (retention, or a topic recreated) and ``failOnDataLoss`` is true."""


@attrs.define(frozen=True, slots=True)
class OffsetRange:
    """``[start, end)`` of one partition: one Spark input partition (a large one may be split in several)."""

    topic: str
    partition: int
    start: int
    end: int


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_json(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {TopicPartition(t, int(p)): int(o) for t, parts in data.items() for p, o in parts.items()}


def partitions(consumer: Consumer, options: SourceOptions) -> list[TopicPartition]:
    """The partitions the options name now (a pattern or topic list is resolved against current metadata)."""
    if options.assign is not None:
        return [TopicPartition(t, p) for t, parts in options.assign.items() for p in parts]
    if options.subscribe is not None:
        found = []
        for topic in options.subscribe:
            found += [TopicPartition(topic, p.partition) for p in consumer.partitions_for(topic)]
        return found
    assert options.pattern is not None
    pattern = re.compile(options.pattern)
    topics = consumer.topics()
    return [TopicPartition(t, p.partition) for t, infos in topics.items() if pattern.fullmatch(t) for p in infos]


def resolve(consumer: Consumer, tps: list[TopicPartition], spec: OffsetSpec, name: str) -> Offsets:
    """Concrete offsets for ``spec`` (earliest, latest or per-partition JSON with -2/-1)."""
    if not tps:
        return {}
    earliest = consumer.beginning_offsets(tps)
    latest = consumer.end_offsets(tps)
    if spec == "earliest":
        return dict(earliest)
    if spec == "latest":
        return dict(latest)
    assert isinstance(spec, dict)
    out: Offsets = {}
    for tp in tps:
        wanted = spec.get(tp.topic, {}).get(tp.partition)
        if wanted is None:
            if tp.topic in spec:
                raise ConfigError(name, f"names topic {tp.topic!r} but not its partition {tp.partition}")
            wanted = LATEST if name == "endingOffsets" else EARLIEST
        out[tp] = earliest[tp] if wanted == EARLIEST else latest[tp] if wanted == LATEST else wanted
    return out


def starting_offsets(consumer: Consumer, tps: list[TopicPartition], options: SourceOptions) -> Offsets:
    """Where a new query starts: by timestamp when asked (no offset at or after it -> the latest), else by spec."""
    if options.starting_timestamp is None and options.starting_by_timestamp is None:
        return resolve(consumer, tps, options.starting, "startingOffsets")
    if options.starting_timestamp is not None:
        stamps = dict.fromkeys(tps, options.starting_timestamp)
    else:
        assert options.starting_by_timestamp is not None
        stamps = {tp: options.starting_by_timestamp.get(tp.topic, {}).get(tp.partition, -1) for tp in tps}
    found = consumer.offsets_for_times({tp: ts for tp, ts in stamps.items() if ts >= 0})
    latest = consumer.end_offsets(tps)
    return {tp: (found[tp].offset if found.get(tp) is not None else latest[tp]) for tp in tps}  # type: ignore[union-attr]


def limit(start: Offsets, latest: Offsets, max_offsets: int) -> Offsets:
    """About ``max_offsets`` offsets in all, shared over the partitions in proportion to their lag, as Spark's Kafka
    source splits ``maxOffsetsPerTrigger`` (``KafkaMicroBatchStream.rateLimit``): each partition with lag gets
    ``max_offsets * lag / total`` offsets, rounded down, except that a share below one is rounded up so that no
    partition starves. So a batch may hold a little less than ``max_offsets`` (the roundings down) or, with many
    partitions of tiny lag, a little more (the roundings up)."""
    lags = {tp: latest[tp] - start[tp] for tp in latest if tp in start and latest[tp] - start[tp] > 0}
    total = sum(lags.values())
    if total <= max_offsets:
        return dict(latest)
    out: Offsets = {}
    for tp, end in latest.items():
        if tp not in lags:
            out[tp] = end
            continue
        share = max_offsets * lags[tp] / total
        out[tp] = min(end, start[tp] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out


def plan(
    start: Offsets, end: Offsets, earliest: Offsets, *, fail_on_data_loss: bool, min_partitions: int | None
) -> list[OffsetRange]:
    """The ranges to read, checked for vanished data, split so there are at least ``min_partitions`` when asked.

    A partition new since ``start`` is read from its earliest offset, as Spark's Kafka source does.
    """
    ranges: list[OffsetRange] = []
    for tp in sorted(end):
        begin = start.get(tp, earliest.get(tp, 0))
        stop = end[tp]
        if stop < begin:
            _lost(fail_on_data_loss, f"{tp}: the end offset {stop} is before the start {begin} (topic recreated?)")
            begin = earliest.get(tp, 0)
            if stop < begin:
                continue
        if tp in earliest and begin < earliest[tp]:
            _lost(fail_on_data_loss, f"{tp}: offsets {begin}..{earliest[tp] - 1} are gone (retention?)")
            begin = earliest[tp]
        if stop > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, stop))
    if min_partitions is None or len(ranges) >= min_partitions or not ranges:
        return ranges
    total = sum(r.end - r.start for r in ranges)
    split: list[OffsetRange] = []
    for r in ranges:
        pieces = max(1, round(min_partitions * (r.end - r.start) / total))
        step = math.ceil((r.end - r.start) / pieces)
        split += [OffsetRange(r.topic, r.partition, s, min(s + step, r.end)) for s in range(r.start, r.end, step)]
    return split


def _lost(fail: bool, what: str) -> None:
    if fail:
        raise DataLossError(f"{what}; set failOnDataLoss=false to skip what is gone and carry on")
    log.warning("spark.data_lost", detail=what)
