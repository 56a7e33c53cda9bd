"""Spark's Kafka source options on our source, side by side with Spark's own (``format("kafka")``) on Apache Kafka:
how ranges become Spark tasks (``minPartitions``, ``maxRecordsPerPartition``), how much each micro-batch reads
(``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` with ``maxTriggerDelay``), starting by timestamp, and Java's
``kafka.*`` security settings (SASL_SSL with SCRAM, a PEM trust store) reaching the executors.

Where the two sources differ on purpose, the test says so and pins both behaviours (docs/spark.md's option table).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.conftest import Broker, TopicFactory, _run_broker, unique_topic_name
from tests.integration.test_security_kafka import SCRAM, _key_store, _oidc, _sasl, _tls
from tests.integration.test_spark_differential import SOURCES, assert_same, read_both
from tests.support.kafka_broker import KafkaCluster, Listener
from tests.support.oidc_server import OidcServer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.broker, pytest.mark.kafka_only("Spark's Kafka source is the reference on Kafka")]

pyspark = pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")


def tasks(df: Any) -> list[tuple[str, int, int, int]]:
    """Each Spark task's rows as (topic, partition, first offset, last offset), sorted: how the ranges were cut."""
    from pyspark.sql import functions as F

    grouped = df.groupBy(F.spark_partition_id().alias("task"), "topic", "partition").agg(
        F.min("offset").alias("first"), F.max("offset").alias("last")
    )
    return sorted((r.topic, r.partition, r.first, r.last) for r in grouped.collect())


def batch_options(broker: Broker, name: str, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": name, **extra}


@pytest.mark.parametrize(
    "split",
    [{"minPartitions": "5"}, {"maxRecordsPerPartition": "7"}, {"minPartitions": "9", "maxRecordsPerPartition": "20"}],
    ids=["minPartitions", "maxRecordsPerPartition", "both"],
)
def test_ranges_are_cut_into_the_same_spark_tasks(
    spark: Any, broker: Broker, topic: TopicFactory, split: dict[str, str]
) -> None:
    """Offsets given as numbers: Spark's source then cuts the very ranges we do."""
    name = topic(3)
    produce_uneven(broker.bootstrap_servers, name, (30, 30, 30))
    bounds = {
        "startingOffsets": json.dumps({name: {"0": 0, "1": 5, "2": 20}}),
        "endingOffsets": json.dumps({name: {"0": 30, "1": 30, "2": 30}}),
    }
    frames = read_both(spark, batch_options(broker, name, **bounds, **split))
    got = {source: tasks(df) for source, df in frames.items()}
    assert got["asyncconsumer"] == got["kafka"]
    assert len(got["asyncconsumer"]) > 3  # cut: more tasks than Kafka partitions
    assert_same(frames)


def test_max_records_per_partition_with_earliest_and_latest(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    """A difference found: Spark 4.2's batch read decides whether to cut on the unresolved offsets (earliest = -2,
    latest = -1: a "size" of 1), so ``maxRecordsPerPartition`` alone cuts nothing there. Ours cuts as documented."""
    name = topic(2)
    produce_uneven(broker.bootstrap_servers, name, (20, 20))
    frames = read_both(spark, batch_options(broker, name, maxRecordsPerPartition="5"))
    assert frames["asyncconsumer"].rdd.getNumPartitions() == 8
    assert frames["kafka"].rdd.getNumPartitions() == 2  # Spark's, pinned: a change there shows up here
    assert_same(frames)


class Batches:
    """A foreachBatch sink keeping each batch's row count per partition, and when it ran."""

    def __init__(self) -> None:
        self.sizes: dict[int, dict[int, int]] = {}
        self.times: dict[int, float] = {}

    def __call__(self, df: Any, batch_id: int) -> None:
        counts = {r.partition: r["count"] for r in df.groupBy("partition").count().collect()}
        self.sizes[batch_id] = counts
        self.times[batch_id] = time.monotonic()

    def rows(self) -> int:
        return sum(sum(c.values()) for c in self.sizes.values())


def run_available_now(spark: Any, source: str, options: dict[str, str], checkpoint: Path) -> Batches:
    sink = Batches()
    df = spark.readStream.format(source).options(**options).load()
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    query.start().awaitTermination(120)
    return sink


def test_max_offsets_per_trigger_gives_the_same_batches(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    """Uneven lags (40, 13, 2 records): the same share per partition in every batch, Spark's rounding included."""
    name = topic(3)
    produce_uneven(broker.bootstrap_servers, name, (40, 13, 2))
    options = batch_options(broker, name, startingOffsets="earliest", maxOffsetsPerTrigger="10")
    got = {source: run_available_now(spark, source, options, tmp_path / source).sizes for source in SOURCES}
    assert got["asyncconsumer"] == got["kafka"]
    assert sum(sum(c.values()) for c in got["asyncconsumer"].values()) == 55
    assert len(got["asyncconsumer"]) >= 6 and all(sum(c.values()) <= 11 for c in got["asyncconsumer"].values())


def produce_uneven(bootstrap: str, name: str, counts: tuple[int, ...], *, base_ms: int | None = None) -> int:
    """``counts[p]`` records on each partition p, with a header and timestamps ``base_ms + i`` (default: a minute
    ago). Recent on purpose: Kafka's first retention check (30 s after it starts) deletes records stamped older than
    its 7-day retention, so ``produce_exact``'s 2023 timestamps can vanish mid-test. Returns ``base_ms``."""
    from tests.support.produce import Record, produce_batches

    base = int(time.time() * 1000) - 60_000 if base_ms is None else base_ms
    for partition, count in enumerate(counts):
        records = [
            Record(
                value=f"v-{partition}-{i}".encode(),
                key=f"k-{i}".encode() if i % 2 else None,
                headers=(("h", f"{i}".encode()),),
                partition=partition,
                timestamp_ms=base + i,
            )
            for i in range(count)
        ]
        if records:
            produce_batches(bootstrap, name, [records], partition=partition)
    return base


def test_min_offsets_per_trigger_under_available_now(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path
) -> None:
    """A difference, on purpose: after a first batch of 20, the 10 records left are below minOffsetsPerTrigger. Spark's
    source holds them back, so its availableNow run ends without them; ours reads everything an availableNow run
    promises (it does not hold batches back under availableNow)."""
    name = topic(1)
    produce_uneven(broker.bootstrap_servers, name, (30,))
    options = batch_options(
        broker, name, startingOffsets="earliest", maxOffsetsPerTrigger="20", minOffsetsPerTrigger="15"
    )
    got = {source: run_available_now(spark, source, options, tmp_path / source) for source in SOURCES}
    assert got["asyncconsumer"].rows() == 30
    assert got["kafka"].rows() == 20  # Spark's, pinned
    assert got["kafka"].sizes[0] == got["asyncconsumer"].sizes[0] == {0: 20}


@pytest.mark.parametrize("source", SOURCES)
def test_min_offsets_per_trigger_waits_for_enough_records_or_the_delay(
    spark: Any, broker: Broker, topic: TopicFactory, tmp_path: Path, source: str
) -> None:
    """Processing-time triggers every 200 ms. The first batch runs at once; a batch below minOffsetsPerTrigger (20)
    waits until maxTriggerDelay (6 s) has passed since the last batch; one with enough records runs at once."""
    name = topic(1)
    produce_uneven(broker.bootstrap_servers, name, (5,))
    sink = Batches()
    options = batch_options(broker, name, startingOffsets="earliest", minOffsetsPerTrigger="20", maxTriggerDelay="6s")
    df = spark.readStream.format(source).options(**options).load()
    query = (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: sink.rows() == 5, timeout=60, message=lambda: f"the first batch; rows {sink.sizes}")
        first = max(sink.times.values())
        produce_uneven(broker.bootstrap_servers, name, (5,))
        wait_for(lambda: sink.rows() == 10, timeout=30, message=lambda: f"the delayed batch; rows {sink.sizes}")
        # held back for the delay (counted from the first batch's planning, a moment before its foreachBatch ran)
        assert max(sink.times.values()) - first >= 4.0
        produce_uneven(broker.bootstrap_servers, name, (25,))
        produced = time.monotonic()
        wait_for(lambda: sink.rows() == 35, timeout=30, message=lambda: f"the full batch; rows {sink.sizes}")
        assert max(sink.times.values()) - produced < 3.0  # enough records: not held back
        assert sorted(sum(c.values()) for c in sink.sizes.values()) == [5, 5, 25]
    finally:
        query.stop()


def test_starting_by_timestamp_strategy(spark: Any, broker: Broker, topic: TopicFactory) -> None:
    """A timestamp after every record: an error by default in both sources; with the strategy "latest", both start
    at the log end (an empty batch read)."""
    name = topic(2)
    base = produce_uneven(broker.bootstrap_servers, name, (10, 10))
    after_all = str(base + 1_000)
    for source in SOURCES:
        with pytest.raises(Exception, match=r"(?i)no offset"):
            spark.read.format(source).options(
                **batch_options(broker, name, startingTimestamp=after_all)
            ).load().collect()
    options = batch_options(broker, name, startingTimestamp=after_all, startingOffsetsByTimestampStrategy="latest")
    assert assert_same(read_both(spark, options)) == []
    middle = batch_options(broker, name, startingOffsetsByTimestamp=json.dumps({name: {"0": base + 4, "1": -2}}))
    assert len(assert_same(read_both(spark, middle))) == 6 + 10


ALICE = ("alice", "alice-spark-secret")


@pytest.fixture(scope="module")
def oidc() -> Iterator[OidcServer]:
    server = OidcServer({"spark-app": "spark-app-secret"}).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, oidc: OidcServer) -> Iterator[tuple[KafkaCluster, Path]]:
    """A Kafka node with a SASL_SSL listener (SCRAM, a certificate from a trustme CA) and an OAUTHBEARER one
    checking tokens from ``oidc`` (``OIDC``); the CA's PEM file."""
    directory = tmp_path_factory.mktemp("spark-pki")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    server = _key_store(ca, directory / "server.pem", "127.0.0.1", "localhost")
    listener = Listener("SASL_SSL", {**_tls("SASL_SSL", server, directory / "ca.pem"), **_sasl("SASL_SSL", SCRAM)})
    oauth = Listener("OIDC", _oidc("OIDC"), protocol="SASL_PLAINTEXT")

    def start() -> KafkaCluster:
        users = [f"{mechanism}=[name={ALICE[0]},password={ALICE[1]}]" for mechanism in SCRAM]
        return KafkaCluster.start(
            listeners=[listener, oauth],
            scram_users=users,
            settings=oidc.broker_settings(),
            system_properties=oidc.broker_system_properties(),
        )

    for cluster in _run_broker(start):
        yield cluster, directory / "ca.pem"


def test_sasl_ssl_with_scram_through_java_security_options(spark: Any, secured: tuple[KafkaCluster, Path]) -> None:
    """The options a Spark user writes for Java's client, unchanged, on both sources: the driver and the executors
    log in with SCRAM-SHA-512 over TLS, trusting the CA from a PEM trust store."""
    cluster, ca_file = secured
    name = unique_topic_name("spark-sasl-ssl")
    cluster.create_topic(name, 2)
    produce_uneven(cluster.bootstrap_servers, name, (15, 15))  # over the plaintext listener
    user, password = ALICE
    options = {
        "kafka.bootstrap.servers": cluster.listener_address("SASL_SSL"),
        "subscribe": name,
        "includeHeaders": "true",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": (
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'
        ),
        "kafka.ssl.truststore.location": str(ca_file),
        "kafka.ssl.truststore.type": "PEM",
    }
    assert len(assert_same(read_both(spark, options))) == 30
    wrong = {**options, "kafka.sasl.jaas.config": options["kafka.sasl.jaas.config"].replace(password, "nope")}
    with pytest.raises(Exception, match=r"SaslAuthenticationFailed|[Aa]uthentication failed"):
        spark.read.format("asyncconsumer").options(**wrong, **{"fetchOffset.numRetries": "1"}).load().collect()


def test_oauthbearer_through_java_s_client_credentials_options(
    spark: Any, secured: tuple[KafkaCluster, Path], oidc: OidcServer
) -> None:
    """Java's OAUTHBEARER options for the client-credentials grant, as a Spark user writes them for Spark's source:
    the driver and the executors each get a token from the identity provider and read with it."""
    cluster, _ = secured
    name = unique_topic_name("spark-oauth")
    cluster.create_topic(name, 2)
    produce_uneven(cluster.bootstrap_servers, name, (12, 8))
    before = len(oidc.token_requests)
    options = {
        "kafka.bootstrap.servers": cluster.listener_address("OIDC"),
        "subscribe": name,
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.sasl.oauthbearer.token.endpoint.url": oidc.token_url,
        "kafka.sasl.login.callback.handler.class": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
        ),
        "kafka.sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'clientId="spark-app" clientSecret="spark-app-secret" scope="kafka";'
        ),
    }
    rows = spark.read.format("asyncconsumer").options(**options).load().collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, o) for o in range(12)] + [(1, o) for o in range(8)]
    asked = oidc.token_requests[before:]
    assert asked and {r["client_id"] for r in asked} == {"spark-app"} and {r["scope"] for r in asked} == {"kafka"}
