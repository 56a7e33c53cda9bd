"""The coverage-guided fuzzer's harness for the C record decoder: one input in, every C entry point exercised.

``one_input(data)`` reads its first byte as a mode and the next bytes as the call's choices (``_Draw``: past the
input's end every choice is 0), and the rest as the bytes to decode:

* ``FILL_RECORDS``, ``SINK_FILL``, ``RESUMED``: the rest as a v2 batch, decoded by ``fill_records`` and by a
  ``ColumnSink`` from any cursor, position and limit (resumed call after call with small limits too), by the C
  decoder and the pure-Python reference, which must give the same records, rows, cursors and errors;
* ``APPEND``: rows made by ``ColumnSink.append`` from fields, keys, values and headers cut from the input, the same
  on both;
* ``CRC``: ``crc32c`` and ``crc32c_software`` from any value, the same, chained or not;
* ``FETCH`` and ``COMPRESSED``: the rest as a Fetch response's records for a partition (or as a batch's records,
  compressed here with a codec the input picks, CRC right), collected as the consumer's ``poll`` and
  ``poll_arrow`` collect them: records, or ``CorruptRecordError`` / ``RecordBatchTooLargeError``, and the same
  offsets both ways.

A batch is handed over in an ``array('B')`` of exactly its size (``bytes`` end in a NUL, past which a read of one
byte would not reach AddressSanitizer's red zone). Anything else than the typed errors named, or the two decoders
disagreeing, raises ``FuzzFinding``: libFuzzer's harness (``tests/fuzz/decoder_fuzzer.c``) then aborts, and keeps the
input. ``seed_inputs`` are valid inputs of every mode to start from; ``tests/unit/protocol/test_fuzz_corpus.py``
replays the committed corpus, and ``scripts/fuzz_decoder.py`` runs the fuzzer.
"""

from __future__ import annotations

import functools
import logging
import struct
from array import array
from collections import deque
from collections.abc import Callable
from typing import Any

import cramjam

from asyncconsumer._caller.fetch_collector import FetchCollector
from asyncconsumer._state.fetch_buffer import CompletedFetch, FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import CorruptRecordError, RecordBatchTooLargeError
from asyncconsumer.protocol import _v2records as reference
from asyncconsumer.protocol import _v2records_c as compiled
from asyncconsumer.protocol._v2records import RECORDS_AT, DecodeError
from asyncconsumer.protocol.messages.fetch import AbortedTransaction
from asyncconsumer.protocol.records import complete_prefix
from asyncconsumer.records import ConsumerRecord, ShareRecord, TopicPartition
from tests.support.batches import GZIP, LZ4, SNAPPY, ZSTD, batch_around, build_batch, build_control_batch

FILL_RECORDS, SINK_FILL, RESUMED, APPEND, CRC, FETCH, COMPRESSED = range(7)
MODES = 7
MAX_BATCH_BYTES = 1 << 20
"""The collector's ``receive_message_max_bytes`` here: a compressed batch decompresses to at most this."""


class FuzzFinding(AssertionError):
    """What the fuzzer looks for: the decoders disagree, or one raised what it must not."""


class _Draw:
    """A fuzz input's leading bytes as choices; past the input's end every choice is 0."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, n: int) -> bytes:
        chunk = self.data[self.at : self.at + n]
        self.at += n
        return chunk.ljust(n, b"\0")

    def byte(self) -> int:
        return self.take(1)[0]

    def signed(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big", signed=True)

    def rest(self) -> bytes:
        chunk = self.data[self.at :]
        self.at = len(self.data)
        return chunk


def _exact(data: bytes) -> array[int]:
    """``data`` in a buffer of exactly its size."""
    return array("B", data)


def _outcome(call: Callable[[], Any]) -> Any:
    """What a call returned, or the error it raised, in a form two decoders can be compared by."""
    try:
        return ("returned", call())
    except DecodeError as exc:
        return (type(exc), exc.offset, exc.reason)
    except (TypeError, ValueError, OverflowError) as exc:  # arguments refused: the same message from both
        return (type(exc), str(exc))


def _plain(parts: Any) -> Any:
    """A ``finish()`` dict with every buffer as its bytes."""
    if isinstance(parts, dict):
        return {name: _plain(part) for name, part in parts.items()}
    if isinstance(parts, tuple):
        return tuple(_plain(part) for part in parts)
    if parts is None or isinstance(parts, int):
        return parts
    return bytes(memoryview(parts).cast("B"))


def _same(what: str, ran: Callable[[Any], Any]) -> None:
    expected, got = ran(reference), ran(compiled)
    if got != expected:
        raise FuzzFinding(f"{what}: the C decoder gave\n{got!r}\nthe reference\n{expected!r}")


CURSOR_BYTES = 14
"""A drawn cursor: how pos is chosen (1), where (2), left (1), how position is chosen (1), a position (8), limit (1)."""


def _cursor(draw: _Draw) -> Callable[[int], tuple[int, int, int, int]]:
    """(pos, left, position, limit) for a batch of a given size: mostly from the first record, else any byte of its
    records (mid-record too), or just past it (refused); any position; limits small, unbounded or negative."""
    choice, at, left, kind = draw.byte(), int.from_bytes(draw.take(2), "big"), draw.byte() % 16, draw.byte() % 4
    position = (0, -(1 << 63), draw.signed(8), at & 63)[kind]
    limit = draw.byte()
    limit = {255: 1 << 40, 254: -1}.get(limit, limit % 24)

    def resolve(size: int) -> tuple[int, int, int, int]:
        if choice < 160 or size < RECORDS_AT:
            pos = -1
        elif choice == 255:
            pos = size + 1
        else:
            pos = RECORDS_AT + at % (size - RECORDS_AT + 1)
        return pos, left, position, limit

    return resolve


def cursor_bytes(pos: int = -1, left: int = 0, position: int = 0, limit: int = 23) -> bytes:
    """The bytes ``_cursor`` draws as this cursor (pos -1 or a byte from ``RECORDS_AT``; limit < 24)."""
    choice, at = (0, 0) if pos < 0 else (200, pos - RECORDS_AT)
    return struct.pack(">BHBBqB", choice, at, left, 2, position, limit)


def _fill_records(draw: _Draw) -> None:
    flags = draw.byte()
    cursor = _cursor(draw)
    batch = draw.rest()
    pos, left, position, limit = cursor(len(batch))
    record_type, extra = (ShareRecord, 2) if flags & 1 else (ConsumerRecord, None)

    def ran(impl: Any) -> Any:
        out: list[Any] | deque[Any] = deque() if flags & 2 else []  # not a list: its append is called
        result = _outcome(
            lambda: impl.fill_records(_exact(batch), pos, left, position, limit, out, record_type, "t", 3, 7, extra)
        )
        return repr(list(out)), result

    _same("fill_records", ran)


def _sink_fill(draw: _Draw) -> None:
    flags = draw.byte()
    expected_bytes = int.from_bytes(draw.take(3), "big")
    cursors = [_cursor(draw) for _ in range(3)][: 1 + flags % 3]
    batch = draw.rest()
    calls = [cursor(len(batch)) for cursor in cursors]

    def ran(impl: Any) -> Any:
        sink = impl.ColumnSink(bool(flags & 4), expected_bytes)
        seen = []
        for pos, left, position, limit in calls:
            seen.append(_outcome(functools.partial(sink.fill, _exact(batch), pos, left, position, limit, 5, 9)))
            seen.append((sink.rows, sink.data_bytes))
        return seen, _plain(sink.finish())

    _same("ColumnSink.fill", ran)


def _resumed(draw: _Draw) -> None:
    count = draw.byte() % 6
    limits = [1 + b % 4 for b in draw.take(5)][:count]
    start = draw.signed(1)
    batch = draw.rest()

    def ran(impl: Any) -> Any:
        out: list[Any] = []
        sink = impl.ColumnSink(True)
        cursors = []
        for fill in (
            lambda p, left, at, n: impl.fill_records(_exact(batch), p, left, at, n, out, ConsumerRecord, "t", 0, None),
            lambda p, left, at, n: sink.fill(_exact(batch), p, left, at, n, 1, 2),
        ):
            pos, left, position = -1, 0, start
            for limit in [*limits, 1 << 40]:
                result = _outcome(functools.partial(fill, pos, left, position, limit))
                cursors.append(result)
                if result[0] != "returned":
                    break
                pos, left, position = result[1]
                if left == 0:
                    break
        return cursors, repr(out), _plain(sink.finish())

    _same("resumed fills", ran)


def _blob(draw: _Draw) -> bytes | None:
    size = draw.byte()
    return None if size >= 200 else draw.take(size % 40)


def _append(draw: _Draw) -> None:
    include_headers = bool(draw.byte() & 1)
    rows = []
    for _ in range(1 + draw.byte() % 3):
        fields = (draw.signed(4), draw.signed(4), draw.signed(8), draw.signed(8), draw.signed(1))
        key, value = _blob(draw), _blob(draw)
        headers = []
        for _ in range(draw.byte() % 5):
            name = (_blob(draw) or b"").decode("utf-8", "surrogateescape")  # lone surrogates: UnicodeEncodeError
            headers.append((name, _blob(draw)))
        rows.append((fields, key, value, tuple(headers)))

    def ran(impl: Any) -> Any:
        sink = impl.ColumnSink(include_headers)
        seen = [
            _outcome(functools.partial(sink.append, *fields, key, value, headers))
            for fields, key, value, headers in rows
        ]
        return seen, _plain(sink.finish())

    _same("ColumnSink.append", ran)


def _crc(draw: _Draw) -> None:
    value = int.from_bytes(draw.take(4), "big")
    cut = draw.byte()
    data = _exact(draw.rest())
    whole = compiled.crc32c(data, value)
    cut %= len(data) + 1
    chained = compiled.crc32c(memoryview(data)[cut:], compiled.crc32c(memoryview(data)[:cut], value))
    if not whole == chained == compiled.crc32c_software(data, value):
        raise FuzzFinding(
            f"crc32c: {whole:#x}, chained {chained:#x}, by the tables {compiled.crc32c_software(data, value):#x}"
        )


@functools.cache
def _config(check_crcs: bool, read_committed: bool) -> ConsumerConfig:
    return ConsumerConfig.from_kwargs(
        "h:1",
        check_crcs=check_crcs,
        isolation_level="read_committed" if read_committed else "read_uncommitted",
        fetch_max_bytes=MAX_BATCH_BYTES,
        max_partition_fetch_bytes=MAX_BATCH_BYTES,
        receive_message_max_bytes=MAX_BATCH_BYTES + 512,
    )


def _collect(records: bytes, check_crcs: bool, read_committed: bool, start: int, columns: bool) -> list[int] | None:
    """The offsets a poll (``columns``: a ``poll_arrow``) takes from one partition's fetched ``records``, poll after
    poll; None if the fetch was refused as corrupt or too large (what the consumer raises); records before that
    count."""
    view = memoryview(records)
    length, next_offset = complete_prefix(view)
    if next_offset is None:
        return []  # the fetcher never buffers a response without one complete batch
    tp = TopicPartition("t", 0)
    subs = SubscriptionState("earliest")
    subs.assign([tp])
    subs.seek(tp, start)
    epoch = subs.epoch(tp)
    assert epoch is not None
    buffer = FetchBuffer(1 << 24, CallerSignal())
    aborted = (AbortedTransaction(producer_id=7, first_offset=0),) if read_committed else None
    buffer.add_all([CompletedFetch(tp, epoch, 0, next_offset, view[:length], 100, aborted)])
    buffer.deliver()
    collector = FetchCollector(_config(check_crcs, read_committed), subs, buffer)
    offsets: list[int] = []
    try:
        for _ in range(64):
            if columns:
                chunks, _topics = collector.collect_columns(500, True)
                taken = [o for chunk in chunks for o in struct.unpack(f"={chunk['rows']}q", chunk["offset"])]
            else:
                taken = [r.offset for recs in collector.collect(500).values() for r in recs]
            if not taken:
                return offsets
            offsets += taken
    except (CorruptRecordError, RecordBatchTooLargeError):
        return None
    raise FuzzFinding("64 polls and the fetch is not drained")


def _fetch(draw: _Draw) -> None:
    flags, start = draw.byte(), draw.signed(2)
    records = draw.rest()
    _collect_both(_fixed(records) if flags & 8 else records, flags, start)


def _collect_both(records: bytes, flags: int, start: int) -> None:
    check_crcs, read_committed = bool(flags & 1), bool(flags & 2)
    rows = _collect(records, check_crcs, read_committed, start, columns=True)
    polled = _collect(records, check_crcs, read_committed, start, columns=False)
    if rows is not None and polled is not None and rows != polled:
        raise FuzzFinding(f"poll took offsets {polled}, poll_arrow {rows}")


def _fixed(records: bytes) -> bytes:
    """The first batch's length covering all of ``records`` and its CRC recomputed, where they fit: the damage then
    reaches the decoder instead of stopping at the CRC check."""
    out = bytearray(records)
    if len(out) >= RECORDS_AT and out[16] >= 2:
        out[8:12] = struct.pack(">i", len(out) - 12)
        out[17:21] = struct.pack(">I", compiled.crc32c(bytes(out[21:])))
    return bytes(out)


COMPRESSORS: dict[int, Callable[[bytes], bytes]] = {
    GZIP: lambda data: bytes(cramjam.gzip.compress(data)),
    SNAPPY: lambda data: bytes(cramjam.snappy.compress_raw(data)),
    LZ4: lambda data: bytes(cramjam.lz4.compress(data)),
    ZSTD: lambda data: bytes(cramjam.zstd.compress(data)),
}


def _compressed(draw: _Draw) -> None:
    codec, count, base_offset = 1 + draw.byte() % 4, draw.byte() % 64, draw.signed(2)
    flags, start = draw.byte(), draw.signed(2)
    records = batch_around(base_offset, codec, COMPRESSORS[codec](draw.rest()), max(count, 1))
    _collect_both(records, flags, start)


HANDLERS: list[Callable[[_Draw], None]] = [_fill_records, _sink_fill, _resumed, _append, _crc, _fetch, _compressed]


def quiet() -> None:
    """For the fuzzer's process: the collector's log events (a fetch gap at a drawn position) not printed."""
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


def one_input(data: bytes) -> None:
    """One fuzz input through the entry points its first byte picks; ``FuzzFinding`` (or anything untyped) is a
    finding."""
    if not data:
        return
    draw = _Draw(data)
    HANDLERS[draw.byte() % MODES](draw)


# --- seeds ------------------------------------------------------------------------------------------------------------


def _batches() -> list[bytes]:
    """Valid uncompressed v2 batches: records with and without keys, values and headers, a control marker, and one
    past 4 KiB (the compiled sink decodes it with the GIL released)."""
    headers = [("h", b"x"), ("n\u00e9", None)]
    # keys at the edges of UTF-8's ranges: each lead byte's own bounds on the byte after it
    keys = ["\u0800", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0003ffff", "\U0010ffff"]
    return [
        build_batch(0, [b"v0", None, b""], keys=[None, b"k1", b"k2"], headers=headers),
        build_batch(1 << 40, [b"value"] * 3),
        build_control_batch(7, 11, True),
        build_batch(5, [bytes(range(100))] * 60, keys=[b"key"] * 60, headers=headers),
        build_batch(9, [b"v"], headers=[(key, b"") for key in keys]),
    ]


def seed_inputs() -> list[bytes]:
    """Inputs of every mode around valid batches, for the fuzzer to start from."""
    batches = _batches()
    seeds = []
    for batch in batches:
        second = RECORDS_AT + (batch[RECORDS_AT] >> 1) + 1  # the second record: after the first one's size and body
        seeds += [
            bytes([FILL_RECORDS, 0]) + cursor_bytes() + batch,
            bytes([FILL_RECORDS, 1]) + cursor_bytes(second, 2, 3, 1) + batch,
            bytes([SINK_FILL, 4 | 2]) + bytes(3) + cursor_bytes(limit=1) + cursor_bytes(second, 2) * 2 + batch,
            bytes([RESUMED, 3, 1, 2, 3, 0, 0, 0]) + batch,
            bytes([CRC, 0, 0, 0, 0, 5]) + batch,
        ]
    for fetched in (b"".join(batches[:3]), batches[3]):
        seeds += [bytes([FETCH, 1, 0, 0]) + fetched, bytes([FETCH, 2 | 8, 0, 0]) + fetched]
    for codec in COMPRESSORS:
        seeds += [bytes([COMPRESSED, codec - 1, 3, 0, 0, 1, 0, 0]) + batch[RECORDS_AT:] for batch in batches[:2]]
    row = struct.pack(">iiqqb", 1, 2, 3, 4, 0)
    header = b"\x01h\x01x"  # a key of 1 byte, a value of 1 byte
    seeds += [
        bytes([APPEND, 1, 1]) + row + b"\x02k\x01v\x02" + header + b"\x02\xc3\xa9\xff",
        bytes([APPEND, 0, 2]) + row + b"\xff\xff\x00" + row + b"\x00\x00\x01\x01\xed\x01v",  # None; a surrogate
        bytes([APPEND, 1, 0]) + row + b"\x03abc\x00\x04" + header * 4,
    ]
    return seeds
