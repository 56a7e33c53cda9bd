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

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
"""Kafka's own topics, which ``subscribePattern`` never matches (Spark lists topics without them)."""


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
    """The partitions the options name now (a pattern or topic list is resolved against current metadata).

    ``subscribePattern`` matches a topic when it matches anywhere in its name, as Spark's Kafka source does
    (``findFirstIn``, not a whole-name match): anchor it with ``^...$`` for a whole name."""
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
    return [
        TopicPartition(t, p.partition)
        for t, infos in topics.items()
        if t not in INTERNAL_TOPICS and pattern.search(t)
        for p in infos
    ]


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
    """Where a new query starts: by timestamp when asked, else by ``startingOffsets``.

    A partition with no offset at or after its timestamp follows ``startingOffsetsByTimestampStrategy``: an error
    naming it ("error", Spark's default) or its latest offset ("latest")."""
    if options.starting_timestamp is None and options.starting_by_timestamp is None:
        return resolve(consumer, tps, options.starting, "startingOffsets")
    name = "startingTimestamp" if options.starting_timestamp is not None else "startingOffsetsByTimestamp"
    stamps = _stamps(tps, options.starting_timestamp, options.starting_by_timestamp)
    return by_timestamp(consumer, stamps, name=name, strategy=options.starting_timestamp_strategy)


def ending_offsets(consumer: Consumer, tps: list[TopicPartition], options: SourceOptions) -> Offsets:
    """Where a batch query ends: by timestamp when asked (no offset at or after it: the latest), else by
    ``endingOffsets``."""
    if options.ending_timestamp is None and options.ending_by_timestamp is None:
        return resolve(consumer, tps, options.ending, "endingOffsets")
    name = "endingTimestamp" if options.ending_timestamp is not None else "endingOffsetsByTimestamp"
    stamps = _stamps(tps, options.ending_timestamp, options.ending_by_timestamp)
    return by_timestamp(consumer, stamps, name=name, strategy="latest")


def _stamps(
    tps: list[TopicPartition], timestamp: int | None, per_partition: Mapping[str, Mapping[int, int]] | None
) -> dict[TopicPartition, int | None]:
    """Each partition's timestamp; None for a partition that ``per_partition`` leaves out (read from the latest)."""
    if timestamp is not None:
        return dict.fromkeys(tps, timestamp)
    assert per_partition is not None
    return {tp: per_partition.get(tp.topic, {}).get(tp.partition) for tp in tps}


def by_timestamp(
    consumer: Consumer, stamps: Mapping[TopicPartition, int | None], *, name: str, strategy: str
) -> Offsets:
    """Per partition, the first offset whose timestamp is at or after its stamp (the broker's ListOffsets answer);
    a partition without a stamp, or without such an offset under ``strategy="latest"``, gets its latest offset;
    without such an offset under ``strategy="error"`` it is a ``ConfigError`` naming ``name`` and the partition."""
    asked: dict[TopicPartition | tuple[str, int], int] = {tp: ts for tp, ts in stamps.items() if ts is not None}
    found = consumer.offsets_for_times(asked) if asked else {}
    latest = consumer.end_offsets(list(stamps)) if stamps else {}
    out: Offsets = {}
    for tp in stamps:
        hit = found.get(tp)
        if hit is not None:
            out[tp] = hit.offset
            continue
        if tp in asked and strategy == "error":
            raise ConfigError(
                name,
                f"no offset of {tp} has a timestamp at or after {asked[tp]} (no offset matched); "
                "startingOffsetsByTimestampStrategy=latest starts such partitions at their latest offset",
            )
        out[tp] = latest[tp]
    return out


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

    A partition new since ``start`` is read from its earliest offset, as Spark's Kafka source does; like Spark's,
    this counts as data loss when that offset is not 0, and so does a partition of ``start`` missing from ``end``
    (its topic deleted). A log now shorter than ``start`` (the topic recreated) is read from its earliest offset
    when ``failOnDataLoss`` is false, where Spark's source reads nothing of it and moves on (see docs/design.md).
    """
    gone = sorted(set(start) - set(end))
    if gone:
        _lost(fail_on_data_loss, f"{', '.join(map(str, gone))}: gone from the topic metadata (topic deleted?)")
    ranges: list[OffsetRange] = []
    for tp in sorted(end):
        if tp not in start and earliest.get(tp, 0) != 0:
            _lost(fail_on_data_loss, f"{tp}: a partition added since the last batch starts at {earliest[tp]}, not 0")
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
