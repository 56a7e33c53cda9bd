"""Metrics users read in a streaming query's progress, beside Spark's own Kafka source on Apache Kafka.

Spark's Kafka source (spark-sql-kafka-0-10 4.2.0) puts ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and
``avgOffsetsBehindLatest`` in ``sources[0].metrics``. In the installed Spark a Python source reports the progress's
``latestOffset`` (``reportLatestOffset``) but no ``metrics``; ``offsets_behind_latest`` computes Spark's three from
``endOffset`` and ``latestOffset``, and here must give Spark's numbers for either source's progress.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from asyncconsumer.spark import offsets_behind_latest
from tests.conftest import Broker, TopicFactory
from tests.integration.test_spark import produce_exact

pytestmark = [
    pytest.mark.broker,
    pytest.mark.kafka_only("Spark's Kafka source is the reference on Kafka"),
    pytest.mark.spark_cluster,  # a stream of three batches on the standalone cluster too
]

pyspark = pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")


def offsets(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def batches(spark: Any, source: str, options: dict[str, str], checkpoint: Path) -> list[dict[str, Any]]:
    """Every batch's source progress (offsets as dicts, metrics as Spark wrote them) of an availableNow run."""
    df = spark.readStream.format(source).options(**options).load()
    query = (
        df.writeStream.format("noop").option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )
    assert query.awaitTermination(120), f"{source}: the availableNow run did not end"
    out = []
    for progress in query.recentProgress:
        (reading,) = progress.sources
        if reading.numInputRows:
            out.append(
                {
                    "end": offsets(reading.endOffset),
                    "latest": offsets(reading.latestOffset),
                    "metrics": dict(reading.metrics),
                    "computed": offsets_behind_latest(reading),
                }
            )
    return out


def test_offsets_behind_latest_match_spark_kafka_sources_metrics_batch_by_batch(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    name = topic(partitions=3)
    for partitions in (3, 2, 1):  # 90, 60 and 30 records on partitions 0, 1 and 2
        produce_exact(broker.bootstrap_servers, name, 30, partitions, start=(3 - partitions) * 30)
    options = {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "subscribe": name,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "60",  # split by lag with nothing to round: 30, 20, 10 a batch, three batches
    }
    kafka = batches(spark, "kafka", options, tmp_path / "kafka")
    ours = batches(spark, "asyncconsumer", options, tmp_path / "ours")

    everything = {name: {"0": 90, "1": 60, "2": 30}}
    assert [b["latest"] for b in kafka] == [everything] * 3
    assert [b["latest"] for b in ours] == [everything] * 3  # reportLatestOffset: the log ends, not the batch's end
    assert [b["end"] for b in ours] == [b["end"] for b in kafka]
    spark_metrics = [b["metrics"] for b in kafka]
    assert spark_metrics == [
        {"minOffsetsBehindLatest": "20", "maxOffsetsBehindLatest": "60", "avgOffsetsBehindLatest": "40.0"},
        {"minOffsetsBehindLatest": "10", "maxOffsetsBehindLatest": "30", "avgOffsetsBehindLatest": "20.0"},
        {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "0", "avgOffsetsBehindLatest": "0.0"},
    ]
    assert [b["computed"] for b in kafka] == spark_metrics  # the helper computes what Spark's own source reports
    assert [b["computed"] for b in ours] == spark_metrics
    assert all(b["metrics"] == {} for b in ours)  # what Spark 4.3 allows a Python source: no metrics of its own
