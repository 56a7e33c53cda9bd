"""OTLP ``MetricsData`` written by hand: the payload of a KIP-714 PushTelemetry, with no protobuf dependency.

Only what a client's metrics need is written: one resource (string attributes), one instrumentation scope, and
metrics that are gauges or sums of ``NumberDataPoint``s (a double or an int, with string attributes). The field
numbers are those of opentelemetry-proto's ``metrics/v1/metrics.proto``, ``common/v1/common.proto`` and
``resource/v1/resource.proto``; brokers decode the bytes with the generated classes of that schema.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

import attrs

__all__ = ["CUMULATIVE", "DELTA", "Metric", "Point", "encode_metrics_data"]

DELTA = 1
CUMULATIVE = 2
"""``AggregationTemporality`` of a sum."""

_VARINT, _FIXED64, _LEN = 0, 1, 2
_DOUBLE = struct.Struct("<d")
_Q = struct.Struct("<Q")
_q = struct.Struct("<q")


@attrs.define(frozen=True, slots=True)
class Point:
    """One ``NumberDataPoint``: its value (an int is written as ``as_int``, a float as ``as_double``), its
    attributes, and the interval it covers in Unix nanoseconds (``start_ns`` 0 for a gauge)."""

    value: int | float
    time_ns: int
    start_ns: int = 0
    attributes: tuple[tuple[str, str], ...] = ()


@attrs.define(frozen=True, slots=True)
class Metric:
    """A gauge (``sum`` False) or a monotonic sum with ``temporality`` DELTA or CUMULATIVE."""

    name: str
    points: tuple[Point, ...]
    sum: bool = False
    temporality: int = CUMULATIVE
    unit: str = ""
    description: str = ""


def _varint(out: bytearray, value: int) -> None:
    value &= 0xFFFFFFFFFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _key(out: bytearray, field: int, wire: int) -> None:
    _varint(out, (field << 3) | wire)


def _bytes(out: bytearray, field: int, data: bytes | bytearray) -> None:
    _key(out, field, _LEN)
    _varint(out, len(data))
    out += data


def _string(out: bytearray, field: int, text: str) -> None:
    if text:
        _bytes(out, field, text.encode("utf-8"))


def _fixed64(out: bytearray, field: int, packed: bytes) -> None:
    _key(out, field, _FIXED64)
    out += packed


def _key_value(key: str, value: str) -> bytes:
    """``KeyValue`` with an ``AnyValue`` holding ``string_value``."""
    any_value = bytearray()
    _bytes(any_value, 1, value.encode("utf-8"))  # string_value, written even when empty: the value is set
    out = bytearray()
    _string(out, 1, key)
    _bytes(out, 2, any_value)
    return bytes(out)


def _point(point: Point) -> bytes:
    out = bytearray()
    if point.start_ns:
        _fixed64(out, 2, _Q.pack(point.start_ns))
    _fixed64(out, 3, _Q.pack(point.time_ns))
    if isinstance(point.value, bool) or not isinstance(point.value, int):
        _fixed64(out, 4, _DOUBLE.pack(float(point.value)))  # as_double
    else:
        _fixed64(out, 6, _q.pack(point.value))  # as_int (sfixed64)
    for key, value in point.attributes:
        _bytes(out, 7, _key_value(key, value))
    return bytes(out)


def _metric(metric: Metric) -> bytes:
    data = bytearray()
    for point in metric.points:
        _bytes(data, 1, _point(point))
    if metric.sum:
        _key(data, 2, _VARINT)
        _varint(data, metric.temporality)
        _key(data, 3, _VARINT)
        _varint(data, 1)  # is_monotonic
    out = bytearray()
    _string(out, 1, metric.name)
    _string(out, 2, metric.description)
    _string(out, 3, metric.unit)
    _bytes(out, 7 if metric.sum else 5, data)
    return bytes(out)


def encode_metrics_data(
    resource: Mapping[str, str], scope_name: str, scope_version: str, metrics: Iterable[Metric]
) -> bytes:
    """``MetricsData { resource_metrics { resource, scope_metrics { scope, metrics } } }``."""
    resource_bytes = bytearray()
    for key, value in resource.items():
        _bytes(resource_bytes, 1, _key_value(key, value))
    scope = bytearray()
    _string(scope, 1, scope_name)
    _string(scope, 2, scope_version)
    scope_metrics = bytearray()
    _bytes(scope_metrics, 1, scope)
    for metric in metrics:
        _bytes(scope_metrics, 2, _metric(metric))
    resource_metrics = bytearray()
    _bytes(resource_metrics, 1, resource_bytes)
    _bytes(resource_metrics, 2, scope_metrics)
    out = bytearray()
    _bytes(out, 1, resource_metrics)
    return bytes(out)
