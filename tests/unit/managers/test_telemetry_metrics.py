"""``metrics()`` read as KIP-714's standard consumer and share consumer metric names."""

from __future__ import annotations

from asyncconsumer.managers.telemetry_metrics import NAMES, PREFIX, SHARE_NAMES, Sample, samples, share_samples
from asyncconsumer.metrics import ConsumerMetrics, PartitionMetrics, ShareConsumerMetrics
from asyncconsumer.records import TopicPartition

FM = "org.apache.kafka.consumer.fetch.manager."
CO = "org.apache.kafka.consumer.coordinator."


def metrics(**changes: object) -> ConsumerMetrics:
    values: dict[str, object] = {
        "records_consumed_total": 120,
        "bytes_consumed_total": 4_096,
        "records_consumed_rate": 4.0,
        "bytes_consumed_rate": 136.5,
        "fetch_latency_avg_ms": 12.5,
        "fetch_latency_max_ms": 40,
        "fetch_requests_in_flight": 1,
        "buffered_bytes": 0,
        "fetch_buffer_limit_bytes": 1,
        "partitions": {
            TopicPartition("t", 0): PartitionMetrics(5, 9, 4),
            TopicPartition("t", 1): PartitionMetrics(None, None, None),
            TopicPartition("u", 0): PartitionMetrics(1, 8, 7),
        },
        "rebalances": 2,
        "last_heartbeat_age_ms": 1_500,
        "coordinator_id": 1,
        "connection_count": 3,
        "connections_created": 5,
        "commits": 9,
        "commit_latency_avg_ms": 6.5,
        "commit_latency_max_ms": 11,
    }
    values.update(changes)
    return ConsumerMetrics(**values)  # type: ignore[arg-type]


def by_name(found: list[Sample]) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    for sample in found:
        out.setdefault(sample.name, []).append(sample)
    return out


def test_a_group_member_pushes_every_standard_metric_it_has() -> None:
    found = by_name(samples(metrics(), in_group=True))
    assert set(found) == set(NAMES)
    assert all(name.startswith(PREFIX) for name in found)
    assert found[FM + "records.consumed.total"][0].value == 120
    assert found[FM + "bytes.consumed.total"][0].value == 4_096
    assert found[FM + "fetch.latency.avg"][0].value == 12.5
    assert found[FM + "fetch.latency.max"][0].value == 40.0
    assert found[FM + "records.lag.max"][0].value == 7.0
    assert [(s.attributes, s.value) for s in found[FM + "records.lag"]] == [
        ((("topic", "t"), ("partition", "0")), 4.0),
        ((("topic", "u"), ("partition", "0")), 7.0),
    ]  # a partition with no lag known yet is left out
    assert found[CO + "assigned.partitions"][0].value == 3.0
    assert found[CO + "rebalance.total"][0].value == 2
    assert found[CO + "last.heartbeat.seconds.ago"][0].value == 1.5
    assert found["org.apache.kafka.consumer.connection.count"][0].value == 3
    assert found["org.apache.kafka.consumer.connection.creation.total"][0].value == 5
    assert found[CO + "commit.total"][0].value == 9
    assert (found[CO + "commit.latency.avg"][0].value, found[CO + "commit.latency.max"][0].value) == (6.5, 11.0)


def test_counters_are_sums_and_the_rest_gauges() -> None:
    found = samples(metrics(), in_group=True)
    assert {s.name for s in found if s.monotonic} == {
        FM + "records.consumed.total",
        FM + "bytes.consumed.total",
        CO + "rebalance.total",
        CO + "commit.total",
        "org.apache.kafka.consumer.connection.creation.total",
    }


def test_without_a_group_or_before_any_fetch() -> None:
    found = by_name(
        samples(
            metrics(fetch_latency_avg_ms=None, fetch_latency_max_ms=None, partitions={}, last_heartbeat_age_ms=None),
            in_group=False,
        )
    )
    assert not any(name.startswith(CO) for name in found)
    assert FM + "fetch.latency.avg" not in found and FM + "records.lag.max" not in found
    assert found[FM + "records.consumed.total"][0].value == 120


def test_a_share_consumer_pushes_javas_share_fetch_names_and_the_connections() -> None:
    metrics = ShareConsumerMetrics(
        records_consumed_total=30,
        bytes_consumed_total=900,
        records_consumed_rate=2.5,
        bytes_consumed_rate=75.0,
        acknowledgements={"accept": 28, "release": 1, "reject": 1, "renew": 0},
        acknowledgement_errors=1,
        records_in_flight=0,
        records_held=0,
        member_id="m",
        member_epoch=3,
        member_state="stable",
        assignment=frozenset(),
        coordinator_id=1,
        last_heartbeat_age_ms=100,
        acquisition_lock_timeout_ms=30_000,
        share_fetches=7,
        records_acquired=30,
        connection_count=2,
        last_connection_error=None,
        acknowledgements_sent=29,
        connections_created=4,
    )
    found = {s.name: s for s in share_samples(metrics)}
    assert set(found) == set(SHARE_NAMES)
    sf = "org.apache.kafka.consumer.share.fetch.manager."
    assert {name: s.value for name, s in found.items()} == {
        sf + "records.consumed.total": 30,
        sf + "bytes.consumed.total": 900,
        sf + "records.consumed.rate": 2.5,
        sf + "bytes.consumed.rate": 75.0,
        sf + "fetch.total": 7,
        sf + "acknowledgements.send.total": 29,
        "org.apache.kafka.consumer.connection.count": 2,
        "org.apache.kafka.consumer.connection.creation.total": 4,
    }
    assert {name for name, s in found.items() if s.monotonic} == {
        name for name, kind in SHARE_NAMES.items() if kind == "sum"
    }
