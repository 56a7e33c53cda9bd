"""Driver side: which partitions the source reads, where each range starts and ends, and how to split it.

Offsets travel as Spark checkpoint JSON, ``{"topic": {"0": 42}}`` (partition keys are strings in JSON); here they
are ``dict[TopicPartition, int]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError, KafkaError, UnknownTopicOrPartitionError
from asyncconsumer.records import TopicPartition
from asyncconsumer.spark.limits import Span, split
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
    (``findFirstIn``, not a whole-name match): anchor it with ``^...$`` for a whole name. A ``subscribe`` topic that
    does not exist is an ``UnknownTopicOrPartitionError`` naming it (retried as any lookup), as Spark's source fails
    on it: never an empty read."""
    if options.assign is not None:
        return [TopicPartition(t, p) for t, parts in options.assign.items() for p in parts]
    if options.subscribe is not None:
        found, missing = [], []
        for topic in options.subscribe:
            infos = consumer.partitions_for(topic)
            found += [TopicPartition(topic, p.partition) for p in infos]
            if not infos:
                missing.append(topic)
        if missing:
            raise UnknownTopicOrPartitionError(f"subscribed topic(s) {', '.join(map(repr, missing))} do not exist")
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
    """Where a new query starts: by ``startingTimestamp``, else ``startingOffsetsByTimestamp``, else
    ``startingOffsets`` (Spark's order of preference)."""
    if options.starting_timestamp is None and options.starting_by_timestamp is None:
        return resolve(consumer, tps, options.starting, "startingOffsets")
    return by_timestamp(consumer, tps, options, starting=True)


def ending_offsets(consumer: Consumer, tps: list[TopicPartition], options: SourceOptions) -> Offsets:
    """Where a batch query ends: by ``endingTimestamp``, else ``endingOffsetsByTimestamp``, else ``endingOffsets``;
    a timestamp no record is at or after ends at the latest offset."""
    if options.ending_timestamp is None and options.ending_by_timestamp is None:
        return resolve(consumer, tps, options.ending, "endingOffsets")
    return by_timestamp(consumer, tps, options, starting=False)


def by_timestamp(consumer: Consumer, tps: list[TopicPartition], options: SourceOptions, *, starting: bool) -> Offsets:
    """Each partition's first offset with a timestamp at or after the one asked (-2/-1 in the per-partition JSON:
    earliest/latest, Kafka's ListOffsets codes). The per-partition JSON must name exactly the partitions read.

    No such offset: at the start, ``startingOffsetsByTimestampStrategy`` decides (``error``, Spark's default, or
    ``latest``); at the end, the latest offset.
    """
    end = "starting" if starting else "ending"
    single = options.starting_timestamp if starting else options.ending_timestamp
    if single is not None:
        name, stamps = f"{end}Timestamp", dict.fromkeys(tps, single)
    else:
        name = f"{end}OffsetsByTimestamp"
        per_partition = options.starting_by_timestamp if starting else options.ending_by_timestamp
        assert per_partition is not None
        named = {TopicPartition(t, p): ts for t, parts in per_partition.items() for p, ts in parts.items()}
        if set(named) != set(tps):
            raise ConfigError(name, f"names {sorted(named)}, but the partitions read are {sorted(tps)}")
        stamps = named
    if not tps:
        return {}
    found = consumer.offsets_for_times({tp: ts for tp, ts in stamps.items() if ts >= 0})
    earliest, latest = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
    out: Offsets = {}
    for tp in tps:
        if stamps[tp] < 0:
            out[tp] = earliest[tp] if stamps[tp] == EARLIEST else latest[tp]
            continue
        hit = found.get(tp)
        if hit is not None:
            out[tp] = hit.offset
        elif starting and options.by_timestamp_strategy == "error":
            raise ConfigError(
                name,
                f"no offset of {tp} has a timestamp at or after {stamps[tp]} (no offset matched); "
                "set startingOffsetsByTimestampStrategy=latest to start at the latest offset there",
            )
        else:
            out[tp] = latest[tp]
    return out


def plan(
    start: Offsets,
    end: Offsets,
    earliest: Offsets,
    *,
    fail_on_data_loss: bool,
    min_partitions: int | None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """The ranges to read, checked for vanished data, split for ``minPartitions``/``maxRecordsPerPartition`` as
    Spark's source splits them (``limits.split``).

    A partition new since ``start`` is read from its earliest offset, as Spark's Kafka source does; like Spark's,
    this counts as data loss when that offset is not 0, and so does a partition of ``start`` missing from ``end``
    (its topic deleted). A log now shorter than ``start`` (the topic recreated) is read from its earliest offset
    when ``failOnDataLoss`` is false, where Spark's source reads nothing of it and moves on (see docs/design.md).
    """
    gone = sorted(set(start) - set(end))
    if gone:
        lost(fail_on_data_loss, f"{', '.join(map(str, gone))}: gone from the topic metadata (topic deleted?)")
    ranges: list[OffsetRange] = []
    for tp in sorted(end):
        if tp not in start and earliest.get(tp, 0) != 0:
            lost(fail_on_data_loss, f"{tp}: a partition added since the last batch starts at {earliest[tp]}, not 0")
        begin = start.get(tp, earliest.get(tp, 0))
        stop = end[tp]
        if stop < begin:
            lost(fail_on_data_loss, f"{tp}: the end offset {stop} is before the start {begin} (topic recreated?)")
            begin = earliest.get(tp, 0)
            if stop < begin:
                continue
        if tp in earliest and begin < earliest[tp]:
            lost(fail_on_data_loss, f"{tp}: offsets {begin}..{earliest[tp] - 1} are gone (retention?)")
            begin = earliest[tp]
        if stop > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, stop))
    spans = [Span(TopicPartition(r.topic, r.partition), r.start, r.end) for r in ranges]
    pieces = split(spans, min_partitions=min_partitions, max_records=max_records_per_partition)
    return [OffsetRange(p.tp.topic, p.tp.partition, p.start, p.end) for p in pieces]


def lost(fail: bool, what: str) -> None:
    """Offsets the query needs are gone: ``DataLossError`` under ``failOnDataLoss``, else a warning (the driver's
    plan and the executors' reads both report through here)."""
    if fail:
        raise DataLossError(f"{what}; set failOnDataLoss=false to skip what is gone and carry on")
    log.warning("spark.data_lost", detail=what)
