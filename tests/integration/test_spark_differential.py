"""Our data source beside Spark's own Kafka source, on Apache Kafka: the same options must give the same rows.

``format("kafka")`` (``spark-sql-kafka-0-10``, fetched by ``tests/support/spark_kafka.py``) is the reference: every
test reads the same topics with the same options through both and compares every column, headers included.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Broker, TopicFactory
from tests.integration.test_spark import produce_exact

pytestmark = [
    pytest.mark.broker,
    pytest.mark.kafka_only("Spark's Kafka source is the reference on Kafka"),
    pytest.mark.spark_cluster,  # also on the standalone cluster: nothing may depend on the driver's process
]

pyspark = pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")

SOURCES = ("kafka", "asyncconsumer")
"""Spark's Kafka source (the reference), then ours."""


def read_both(spark: Any, options: dict[str, str]) -> dict[str, Any]:
    """One batch DataFrame per source for the same options."""
    return {source: spark.read.format(source).options(**options).load() for source in SOURCES}


def rows(df: Any) -> list[tuple[Any, ...]]:
    """Every row as a plain tuple (headers as tuples of pairs), in (topic, partition, offset) order."""
    out = []
    for row in df.collect():
        values = row.asDict()
        if "headers" in values and values["headers"] is not None:
            values["headers"] = tuple((h["key"], h["value"]) for h in values["headers"])
        out.append(tuple(values[name] for name in df.columns))
    names = df.columns
    key = (names.index("topic"), names.index("partition"), names.index("offset"))
    return sorted(out, key=lambda r: tuple(r[i] for i in key))


def assert_same(frames: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The sources agree on the schema and on every row; returns the rows."""
    kafka, ours = frames["kafka"], frames["asyncconsumer"]
    assert ours.schema == kafka.schema
    expected, got = rows(kafka), rows(ours)
    assert len(got) == len(expected)
    assert got == expected
    return got


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
    produced = produce_exact(broker.bootstrap_servers, name, 40, 3)
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": name, "includeHeaders": "true"}
    got = assert_same(read_both(spark, options))
    assert len(got) == sum(len(p) for p in produced.values()) == 120
