"""What a KIP-714 push says about a consumer or a share consumer: ``metrics()`` read as Kafka's standard client
metric names.

Names are Java's telemetry names (``org.apache.kafka.`` + the metric group without ``-metrics`` + the metric name,
dashes as dots), so a broker's receiver sees the same names from this consumer as from Java's. Only what
``metrics()`` keeps is named here, and each only where its meaning matches Java's (see docs/observability.md for
where the windows differ).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from asyncconsumer.metrics import ConsumerMetrics, ShareConsumerMetrics

PREFIX = "org.apache.kafka.consumer."
FETCH_MANAGER = PREFIX + "fetch.manager."
COORDINATOR = PREFIX + "coordinator."

CONNECTION_NAMES: Mapping[str, str] = {
    PREFIX + "connection.count": "gauge",
    PREFIX + "connection.creation.total": "sum",
}
"""The network client's names, in ``consumer-metrics`` for both kinds of consumer (Java's share consumer too)."""

NAMES: Mapping[str, str] = {
    FETCH_MANAGER + "records.consumed.total": "sum",
    FETCH_MANAGER + "bytes.consumed.total": "sum",
    FETCH_MANAGER + "records.consumed.rate": "gauge",
    FETCH_MANAGER + "bytes.consumed.rate": "gauge",
    FETCH_MANAGER + "fetch.latency.avg": "gauge",
    FETCH_MANAGER + "fetch.latency.max": "gauge",
    FETCH_MANAGER + "records.lag": "gauge",
    FETCH_MANAGER + "records.lag.max": "gauge",
    **CONNECTION_NAMES,
    COORDINATOR + "assigned.partitions": "gauge",
    COORDINATOR + "rebalance.total": "sum",
    COORDINATOR + "last.heartbeat.seconds.ago": "gauge",
    COORDINATOR + "commit.total": "sum",
    COORDINATOR + "commit.latency.avg": "gauge",
    COORDINATOR + "commit.latency.max": "gauge",
}
"""Every name a consumer's push may carry, and its kind: a monotonic ``sum`` (delta or cumulative, as the
subscription says) or a ``gauge``. Kept in one place for the docs and the tests."""

SHARE_FETCH_MANAGER = PREFIX + "share.fetch.manager."

SHARE_NAMES: Mapping[str, str] = {
    SHARE_FETCH_MANAGER + "records.consumed.total": "sum",
    SHARE_FETCH_MANAGER + "bytes.consumed.total": "sum",
    SHARE_FETCH_MANAGER + "records.consumed.rate": "gauge",
    SHARE_FETCH_MANAGER + "bytes.consumed.rate": "gauge",
    SHARE_FETCH_MANAGER + "fetch.total": "sum",
    SHARE_FETCH_MANAGER + "acknowledgements.send.total": "sum",
    **CONNECTION_NAMES,
}
"""Every name a share consumer's push may carry: Java's ``KafkaShareConsumer`` keeps its fetch metrics in the group
``consumer-share-fetch-manager-metrics`` and its connections' in ``consumer-metrics``, as a consumer does."""

_KINDS: Mapping[str, str] = {**NAMES, **SHARE_NAMES}


@attrs.define(frozen=True, slots=True)
class Sample:
    """One value of one metric, with the attributes that tell its series apart (a partition's topic and number)."""

    name: str
    value: int | float
    attributes: tuple[tuple[str, str], ...] = ()

    @property
    def monotonic(self) -> bool:
        return _KINDS.get(self.name) == "sum"


def samples(metrics: ConsumerMetrics, *, in_group: bool) -> list[Sample]:
    """The standard metrics ``metrics`` holds a value for (a latency before any fetch has none: it is left out).

    The coordinator's are pushed by a group member only, as Java has them only with a ``group.id``.
    """
    out = [
        Sample(FETCH_MANAGER + "records.consumed.total", metrics.records_consumed_total),
        Sample(FETCH_MANAGER + "bytes.consumed.total", metrics.bytes_consumed_total),
        Sample(FETCH_MANAGER + "records.consumed.rate", float(metrics.records_consumed_rate)),
        Sample(FETCH_MANAGER + "bytes.consumed.rate", float(metrics.bytes_consumed_rate)),
        *_connections(metrics.connection_count, metrics.connections_created),
    ]
    if metrics.fetch_latency_avg_ms is not None:
        out.append(Sample(FETCH_MANAGER + "fetch.latency.avg", float(metrics.fetch_latency_avg_ms)))
    if metrics.fetch_latency_max_ms is not None:
        out.append(Sample(FETCH_MANAGER + "fetch.latency.max", float(metrics.fetch_latency_max_ms)))
    lags = {tp: p.lag for tp, p in metrics.partitions.items() if p.lag is not None}
    if lags:
        out.append(Sample(FETCH_MANAGER + "records.lag.max", float(max(lags.values()))))
        out.extend(
            Sample(FETCH_MANAGER + "records.lag", float(lag), (("topic", tp.topic), ("partition", str(tp.partition))))
            for tp, lag in sorted(lags.items())
        )
    if in_group:
        out.append(Sample(COORDINATOR + "assigned.partitions", float(len(metrics.partitions))))
        out.append(Sample(COORDINATOR + "rebalance.total", metrics.rebalances))
        if metrics.last_heartbeat_age_ms is not None:
            out.append(Sample(COORDINATOR + "last.heartbeat.seconds.ago", metrics.last_heartbeat_age_ms / 1000))
        out.append(Sample(COORDINATOR + "commit.total", metrics.commits))
        if metrics.commit_latency_avg_ms is not None:
            out.append(Sample(COORDINATOR + "commit.latency.avg", float(metrics.commit_latency_avg_ms)))
        if metrics.commit_latency_max_ms is not None:
            out.append(Sample(COORDINATOR + "commit.latency.max", float(metrics.commit_latency_max_ms)))
    # metrics().connection_errors has no Java name to go under: Java's connection.close.total counts every close,
    # the consumer's own too, which connection_errors leaves out on purpose.
    return out


def share_samples(metrics: ShareConsumerMetrics) -> list[Sample]:
    """A share consumer's standard metrics. Its acknowledgement errors are left out: Java counts the records whose
    acknowledgement failed, ``metrics()`` the partitions' failed acknowledgements."""
    return [
        Sample(SHARE_FETCH_MANAGER + "records.consumed.total", metrics.records_consumed_total),
        Sample(SHARE_FETCH_MANAGER + "bytes.consumed.total", metrics.bytes_consumed_total),
        Sample(SHARE_FETCH_MANAGER + "records.consumed.rate", float(metrics.records_consumed_rate)),
        Sample(SHARE_FETCH_MANAGER + "bytes.consumed.rate", float(metrics.bytes_consumed_rate)),
        Sample(SHARE_FETCH_MANAGER + "fetch.total", metrics.share_fetches),
        Sample(SHARE_FETCH_MANAGER + "acknowledgements.send.total", metrics.acknowledgements_sent),
        *_connections(metrics.connection_count, metrics.connections_created),
    ]


def _connections(count: int, created: int) -> tuple[Sample, Sample]:
    return Sample(PREFIX + "connection.count", count), Sample(PREFIX + "connection.creation.total", created)
