"""``asyncconsumer.otel`` without a broker: the producer's context read from record headers, and
``traced_records``' spans over records already polled, with the SDK's in-memory exporter."""

from __future__ import annotations

from tests.support.extras import requires_extra

requires_extra("test", "opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402 - after the extra check
from opentelemetry.propagate import inject  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from asyncconsumer import ConsumerRecord  # noqa: E402
from asyncconsumer.otel import record_context, traced_records  # noqa: E402


def record(offset: int, headers: tuple[tuple[str, bytes | None], ...] = ()) -> ConsumerRecord:
    return ConsumerRecord("t", 3, offset, 0, 0, None, b"v", headers, None, -1, 1)


def test_traced_records_parents_each_span_on_its_producer_and_leaves_others_as_roots() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("producer").start_as_current_span("t publish") as producer:
        carrier: dict[str, str] = {}
        inject(carrier)
    traced_header = tuple((k, v.encode()) for k, v in carrier.items())
    inside: list[tuple[int, int]] = []
    for r in traced_records([record(7, traced_header), record(8, (("other", None),))], tracer_provider=provider):
        inside.append((r.offset, trace.get_current_span().get_span_context().span_id))
    spans = [s for s in exporter.get_finished_spans() if s.name == "t process"]
    assert [(s.attributes["messaging.kafka.offset"], s.context.span_id) for s in spans if s.attributes] == inside
    first, second = spans
    assert first.parent is not None and first.parent.span_id == producer.get_span_context().span_id
    assert second.parent is None
    assert first.attributes is not None and first.attributes["messaging.kafka.offset"] == 7
    assert "messaging.consumer.group.name" not in first.attributes
    assert "messaging.kafka.message.key" not in first.attributes  # the record has no key


def test_a_record_without_trace_headers_has_an_empty_context() -> None:
    assert trace.get_current_span(record_context(record(1))).get_span_context().is_valid is False
