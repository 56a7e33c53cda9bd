"""The hand-written OTLP writer, read back with a protobuf wire reader of the test's own (the Kafka telemetry test
reads it with the opentelemetry-proto classes Kafka ships)."""

from __future__ import annotations

import struct
from typing import Any

from asyncconsumer.protocol.otlp import CUMULATIVE, DELTA, Metric, Point, encode_metrics_data


def fields(data: bytes) -> list[tuple[int, Any]]:
    """(field number, value) pairs: varints as ints, fixed64 as their 8 raw bytes, length-delimited as bytes."""
    out: list[tuple[int, Any]] = []
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while pos < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, varint()))
        elif wire == 1:
            out.append((number, data[pos : pos + 8]))
            pos += 8
        elif wire == 2:
            size = varint()
            out.append((number, data[pos : pos + size]))
            pos += size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    assert pos == len(data)
    return out


def one(data: bytes, number: int) -> Any:
    (value,) = [v for n, v in fields(data) if n == number]
    return value


def many(data: bytes, number: int) -> list[Any]:
    return [v for n, v in fields(data) if n == number]


def key_values(entries: list[bytes]) -> dict[str, str]:
    return {one(kv, 1).decode(): one(one(kv, 2), 1).decode() for kv in entries}


def test_metrics_data_nests_resource_scope_and_metrics() -> None:
    payload = encode_metrics_data(
        {"client_id": "c1", "group_id": "g"},
        "org.apache.kafka",
        "0.1.0",
        [
            Metric("a.gauge", (Point(1.5, 2_000, 0, (("topic", "t"), ("partition", "0"))),)),
            Metric("a.total", (Point(42, 3_000, 1_000),), sum=True, temporality=DELTA),
            Metric("b.total", (Point(7, 3_000, 500),), sum=True, temporality=CUMULATIVE),
        ],
    )
    resource_metrics = one(payload, 1)
    assert key_values(many(one(resource_metrics, 1), 1)) == {"client_id": "c1", "group_id": "g"}
    scope_metrics = one(resource_metrics, 2)
    scope = one(scope_metrics, 1)
    assert (one(scope, 1), one(scope, 2)) == (b"org.apache.kafka", b"0.1.0")
    gauge, delta, cumulative = many(scope_metrics, 2)

    assert one(gauge, 1) == b"a.gauge"
    (point,) = many(one(gauge, 5), 1)
    assert struct.unpack("<Q", one(point, 3))[0] == 2_000
    assert struct.unpack("<d", one(point, 4))[0] == 1.5
    assert not many(point, 2)  # a gauge has no start
    assert key_values(many(point, 7)) == {"topic": "t", "partition": "0"}

    assert one(delta, 1) == b"a.total"
    sum_ = one(delta, 7)
    (point,) = many(sum_, 1)
    assert (one(sum_, 2), one(sum_, 3)) == (DELTA, 1)  # delta, monotonic
    assert struct.unpack("<q", one(point, 6))[0] == 42  # as_int
    assert struct.unpack("<Q", one(point, 2))[0] == 1_000
    assert one(one(cumulative, 7), 2) == CUMULATIVE


def test_large_and_negative_numbers_and_unicode() -> None:
    payload = encode_metrics_data({"client_id": "é" * 200}, "s", "", [Metric("n", (Point(-5, 2**62),))])
    resource_metrics = one(payload, 1)
    assert key_values(many(one(resource_metrics, 1), 1)) == {"client_id": "é" * 200}
    scope_metrics = one(resource_metrics, 2)
    assert many(one(scope_metrics, 1), 2) == []  # an empty version is left out
    (point,) = many(one(one(scope_metrics, 2), 5), 1)
    assert struct.unpack("<q", one(point, 6))[0] == -5
    assert struct.unpack("<Q", one(point, 3))[0] == 2**62


def test_no_metrics_is_still_a_resource() -> None:
    payload = encode_metrics_data({}, "s", "v", [])
    scope_metrics = one(one(payload, 1), 2)
    assert many(scope_metrics, 2) == []
