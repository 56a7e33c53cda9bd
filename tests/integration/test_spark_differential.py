"""Our data source beside Spark's own Kafka source, on Apache Kafka: the same options must give the same rows.

``format("kafka")`` (``spark-sql-kafka-0-10``, fetched by ``tests/support/spark_kafka.py``) is the reference: every
test reads the same topics with the same options through both and compares every column, headers included.
Streaming tests run each source with its own checkpoint over the same topics and compare what ``foreachBatch``
collected (through Spark: the function runs on the driver and ``collect``s its batch), batch by batch where the
split is deterministic. Nothing relies on state in the driver's process other than what Spark hands it, so the same
tests can run on a cluster's executors.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Broker, TopicFactory
from tests.support.produce import Record, produce_batches

pytestmark = [
    pytest.mark.broker,
    pytest.mark.kafka_only("Spark's Kafka source is the reference on Kafka"),
    pytest.mark.spark_cluster,  # also on the standalone cluster: nothing may depend on the driver's process
]

pyspark = pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")

SOURCES = ("kafka", "asyncconsumer")
"""Spark's Kafka source (the reference), then ours."""

BASE_TS = (int(time.time()) // 3600 - 1) * 3_600_000
"""CreateTime of record 0 of ``produce_varied``; record ``i`` of partition ``p`` is at ``BASE_TS + 1000 * i + p``.
An hour ago, not a fixed date: the broker's first retention check (30 s after it starts) deletes segments whose
newest record is older than ``retention.ms`` (7 days), so old timestamps make rows vanish in the middle of a run."""


def read_both(spark: Any, options: dict[str, str]) -> dict[str, Any]:
    """One batch DataFrame per source for the same options."""
    return {source: spark.read.format(source).options(**options).load() for source in SOURCES}


def plain(row: Any, columns: list[str]) -> tuple[Any, ...]:
    """A row as a plain tuple (headers as tuples of pairs)."""
    values = row.asDict()
    if "headers" in values and values["headers"] is not None:
        values["headers"] = tuple((h["key"], h["value"]) for h in values["headers"])
    return tuple(values[name] for name in columns)


def rows(df: Any) -> list[tuple[Any, ...]]:
    """Every row as a plain tuple (headers as tuples of pairs), in (topic, partition, offset) order."""
    names = df.columns
    out = [plain(row, names) for row in df.collect()]
    key = (names.index("topic"), names.index("partition"), names.index("offset"))
    return sorted(out, key=lambda r: tuple(r[i] for i in key))


def assert_same(frames: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The sources agree on the schema and on every row; returns the rows."""
    kafka, ours = frames["kafka"], frames["asyncconsumer"]
    assert ours.schema == kafka.schema
    expected, got = rows(kafka), rows(ours)
    assert len(got) == len(expected), f"rows per topic-partition: Spark's {counts(expected)}, ours {counts(got)}"
    assert got == expected
    return got


def counts(found: list[tuple[Any, ...]]) -> dict[tuple[str, int], int]:
    """Rows per (topic, partition), for failure messages."""
    out: dict[tuple[str, int], int] = {}
    for r in found:
        out[r[2], r[3]] = out.get((r[2], r[3]), 0) + 1
    return out


def outcome(spark: Any, source: str, options: dict[str, str]) -> list[tuple[Any, ...]] | str:
    """A batch read's rows, or ``"error: <message>"`` when it fails (planning or reading)."""
    try:
        return rows(spark.read.format(source).options(**options).load())
    except Exception as exc:  # Spark wraps the source's error in its own types: compare that both fail
        return f"error: {exc}"


def produce_varied(bootstrap: str, topic: str, partitions: int, per_partition: int, *, start: int = 0) -> int:
    """Records of every shape on each partition: null and empty keys, null and empty values, no headers, null and
    empty header values, a repeated header key; CreateTime ``BASE_TS + 1000 * i + p`` (one record far in the past).
    Returns how many were written."""
    for p in range(partitions):
        records = [
            Record(
                value=None if i % 7 == 3 else b"" if i % 5 == 0 else f"v-{p}-{i}".encode(),
                key=None if i % 3 == 0 else b"" if i % 3 == 2 else f"k-{i}".encode(),
                headers=() if i % 4 == 0 else (("h", f"{i}".encode()), ("n", None), ("h", b""), ("é", b"\x00\xff")),
                partition=p,
                timestamp_ms=1 if i == 11 else BASE_TS + 1000 * i + p,
            )
            for i in range(start, start + per_partition)
        ]
        produce_batches(bootstrap, topic, [records[i : i + 7] for i in range(0, len(records), 7)], partition=p)
    return partitions * per_partition


def options_for(broker: Broker, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, "includeHeaders": "true", **extra}


@pytest.mark.parametrize("headers", ["true", "false"])
def test_the_schema_is_spark_kafka_sources_column_for_column(spark: Any, broker: Broker, headers: str) -> None:
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "any", "includeHeaders": headers}
    frames = {source: spark.read.format(source).options(**options).load() for source in SOURCES}
    assert frames["asyncconsumer"].schema == frames["kafka"].schema
    assert frames["asyncconsumer"].schema.simpleString() == frames["kafka"].schema.simpleString()
    streams = {source: spark.readStream.format(source).options(**options).load() for source in SOURCES}
    assert streams["asyncconsumer"].schema == streams["kafka"].schema


def test_a_batch_subscribe_read_returns_the_same_rows_headers_included(
    spark: Any, broker: Broker, topic: TopicFactory
) -> None:
    name = topic(partitions=3)
    produced = produce_varied(broker.bootstrap_servers, name, 3, 40)
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": name, "includeHeaders": "true"}
    got = assert_same(read_both(spark, options))
    assert len(got) == produced == 120


# Batch: which partitions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", ["true", "false"])
def test_subscribe_to_several_topics_with_records_of_every_shape(
    spark: Any, broker: Broker, topic: TopicFactory, headers: str
) -> None:
    a, b, empty = topic(3), topic(1), topic(2)
    count = produce_varied(broker.bootstrap_servers, a, 3, 30) + produce_varied(broker.bootstrap_servers, b, 1, 12)
    got = assert_same(read_both(spark, options_for(broker, subscribe=f"{a},{b},{empty}", includeHeaders=headers)))
    assert len(got) == count == 102
    values = {r[1] for r in got}
    keys = {r[0] for r in got}
    assert None in values and b"" in values and None in keys and b"" in keys  # the shapes reached both sources
    if headers == "true":
        assert {r[7] for r in got} >= {None, (("h", b"1"), ("n", None), ("h", b""), ("é", b"\x00\xff"))}


def test_subscribe_pattern_reads_the_same_topics(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    prefix = f"dp-{uuid.uuid4().hex[:6]}"
    a, b = topic(2, name=f"{prefix}-a"), topic(1, name=f"{prefix}.b")
    other = topic(1, name=f"x{prefix}-c")
    for name, partitions in ((a, 2), (b, 1), (other, 1)):
        produce_varied(broker.bootstrap_servers, name, partitions, 9)
    got = assert_same(read_both(spark, options_for(broker, subscribePattern=rf"{prefix}[-.].*")))
    assert {r[2] for r in got} == {a, b, other}  # a match anywhere in the name, as Spark's findFirstIn
    assert len(got) == 36


def test_assign_reads_only_the_named_partitions(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    a, b = topic(3), topic(2)
    produce_varied(broker.bootstrap_servers, a, 3, 10)
    produce_varied(broker.bootstrap_servers, b, 2, 10)
    got = assert_same(read_both(spark, options_for(broker, assign=json.dumps({a: [0, 2], b: [1]}))))
    assert sorted({(r[2], r[3]) for r in got}) == sorted([(a, 0), (a, 2), (b, 1)])


def test_assign_naming_a_partition_that_does_not_exist(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    """Kept difference: Spark's source drops an assigned partition the topic does not have and reads the rest; ours
    fails the query with an error naming it (a typo, as an unknown option is one, is refused before anything runs)."""
    a = topic(3)
    produce_varied(broker.bootstrap_servers, a, 3, 10)
    options = options_for(broker, assign=json.dumps({a: [0, 7]}), **{"fetchOffset.retryIntervalMs": "10"})
    spark_rows = outcome(spark, "kafka", options)
    assert isinstance(spark_rows, list) and {(r[2], r[3]) for r in spark_rows} == {(a, 0)}
    ours = outcome(spark, "asyncconsumer", options)
    assert isinstance(ours, str) and f"partition 7 of topic '{a}' does not exist (it has 3 partitions)" in ours


def test_subscribe_to_a_topic_that_does_not_exist_fails_on_both(
    spark: Any, broker: Broker, topic: TopicFactory
) -> None:
    """Spark's source fails (its admin's describeTopics); ours read nothing here once, and now fails naming it."""
    present, missing = topic(1), f"missing-{uuid.uuid4().hex[:8]}"
    produce_varied(broker.bootstrap_servers, present, 1, 3)
    options = options_for(broker, subscribe=f"{present},{missing}", **{"fetchOffset.retryIntervalMs": "10"})
    found = {source: outcome(spark, source, options) for source in SOURCES}
    assert isinstance(found["kafka"], str) and "UnknownTopicOrPartitionException" in found["kafka"]
    assert isinstance(found["asyncconsumer"], str)
    assert f"subscribed topic(s) '{missing}' do not exist" in found["asyncconsumer"]


# Batch: where ranges start and end ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("starting", "ending"),
    [
        ({"0": 3, "1": -2, "2": 9}, {"0": -1, "1": 7, "2": 9}),
        ({"0": -2, "1": 0, "2": 29}, {"0": 1, "1": -1, "2": 30}),
    ],
)
def test_starting_and_ending_offsets_as_json(
    spark: Any, broker: Broker, topic: TopicFactory, starting: dict[str, int], ending: dict[str, int]
) -> None:
    name = topic(3)
    produce_varied(broker.bootstrap_servers, name, 3, 30)
    options = options_for(
        broker, subscribe=name, startingOffsets=json.dumps({name: starting}), endingOffsets=json.dumps({name: ending})
    )
    got = assert_same(read_both(spark, options))

    def at(offset: int) -> int:
        return {-2: 0, -1: 30}.get(offset, offset)

    expected = [(p, o) for p in range(3) for o in range(at(starting[str(p)]), at(ending[str(p)]))]
    assert sorted((r[3], r[4]) for r in got) == expected


def test_starting_timestamp_for_every_partition(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    name = topic(3)
    produce_varied(broker.bootstrap_servers, name, 3, 30)
    options = options_for(broker, subscribe=name, startingTimestamp=str(BASE_TS + 12_000))
    got = assert_same(read_both(spark, options))
    # partition 0: offset 12 has BASE_TS + 12000; partitions 1, 2 are a millisecond later at offset 12 too
    assert sorted({(r[3], min(x[4] for x in got if x[3] == r[3])) for r in got}) == [(0, 12), (1, 12), (2, 12)]


def test_starting_offsets_by_timestamp_per_partition(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    name = topic(3)
    produce_varied(broker.bootstrap_servers, name, 3, 30)
    stamps = {"0": BASE_TS, "1": BASE_TS + 20_500, "2": BASE_TS + 29_002}  # -> offsets 0, 21, 29
    got = assert_same(
        read_both(spark, options_for(broker, subscribe=name, startingOffsetsByTimestamp=json.dumps({name: stamps})))
    )
    assert {p: min(r[4] for r in got if r[3] == p) for p in (0, 1, 2)} == {0: 0, 1: 21, 2: 29}


@pytest.mark.parametrize(
    "ending",
    [
        {"endingTimestamp": str(BASE_TS + 20_000)},
        {"endingOffsetsByTimestamp": "by-partition"},
    ],
    ids=["endingTimestamp", "endingOffsetsByTimestamp"],
)
def test_ending_by_timestamp(spark: Any, broker: Broker, topic: TopicFactory, ending: dict[str, str]) -> None:
    name = topic(2)
    produce_varied(broker.bootstrap_servers, name, 2, 30)
    if "endingOffsetsByTimestamp" in ending:
        ending = {"endingOffsetsByTimestamp": json.dumps({name: {"0": BASE_TS + 5_000, "1": BASE_TS + 99_000}})}
    got = assert_same(read_both(spark, options_for(broker, subscribe=name, **ending)))
    assert got  # a timestamp past the log ends the range at the latest offset


@pytest.mark.parametrize("strategy", [None, "error", "latest"])
@pytest.mark.parametrize("by", ["startingTimestamp", "startingOffsetsByTimestamp"])
def test_a_starting_timestamp_past_the_log_follows_the_strategy(
    spark: Any, broker: Broker, topic: TopicFactory, strategy: str | None, by: str
) -> None:
    name = topic(2)
    produce_varied(broker.bootstrap_servers, name, 2, 10)
    late = BASE_TS + 60_000  # after every record of partition 1, and of partition 0 below
    value = str(late) if by == "startingTimestamp" else json.dumps({name: {"0": BASE_TS + 4_000, "1": late}})
    options = options_for(broker, subscribe=name, **{by: value})
    if strategy is not None:
        options["startingOffsetsByTimestampStrategy"] = strategy
    found = {source: outcome(spark, source, options) for source in SOURCES}
    if strategy == "latest":
        assert found["asyncconsumer"] == found["kafka"]
    else:  # "error", the default: no offset at or after the timestamp is an error naming it
        for source in SOURCES:
            assert isinstance(found[source], str), (source, found[source])
            assert "no offset matched" in found[source].lower(), found[source]


# Batch: transactions ----------------------------------------------------------------------------------------------


def produce_transactions(bootstrap: str, topic: str) -> None:
    """On partition 0: 5 plain records, a committed transaction of 4, an aborted one of 3, a committed one of 2,
    and an open (never ended) one of 2 after a last plain record, so the last stable offset trails the log end."""
    from confluent_kafka import Producer

    def make(transactional: bool) -> Any:
        config: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 0}
        if transactional:
            config["transactional.id"] = f"spark-diff-{uuid.uuid4().hex[:8]}"
        producer = Producer(config)
        if transactional:
            producer.init_transactions(30)
        return producer

    def send(producer: Any, values: list[str]) -> None:
        for value in values:
            producer.produce(topic, value=value.encode(), key=value.encode(), partition=0)
        producer.flush(30)

    plain_producer, txn = make(False), make(True)
    send(plain_producer, [f"p{i}" for i in range(5)])
    for label, count, commit in (("c1", 4, True), ("a1", 3, False), ("c2", 2, True)):
        txn.begin_transaction()
        send(txn, [f"{label}-{i}" for i in range(count)])
        txn.commit_transaction(30) if commit else txn.abort_transaction(30)
    open_txn = make(True)
    open_txn.begin_transaction()
    send(open_txn, ["open-0", "open-1"])
    send(plain_producer, ["p5"])
    # open_txn is left open: read_committed stops at its first record (the last stable offset)


@pytest.mark.parametrize("isolation", [None, "read_uncommitted", "read_committed"])
def test_transactional_records_follow_the_isolation_level(
    spark: Any, broker: Broker, topic: TopicFactory, isolation: str | None
) -> None:
    name = topic(1)
    produce_transactions(broker.bootstrap_servers, name)
    options = options_for(broker, subscribe=name)
    if isolation is not None:
        options["kafka.isolation.level"] = isolation
    got = assert_same(read_both(spark, options))
    values = [r[1].decode() for r in got]
    if isolation == "read_committed":
        assert values == [f"p{i}" for i in range(5)] + [f"c1-{i}" for i in range(4)] + ["c2-0", "c2-1"]
    else:
        assert "a1-0" in values and "open-0" in values and values[-1] == "p5"


# Streaming ----------------------------------------------------------------------------------------------------------


class Batches:
    """A ``foreachBatch`` function keeping each batch's rows by batch id (a replayed id replaces its rows)."""

    def __init__(self) -> None:
        self.by_id: dict[int, list[tuple[Any, ...]]] = {}

    def __call__(self, df: Any, batch_id: int) -> None:
        self.by_id[batch_id] = rows(df)

    def all(self) -> list[tuple[Any, ...]]:
        return self.since(set())

    def since(self, seen: set[int]) -> list[tuple[Any, ...]]:
        """The rows of the batches whose ids are not in ``seen``, in (topic, partition, offset) order."""
        chosen = (r for batch_id, batch in self.by_id.items() if batch_id not in seen for r in batch)
        return sorted(chosen, key=lambda r: (r[2], r[3], r[4]))

    def sizes(self) -> list[dict[tuple[str, int], int]]:
        """Per batch (in id order), rows per topic-partition: how the source split the offsets."""
        out = []
        for batch_id in sorted(self.by_id):
            counts: dict[tuple[str, int], int] = {}
            for r in self.by_id[batch_id]:
                counts[r[2], r[3]] = counts.get((r[2], r[3]), 0) + 1
            out.append(counts)
        return out


def start_stream(
    spark: Any, source: str, options: dict[str, str], sink: Batches, checkpoint: Path, **trigger: Any
) -> Any:
    df = spark.readStream.format(source).options(**options).load()
    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
    return writer.trigger(**trigger).start()


def run_available_now(spark: Any, source: str, options: dict[str, str], sink: Batches, checkpoint: Path) -> None:
    """One ``availableNow`` run to its end; raises what the query failed with."""
    query = start_stream(spark, source, options, sink, checkpoint, availableNow=True)
    try:
        assert query.awaitTermination(180), f"{source}: the availableNow run did not finish in 180 s"
    finally:
        query.stop()


def assert_exactly_once(collected: list[tuple[Any, ...]]) -> None:
    where = [(r[2], r[3], r[4]) for r in collected]
    assert len(where) == len(set(where)), "an offset was delivered twice"


@pytest.fixture
def checkpoints(tmp_path: Path) -> Iterator[dict[str, Path]]:
    yield {source: tmp_path / source for source in SOURCES}


def test_available_now_with_max_offsets_per_trigger_through_a_restart(
    spark: Any, broker: Broker, topic: TopicFactory, checkpoints: dict[str, Path]
) -> None:
    a, b = topic(3), topic(1)
    produce_varied(broker.bootstrap_servers, a, 3, 20)
    produce_varied(broker.bootstrap_servers, a, 1, 15, start=20)  # partition 0 lags more: uneven shares
    produce_varied(broker.bootstrap_servers, b, 1, 4)
    options = options_for(broker, subscribe=f"{a},{b}", startingOffsets="earliest", maxOffsetsPerTrigger="17")
    sinks = {source: Batches() for source in SOURCES}
    for source in SOURCES:
        run_available_now(spark, source, options, sinks[source], checkpoints[source])
    assert sinks["asyncconsumer"].all() == sinks["kafka"].all()
    assert len(sinks["kafka"].all()) == 60 + 15 + 4
    first_sizes = {source: sinks[source].sizes() for source in SOURCES}
    produce_varied(broker.bootstrap_servers, a, 3, 6, start=40)  # partition 0 gets 40..45 after 35..: a gap-free tail
    produce_varied(broker.bootstrap_servers, b, 1, 30, start=4)
    for source in SOURCES:  # restarts on the same checkpoint
        run_available_now(spark, source, options, sinks[source], checkpoints[source])
    for source in SOURCES:
        assert_exactly_once(sinks[source].all())
        assert all(sum(s.values()) <= 17 for s in sinks[source].sizes())
    assert sinks["asyncconsumer"].all() == sinks["kafka"].all()
    assert len(sinks["kafka"].all()) == 79 + 18 + 30
    assert first_sizes["asyncconsumer"] == first_sizes["kafka"]  # Spark's split by lag, batch for batch
    assert sinks["asyncconsumer"].sizes() == sinks["kafka"].sizes()


def test_processing_time_with_max_offsets_per_trigger_through_a_restart(
    spark: Any, broker: Broker, topic: TopicFactory, checkpoints: dict[str, Path]
) -> None:
    from tests.support.waiting import wait_for

    name = topic(2)
    produce_varied(broker.bootstrap_servers, name, 2, 25)
    options = options_for(broker, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger="12")
    sinks = {source: Batches() for source in SOURCES}

    def run_until(source: str, total: int) -> None:
        query = start_stream(
            spark, source, options, sinks[source], checkpoints[source], processingTime="200 milliseconds"
        )
        try:
            wait_for(
                lambda: len(sinks[source].all()) >= total or query.exception() is not None,
                timeout=120,
                interval=0.2,
                message=lambda: f"{source}: {len(sinks[source].all())} of {total} rows",
            )
            assert query.exception() is None, query.exception()
        finally:
            query.stop()

    for source in SOURCES:
        run_until(source, 50)
    produce_varied(broker.bootstrap_servers, name, 2, 10, start=25)
    for source in SOURCES:
        run_until(source, 70)
    for source in SOURCES:
        assert_exactly_once(sinks[source].all())
        assert all(sum(s.values()) <= 12 for s in sinks[source].sizes())
    assert sinks["asyncconsumer"].all() == sinks["kafka"].all()
    assert len(sinks["kafka"].all()) == 70


def test_a_stream_subscribed_to_a_topic_that_does_not_exist_fails_on_both(
    spark: Any, broker: Broker, checkpoints: dict[str, Path]
) -> None:
    """Neither source waits for the topic: Spark's fails on its admin's describeTopics, ours names the topic."""
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    options = options_for(broker, subscribe=missing, **{"fetchOffset.retryIntervalMs": "10"})
    errors: dict[str, str] = {}
    for source in SOURCES:
        sink = Batches()
        with pytest.raises(Exception) as failed:  # each source fails with its own types
            run_available_now(spark, source, options, sink, checkpoints[source])
        errors[source] = str(failed.value)
        assert sink.by_id == {}
    assert "UnknownTopicOrPartitionException" in errors["kafka"]
    assert f"subscribed topic(s) '{missing}' do not exist" in errors["asyncconsumer"]


# failOnDataLoss ------------------------------------------------------------------------------------------------------


def stream_outcome(spark: Any, source: str, options: dict[str, str], sink: Batches, checkpoint: Path) -> str:
    """``"ok"`` or ``"error"`` for one more availableNow run, and what it read is left in ``sink``."""
    try:
        run_available_now(spark, source, options, sink, checkpoint)
    except Exception as exc:
        return "error" if "failOnDataLoss" in str(exc) else f"unexpected error: {exc}"
    return "ok"


@pytest.mark.parametrize("recreated_with", [5, 30])
@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_topic_deleted_and_recreated_between_micro_batches(
    spark: Any,
    broker: Broker,
    topic: TopicFactory,
    checkpoints: dict[str, Path],
    fail_on_data_loss: str,
    recreated_with: int,
) -> None:
    """Recreated with fewer records than the checkpoint's offset (the end is before the start) or more (the start
    is inside the new log: nothing looks lost, as far as offsets tell, and both read from the old offset on).

    One deliberate difference: recreated shorter with ``failOnDataLoss=false``, Spark's source plans the empty
    range [20, 5), reads nothing and moves its checkpoint to 5, so the new topic's records 0..4 are never read;
    ours reads them (they are not lost, only the old topic's are)."""
    name = topic(1)
    produce_varied(broker.bootstrap_servers, name, 1, 20)
    options = options_for(broker, subscribe=name, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss)
    sinks = {source: Batches() for source in SOURCES}
    for source in SOURCES:
        run_available_now(spark, source, options, sinks[source], checkpoints[source])
        assert len(sinks[source].all()) == 20
    broker.delete_topic(name)
    broker.create_topic(name, 1)
    produce_varied(broker.bootstrap_servers, name, 1, recreated_with, start=100)
    before = {source: set(sinks[source].by_id) for source in SOURCES}
    found = {source: stream_outcome(spark, source, options, sinks[source], checkpoints[source]) for source in SOURCES}
    after = {source: sinks[source].since(before[source]) for source in SOURCES}
    assert found["asyncconsumer"] == found["kafka"], (found, after)
    if fail_on_data_loss == "false" and recreated_with < 20:
        assert after["kafka"] == []
        assert [r[4] for r in after["asyncconsumer"]] == list(range(recreated_with))
    else:
        assert after["asyncconsumer"] == after["kafka"], found
    if fail_on_data_loss == "false" and recreated_with > 20:
        assert [r[4] for r in after["kafka"]] == list(range(20, recreated_with))


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_records_deleted_between_micro_batches(
    spark: Any, broker: Broker, topic: TopicFactory, checkpoints: dict[str, Path], fail_on_data_loss: str
) -> None:
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    name = topic(2)
    produce_varied(broker.bootstrap_servers, name, 2, 10)
    options = options_for(broker, subscribe=name, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss)
    sinks = {source: Batches() for source in SOURCES}
    for source in SOURCES:
        run_available_now(spark, source, options, sinks[source], checkpoints[source])
    produce_varied(broker.bootstrap_servers, name, 2, 20, start=10)
    admin = broker.admin()  # type: ignore[union-attr]
    for future in admin.delete_records([KafkaTopicPartition(name, 0, 25)]).values():
        future.result(timeout=30)  # partition 0 loses 10..24 (read next), partition 1 keeps all
    before = {source: set(sinks[source].by_id) for source in SOURCES}
    found = {source: stream_outcome(spark, source, options, sinks[source], checkpoints[source]) for source in SOURCES}
    after = {source: sinks[source].since(before[source]) for source in SOURCES}
    assert found["asyncconsumer"] == found["kafka"], (found, after)
    assert after["asyncconsumer"] == after["kafka"], found
    if fail_on_data_loss == "false":
        assert sorted((r[3], r[4]) for r in after["kafka"]) == [(0, o) for o in range(25, 30)] + [
            (1, o) for o in range(10, 30)
        ]


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_batch_starting_before_deleted_records(
    spark: Any, broker: Broker, topic: TopicFactory, fail_on_data_loss: str
) -> None:
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    name = topic(1)
    produce_varied(broker.bootstrap_servers, name, 1, 20)
    for future in broker.admin().delete_records([KafkaTopicPartition(name, 0, 8)]).values():  # type: ignore[union-attr]
        future.result(timeout=30)
    options = options_for(
        broker, subscribe=name, startingOffsets=json.dumps({name: {"0": 3}}), failOnDataLoss=fail_on_data_loss
    )
    found = {source: outcome(spark, source, options) for source in SOURCES}
    if isinstance(found["kafka"], str):
        assert isinstance(found["asyncconsumer"], str), found
    else:
        assert found["asyncconsumer"] == found["kafka"]
