"""The PySpark data source against the real broker, on a local[2] Spark session (one per test session, ~5 s).

Tansu answers ListOffsets LATEST with the last batch's base offset + 1, so every partition here ends with a
one-record batch (``produce_exact``): "latest" is then the true log end, as on Kafka.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from asyncconsumer import Consumer, TopicPartition
from asyncconsumer.errors import ConfigError
from tests.conftest import Broker, TopicFactory
from tests.support.produce import ProducedRecord, Record, produce_batches
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.broker]

pyspark = pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")


def produce_exact(
    bootstrap: str, topic: str, per_partition: int, partitions: int, *, start: int = 0
) -> dict[int, list[ProducedRecord]]:
    """``per_partition`` records on each partition, keys/values/headers from their index; the last batch is one
    record so that Tansu's LATEST is the log end."""
    out: dict[int, list[ProducedRecord]] = {}
    for p in range(partitions):
        records = [
            Record(
                value=f"v-{p}-{i}".encode(),
                key=f"k-{p}-{i}".encode() if i % 2 else None,
                headers=(("h", f"{i}".encode()), ("n", None)),
                partition=p,
                timestamp_ms=1_700_000_000_000 + i,
            )
            for i in range(start, start + per_partition)
        ]
        batches = [records[:-1], records[-1:]] if len(records) > 1 else [records]
        out[p] = [r for batch in produce_batches(bootstrap, topic, batches, partition=p) for r in batch]
    return out


def kafka_options(broker: Broker, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, **extra}


def test_a_batch_read_returns_exactly_the_produced_records(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    name = topic(3)
    produced = produce_exact(broker.bootstrap_servers, name, 40, 3)
    df = (
        spark.read.format("asyncconsumer")
        .options(**kafka_options(broker, subscribe=name, includeHeaders="true"))
        .load()
    )
    assert [f.name for f in df.schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
    ]  # fmt: skip
    rows = df.collect()
    assert len(rows) == 120
    got = {(r.partition, r.offset): r for r in rows}
    for p, records in produced.items():
        for rec in records:
            row = got[(p, rec.offset)]
            assert (row.topic, row.key, row.value) == (name, rec.key, rec.value)
            assert [(h.key, h.value) for h in row.headers] == list(rec.headers)
            assert int(row.timestamp.timestamp() * 1000) == rec.timestamp_ms
            assert row.timestampType == 0


def test_starting_and_ending_offsets_json_and_min_partitions_split_the_ranges(
    spark: Any, broker: Broker, topic: TopicFactory
) -> None:
    name = topic(2)
    produce_exact(broker.bootstrap_servers, name, 50, 2)
    df = (
        spark.read.format("asyncconsumer")
        .options(
            **kafka_options(
                broker,
                assign=json.dumps({name: [0, 1]}),
                startingOffsets=json.dumps({name: {"0": 10, "1": -2}}),
                endingOffsets=json.dumps({name: {"0": 20, "1": -1}}),
                minPartitions="6",
                useArrow="false",
            )
        )
        .load()
    )
    assert df.rdd.getNumPartitions() >= 6
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10, 20)] + [(1, o) for o in range(50)]


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"subscribe": "t", "assign": '{"t": [0]}'}, "subscribe"),
        ({"subscribe": "t", "startingOffsets": "{not json"}, "startingOffsets"),
        ({"subscribe": "t", "endingOffsets": "earliest"}, "endingOffsets"),
        ({"subscribe": "t", "minPartitions": "0"}, "minPartitions"),
        ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
        ({"subscribe": "t", "kafka.fetch.max.wait.ms": "soon"}, "kafka.fetch_max_wait_ms"),
        ({"subscribe": "t", "startingOffset": "earliest"}, "startingoffset"),
    ],
)
def test_bad_options_fail_before_the_query_runs_naming_the_option(
    spark: Any, broker: Broker, options: dict[str, str], key: str
) -> None:
    from asyncconsumer.spark.options import parse_options

    with pytest.raises(ConfigError) as caught:
        parse_options(kafka_options(broker, **options), streaming=False)
    assert caught.value.key.lower() == key.lower()
    with pytest.raises(Exception, match=key):
        spark.read.format("asyncconsumer").options(**kafka_options(broker, **options)).load().collect()


class Sink:
    """An idempotent foreachBatch sink: a batch id written again replaces what it wrote before."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[int, int]]] = {}
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]
        with self.lock:
            self.batches[batch_id] = rows

    def all(self) -> list[tuple[int, int]]:
        with self.lock:
            return sorted(x for rows in self.batches.values() for x in rows)


def stream(spark: Any, broker: Broker, **options: str) -> Any:
    return spark.readStream.format("asyncconsumer").options(**kafka_options(broker, **options)).load()


def test_available_now_with_max_offsets_per_trigger_then_more_data_then_a_restart_is_exactly_once(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    name = topic(3)
    produce_exact(broker.bootstrap_servers, name, 30, 3)
    checkpoint = str(tmp_path / "checkpoint")
    sink = Sink()

    def run() -> None:
        df = stream(spark, broker, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger="25")
        query = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).trigger(availableNow=True)
        query.start().awaitTermination(120)

    run()
    assert sink.all() == [(p, o) for p in range(3) for o in range(30)]
    assert len(sink.batches) >= 4  # 90 records at most 25 a batch
    assert all(len(rows) <= 25 for rows in sink.batches.values())
    produce_exact(broker.bootstrap_servers, name, 10, 3, start=30)
    run()  # restarts from the checkpoint
    assert sink.all() == [(p, o) for p in range(3) for o in range(40)]  # no gap, no duplicate


def test_processing_time_trigger_while_producing(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    name = topic(2)
    produce_exact(broker.bootstrap_servers, name, 5, 2)
    sink = Sink()
    df = stream(spark, broker, subscribe=name, startingOffsets="earliest")
    query = (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        for round_ in range(1, 4):
            produce_exact(broker.bootstrap_servers, name, 5, 2, start=5 * round_)
        wait_for(lambda: len(sink.all()) == 40, timeout=60, message=lambda: f"{len(sink.all())} of 40 rows")
        assert sink.all() == [(p, o) for p in range(2) for o in range(20)]
    finally:
        query.stop()


def test_subscribe_pattern_reads_every_matching_topic(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    prefix = f"sp-{uuid.uuid4().hex[:6]}"
    a, b = topic(1, name=f"{prefix}-a"), topic(2, name=f"{prefix}-b")
    topic(1, name=f"x{prefix}")
    produce_exact(broker.bootstrap_servers, a, 3, 1)
    produce_exact(broker.bootstrap_servers, b, 4, 2)
    df = spark.read.format("asyncconsumer").options(**kafka_options(broker, subscribePattern=rf"{prefix}-.*")).load()
    counts = {(r.topic, r["count"]) for r in df.groupBy("topic").count().collect()}
    assert counts == {(a, 3), (b, 8)}


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_offsets_that_vanished_follow_fail_on_data_loss(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path, fail_on_data_loss: bool
) -> None:
    """A checkpoint ahead of the log (the topic was deleted and recreated, as after a retention wipe)."""
    name = topic(1)
    produce_exact(broker.bootstrap_servers, name, 20, 1)
    checkpoint = str(tmp_path / "cp")
    sink = Sink()

    def run() -> None:
        df = stream(
            spark, broker, subscribe=name, startingOffsets="earliest", failOnDataLoss=str(fail_on_data_loss).lower()
        )
        query = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).trigger(availableNow=True)
        query.start().awaitTermination(120)

    run()
    assert len(sink.all()) == 20
    broker.delete_topic(name)
    broker.create_topic(name, 1)
    produce_exact(broker.bootstrap_servers, name, 5, 1)
    if fail_on_data_loss:
        with pytest.raises(Exception, match="failOnDataLoss"):
            run()
    else:
        run()
        assert sorted(o for batch in list(sink.batches.values())[1:] for _, o in batch) == list(range(5))


def test_with_group_commit_leaves_the_group_at_each_batch_end(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    from asyncconsumer.spark import with_group_commit

    name = topic(2)
    produce_exact(broker.bootstrap_servers, name, 30, 2)
    group_id = f"spark-{uuid.uuid4().hex[:6]}"
    sink = Sink()
    df = stream(spark, broker, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger="20")
    process = with_group_commit(sink, group_id=group_id, bootstrap_servers=broker.bootstrap_servers)
    query = (
        df.writeStream.foreachBatch(process)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert sink.all() == [(p, o) for p in range(2) for o in range(30)]
    with Consumer(broker.bootstrap_servers, group_id=group_id) as consumer:
        committed = consumer.committed([TopicPartition(name, 0), TopicPartition(name, 1)])
    assert {tp.partition: c.offset for tp, c in committed.items() if c} == {0: 30, 1: 30}


def test_spark_finds_the_source_without_register_through_a_pyspark_module() -> None:
    """Spark's data source lookup imports every top-level ``pyspark_*`` module and registers its DefaultSource."""
    import pkgutil

    from asyncconsumer.spark import KafkaDataSource

    names = {info.name for info in pkgutil.iter_modules() if info.name.startswith("pyspark_")}
    assert "pyspark_asyncconsumer" in names
    import pyspark_asyncconsumer

    assert pyspark_asyncconsumer.DefaultSource is KafkaDataSource
    assert KafkaDataSource.name() == "asyncconsumer"


EXAMPLE = """\
import tempfile

from pyspark.sql import DataFrame, SparkSession

from asyncconsumer.spark import register, with_group_commit

spark = SparkSession.builder.master("local[2]").getOrCreate()
register(spark)
df = (
    spark.readStream.format("asyncconsumer")
    .option("kafka.bootstrap.servers", "localhost:9092")
    .option("subscribe", "events")
    .option("startingOffsets", "earliest")
    .option("maxOffsetsPerTrigger", "500")
    .load()
)

def process(batch: DataFrame, batch_id: int) -> None:
    print("batch", batch_id, "rows", batch.count())

with tempfile.TemporaryDirectory() as checkpoint:
    query = (
        df.writeStream.foreachBatch(with_group_commit(process, group_id="pipeline", bootstrap_servers="localhost:9092"))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
spark.stop()
"""
"""The README's Spark example as it must be written: ``register(spark)`` right after the session."""

TREE = Path(__file__).resolve().parents[2]


def _as_a_user_runs_it(tmp_path: Path) -> dict[str, str]:
    """This environment as a user's shell has it after the README's install: no PYSPARK_PYTHON or
    PYSPARK_DRIVER_PYTHON, no venv activated, and a ``python3`` on PATH that is the interpreter the venv was made
    from (a shim first on PATH; the venv's bin directory left out), which cannot import asyncconsumer.

    PYTHONPATH is dropped too, unless the venv's editable install is another checkout's (a git worktree run with
    the main checkout's venv): then this tree goes there, so that the tree under test is what runs. CI's venv is
    this tree's, so CI runs it without."""
    venv_bin = Path(sys.executable).parent.resolve()
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").symlink_to(sys._base_executable)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != venv_bin]
    drop = {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = os.pathsep.join([str(shims), *path])
    installed = subprocess.run(
        [sys.executable, "-c", "import asyncconsumer; print(asyncconsumer.__file__)"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not Path(installed).resolve().is_relative_to(TREE):
        env["PYTHONPATH"] = str(TREE)
    python3 = subprocess.run(
        ["python3", "-c", "import sys, asyncconsumer.spark; print(sys.executable)"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert python3.returncode != 0, f"python3 on PATH imports asyncconsumer ({python3.stdout}): nothing to test"
    return env


def test_the_readme_example_runs_from_any_directory_with_pythons_path_default_unusable(
    broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    """The README's install, then ``.venv/bin/python app.py`` from a directory outside the repository: PySpark's
    workers would run ``python3`` from PATH, which lacks asyncconsumer (and pyspark); ``register`` gives the source's
    workers the driver's interpreter."""
    name = topic(2)
    produce_exact(broker.bootstrap_servers, name, 600, 2)
    group_id = f"readme-{uuid.uuid4().hex[:6]}"
    work = tmp_path / "elsewhere"
    work.mkdir()
    assert not work.resolve().is_relative_to(TREE)
    code = (
        EXAMPLE.replace("localhost:9092", broker.bootstrap_servers)
        .replace('"events"', repr(name))
        .replace('"pipeline"', repr(group_id))
    )
    (work / "app.py").write_text(code)
    env = _as_a_user_runs_it(tmp_path)
    result = subprocess.run(
        [sys.executable, "app.py"], env=env, cwd=work, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    printed = [line.split() for line in result.stdout.splitlines()]
    assert all(len(w) == 4 and (w[0], w[2]) == ("batch", "rows") for w in printed), result.stdout
    batches = [(int(w[1]), int(w[3])) for w in printed]
    assert [b for b, _ in batches] == list(range(len(batches)))
    assert all(0 < rows <= 500 for _, rows in batches) and sum(rows for _, rows in batches) == 1200, batches
    with Consumer(broker.bootstrap_servers, group_id=group_id) as consumer:
        committed = consumer.committed([TopicPartition(name, 0), TopicPartition(name, 1)])
    assert {tp.partition: c.offset for tp, c in committed.items() if c} == {0: 600, 1: 600}


def test_spark_s_lookup_finds_the_pyspark_module_from_any_directory(tmp_path: Path) -> None:
    """Spark's lookup (``pkgutil.iter_modules`` in a worker run from wherever the driver was started) sees only real
    sys.path entries: the editable install is a static .pth of the repository root (``package-dir``), not
    setuptools' import hook, so it finds ``pyspark_asyncconsumer`` outside the repository too."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = (
        "import pkgutil, asyncconsumer\n"
        "print(asyncconsumer.__file__)\n"
        "print(any(m.name == 'pyspark_asyncconsumer' for m in pkgutil.iter_modules()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    installed, found = result.stdout.split()
    if not Path(installed).resolve().is_relative_to(TREE) and not os.environ.get("CI"):
        pytest.skip(f"this venv's install is another checkout's ({installed}); CI's is this tree's")
    assert found == "True", result.stdout
