"""``protocol/wire.py``: the writer's varints (Kafka's byte layouts, read back by the reader; they were aiokafka's
encoders once), and the primitives the generated messages call: classic and compact strings, bytes and arrays,
null where allowed and refused where not, fixed-width runs, tagged fields."""

from __future__ import annotations

import struct
import uuid

import pytest

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol.wire import (
    ZERO_UUID,
    Reader,
    Writer,
    blob_repr,
    encode_uvarint,
    encode_varint,
    not_null,
    records_key,
)


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


# --- the primitives the generated messages call ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flexible", "null", "empty", "abc"),
    [(False, "ffff", "0000", "0003616263"), (True, "00", "01", "04616263")],
    ids=["classic", "compact"],
)
def test_strings_classic_and_compact(flexible: bool, null: str, empty: str, abc: str) -> None:
    w = Writer()
    w.nullable_string(None, flexible)
    w.string("", flexible)
    w.string("abc", flexible)
    assert w.getvalue().hex() == null + empty + abc
    r = Reader(w.getvalue())
    assert (r.nullable_string(flexible), r.string(flexible), r.nullable_string(flexible)) == (None, "", "abc")
    with pytest.raises(CorruptResponseError, match="null where a non-nullable string"):
        Reader(bytes.fromhex(null)).string(flexible)


@pytest.mark.parametrize("flexible", [False, True])
def test_bytes_are_views_or_copies(flexible: bool) -> None:
    w = Writer()
    w.nullable_bytes(None, flexible)
    w.bytes_(b"xy", flexible)
    w.bytes_(memoryview(b"zz"), flexible)
    data = w.getvalue()
    r = Reader(data)
    assert r.nullable_view(flexible) is None
    view = r.view(flexible)
    assert isinstance(view, memoryview) and view.obj is data and bytes(view) == b"xy"  # no copy
    copied = r.bytes_(flexible)
    assert type(copied) is bytes and copied == b"zz"
    with pytest.raises(CorruptResponseError, match="null where non-nullable bytes"):
        Reader(data).view(flexible)


@pytest.mark.parametrize("flexible", [False, True])
def test_arrays_null_empty_and_full(flexible: bool) -> None:
    w = Writer()
    w.int32s(None, flexible)
    w.int32s((1, -2), flexible)
    w.strings(("a",), flexible)
    w.array((1, 2), flexible, Writer.int8)
    w.array(None, flexible, Writer.int8)
    r = Reader(w.getvalue())
    assert r.array_len(flexible) == -1
    assert r.int32s(flexible) == (1, -2)
    assert r.strings(flexible) == ("a",)
    assert r.array(flexible, Reader.int8) == (1, 2)
    assert r.nullable_array(flexible, Reader.int8) is None
    assert r.remaining == 0
    null = Writer()
    null.array_len(None, flexible)
    with pytest.raises(CorruptResponseError, match="null where a non-nullable array"):
        Reader(null.getvalue()).int32s(flexible)


def test_an_array_longer_than_the_buffer_is_corrupt_before_anything_is_allocated() -> None:
    with pytest.raises(CorruptResponseError, match="cannot fit"):
        Reader(b"\x7f\xff\xff\xff").array_len(False)
    with pytest.raises(CorruptResponseError, match="cannot fit"):
        Reader(b"\xff\xff\xff\xff\x07").array_len(True)


def test_fixed_width_runs_pack_and_unpack_in_one_call() -> None:
    head = struct.Struct(">ihq?")
    w = Writer()
    w.pack(head, 1, -2, 3, True)
    assert w.getvalue().hex() == "00000001" + "fffe" + "0000000000000003" + "01"
    r = Reader(w.getvalue())
    assert r.unpack(head) == (1, -2, 3, True)
    with pytest.raises(CorruptResponseError, match="truncated"):
        Reader(w.getvalue()[:-1]).unpack(head)


def test_scalars_round_trip() -> None:
    w = Writer()
    w.int8(-1)
    w.boolean(True)
    w.int16(-2)
    w.uint16(65535)
    w.int32(-3)
    w.uint32(2**32 - 1)
    w.int64(-4)
    w.float64(0.5)
    w.uuid(uuid.UUID(int=5))
    w.nullable_struct(None, 0)
    r = Reader(w.getvalue())
    assert (r.int8(), r.boolean(), r.int16(), r.uint16(), r.int32(), r.uint32(), r.int64(), r.float64()) == (
        -1,
        True,
        -2,
        65535,
        -3,
        2**32 - 1,
        -4,
        0.5,
    )
    assert r.uuid() == uuid.UUID(int=5)
    assert r.int8() == -1  # a null struct's marker
    assert r.remaining == 0
    assert uuid.UUID(int=0) == ZERO_UUID


def test_tagged_fields_are_written_in_tag_order_and_skipped_when_unknown() -> None:
    w = Writer()
    w.tagged_fields({3: b"\xaa", 1: b"\xbb\xcc"})
    assert w.getvalue().hex() == "02" + "0102bbcc" + "0301aa"
    r = Reader(w.getvalue() + b"\x7f")
    r.skip_tags()
    assert r.int8() == 0x7F
    r = Reader(w.getvalue())
    assert r.uvarint() == 2
    tag, end = r.tag()
    assert (tag, end) == (1, 5)
    assert r.int8() == -69  # 0xbb: read part of it, skip the rest
    r.skip_to(end)
    assert r.tag() == (3, 8)
    empty = Writer()
    empty.empty_tags()
    assert empty.getvalue() == b"\x00"


def test_a_tagged_field_that_claims_more_than_there_is_or_is_read_past_is_corrupt() -> None:
    with pytest.raises(CorruptResponseError, match="cannot fit"):
        Reader(b"\x01\x05\xaa").tag()
    r = Reader(b"\x01\x01\xaa\xbb")
    _, end = r.tag()
    r.int16()
    with pytest.raises(CorruptResponseError, match="past its end"):
        r.skip_to(end)


def test_helpers_for_generated_classes() -> None:
    assert not_null("x", "F.f", 1, "2+") == "x"
    with pytest.raises(ValueError, match=r"F\.f is null, which v1 cannot carry \(nullable in v2\+\)"):
        not_null(None, "F.f", 1, "2+")
    assert records_key(memoryview(b"ab")) == records_key(b"ab") == b"ab"
    assert records_key(None) is None
    assert blob_repr(b"secret") == "<6 bytes>"
    assert blob_repr(None) == "None"
