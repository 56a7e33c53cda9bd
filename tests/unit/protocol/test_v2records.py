"""The two v2 record decoders, ``_v2records`` (pure Python, the reference) and ``_v2records_c`` (compiled): every
error reason and resuming, pinned on both; and Hypothesis feeding both the same batches (random records, headers,
log-append time, transactional and control batches, batches decompressed from every codec, extreme offsets and
timestamps, corrupt bytes, arbitrary cursors) and requiring identical records, cursors, errors and column buffers.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol import _v2records as reference
from asyncconsumer.protocol import v2decode
from asyncconsumer.protocol._v2records import RECORDS_AT, DecodeError
from asyncconsumer.protocol.codecs import decompress
from asyncconsumer.records import ConsumerRecord, ShareRecord
from tests.support.batches import build_batch, build_control_batch
from tests.support.gil import exported, run_beside
from tests.support.waiting import wait_for

compiled: ModuleType | None
try:
    from asyncconsumer.protocol import _v2records_c as compiled
except ImportError:
    compiled = None

needs_compiled = pytest.mark.skipif(
    compiled is None, reason="the C decoder is not built (test_compiled_decoder_in_use)"
)
IMPLEMENTATIONS = [
    pytest.param(reference, id="python"),
    pytest.param(compiled, id="c", marks=needs_compiled),
]

Header = tuple[str, bytes | None]
RawHeader = tuple[bytes, bytes | None]


# --- hand-built batches ---------------------------------------------------------------------------------------------


def _varint(value: int, bits: int = 32) -> bytes:
    """Kafka's zigzag varint (``bits`` 32) or varlong (64) of a value in range."""
    raw = ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _blob(data: bytes | None, lie: int = 0) -> bytes:
    """A length (off by ``lie``) and the bytes."""
    return _varint(-1 + lie) if data is None else _varint(len(data) + lie) + data


def record_body(
    offset_delta: int = 0,
    timestamp_delta: int = 0,
    key: bytes | None = None,
    value: bytes | None = b"v",
    headers: Sequence[RawHeader] = (),
    lie: tuple[str, int] = ("", 0),
) -> bytes:
    """A record's fields after its size: attributes, deltas, key, value, headers; ``lie`` adds to one stated length
    (``key``, ``value``, ``count``, ``header key`` or ``header value``: the last header's)."""
    field, delta = lie

    def off(name: str) -> int:
        return delta if field == name else 0

    body = b"\x00" + _varint(timestamp_delta, 64) + _varint(offset_delta)
    body += _blob(key, off("key")) + _blob(value, off("value")) + _varint(len(headers) + off("count"))
    for i, (header_key, header_value) in enumerate(headers):
        last = i == len(headers) - 1
        body += _blob(header_key, off("header key") if last else 0)
        body += _blob(header_value, off("header value") if last else 0)
    return body


def _read_varint(data: bytes | bytearray, at: int) -> tuple[int, int]:
    """The zigzag varint at ``at`` (0 where there is none) and the byte after it."""
    raw = shift = 0
    while at < len(data) and shift < 35:
        raw |= (data[at] & 0x7F) << shift
        shift += 7
        at += 1
        if not data[at - 1] & 0x80:
            break
    raw &= 0xFFFF_FFFF
    return (raw >> 1) ^ -(raw & 1), at


def sized(body: bytes) -> bytes:
    """A record: its size, then its fields."""
    return _varint(len(body)) + body


def batch_of(
    records: Sequence[bytes],
    *,
    base_offset: int = 0,
    base_timestamp: int = 1_700_000_000_000,
    max_timestamp: int = 1_700_000_000_999,
    log_append: bool = False,
    count: int | None = None,
) -> bytes:
    """A v2 batch header (CRC, producer fields left zero: the decoders do not read them) and the records as given."""
    payload = b"".join(records)
    header = struct.pack(
        ">qiiBIhiqqqhii",
        base_offset,
        49 + len(payload),
        0,
        2,
        0,
        0x08 if log_append else 0,
        max(len(records) - 1, 0),
        base_timestamp,
        max_timestamp,
        -1,
        -1,
        -1,
        len(records) if count is None else count,
    )
    assert len(header) == RECORDS_AT
    return header + payload


def decompressed(batch: bytes, codec: int) -> bytes:
    """The uncompressed batch a compressed one stands for, as ``RecordBatchView._decompressed`` makes it."""
    plain = decompress(codec, memoryview(batch)[RECORDS_AT:], 1 << 26, head=RECORDS_AT)
    plain[:RECORDS_AT] = batch[:RECORDS_AT]
    plain[22] &= 0xF8
    return bytes(plain)


# --- running both -----------------------------------------------------------------------------------------------------


def records_of(impl: ModuleType, batch: Any, pos: int, left: int, position: int, limit: int, out: Any = None) -> Any:
    """What ``fill_records`` appended and returned (or the error it raised), in a form that tells bytes from
    bytearray and ints from bools."""
    out = [] if out is None else out
    try:
        result: Any = impl.fill_records(batch, pos, left, position, limit, out, ConsumerRecord, "topic", 3, 7)
    except DecodeError as exc:
        result = (type(exc), exc.offset, exc.reason, str(exc))
    except (TypeError, ValueError) as exc:  # an argument refused: the same error, naming it, from both
        result = (type(exc), str(exc))
    assert all(type(r) is ConsumerRecord for r in out)
    return repr(list(out)), repr(result)


def _outcome(result: str) -> str:
    """A call's outcome with the numbers left out: "decoded", or the error's reason."""
    found = re.search(r"""(?:'([^']*)'|"([^"]*)")\)$""", result)
    return re.sub(r"-?\d+", "N", found.group(1) or found.group(2)) if found else "decoded"


def _plain(parts: Any) -> Any:
    """A ``finish()`` dict with every buffer as its bytes (``array.array`` and ``bytearray`` compare equal)."""
    if isinstance(parts, dict):
        return {name: _plain(part) for name, part in parts.items()}
    if isinstance(parts, tuple):
        return tuple(_plain(part) for part in parts)
    if parts is None or isinstance(parts, int):
        return parts
    return bytes(memoryview(parts).cast("B"))


def sink_of(
    impl: ModuleType, batch: Any, calls: Sequence[tuple[int, int, int, int]], include_headers: bool = True
) -> Any:
    """Fills a new sink with ``(pos, left, position, limit)`` calls; what each returned (or the error), ``rows``
    and ``data_bytes`` after each, and the finished buffers."""
    sink = impl.ColumnSink(include_headers)
    seen: list[Any] = []
    for pos, left, position, limit in calls:
        try:
            seen.append(sink.fill(batch, pos, left, position, limit, 5, 9))
        except DecodeError as exc:
            seen.append((type(exc), exc.offset, exc.reason))
        except (TypeError, ValueError) as exc:
            seen.append((type(exc), str(exc)))
        seen.append((sink.rows, sink.data_bytes))
    parts = sink.finish()
    if impl is compiled:
        for name in ("topic", "partition", "offset", "timestamp", "timestamp_type"):
            assert type(parts[name]) is bytearray
    return seen, _plain(parts)


def fill_to_end(fill: Callable[..., tuple[int, int, int]], batch: Any, position: int, limits: Sequence[int]) -> Any:
    """Calls ``fill`` from the batch's start with each limit in turn (resuming where the last call stopped), then
    with no limit; the cursors returned, or the error."""
    pos, left = -1, 0
    cursors: list[Any] = []
    for limit in [*limits, 1 << 40]:
        try:
            pos, left, position = fill(batch, pos, left, position, limit)
        except DecodeError as exc:
            cursors.append((exc.offset, exc.reason))
            break
        cursors.append((pos, left, position))
        if left == 0:
            break
    return cursors


def assert_same(
    batch: Any, pos: int = -1, left: int = 0, position: int = 0, limit: int = 1 << 40, *, note: bool = True
) -> None:
    """Both decoders give the same records and the same buffers for one call; ``note``: the outcome is a
    Hypothesis event (``--hypothesis-show-statistics``)."""
    assert compiled is not None
    taken, result = records_of(reference, batch, pos, left, position, limit)
    assert records_of(compiled, batch, pos, left, position, limit) == (taken, result)
    if note:
        event(_outcome(result))
    for include_headers in (True, False):
        calls = [(pos, left, position, limit)]
        assert sink_of(compiled, batch, calls, include_headers) == sink_of(reference, batch, calls, include_headers)


# --- strategies -------------------------------------------------------------------------------------------------------

blobs = st.none() | st.binary(max_size=40)
header_lists = st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=3)
int32s = st.integers(-(1 << 31), (1 << 31) - 1)
int64s = st.integers(-(1 << 63), (1 << 63) - 1)


LIES = ["key", "value", "count", "header key", "header value"]


@st.composite
def hand_batches(draw: st.DrawFn) -> bytes:
    """Well-formed batches with any deltas, offsets and timestamps (wrapping past 64 bits included)."""
    n = draw(st.integers(0, 8))
    wild = draw(st.booleans())
    liar = draw(st.integers(0, n))  # this record states one length wrong (none, when n)
    records = []
    for i in range(n):
        headers = [(k.encode(), v) for k, v in draw(header_lists)]
        lie = ("", 0)
        if i == liar:
            lie = (draw(st.sampled_from(LIES)), draw(st.sampled_from([-2, -1, 1, 2])))
        body = record_body(
            draw(int32s) if wild else i,
            draw(int64s) if wild else i,
            draw(blobs),
            draw(blobs),
            headers,
            lie,
        )
        records.append(sized(body))
    return batch_of(
        records,
        base_offset=draw(st.sampled_from([0, 1000, (1 << 63) - 3, -(1 << 63)]) | int64s),
        base_timestamp=draw(st.sampled_from([1_700_000_000_000, (1 << 63) - 1, -1]) | int64s),
        max_timestamp=draw(int64s),
        log_append=draw(st.booleans()),
    )


@st.composite
def built_batches(draw: st.DrawFn) -> bytes:
    """Batches as producers and brokers write them (aiokafka's builder): plain, log-append time, transactional,
    control markers, and the uncompressed form of batches compressed with each codec."""
    kind = draw(st.sampled_from(["plain", "log_append", "transactional", "control", "compressed"]))
    if kind == "control":
        return build_control_batch(draw(st.integers(0, 1 << 40)), 7, draw(st.booleans()))
    n = draw(st.integers(1, 12))
    values = draw(st.lists(blobs, min_size=n, max_size=n))
    keys = draw(st.lists(blobs, min_size=n, max_size=n))
    headers: list[Header] = draw(header_lists)
    base_offset = draw(st.integers(0, 1 << 50))
    codec = draw(st.integers(1, 4)) if kind == "compressed" else 0
    transactional = kind == "transactional"
    batch = build_batch(
        base_offset,
        values,
        keys=keys,
        headers=headers,
        compression=codec,
        transactional=transactional,
        producer_id=11 if transactional else -1,
    )
    if codec:
        batch = decompressed(batch, codec)
    if kind == "log_append":
        data = bytearray(batch)
        data[22] |= 0x08
        data[35:43] = struct.pack(">q", draw(int64s))
        batch = bytes(data)
    return batch


any_batches = hand_batches() | built_batches()

NOGIL_BYTES = 4096
"""The compiled sink decodes a batch with the GIL released from this many bytes after the cursor on."""


@st.composite
def large_batches(draw: st.DrawFn) -> bytes:
    """Well-formed batches past ``NOGIL_BYTES`` (the compiled sink decodes them with the GIL released): a few
    record shapes (nulls, headers) repeated, at any offsets and timestamps."""
    shapes = draw(st.lists(st.tuples(blobs, blobs, header_lists), min_size=1, max_size=5))
    target = draw(st.integers(NOGIL_BYTES, 6 * NOGIL_BYTES))
    records: list[bytes] = []
    size = RECORDS_AT
    while size < target:
        key, value, headers = shapes[len(records) % len(shapes)]
        i = len(records)
        records.append(sized(record_body(i, i, key, value, [(k.encode(), v) for k, v in headers])))
        size += len(records[-1])
    return batch_of(
        records,
        base_offset=draw(st.sampled_from([0, (1 << 63) - 50]) | int64s),
        base_timestamp=draw(int64s),
        log_append=draw(st.booleans()),
    )


@st.composite
def damaged(draw: st.DrawFn, batches: st.SearchStrategy[bytes]) -> bytes:
    """A valid batch with bytes past its header flipped, cut off or added, or its record count changed."""
    data = bytearray(draw(batches))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["flip", "set", "cut", "extend", "count", "resize"]))
        if how in ("flip", "set") and len(data) > RECORDS_AT:
            at = draw(st.integers(RECORDS_AT, len(data) - 1))
            data[at] = data[at] ^ draw(st.integers(1, 255)) if how == "flip" else draw(st.integers(0, 255))
        elif how == "cut":
            del data[draw(st.integers(RECORDS_AT - 2, len(data))) :]
        elif how == "extend":
            data += draw(st.binary(min_size=1, max_size=8))
        elif how == "resize":  # the first record's stated size, a little off
            size, end = _read_varint(data, RECORDS_AT)
            data[RECORDS_AT:end] = _varint(size + draw(st.sampled_from([-2, -1, 1, 2])))
        elif len(data) >= RECORDS_AT:
            data[57:61] = struct.pack(">i", draw(st.integers(-2, 20) | int32s))
    return bytes(data)


def _as(kind: str, batch: bytes) -> Any:
    if kind == "bytearray":
        return bytearray(batch)
    if kind == "memoryview":
        return memoryview(bytearray(batch))
    return batch


buffer_kinds = st.sampled_from(["bytes", "bytearray", "memoryview"])


# --- the compiled decoder is the one in use -----------------------------------------------------------------------


def test_compiled_decoder_in_use() -> None:
    """Where the extension was built, it imports and ``v2decode`` uses it; CI builds it, so there it must be."""
    folder = Path(reference.__file__).parent
    built = [p for suffix in importlib.machinery.EXTENSION_SUFFIXES for p in folder.glob(f"_v2records_c{suffix}")]
    if not built:
        if os.environ.get("CI"):
            pytest.fail("CI is set but _v2records_c was not built: pip install -e . builds it with a C compiler")
        pytest.skip("_v2records_c is not built here (python setup.py build_ext --inplace builds it)")
    assert compiled is not None, "the built _v2records_c does not import"
    assert v2decode.IMPLEMENTATION == "c"
    assert v2decode.fill_records is compiled.fill_records
    assert v2decode.ColumnSink is compiled.ColumnSink
    assert compiled.DecodeError is DecodeError


# --- every error, on both ---------------------------------------------------------------------------------------------

GOOD = record_body()

ERRORS = [
    pytest.param(b"\x00" * 10, 0, "batch of 10 bytes is shorter than its header", id="short-batch"),
    pytest.param(batch_of([sized(GOOD)], base_offset=40, count=-1), 40, "record count -1 is negative", id="count"),
    pytest.param(batch_of([sized(GOOD)[:-1]]), 0, "record at byte 61: truncated", id="truncated"),
    pytest.param(batch_of([b"\x80" * 4]), 0, "record at byte 61: truncated", id="truncated-size-varint"),
    pytest.param(batch_of([b"\x80" * 5 + b"\x01"]), 0, "record at byte 61: varint longer than 5 bytes", id="varint"),
    pytest.param(
        batch_of([sized(b"\x00" + b"\xff" * 10 + b"\x01")]),
        0,
        "record at byte 61: varint longer than 10 bytes",
        id="varlong",
    ),
    pytest.param(batch_of([_varint(-2)]), 0, "record at byte 61: size -2 is negative", id="negative-size"),
    pytest.param(batch_of([sized(b"")]), 0, "record at byte 61: truncated", id="no-attributes"),
    pytest.param(
        batch_of([sized(b"\x00\x00\x00" + _varint(-2) + _blob(b"v") + _varint(0))]),
        0,
        "record at byte 61: key length -2 is invalid",
        id="key-length",
    ),
    pytest.param(
        batch_of([sized(b"\x00\x00\x00" + _blob(None) + _varint(-3) + _varint(0))]),
        0,
        "record at byte 61: value length -3 is invalid",
        id="value-length",
    ),
    pytest.param(
        batch_of([sized(b"\x00\x00\x00" + _blob(None) + _blob(None) + _varint(-1))]),
        0,
        "record at byte 61: header count -1 is invalid",
        id="header-count",
    ),
    pytest.param(
        batch_of([sized(b"\x00\x00\x00" + _blob(None) + _blob(None) + _varint(1) + _varint(-1) + _blob(None))]),
        0,
        "record at byte 61: header key length -1 is invalid",
        id="null-header-key",
    ),
    pytest.param(
        batch_of([sized(record_body(headers=[(b"k", None)])[:-1] + _varint(-2))]),
        0,
        "record at byte 61: header value length -2 is invalid",
        id="header-value-length",
    ),
    pytest.param(
        batch_of([sized(record_body(headers=[(b"k", b"v")] * 2)[:-4])]),
        0,
        "record at byte 61: truncated",
        id="fewer-headers-than-counted",
    ),
    pytest.param(
        batch_of([sized(record_body(headers=[(b"k", b"vv")], lie=("header value", 1)))]),
        0,
        "record at byte 61: truncated",
        id="last-field-past-the-record",
    ),
    pytest.param(
        batch_of([sized(GOOD + b"\x00\x00")]),
        0,
        f"record at byte 61: size {len(GOOD) + 2} but its fields take {len(GOOD)} bytes",
        id="size-mismatch",
    ),
    pytest.param(batch_of([sized(GOOD)]) + b"\x00\x00\x00", 0, "3 bytes after the batch's last record", id="trailing"),
    pytest.param(  # the fuzzer's: a count of 0 ends the batch at its header (Java reads nothing; aiokafka refuses)
        batch_of([sized(GOOD)], base_offset=500, count=0),
        500,
        f"{len(sized(GOOD))} bytes after the batch's last record",
        id="no-record-counted",
    ),
    pytest.param(
        batch_of([sized(record_body(0)), sized(record_body(1)), sized(record_body(2))[:-1]], base_offset=500),
        502,
        f"record at byte {RECORDS_AT + 2 * len(sized(GOOD))}: truncated",
        id="third-record",
    ),
    pytest.param(  # the fuzzer's: a record going back is skipped, and the error names the position, not below it
        batch_of([sized(record_body(0)), sized(record_body(-3)), sized(record_body(1))[:-1]], base_offset=500),
        501,
        f"record at byte {RECORDS_AT + 2 * len(sized(GOOD))}: truncated",
        id="offset-going-back",
    ),
]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize(("batch", "offset", "reason"), ERRORS)
def test_malformed_batch(impl: ModuleType, batch: bytes, offset: int, reason: str) -> None:
    """The offset is the one expected next, the reason names the byte and the fault; the records before it are
    taken (as rows too)."""
    out: list[Any] = []
    with pytest.raises(DecodeError) as caught:
        impl.fill_records(batch, -1, 0, 0, 100, out, ConsumerRecord, "t", 0, None)
    assert type(caught.value) is DecodeError
    assert (caught.value.offset, caught.value.reason, str(caught.value)) == (offset, reason, reason)
    taken = offset - 500 if offset >= 500 else 0
    assert [r.offset for r in out] == list(range(500, 500 + taken))
    sink = impl.ColumnSink(True)
    with pytest.raises(DecodeError, match=reason):
        sink.fill(batch, -1, 0, 0, 100, 0, 0)
    assert sink.rows == taken


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize(
    "header_key",
    [
        b"\xff",
        b"\xed\xa0\x80",
        b"\xc0\x80",
        b"\xe0\x80\x80",
        b"\xf0\x8f\xbf\xbf",
        b"\xe2\x82",
        b"\xf4\x90\x80\x80",
        b"ok\x80",
    ],
    ids=["ff", "surrogate", "overlong-2", "overlong-3", "overlong-4", "cut", "past-10ffff", "lone-continuation"],
)
def test_header_key_not_utf8(impl: ModuleType, header_key: bytes) -> None:
    """Also when the key is cut short right before a continuation byte (a value of 64 bytes: length byte 0x80)."""
    batch = batch_of([sized(record_body(headers=[(b"fine\xc3\xa9", b"v"), (header_key, b"v" * 64)]))], base_offset=8)
    with pytest.raises(DecodeError) as caught:
        impl.fill_records(batch, -1, 0, 0, 100, [], ConsumerRecord, "t", 0, None)
    assert (caught.value.offset, caught.value.reason) == (8, "record at byte 61: header key is not valid UTF-8")


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_valid_utf8_header_keys(impl: ModuleType) -> None:
    keys = ["", "ascii", "é", "\u0800", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0010ffff"]
    batch = batch_of([sized(record_body(headers=[(k.encode(), None) for k in keys]))])
    out: list[Any] = []
    impl.fill_records(batch, -1, 0, 0, 100, out, ConsumerRecord, "t", 0, None)
    assert out[0].headers == tuple((k, None) for k in keys)


# --- records and resuming, on both -----------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_records(impl: ModuleType) -> None:
    """Every field; shared objects are the ones given (and one shared empty headers tuple)."""
    topic, epoch = "a-topic", 12
    batch = batch_of(
        [
            sized(record_body(0, 0, None, b"one")),
            sized(record_body(1, 5, b"k", b"", [(b"h", b"x"), (b"n", None)])),
        ],
        base_offset=100,
        base_timestamp=1000,
    )
    out: list[Any] = []
    assert impl.fill_records(batch, -1, 0, 0, 10, out, ConsumerRecord, topic, 4, epoch) == (len(batch), 0, 102)
    assert out == [
        ConsumerRecord(topic, 4, 100, 1000, 0, None, b"one", (), epoch, -1, 3),
        ConsumerRecord(topic, 4, 101, 1005, 0, b"k", b"", (("h", b"x"), ("n", None)), epoch, 1, 0),
    ]
    assert out[0].topic is topic
    assert out[0].headers is reference._NO_HEADERS


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_extra_is_a_last_field_share_records_are_made_with(impl: ModuleType) -> None:
    """``extra`` (a share record's delivery count) follows the record's own fields; None, or none given, adds none."""
    batch = batch_of(
        [sized(record_body(0, 0, b"k", b"v")), sized(record_body(1, 1, None, b"w"))], base_offset=5, base_timestamp=0
    )
    out: list[Any] = []
    impl.fill_records(batch, -1, 0, 6, 10, out, ShareRecord, "t", 2, None, 3)
    assert out == [ShareRecord("t", 2, 6, 1, 0, None, b"w", (), None, -1, 1, 3)]
    assert type(out[0]) is ShareRecord and out[0].delivery_count == 3
    plain: list[Any] = []
    impl.fill_records(batch, -1, 0, 0, 10, plain, ConsumerRecord, "t", 2, None, extra=None)
    assert [len(r) for r in plain] == [11, 11]
    with pytest.raises(TypeError, match="extra"):
        impl.fill_records(batch, -1, 0, 0, 10, [], ConsumerRecord, "t", 2, None, 1, extra=2)


@needs_compiled
def test_compiled_records_are_left_out_of_the_cyclic_gc_when_no_cycle_can_form() -> None:
    """A record of bytes, ints, a str and tuples can be in no cycle: the C decoder untracks it, so the GC never walks
    a poll's records again. A record type with a ``__dict__``, or a shared field that is a container, keeps it."""
    import gc

    assert compiled is not None
    batch = batch_of([sized(record_body(0, 0, b"k", b"v", [(b"h", b"x")])), sized(record_body(1, 1, None, b"w"))])
    out: list[Any] = []
    compiled.fill_records(batch, -1, 0, 0, 10, out, ConsumerRecord, "t", 0, None)
    assert [gc.is_tracked(r) for r in out] == [False, False]
    shared: list[Any] = []
    compiled.fill_records(batch, -1, 0, 0, 10, shared, ShareRecord, "t", 0, None, [1])
    assert [gc.is_tracked(r) for r in shared] == [True, True]

    class WithDict(tuple):  # type: ignore[type-arg]
        pass

    loose: list[Any] = []
    compiled.fill_records(batch, -1, 0, 0, 10, loose, WithDict, "t", 0, None)
    assert [gc.is_tracked(r) for r in loose] == [True, True]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_timestamps_and_sizes_that_repeat_or_not_are_each_record_s_own(impl: ModuleType) -> None:
    """The C decoder reuses the last record's int when a timestamp or size repeats: values must never leak over."""
    bodies = [(0, 0, b"a" * 300), (1, 0, b"b" * 300), (2, 7, b"c" * 299), (3, 0, b"d" * 300), (4, 7, None)]
    batch = batch_of([sized(record_body(d, t, b"k" * d, v)) for d, t, v in bodies], base_timestamp=1 << 40)
    out: list[Any] = []
    impl.fill_records(batch, -1, 0, 0, 10, out, ConsumerRecord, "t", 0, None)
    assert [(r.timestamp - (1 << 40), r.serialized_key_size, r.serialized_value_size) for r in out] == [
        (0, 0, 300),
        (0, 1, 300),
        (7, 2, 299),
        (0, 3, 300),
        (7, 4, -1),
    ]
    assert [r.value for r in out] == [b"a" * 300, b"b" * 300, b"c" * 299, b"d" * 300, None]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_log_append_time(impl: ModuleType) -> None:
    batch = batch_of([sized(record_body(0, 3)), sized(record_body(1, 9))], max_timestamp=777, log_append=True)
    out: list[Any] = []
    impl.fill_records(batch, -1, 0, 0, 10, out, ConsumerRecord, "t", 0, None)
    assert [(r.timestamp, r.timestamp_type) for r in out] == [(777, 1), (777, 1)]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_offsets_and_timestamps_wrap_at_64_bits(impl: ModuleType) -> None:
    top = (1 << 63) - 1
    batch = batch_of(
        [sized(record_body(0, 1)), sized(record_body(1, 0)), sized(record_body(-1, 0))],
        base_offset=top,
        base_timestamp=top,
    )
    out: list[Any] = []
    result = impl.fill_records(batch, -1, 0, 0, 10, out, ConsumerRecord, "t", 0, None)
    assert [(r.offset, r.timestamp) for r in out] == [(top, -(1 << 63))]
    # After offset 2**63 - 1 the position is 2**63 (Python's integers do not wrap): the next records are skipped.
    assert result == (len(batch), 0, 1 << 63)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_resuming(impl: ModuleType) -> None:
    """A call stops at the limit and says where to resume; records before the position are skipped."""
    records = [sized(record_body(i, i, None, b"%d" % i)) for i in range(10)]
    batch = batch_of(records, base_offset=50)
    out: list[Any] = []
    pos, left, position = impl.fill_records(batch, -1, 0, 53, 3, out, ConsumerRecord, "t", 0, None)
    assert (left, position) == (4, 56)
    assert pos == RECORDS_AT + sum(len(r) for r in records[:6])
    pos, left, position = impl.fill_records(batch, pos, left, position, 3, out, ConsumerRecord, "t", 0, None)
    assert (pos, left, position) == (RECORDS_AT + sum(len(r) for r in records[:9]), 1, 59)
    assert impl.fill_records(batch, pos, left, position, 3, out, ConsumerRecord, "t", 0, None) == (len(batch), 0, 60)
    assert [r.offset for r in out] == list(range(53, 60))
    # Nothing left, or a limit of 0: nothing read, the cursor returned as given.
    assert impl.fill_records(batch, len(batch), 0, 60, 3, out, ConsumerRecord, "t", 0, None) == (len(batch), 0, 60)
    assert impl.fill_records(batch, -1, 0, 7, 0, out, ConsumerRecord, "t", 0, None) == (RECORDS_AT, 10, 7)
    assert len(out) == 7


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_sink_layout(impl: ModuleType) -> None:
    """The finished buffers: fixed-width columns, validity bitmaps of ceil(rows / 8) bytes, 32-bit offsets; header
    keys without validity; then a fresh start."""
    headers = [(b"h", b"x"), (b"n", None)]
    records = [sized(record_body(i, i, None if i % 3 else b"k", b"v" if i % 2 else None, headers)) for i in range(9)]
    sink = impl.ColumnSink(True)
    assert sink.include_headers is True
    assert sink.fill(batch_of(records, base_offset=10, base_timestamp=100), -1, 0, 0, 100, 2, 6)[1:] == (0, 19)
    sink.append(3, 4, 99, 98, 1, b"kk", b"vv", (("é", b"z"),))
    assert (sink.rows, sink.data_bytes) == (10, (3 + 2) + (4 + 2) + (9 + 1))
    parts = _plain(sink.finish())
    i32, i64 = struct.Struct("=9ii"), struct.Struct("=9qq")
    assert parts["rows"] == 10
    assert parts["topic"] == i32.pack(*[2] * 9, 3)
    assert parts["partition"] == i32.pack(*[6] * 9, 4)
    assert parts["offset"] == i64.pack(*range(10, 19), 99)
    assert parts["timestamp"] == i64.pack(*range(100, 109), 98)
    assert parts["timestamp_type"] == bytes(9) + b"\x01"
    assert parts["key"] == (b"\x49\x02", struct.pack("=11i", 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 5), b"kkkkk", 6)
    assert parts["value"] == (b"\xaa\x02", struct.pack("=11i", 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 6), b"vvvvvv", 5)
    assert parts["header_offsets"] == struct.pack("=11i", *range(0, 20, 2), 19)
    assert parts["headers"] == 19
    assert parts["header_key"] == (None, struct.pack("=20i", *range(19), 20), b"hn" * 9 + "é".encode(), 0)
    assert parts["header_value"][0] == b"\x55\x55\x05"
    assert parts["header_value"][2:] == (b"x" * 9 + b"z", 9)
    assert (sink.rows, sink.data_bytes) == (0, 0)
    assert _plain(sink.finish())["key"] == (b"", struct.pack("=i", 0), b"", 0)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_sink_without_headers(impl: ModuleType) -> None:
    sink = impl.ColumnSink(False)
    sink.fill(batch_of([sized(record_body(headers=[(b"h", b"x")]))]), -1, 0, 0, 10, 0, 0)
    parts = sink.finish()
    assert list(parts) == ["rows", "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value"]
    assert sink.data_bytes == 0


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_sink_append_checks(impl: ModuleType) -> None:
    """``append`` refuses a header key that is not encodable and integers out of their column's range (``fill`` the
    topic and partition too), and takes any bytes-like values and any iterable of pairs."""
    with pytest.raises(UnicodeEncodeError):
        impl.ColumnSink(True).append(0, 0, 0, 0, 0, None, None, (("\ud800", None),))
    with pytest.raises(ValueError, match="'topic'"):
        impl.ColumnSink(True).append(1 << 31, 0, 0, 0, 0, None, None, ())
    with pytest.raises(ValueError, match="'offset'"):
        impl.ColumnSink(True).append(0, 0, 1 << 63, 0, 0, None, None, ())
    with pytest.raises(ValueError, match="'partition'"):
        impl.ColumnSink(True).fill(batch_of([sized(record_body())]), -1, 0, 0, 10, 0, -(1 << 31) - 1)
    sink = impl.ColumnSink(True)
    sink.append(0, 0, 0, 0, 0, None, None, ())
    sink.append(0, 0, 0, 0, 0, bytearray(b"k"), memoryview(b"v"), iter([["a", b"b"], ("c", None)]))
    assert sink.rows == 2
    parts = _plain(sink.finish())
    assert (parts["key"], parts["header_key"][2], parts["header_value"][2]) == (
        (b"\x02", b"\0" * 8 + b"\1\0\0\0", b"k", 1),
        b"ac",
        b"b",
    )


# --- every argument checked, on both ----------------------------------------------------------------------------------

THREE = batch_of([sized(record_body(i)) for i in range(3)])
INT32 = "from -2147483648 to 2147483647"
INT64 = "from -9223372036854775808 to 9223372036854775807"
LEFT = "from 0 to 2147483647 (the records left after pos)"
FIRST = "-1 (the first record)"
PAIR = "a (str, bytes | None) pair"


class _Index:
    """An int by ``__index__`` only: refused, as converting it would run Python code inside the C call."""

    def __index__(self) -> int:
        return 1


def _records(impl: ModuleType, **change: Any) -> Any:
    args: dict[str, Any] = {
        "batch": THREE, "pos": -1, "left": 0, "position": 0, "limit": 10, "out": [], "record_type": ConsumerRecord,
        "topic": "t", "partition": 0, "leader_epoch": None,
    }  # fmt: skip
    args.update(change)
    return impl.fill_records(*args.values())


def _fill(impl: ModuleType, **change: Any) -> Any:
    args: dict[str, Any] = {
        "batch": THREE,
        "pos": -1,
        "left": 0,
        "position": 0,
        "limit": 10,
        "topic": 0,
        "partition": 0,
    }
    args.update(change)
    return impl.ColumnSink(True).fill(*args.values())


def _append(impl: ModuleType, **change: Any) -> Any:
    args: dict[str, Any] = {
        "topic": 0, "partition": 0, "offset": 0, "timestamp": 0, "timestamp_type": 0, "key": None, "value": None,
        "headers": (),
    }  # fmt: skip
    args.update(change)
    return impl.ColumnSink(True).append(*args.values())


F, S, A = "fill_records()", "ColumnSink.fill()", "ColumnSink.append()"
BAD_ARGUMENTS = [
    (_records, {"batch": 5}, TypeError, f"{F} argument 'batch' must be a C-contiguous bytes-like object, not int"),
    (_records, {"batch": "t"}, TypeError, f"{F} argument 'batch' must be a C-contiguous bytes-like object, not str"),
    (
        _records,
        {"batch": memoryview(THREE)[::2]},
        TypeError,
        f"{F} argument 'batch' must be a C-contiguous bytes-like object, not memoryview",
    ),
    (_records, {"pos": 1.0}, TypeError, f"{F} argument 'pos' must be int, not float"),
    (_records, {"pos": _Index()}, TypeError, f"{F} argument 'pos' must be int, not _Index"),
    (_records, {"pos": -2}, ValueError, f"{F} argument 'pos' must be {FIRST} or a byte of the batch, not -2"),
    (
        _records,
        {"pos": -(1 << 70)},
        ValueError,
        f"{F} argument 'pos' must be {FIRST} or a byte of the batch, not {-(1 << 70)}",
    ),
    (
        _records,
        {"pos": 0, "left": 3},
        ValueError,
        f"{F} argument 'pos' must be {FIRST} or from 61 to {len(THREE)}, not 0",
    ),
    (
        _records,
        {"pos": len(THREE) + 1},
        ValueError,
        f"{F} argument 'pos' must be {FIRST} or from 61 to {len(THREE)}, not {len(THREE) + 1}",
    ),
    (
        _records,
        {"pos": 1 << 64, "left": 1},
        ValueError,
        f"{F} argument 'pos' must be {FIRST} or from 61 to {len(THREE)}, not {1 << 64}",
    ),
    (_records, {"left": None}, TypeError, f"{F} argument 'left' must be int, not NoneType"),
    (_records, {"pos": 61, "left": -1}, ValueError, f"{F} argument 'left' must be {LEFT}, not -1"),
    (_records, {"pos": 61, "left": 1 << 31}, ValueError, f"{F} argument 'left' must be {LEFT}, not {1 << 31}"),
    (_records, {"position": None}, TypeError, f"{F} argument 'position' must be int, not NoneType"),
    (_records, {"limit": -1}, ValueError, f"{F} argument 'limit' must be >= 0, not -1"),
    (_records, {"limit": -(1 << 70)}, ValueError, f"{F} argument 'limit' must be >= 0, not {-(1 << 70)}"),
    (_records, {"limit": 2.5}, TypeError, f"{F} argument 'limit' must be int, not float"),
    (_records, {"out": None}, TypeError, f"{F} argument 'out' must be a list or have an append method, not NoneType"),
    (_records, {"out": ()}, TypeError, f"{F} argument 'out' must be a list or have an append method, not tuple"),
    (
        _records,
        {"record_type": list},
        TypeError,
        f"{F} argument 'record_type' must be a subclass of tuple, not {list!r}",
    ),
    (_records, {"record_type": 5}, TypeError, f"{F} argument 'record_type' must be a subclass of tuple, not 5"),
    (_records, {"topic": b"t"}, TypeError, f"{F} argument 'topic' must be str, not bytes"),
    (_records, {"partition": "0"}, TypeError, f"{F} argument 'partition' must be int, not str"),
    (_records, {"leader_epoch": "7"}, TypeError, f"{F} argument 'leader_epoch' must be int or None, not str"),
    (_fill, {"batch": None}, TypeError, f"{S} argument 'batch' must be a C-contiguous bytes-like object, not NoneType"),
    (_fill, {"pos": -3}, ValueError, f"{S} argument 'pos' must be {FIRST} or a byte of the batch, not -3"),
    (_fill, {"pos": 61, "left": -5}, ValueError, f"{S} argument 'left' must be {LEFT}, not -5"),
    (_fill, {"limit": -(1 << 62)}, ValueError, f"{S} argument 'limit' must be >= 0, not {-(1 << 62)}"),
    (_fill, {"topic": 1 << 31}, ValueError, f"{S} argument 'topic' must be {INT32}, not {1 << 31}"),
    (
        _fill,
        {"partition": -(1 << 31) - 1},
        ValueError,
        f"{S} argument 'partition' must be {INT32}, not {-(1 << 31) - 1}",
    ),
    (_fill, {"topic": "0"}, TypeError, f"{S} argument 'topic' must be int, not str"),
    (_append, {"topic": 1 << 31}, ValueError, f"{A} argument 'topic' must be {INT32}, not {1 << 31}"),
    (_append, {"partition": None}, TypeError, f"{A} argument 'partition' must be int, not NoneType"),
    (_append, {"offset": 1 << 63}, ValueError, f"{A} argument 'offset' must be {INT64}, not {1 << 63}"),
    (
        _append,
        {"timestamp": -(1 << 63) - 1},
        ValueError,
        f"{A} argument 'timestamp' must be {INT64}, not {-(1 << 63) - 1}",
    ),
    (_append, {"timestamp_type": 128}, ValueError, f"{A} argument 'timestamp_type' must be from -128 to 127, not 128"),
    (_append, {"key": 5}, TypeError, f"{A} argument 'key' must be a C-contiguous bytes-like object or None, not int"),
    (
        _append,
        {"value": "v"},
        TypeError,
        f"{A} argument 'value' must be a C-contiguous bytes-like object or None, not str",
    ),
    (
        _append,
        {"headers": 5},
        TypeError,
        f"{A} argument 'headers' must be an iterable of (str, bytes | None) pairs, not int",
    ),
    (_append, {"headers": [5]}, TypeError, f"{A} argument 'headers': header 0 must be {PAIR}, not int"),
    (
        _append,
        {"headers": [("a", b"b", b"c")]},
        ValueError,
        f"{A} argument 'headers': header 0 must be {PAIR}, not 3 values",
    ),
    (
        _append,
        {"headers": [("a", None), (b"k", None)]},
        TypeError,
        f"{A} argument 'headers': header 1's key must be str, not bytes",
    ),
    (
        _append,
        {"headers": [("k", 5)]},
        TypeError,
        f"{A} argument 'headers': header 0's value must be a C-contiguous bytes-like object or None, not int",
    ),
]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize(
    ("call", "change", "error", "message"),
    [pytest.param(*case, id=f"{case[0].__name__[1:]}-{i}-{'-'.join(case[1])}") for i, case in enumerate(BAD_ARGUMENTS)],
)
def test_every_argument_is_checked(
    impl: ModuleType, call: Callable[..., Any], change: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Each entry point refuses a wrong argument before it reads a record, with the same ``TypeError`` or
    ``ValueError`` naming it from both decoders. (The C decoder took a negative limit and overflowed a signed
    multiply sizing the sink's buffers, and called ``__index__`` in the middle of a call.)"""
    with pytest.raises(error) as caught:
        call(impl, **change)
    assert (type(caught.value), str(caught.value)) == (error, message)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_the_sink_s_own_arguments(impl: ModuleType) -> None:
    """``include_headers`` is a bool; ``expected_bytes`` an int of at least 0 (a hint: a huge one is taken)."""
    with pytest.raises(TypeError, match=r"^ColumnSink\(\) argument 'include_headers' must be bool, not int$"):
        impl.ColumnSink(1)
    with pytest.raises(TypeError, match=r"^ColumnSink\(\) argument 'expected_bytes' must be int, not str$"):
        impl.ColumnSink(True, "big")
    with pytest.raises(ValueError, match=r"^ColumnSink\(\) argument 'expected_bytes' must be >= 0, not -1$"):
        impl.ColumnSink(True, expected_bytes=-1)
    sink = impl.ColumnSink(False, 1 << 80)
    assert sink.fill(THREE, -1, 0, 0, 1 << 80, 0, 0) == (len(THREE), 0, 3)
    assert sink.rows == 3


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_refused_argument_leaves_nothing(impl: ModuleType) -> None:
    """Nothing was taken: no record appended, no row written (a refused row after a good one leaves that one)."""
    out: list[Any] = []
    with pytest.raises(TypeError):
        impl.fill_records(THREE, -1, 0, 0, 10, out, ConsumerRecord, "t", 0, "epoch")
    assert out == []
    sink = impl.ColumnSink(True)
    sink.fill(THREE, -1, 0, 0, 1, 0, 0)
    with pytest.raises(ValueError):
        sink.fill(THREE, -1, 0, 0, -1, 0, 0)
    with pytest.raises(TypeError):
        sink.append(0, 0, 0, 0, 0, b"k", b"v", [("h", b"x"), ("h", 5)])
    assert (sink.rows, sink.data_bytes) == (1, 1)
    assert _plain(sink.finish())["header_key"] == (None, struct.pack("=i", 0), b"", 0)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_append_takes_the_headers_as_they_were_when_iterated(impl: ModuleType) -> None:
    """A header pair whose ``__iter__`` empties the list of headers (and has its memory reused), or drops the key of
    an earlier pair (a list), changes nothing in the row: the headers are taken as iterated. The C sink walked the
    list's items with the count it had at the start, and kept the earlier keys' UTF-8 borrowed, while that code ran:
    a heap use-after-free (AddressSanitizer, or a TypeError or garbage bytes as the freed memory is reused)."""
    headers: list[Any] = [("a", b"x"), None, ("c" * 30, b"z"), ("d" * 30, b"w")]
    earlier = ["".join(["key-", "\u00e9" * 40]), b"v"]  # a str only this list holds
    reused: list[Any] = []

    class EmptiesTheList:
        def __iter__(self) -> Any:
            headers.clear()
            reused.extend([None] * 4 for _ in range(8))  # lists the size of the one just freed
            return iter(("k", b"v"))

    class DropsTheEarlierKey:
        def __iter__(self) -> Any:
            earlier[0] = None
            reused.extend(b"Z" * 50 for _ in range(8))  # objects the size of its freed UTF-8
            return iter(("k2", b"v2"))

    headers[1] = EmptiesTheList()
    sink = impl.ColumnSink(True)
    sink.append(0, 0, 0, 0, 0, None, None, headers)
    sink.append(0, 0, 1, 0, 0, None, None, (earlier, DropsTheEarlierKey()))
    parts = _plain(sink.finish())
    assert parts["header_offsets"] == struct.pack("=3i", 0, 4, 6)
    assert parts["header_key"][2] == b"ak" + b"c" * 30 + b"d" * 30 + ("key-" + "\u00e9" * 40).encode() + b"k2"
    assert parts["header_value"][2] == b"xvzwvv2"


def _busy(sink: Any) -> bool:
    """Whether the sink refuses a call now, as while another thread's fill writes into it."""
    try:
        sink.fill(b"", -1, 0, 0, 1, 0, 0)  # idle: DecodeError (no batch header), nothing written
    except RuntimeError:
        return True
    except DecodeError:
        return False
    raise AssertionError("an empty batch was decoded")


@needs_compiled
def test_append_refuses_a_fill_begun_while_its_headers_were_iterated() -> None:
    """A pair's ``__iter__`` may let another thread in, whose fill then writes into the sink with the GIL released:
    append checks again that the sink is idle once the headers are taken, and refuses (it wrote into buffers the fill
    was writing into, resizing them under it). Every fill's rows are there, and nothing of the append."""
    assert compiled is not None
    data = _rows_batch(20_000)
    sink = compiled.ColumnSink(True)
    stop = threading.Event()
    fills: list[Any] = []

    def filler() -> None:
        while not stop.is_set():
            fills.append(sink.fill(data, -1, 0, 0, 1 << 40, 5, 9))

    thread = threading.Thread(target=filler, name="filler")

    class LetsAFillBegin:
        def __iter__(self) -> Any:
            thread.start()  # once append began (it refuses a sink already busy)
            wait_for(lambda: _busy(sink), interval=0, message="the other thread's fill never ran")
            return iter(("k", b"v"))

    try:
        with pytest.raises(RuntimeError, match="one poll"):
            sink.append(0, 0, 0, 0, 0, None, None, [LetsAFillBegin()])
    finally:
        stop.set()
        if thread.ident is not None:
            thread.join(timeout=30)
    assert not thread.is_alive()
    assert fills and fills == [(len(data), 0, 20_000)] * len(fills)
    assert sink.rows == 20_000 * len(fills)


@needs_compiled
def test_finish_refuses_a_fill_a_finalizer_begins() -> None:
    """``finish`` allocates; on Python 3.11 an allocation may run the cyclic GC, whose finalizers may call the sink (or
    let another thread in): finish holds the sink busy meanwhile, so that call is refused (a fill there grew the
    trimmed buffers and added rows to them, past the rows counted). From 3.12 on the GC runs only between bytecodes,
    after finish, and the finalizer's rows begin the next chunk. Either way the buffers handed over are the rows
    counted."""
    import gc

    assert compiled is not None
    sink = compiled.ColumnSink(True)
    sink.fill(THREE, -1, 0, 0, 10, 0, 0)
    refused: list[BaseException] = []

    class FillsOnCollection:
        def __init__(self) -> None:
            self.cycle = self

        def __del__(self) -> None:
            try:
                sink.fill(THREE, -1, 0, 0, 10, 1, 1)
            except RuntimeError as exc:
                refused.append(exc)

    thresholds = gc.get_threshold()
    gc.collect()
    FillsOnCollection()
    gc.set_threshold(1)
    try:
        parts = _plain(sink.finish())
    finally:
        gc.set_threshold(*thresholds)
    gc.collect()
    inside_finish = sys.version_info < (3, 12)
    assert (len(refused), sink.rows) == ((1, 0) if inside_finish else (0, 3))
    assert parts["rows"] == 3
    assert parts["topic"] == struct.pack("=3i", 0, 0, 0)
    assert parts["offset"] == struct.pack("=3q", 0, 1, 2)


# --- both the same, on any batch --------------------------------------------------------------------------------------


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(any_batches, buffer_kinds)
def test_same_on_batches(batch: bytes, kind: str) -> None:
    assert_same(_as(kind, batch))


@needs_compiled
def test_same_on_every_lead_byte() -> None:
    """Every lead byte with second bytes at the edges of UTF-8's ranges: both decoders take the same keys."""
    assert compiled is not None
    for lead in range(0x80, 0x100):
        for second in (0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0):
            for rest in (b"", b"\x80", b"\x80\x80", b"\x80\x80\x80"):
                batch = batch_of([sized(record_body(headers=[(bytes([lead, second]) + rest, None)]))])
                assert records_of(compiled, batch, -1, 0, 0, 1) == records_of(reference, batch, -1, 0, 0, 1)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.binary(max_size=6)
        | st.lists(
            st.integers(0x80, 0xF5) | st.sampled_from([0x00, 0x7F, 0xC2, 0xE0, 0xED, 0xF0, 0xF4]), max_size=6
        ).map(bytes)
        | st.text(max_size=4).map(str.encode),
        min_size=1,
        max_size=3,
    )
)
def test_same_on_any_header_key(keys: list[bytes]) -> None:
    """Header keys of any bytes: both decoders take exactly the UTF-8 Python's strict decoder takes."""
    assert_same(batch_of([sized(record_body(headers=[(k, b"\x80" * 64) for k in keys]))]))


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(damaged(any_batches))
def test_same_on_damaged_batches(batch: bytes) -> None:
    assert_same(batch)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(
    any_batches | damaged(any_batches),
    st.data(),
)
def test_same_from_any_cursor(batch: bytes, data: st.DataObject) -> None:
    """Started at any byte of the records with any count left (mid-record starts included), at any position and
    limit; and with a cursor or limit just outside what is allowed (the same ValueError from both)."""
    pos = data.draw(st.integers(RECORDS_AT, max(len(batch), RECORDS_AT)) | st.sampled_from([-1, -2, 0, len(batch) + 1]))
    left = data.draw(st.integers(0, 12) | st.sampled_from([-1, 1 << 31]))
    position = data.draw(st.integers(-5, 40) | int64s)
    limit = data.draw(st.integers(0, 12) | st.just(-1))
    assert_same(batch, pos, left, position, limit)


@needs_compiled
@settings(max_examples=100, deadline=None)
@given(large_batches() | damaged(large_batches()), buffer_kinds, st.data())
def test_same_on_large_batches(batch: bytes, kind: str, data: st.DataObject) -> None:
    """Batches the compiled sink decodes with the GIL released: the same rows and the same errors (a damaged
    record deep in the batch raises the same DecodeError, the rows before it kept), from the start or anywhere."""
    assert_same(_as(kind, batch))
    pos = data.draw(st.sampled_from([-1, RECORDS_AT]) | st.integers(-1, len(batch)))
    assert_same(_as(kind, batch), pos, data.draw(st.integers(0, 1 << 20)), 0, data.draw(st.integers(0, 1 << 20)))


@needs_compiled
def test_same_at_the_reserved_bounds() -> None:
    """The compiled sink reserves room for a whole call from the batch's bytes: a row per 7 bytes (the smallest
    record: one-byte deltas, so at most 128 offsets) and a header per 2 bytes (the smallest header). Batches made
    of nothing else fill that room exactly, or nearly (a row past it would raise SystemError)."""
    smallest = [sized(record_body(delta, 0, None, None)) for delta in range(-64, 64)]
    assert {len(r) for r in smallest} == {7}
    assert_same(batch_of(smallest, base_offset=100), note=False)
    headers = [(b"", None)] * 20_000
    assert len(sized(record_body(0, 0, None, None, headers))) == 2 * 20_000 + 11  # 3-byte size and count
    assert_same(batch_of([sized(record_body(i, 0, None, None, headers)) for i in range(2)]), note=False)


@needs_compiled
@settings(max_examples=50, deadline=None)
@given(st.lists(large_batches(), min_size=1, max_size=4), st.integers(0, 1 << 24), st.integers(1, 1 << 20))
def test_the_sizing_hint_changes_no_row(batches: list[bytes], expected_bytes: int, limit: int) -> None:
    """``expected_bytes`` only sizes the compiled sink's buffers (after its first fill): with any hint, right or
    wrong, the rows are the reference's, and the next chunk's too."""

    def run(sink: Any) -> Any:
        cursors = [sink.fill(b, -1, 0, 0, limit, i, 0) for i, b in enumerate(batches)]
        first = _plain(sink.finish())
        cursors += [sink.fill(b, -1, 0, 0, limit, i, 0) for i, b in enumerate(batches)]
        return cursors, first, _plain(sink.finish())

    assert compiled is not None
    expected = run(reference.ColumnSink(True, expected_bytes))
    assert run(compiled.ColumnSink(True, expected_bytes)) == expected
    assert run(compiled.ColumnSink(True, expected_bytes=sum(map(len, batches)))) == expected


def _rows_batch(records: int) -> bytearray:
    """A batch of ``records`` 100-byte values with a key and a header each."""
    value = bytes(range(100))
    return bytearray(batch_of([sized(record_body(i, i, b"k%d" % i, value, [(b"h", b"x")])) for i in range(records)]))


@needs_compiled
def test_fill_lets_other_threads_run() -> None:
    """While the compiled sink decodes a large batch, another thread runs Python code (``exported`` sees the batch's
    buffer held); the rows are the reference's."""
    assert compiled is not None
    data = _rows_batch(20_000)  # 2.4 MB

    def fill() -> Any:
        sink = compiled.ColumnSink(True)
        cursor = sink.fill(data, -1, 0, 0, 1 << 40, 5, 9)
        return cursor, _plain(sink.finish())

    results, seen = run_beside(fill, exported(data))
    assert seen > 0, f"no other thread ran during {len(results)} fills"
    expected = reference.ColumnSink(True)
    cursor = expected.fill(bytes(data), -1, 0, 0, 1 << 40, 5, 9)
    assert results == [(cursor, _plain(expected.finish()))] * len(results)


@needs_compiled
def test_a_sink_refuses_a_second_thread_while_it_fills() -> None:
    """A sink belongs to one poll: another thread calling it while a fill writes into it gets RuntimeError, and
    nothing it did reached the sink; the fills' rows are all there."""
    assert compiled is not None
    data = _rows_batch(20_000)
    sink = compiled.ColumnSink(True)

    def probe() -> bool:
        try:
            sink.fill(b"", -1, 0, 0, 1, 0, 0)  # idle: DecodeError (no batch header), nothing written
        except RuntimeError as exc:
            assert "one poll" in str(exc)
            return True
        except DecodeError:
            pass
        return False

    results, seen = run_beside(lambda: sink.fill(data, -1, 0, 0, 1 << 40, 5, 9), probe)
    assert seen > 0, f"the other thread never ran during {len(results)} fills"
    assert results == [(len(data), 0, 20_000)] * len(results)
    expected = reference.ColumnSink(True)
    for _ in results:
        expected.fill(bytes(data), -1, 0, 0, 1 << 40, 5, 9)
    assert _plain(sink.finish()) == _plain(expected.finish())


@needs_compiled
@pytest.mark.parametrize("where", [0, 9_999])
def test_errors_raised_after_the_gil_is_back(where: int) -> None:
    """A malformed record in a batch decoded without the GIL: the reference's DecodeError, the rows before it kept,
    and the sink usable again."""
    assert compiled is not None
    records = [sized(record_body(i, i, None, b"v" * 100)) for i in range(10_000)]
    records[where] = sized(record_body(where, where, None, b"v" * 100, [(b"\xff", None)]))
    batch = batch_of(records)
    for impl in (reference, compiled):
        sink = impl.ColumnSink(True)
        with pytest.raises(DecodeError) as info:
            sink.fill(batch, -1, 0, 0, 1 << 40, 0, 0)
        at = RECORDS_AT + sum(len(r) for r in records[:where])
        assert (info.value.offset, info.value.reason) == (where, f"record at byte {at}: header key is not valid UTF-8")
        assert (sink.rows, sink.data_bytes) == (where, 100 * where)
        assert sink.finish()["rows"] == where


def _resumed_records(impl: ModuleType, batch: bytes, position: int, limits: Sequence[int]) -> Any:
    out: list[Any] = []

    def fill(b: Any, pos: int, left: int, at: int, limit: int) -> tuple[int, int, int]:
        result: tuple[int, int, int] = impl.fill_records(b, pos, left, at, limit, out, ConsumerRecord, "t", 0, 1)
        return result

    return fill_to_end(fill, batch, position, limits), repr(out)


def _resumed_rows(impl: ModuleType, batch: bytes, position: int, limits: Sequence[int]) -> Any:
    sink = impl.ColumnSink(True)

    def fill(b: Any, pos: int, left: int, at: int, limit: int) -> tuple[int, int, int]:
        result: tuple[int, int, int] = sink.fill(b, pos, left, at, limit, 1, 2)
        return result

    return fill_to_end(fill, batch, position, limits), _plain(sink.finish())


def _same_end(resumed: Any, single: Any) -> None:
    """Resumed calls end where one call ends, with the same records or rows. An error's reason is the same; its
    offset may not be: a call expects the batch's base offset until it has read a record (the reference's rule)."""
    (resumed_cursors, resumed_taken), (single_cursors, single_taken) = resumed, single
    assert resumed_taken == single_taken
    assert resumed_cursors[-1][-1] == single_cursors[-1][-1]
    assert len(resumed_cursors[-1]) == len(single_cursors[-1])
    if len(single_cursors[-1]) == 3:
        assert resumed_cursors[-1] == single_cursors[-1]


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(
    any_batches | damaged(any_batches),
    st.lists(st.integers(1, 4), max_size=8),
    st.integers(-1, 6) | int64s,
)
def test_resuming_is_one_call(batch: bytes, limits: list[int], start: int) -> None:
    """Calls resumed with small limits give what one call gives, on both decoders and both sinks, and the two
    decoders give the same cursors, records and rows call by call."""
    first_offset = struct.unpack_from(">q", batch)[0] if len(batch) >= 8 else 0
    position = first_offset + start if -(1 << 62) < first_offset + start < 1 << 62 else start
    for resume in (_resumed_records, _resumed_rows):
        ran = {impl: resume(impl, batch, position, limits) for impl in (reference, compiled)}
        assert ran[compiled] == ran[reference]
        _same_end(ran[reference], resume(reference, batch, position, []))


@needs_compiled
@pytest.mark.parametrize(
    ("pos", "left", "position", "limit"),
    [
        (1 << 64, 1, 0, 10),
        (1 << 64, 0, 0, 10),
        (1 << 64, 3, 0, -(1 << 70)),
        (-(1 << 70), 5, 0, 10),
        (RECORDS_AT, 1 << 70, 0, 2),
        (RECORDS_AT, 1 << 70, 0, 10),
        (RECORDS_AT, -(1 << 70), 0, 10),
        (-1, 0, 1 << 64, 10),
        (-1, 0, -(1 << 64), 1 << 80),
        (-1, 0, True, 10),
    ],
)
def test_same_with_integers_past_64_bits(pos: int, left: int, position: int, limit: int) -> None:
    """Python's integers have no width: arguments past 64 bits give what the reference gives."""
    assert_same(batch_of([sized(record_body(i)) for i in range(3)]), pos, left, position, limit, note=False)


@needs_compiled
def test_same_with_another_sequence_type() -> None:
    """``out`` need not be a list: its ``append`` is called."""
    assert compiled is not None
    batch = batch_of([sized(record_body(i)) for i in range(3)])
    assert records_of(compiled, batch, -1, 0, 0, 10, deque()) == records_of(reference, batch, -1, 0, 0, 10, deque())
