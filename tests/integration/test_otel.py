"""OpenTelemetry (``asyncconsumer.otel``) with the SDK's in-memory exporters: a trace started by a producer
(confluent-kafka, ``traceparent`` in the record headers) continues in a span per record processed, with the messaging
semantic conventions; the consumer's metrics reach an in-memory metric reader with the right values."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import pytest

from tests.conftest import Broker, TopicFactory, unique_topic_name
from tests.support.extras import requires_extra
from tests.support.waiting import wait_for_async

sdk = requires_extra("test", "opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402 - after the extra check
from opentelemetry.propagate import inject  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from asyncconsumer import AsyncConsumer, OffsetAndMetadata, TopicPartition  # noqa: E402
from asyncconsumer.otel import instrument, traced  # noqa: E402

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


def produce_traced(bootstrap: str, topic: str, count: int, provider: TracerProvider) -> list[Any]:
    """``count`` records from confluent-kafka's producer, each sent inside its own producer span whose context is
    injected into the record's headers, as OpenTelemetry's producer instrumentations do."""
    import confluent_kafka

    tracer = provider.get_tracer("producer-test")
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    spans = []
    for i in range(count):
        with tracer.start_as_current_span(f"{topic} publish", kind=SpanKind.PRODUCER) as span:
            carrier: dict[str, str] = {}
            inject(carrier)
            producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0, headers=carrier)
            spans.append(span.get_span_context())
    assert producer.flush(30) == 0
    return spans


def collected(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """What the SDK collects now: each instrument's data points, by name."""
    data = reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: list(metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


async def test_each_record_is_processed_in_a_span_continuing_its_producer_s_trace(
    broker: Broker, topic: TopicFactory
) -> None:
    name = topic(1)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sent = produce_traced(broker.bootstrap_servers, name, 5, provider)
    group = unique_topic_name("g-otel")
    processed: list[tuple[int, Any]] = []
    async with AsyncConsumer(broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest") as consumer:
        await consumer.subscribe([name])
        async with aclosing(traced(consumer, tracer_provider=provider)) as records:
            async for record in records:
                processed.append((record.offset, trace.get_current_span().get_span_context()))
                if len(processed) == 5:
                    break  # aclosing ends the last record's span now, not when the generator is collected
    spans = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CONSUMER]
    assert [s.name for s in spans] == [f"{name} process"] * 5
    for (offset, inside), span, producer_span in zip(processed, spans, sent, strict=True):
        assert span.context.span_id == inside.span_id  # the body ran inside the record's span
        assert span.parent is not None and span.parent.span_id == producer_span.span_id
        assert span.context.trace_id == producer_span.trace_id
        assert span.attributes is not None
        assert dict(span.attributes) == {
            "messaging.system": "kafka",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": name,
            "messaging.destination.partition.id": "0",
            "messaging.kafka.offset": offset,
            "messaging.consumer.group.name": group,
            "messaging.kafka.message.key": f"k{offset}",
        }


async def test_the_consumer_s_metrics_reach_the_sdk(broker: Broker, topic: TopicFactory) -> None:
    name = topic(2)
    produce_traced(broker.bootstrap_servers, name, 7, TracerProvider())
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    async with AsyncConsumer(broker.bootstrap_servers, auto_offset_reset="earliest", client_id="otel-test") as consumer:
        instrument(consumer, meter_provider=provider)
        await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
        got = 0
        while got < 7:
            got += (await consumer.poll(timeout_ms=1_000)).count()
        points = collected(reader)
    consumed = points["messaging.client.consumed.messages"]
    assert [p.value for p in consumed] == [7]
    assert dict(consumed[0].attributes) == {"messaging.system": "kafka", "messaging.client.id": "otel-test"}
    lag = {p.attributes["messaging.destination.partition.id"]: p.value for p in points["kafka.consumer.lag"]}
    assert lag == {"0": 0, "1": 0}
    assert [p.value > 0 for p in points["kafka.consumer.consumed.bytes"]] == [True]
    assert [p.value >= 1 for p in points["kafka.consumer.connections"]] == [True]
    assert {"kafka.consumer.rebalances", "kafka.consumer.rebootstraps", "kafka.consumer.fetch.latency"} <= set(points)


async def test_commit_latency_commits_and_connections_reach_the_sdk(broker: Broker, topic: TopicFactory) -> None:
    name = topic(1)
    produce_traced(broker.bootstrap_servers, name, 3, TracerProvider())
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    group = unique_topic_name("otel-group")
    async with AsyncConsumer(
        broker.bootstrap_servers, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False
    ) as consumer:
        instrument(consumer, meter_provider=provider)
        await consumer.assign([TopicPartition(name, 0)])
        got = 0
        while got < 3:
            got += (await consumer.poll(timeout_ms=1_000)).count()
        await consumer.commit({TopicPartition(name, 0): OffsetAndMetadata(1)})
        await consumer.commit()
        # metrics() reads the background's snapshot, published once per loop turn: it may trail the commit's future
        await wait_for_async(lambda: consumer.metrics().commits == 2, message="two commits in metrics()")
        values = {name: [p.value for p in found] for name, found in collected(reader).items()}
    assert values["kafka.consumer.commits"] == [2]
    assert [v >= 0 for v in values["kafka.consumer.commit.latency"]] == [True]
    assert [v >= 0 for v in values["kafka.consumer.commit.latency.max"]] == [True]
    assert [v >= 1 for v in values["kafka.consumer.connection.creations"]] == [True]
    assert values["kafka.consumer.connection.errors"] == [0]
