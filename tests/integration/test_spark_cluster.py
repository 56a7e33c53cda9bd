"""Past one machine: the source on a Spark standalone cluster (``tests/support/spark_cluster.py``: a master and two
one-core workers on loopback, so two executors, each its own JVM with its own Python workers).

The differential tests run there as well (``spark_cluster`` marker); this proves where the reading happened: in
both executors, far from the driver's process, each task reading its own offset range and nothing read twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Broker, TopicFactory
from tests.integration.test_spark import produce_exact
from tests.support.spark_cluster import SparkCluster

pytestmark = [
    pytest.mark.broker,
    pytest.mark.kafka_only("the cluster leg runs the Kafka differential tests"),
    pytest.mark.spark_cluster_only,
]

pyspark = pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")


def where_read(rows: Iterator[Any]) -> Iterator[tuple[str, int, str, list[tuple[str, int, int]]]]:
    """Per task: the executor's working directory (``<worker work dir>/<app id>/<executor id>``), the Python
    worker's pid, the ``asyncconsumer`` it imported, and the (topic, partition, offset) of every row it read."""
    import asyncconsumer

    read = [(row.topic, row.partition, row.offset) for row in rows]
    yield os.getcwd(), os.getpid(), asyncconsumer.__file__, read


def test_executors_on_both_workers_each_read_their_own_offset_ranges(
    spark: Any, spark_cluster: SparkCluster, broker: Broker, topic: TopicFactory
) -> None:
    name = topic(partitions=4)
    produce_exact(broker.bootstrap_servers, name, 30, 4)
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": name, "minPartitions": "8"}
    df = spark.read.format("asyncconsumer").options(**options).load().select("topic", "partition", "offset")
    tasks = df.rdd.mapPartitions(where_read).collect()  # one stage: each task reads its range and reports it

    summary = [(cwd, pid, sorted({p for _, p, _ in r}), len(r)) for cwd, pid, _, r in tasks]
    assert len(tasks) == 8, summary  # minPartitions splits each Kafka partition's 30 offsets in two ranges
    import asyncconsumer

    workers = set()
    for cwd, pid, module, read in tasks:
        assert pid != os.getpid()
        assert module == asyncconsumer.__file__  # the tree under test, not another checkout's
        executor_dir = Path(cwd)
        worker = [i for i in (1, 2) if executor_dir.is_relative_to(spark_cluster.work_dir(i))]
        assert worker, f"task ran outside the cluster's executors: {cwd}"
        workers.add(worker[0])
        # its own range: one Kafka partition, contiguous offsets
        assert len({(t, p) for t, p, _ in read}) == 1, summary
        offsets = sorted(o for _, _, o in read)
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    assert workers == {1, 2}
    everything = sorted(row for *_, read in tasks for row in read)
    assert everything == [(name, p, o) for p in range(4) for o in range(30)]  # each offset once, none missing


def test_the_session_has_one_executor_per_worker_and_none_in_the_driver(
    spark: Any, spark_cluster: SparkCluster
) -> None:
    assert spark.sparkContext.master == spark_cluster.master_url
    status = spark_cluster.status()
    assert status["aliveworkers"] == 2
    assert len(status["activeapps"]) == 1
    assert [worker["coresused"] for worker in status["workers"]] == [1, 1]  # each runs one of our executors
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # less the driver
    assert executors == 2
