"""The writer's varints: Kafka's byte layouts, read back by the reader (they were aiokafka's encoders once)."""

from __future__ import annotations

import pytest

from asyncconsumer.protocol.wire import Reader, Writer, encode_uvarint, encode_varint


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (2**31 - 1, "ffffffff07"),
        (2**32 - 1, "ffffffff0f"),
    ],
)
def test_unsigned_varints_are_seven_bits_a_byte_low_bits_first(value: int, encoded: str) -> None:
    assert encode_uvarint(value).hex() == encoded


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"), (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f")],
)
def test_signed_varints_are_zigzag_encoded(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded


def test_what_the_writer_writes_the_reader_reads() -> None:
    values = [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31)]
    writer = Writer()
    for value in values:
        writer.varint(value)
        writer.uvarint(abs(value) % 2**32)
    reader = Reader(writer.getvalue())
    assert [(reader.varint(), reader.uvarint()) for _ in values] == [(v, abs(v) % 2**32) for v in values]
    assert reader.remaining == 0
