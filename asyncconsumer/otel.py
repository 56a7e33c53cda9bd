"""OpenTelemetry for a consumer (the ``[otel]`` extra): its metrics as observable instruments, and a span per
record processed, continuing the producer's trace.

    from asyncconsumer.otel import instrument, traced

    instrument(consumer)                     # metrics, read from consumer.metrics() at each collection
    async for record in traced(consumer):    # each record processed inside its own span
        ...

Only ``opentelemetry-api`` is needed here: without an SDK configured, every instrument and span is a no-op. Span
names and attributes follow OpenTelemetry's messaging semantic conventions (``messaging.system=kafka``, the
destination, partition, offset, key and consumer group). A record whose headers carry a W3C ``traceparent`` (what
the OpenTelemetry instrumentations of confluent-kafka, aiokafka and Java producers write) gets its producer's span
as parent, so a trace continues from producer to consumer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.propagate import extract
from opentelemetry.propagators.textmap import Getter

from asyncconsumer.records import ConsumerRecord

if TYPE_CHECKING:
    from asyncconsumer.consumer import AsyncConsumer
    from asyncconsumer.metrics import ConsumerMetrics
    from asyncconsumer.sync import Consumer

__all__ = ["instrument", "record_context", "traced", "traced_records"]

_SCOPE = "asyncconsumer"


class _HeaderGetter(Getter[ConsumerRecord]):
    """Reads W3C trace-context headers (``traceparent``, ``tracestate``, ``baggage``) from a record's headers."""

    def get(self, carrier: ConsumerRecord, key: str) -> list[str] | None:
        found = [v.decode("utf-8", errors="replace") for k, v in carrier.headers if k == key and v is not None]
        return found or None

    def keys(self, carrier: ConsumerRecord) -> list[str]:
        return [k for k, _ in carrier.headers]


_GETTER = _HeaderGetter()


def record_context(record: ConsumerRecord) -> Context:
    """The trace context its producer left in the record's headers (an empty context when there is none)."""
    return extract(record, getter=_GETTER)


def _attributes(record: ConsumerRecord, group_id: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": "kafka",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": record.topic,
        "messaging.destination.partition.id": str(record.partition),
        "messaging.kafka.offset": record.offset,
    }
    if group_id is not None:
        attributes["messaging.consumer.group.name"] = group_id
    if record.key is not None:
        attributes["messaging.kafka.message.key"] = record.key.decode("utf-8", errors="replace")
    return attributes


def _process_span(tracer: trace.Tracer, record: ConsumerRecord, group_id: str | None) -> Any:
    """The record's ``"<topic> process"`` span, current while it is open, parented by its producer's span."""
    return tracer.start_as_current_span(
        f"{record.topic} process",
        context=record_context(record),
        kind=trace.SpanKind.CONSUMER,
        attributes=_attributes(record, group_id),
    )


async def traced(
    consumer: AsyncConsumer, *, tracer_provider: trace.TracerProvider | None = None
) -> AsyncIterator[ConsumerRecord]:
    """The consumer's records (as ``async for record in consumer``), each yielded inside a ``"<topic> process"``
    span of kind CONSUMER whose parent is its producer's span; the span ends when the next record is asked for.
    A loop that may ``break`` should hold it in ``contextlib.aclosing``, so the last span ends at once."""
    tracer = trace.get_tracer(_SCOPE, tracer_provider=tracer_provider)
    group_id = consumer.config.group_id
    async for record in consumer:
        with _process_span(tracer, record, group_id):
            yield record


def traced_records(
    records: Iterable[ConsumerRecord],
    *,
    group_id: str | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Iterator[ConsumerRecord]:
    """The same for records already polled (``for record in traced_records(consumer.poll(...).records())``)."""
    tracer = trace.get_tracer(_SCOPE, tracer_provider=tracer_provider)
    for record in records:
        with _process_span(tracer, record, group_id):
            yield record


def instrument(
    consumer: AsyncConsumer | Consumer, *, meter_provider: metrics.MeterProvider | None = None
) -> metrics.Meter:
    """Registers the consumer's metrics as observable instruments, read from ``consumer.metrics()`` when the SDK
    collects: records and bytes consumed, lag per partition, fetch and commit latency, commits, rebalances,
    connections made, open and failed, and rebootstraps. Returns the meter they belong to."""
    meter = metrics.get_meter(_SCOPE, meter_provider=meter_provider)
    client = {"messaging.system": "kafka", "messaging.client.id": consumer.config.client_id}
    if consumer.config.group_id is not None:
        client["messaging.consumer.group.name"] = consumer.config.group_id

    def read() -> ConsumerMetrics:
        return consumer.metrics()

    def counter(name: str, value: Any, unit: str, description: str) -> None:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(value(read()), client)]

        meter.create_observable_counter(name, [observe], unit=unit, description=description)

    def gauge(name: str, value: Any, unit: str, description: str) -> None:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            found = value(read())
            return [] if found is None else [Observation(found, client)]

        meter.create_observable_gauge(name, [observe], unit=unit, description=description)

    counter("messaging.client.consumed.messages", lambda m: m.records_consumed_total, "{message}", "Records consumed")
    counter("kafka.consumer.consumed.bytes", lambda m: m.bytes_consumed_total, "By", "Record-set bytes consumed")
    counter("kafka.consumer.rebalances", lambda m: m.rebalances, "{rebalance}", "Group rebalances this member saw")
    counter("kafka.consumer.rebootstraps", lambda m: m.rebootstraps, "{rebootstrap}", "Rebootstraps (KIP-899)")
    gauge("kafka.consumer.fetch.latency", lambda m: m.fetch_latency_avg_ms, "ms", "Fetch round trip, recent average")
    gauge("kafka.consumer.connections", lambda m: m.connection_count, "{connection}", "Open broker connections")
    counter("kafka.consumer.connection.creations", lambda m: m.connections_created, "{connection}", "Connections made")
    counter(
        "kafka.consumer.connection.errors",
        lambda m: m.connection_errors,
        "{error}",
        "Connection attempts failed and connections lost",
    )
    counter("kafka.consumer.commits", lambda m: m.commits, "{commit}", "Offset commits the coordinator accepted")
    gauge("kafka.consumer.commit.latency", lambda m: m.commit_latency_avg_ms, "ms", "Commit round trip, recent average")
    gauge("kafka.consumer.commit.latency.max", lambda m: m.commit_latency_max_ms, "ms", "Commit round trip, recent max")
    gauge("kafka.consumer.buffered.bytes", lambda m: m.buffered_bytes, "By", "Fetched bytes waiting for poll")

    def lag(options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(
                p.lag,
                {
                    **client,
                    "messaging.destination.name": tp.topic,
                    "messaging.destination.partition.id": str(tp.partition),
                },
            )
            for tp, p in read().partitions.items()
            if p.lag is not None
        ]

    meter.create_observable_gauge(
        "kafka.consumer.lag", [lag], unit="{message}", description="Records between the position and the high watermark"
    )
    return meter
