"""The records of an uncompressed v2 batch, decoded in pure Python: the reference for the C decoder (``_v2records_c``).

Both implementations offer the same two entry points and must agree byte for byte (the Hypothesis tests in
``tests/unit/protocol/test_v2records.py`` feed both the same batches):

* ``fill_records``: one ``ConsumerRecord`` per record, appended to a list (the per-record ``poll``);
* ``ColumnSink.fill``: the records appended to column buffers laid out as Arrow's (``poll_arrow``): fixed-width
  values, validity bitmaps, 32-bit offsets and one contiguous data buffer per binary column.

A call decodes from byte ``pos`` of ``batch`` (``pos=-1``: the first record) while records are left and fewer than
``limit`` were taken, skips records before offset ``position``, and returns ``(pos, left, position)`` to resume from.
A malformed record raises ``DecodeError`` after the records before it were taken; a record is taken whole or not at
all. The checks are Java's ``DefaultRecord.readFrom``: sizes in range, fields within the record's stated size, the
stated size used exactly, no bytes after the last record, header keys in UTF-8.

Every argument is checked first, in order, with a ``TypeError`` or ``ValueError`` naming it (both decoders raise the
same): a C-contiguous bytes-like ``batch``; ints (no ``__index__``) for ``pos`` (-1, or a byte from ``RECORDS_AT`` to
the batch's length, checked after its header), ``left`` (when ``pos`` is not -1: 0 to 2**31 - 1), ``position`` (any)
and ``limit`` (at least 0; any larger than the records means all of them); then each entry point's own.
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

__all__ = ["RECORDS_AT", "ColumnSink", "DecodeError", "fill_records", "raw_record"]

_BASE = struct.Struct(">q")
_ATTRIBUTES = struct.Struct(">h")
_STAMPS = struct.Struct(">qq")  # base timestamp, max timestamp
_COUNT = struct.Struct(">i")
_BASE_OFFSET_AT = 0
_ATTRIBUTES_AT = 21
_STAMPS_AT = 27
_COUNT_AT = 57
RECORDS_AT = 61
"""A v2 batch's header size: its first record starts here."""
_LOG_APPEND_TIME = 0x08
_U32 = 0xFFFF_FFFF
_U64 = 0xFFFF_FFFF_FFFF_FFFF
_NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()
_DATA_MAX = 0x7FFF_FFFF
_INT8 = (-(1 << 7), (1 << 7) - 1, "from -128 to 127")
_INT32 = (-(1 << 31), (1 << 31) - 1, "from -2147483648 to 2147483647")
_INT64 = (-(1 << 63), (1 << 63) - 1, "from -9223372036854775808 to 9223372036854775807")
_LEFT = (0, (1 << 31) - 1, "from 0 to 2147483647 (the records left after pos)")
_PAIR = "a (str, bytes | None) pair"


class DecodeError(Exception):
    """A malformed record; ``offset`` is where a consumer goes on after it: the offset after the last record read,
    and never below the call's position (the records before it were taken)."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(offset, reason)
        self.offset = offset
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class _Malformed(Exception):
    """Raised inside a record; turned into ``DecodeError`` with the batch's expected offset."""


def _int(fname: str, name: str, value: object) -> int:
    """An int argument (bool and int subclasses too), else ``TypeError`` naming it."""
    if not isinstance(value, int):
        raise TypeError(f"{fname}() argument '{name}' must be int, not {type(value).__name__}")
    return value


def _int_in(fname: str, name: str, value: object, bounds: tuple[int, int, str]) -> int:
    """An int argument within ``bounds`` (low, high, their text), else ``TypeError`` or ``ValueError`` naming it."""
    low, high, text = bounds
    number = _int(fname, name, value)
    if not low <= number <= high:
        raise ValueError(f"{fname}() argument '{name}' must be {text}, not {number}")
    return number


def _bytes_like(fname: str, what: str, value: object, or_none: str = "") -> memoryview:
    """``value``'s bytes, else ``TypeError`` naming it (``what``: "argument 'batch'")."""
    try:
        return memoryview(value).cast("B")  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{fname}() {what} must be a C-contiguous bytes-like object{or_none}, not {type(value).__name__}"
        ) from None


def _next(cursor: _Batch, position: int) -> _Record:
    """The cursor's next record. A bad one's ``DecodeError`` names at least ``position``: records a call took, or
    skipped below it, are never handed out again, whatever offsets the records before the bad one had."""
    try:
        return cursor.next()
    except DecodeError as exc:
        if exc.offset >= position:
            raise
        raise DecodeError(position, exc.reason) from None


def _cursor_arguments(fname: str, batch: Any, pos: int, left: int, position: int, limit: int) -> memoryview:
    """The first five arguments of ``fill_records`` and ``ColumnSink.fill`` checked (``pos`` against the batch's
    length later, in ``_Batch``); the batch's bytes."""
    buf = _bytes_like(fname, "argument 'batch'", batch)
    if _int(fname, "pos", pos) < -1:
        raise ValueError(f"{fname}() argument 'pos' must be -1 (the first record) or a byte of the batch, not {pos}")
    if pos >= 0:
        _int_in(fname, "left", left, _LEFT)
    else:
        _int(fname, "left", left)
    _int(fname, "position", position)
    if _int(fname, "limit", limit) < 0:
        raise ValueError(f"{fname}() argument 'limit' must be >= 0, not {limit}")
    return buf


def _signed(value: int, mask: int) -> int:
    """``value`` wrapped to a signed integer of ``mask``'s width (what C's fixed-width arithmetic gives)."""
    value &= mask
    return value - mask - 1 if value > mask >> 1 else value


class _Reader:
    """Reads one record's fields, never past ``end``."""

    __slots__ = ("at", "buf", "end", "pos")

    def __init__(self, buf: memoryview, pos: int, end: int, at: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end
        self.at = at

    def varint(self, max_bytes: int) -> int:
        """A zigzag varint (``max_bytes`` 5) or varlong (10); longer is malformed, as in Java's ``ByteUtils``."""
        buf, pos, end = self.buf, self.pos, self.end
        raw = 0
        shift = 0
        for i in range(max_bytes):
            if pos >= end:
                raise _Malformed(f"record at byte {self.at}: truncated")
            b = buf[pos]
            pos += 1
            raw |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                self.pos = pos
                mask = _U32 if max_bytes == 5 else _U64
                raw &= mask
                return _signed((raw >> 1) ^ -(raw & 1), mask)
            if i == max_bytes - 1:
                break
        raise _Malformed(f"record at byte {self.at}: varint longer than {max_bytes} bytes")

    def take(self, size: int) -> bytes:
        if size > self.end - self.pos:
            raise _Malformed(f"record at byte {self.at}: truncated")
        data = bytes(self.buf[self.pos : self.pos + size])
        self.pos += size
        return data

    def blob(self, what: str, nullable: bool) -> bytes | None:
        size = self.varint(5)
        if size < 0:
            if size == -1 and nullable:
                return None
            raise _Malformed(f"record at byte {self.at}: {what} length {size} is invalid")
        return self.take(size)


class _Record:
    """One decoded record: the fields both sinks need."""

    __slots__ = ("headers", "key", "offset", "timestamp", "value")

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[bytes, bytes | None]],
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers


class _Batch:
    """A batch's header fields and a cursor over its records."""

    __slots__ = ("base_offset", "base_timestamp", "buf", "expected", "left", "log_append", "max_timestamp", "pos")

    def __init__(self, fname: str, buf: memoryview, pos: int, left: int) -> None:
        self.buf = buf
        if len(buf) < RECORDS_AT:
            raise DecodeError(0, f"batch of {len(buf)} bytes is shorter than its header")
        self.base_offset = _BASE.unpack_from(buf, _BASE_OFFSET_AT)[0]
        self.log_append = bool(_ATTRIBUTES.unpack_from(buf, _ATTRIBUTES_AT)[0] & _LOG_APPEND_TIME)
        self.base_timestamp, self.max_timestamp = _STAMPS.unpack_from(buf, _STAMPS_AT)
        if pos < 0:
            pos = RECORDS_AT
            left = _COUNT.unpack_from(buf, _COUNT_AT)[0]
            if left < 0:
                raise DecodeError(self.base_offset, f"record count {left} is negative")
            if left == 0 and len(buf) > RECORDS_AT:  # no record to end at: what follows the header is trailing
                raise DecodeError(self.base_offset, f"{len(buf) - RECORDS_AT} bytes after the batch's last record")
        elif not RECORDS_AT <= pos <= len(buf):
            raise ValueError(
                f"{fname}() argument 'pos' must be -1 (the first record) or from {RECORDS_AT} to {len(buf)}, not {pos}"
            )
        self.pos = pos
        self.left = left
        self.expected = self.base_offset  # the offset after the last record read (the first one's, at the start)

    def next(self) -> _Record:
        """The record at ``pos``; on success ``pos``, ``left`` and ``expected`` move past it."""
        buf, at = self.buf, self.pos
        try:
            reader = _Reader(buf, at, len(buf), at)
            size = reader.varint(5)
            if size < 0:
                raise _Malformed(f"record at byte {at}: size {size} is negative")
            start = reader.pos
            if size > len(buf) - start:
                raise _Malformed(f"record at byte {at}: truncated")
            reader.end = start + size
            reader.pos += 1  # attributes: unused
            if reader.pos > reader.end:
                raise _Malformed(f"record at byte {at}: truncated")
            timestamp_delta = reader.varint(10)
            offset_delta = reader.varint(5)
            key = reader.blob("key", True)
            value = reader.blob("value", True)
            count = reader.varint(5)
            if count < 0:
                raise _Malformed(f"record at byte {at}: header count {count} is invalid")
            headers: list[tuple[bytes, bytes | None]] = []
            for _ in range(count):
                header_key = reader.blob("header key", False)
                assert header_key is not None
                try:
                    header_key.decode("utf-8")
                except UnicodeDecodeError:
                    raise _Malformed(f"record at byte {at}: header key is not valid UTF-8") from None
                headers.append((header_key, reader.blob("header value", True)))
            if reader.pos != reader.end:
                raise _Malformed(f"record at byte {at}: size {size} but its fields take {reader.pos - start} bytes")
            if self.left == 1 and reader.end != len(buf):
                raise _Malformed(f"{len(buf) - reader.end} bytes after the batch's last record")
        except _Malformed as exc:
            raise DecodeError(self.expected, str(exc)) from None
        offset = _signed(self.base_offset + offset_delta, _U64)
        timestamp = self.max_timestamp if self.log_append else _signed(self.base_timestamp + timestamp_delta, _U64)
        self.pos = reader.end
        self.left -= 1
        self.expected = _signed(offset + 1, _U64)
        return _Record(offset, timestamp, key, value, headers)


def raw_record(
    record_type: type,
    topic: str,
    partition: int,
    offset: int,
    timestamp: int | None,
    timestamp_type: int | None,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...],
    leader_epoch: int | None,
    extra: tuple[object, ...] = (),
) -> Any:
    """A ``ConsumerRecord``-shaped tuple of ``record_type`` with raw key and value and their sizes, then ``extra``."""
    size = (-1 if key is None else len(key), -1 if value is None else len(value))
    fields = (topic, partition, offset, timestamp, timestamp_type, key, value, headers, leader_epoch, *size, *extra)
    return tuple.__new__(record_type, fields)


def fill_records(
    batch: Any,
    pos: int,
    left: int,
    position: int,
    limit: int,
    out: list[Any],
    record_type: type,
    topic: str,
    partition: int,
    leader_epoch: int | None,
    extra: object = None,
) -> tuple[int, int, int]:
    """Appends up to ``limit`` records (``record_type`` tuples: ``ConsumerRecord``'s fields, raw key and value, then
    ``extra`` unless it is None: a share record's delivery count) to ``out``; returns ``(pos, left, position)``."""
    fname = "fill_records"
    buf = _cursor_arguments(fname, batch, pos, left, position, limit)
    if not isinstance(out, list) and not callable(getattr(out, "append", None)):
        raise TypeError(f"{fname}() argument 'out' must be a list or have an append method, not {type(out).__name__}")
    if not isinstance(record_type, type) or not issubclass(record_type, tuple):
        raise TypeError(f"{fname}() argument 'record_type' must be a subclass of tuple, not {record_type!r}")
    if not isinstance(topic, str):
        raise TypeError(f"{fname}() argument 'topic' must be str, not {type(topic).__name__}")
    _int(fname, "partition", partition)
    if leader_epoch is not None and not isinstance(leader_epoch, int):
        raise TypeError(f"{fname}() argument 'leader_epoch' must be int or None, not {type(leader_epoch).__name__}")
    more = () if extra is None else (extra,)
    cursor = _Batch(fname, buf, pos, left)
    timestamp_type = 1 if cursor.log_append else 0
    taken = 0
    while cursor.left > 0 and taken < limit:
        rec = _next(cursor, position)
        if rec.offset < position:
            continue
        headers = tuple((k.decode("utf-8"), v) for k, v in rec.headers) if rec.headers else _NO_HEADERS
        out.append(
            raw_record(
                record_type, topic, partition, rec.offset, rec.timestamp, timestamp_type, rec.key, rec.value, headers,
                leader_epoch, more,
            )
        )  # fmt: skip
        position = rec.offset + 1
        taken += 1
    return cursor.pos, cursor.left, position


class _Binary:
    """A binary column being built: validity bitmap, 32-bit offsets, data; or, without ``nullable``, no bitmap."""

    __slots__ = ("data", "nulls", "offsets", "valid")

    def __init__(self, nullable: bool) -> None:
        self.valid: bytearray | None = bytearray() if nullable else None
        self.offsets = array("i", [0])
        self.data = bytearray()
        self.nulls = 0

    def append(self, row: int, value: bytes | None) -> None:
        valid = self.valid
        if valid is not None:
            if row % 8 == 0:
                valid.append(0)
            if value is None:
                self.nulls += 1
            else:
                valid[row >> 3] |= 1 << (row & 7)
        if value is not None:
            if len(self.data) + len(value) > _DATA_MAX:
                raise OverflowError("a column's data passed 2 GiB in one chunk")
            self.data += value
        self.offsets.append(len(self.data))

    def parts(self) -> tuple[Any, ...]:
        return (self.valid, self.offsets, self.data, self.nulls)


def _optional_bytes(what: str, value: object) -> bytes | None:
    """A bytes-like value (copied) or None for ``ColumnSink.append`` (``what``: "argument 'key'")."""
    if value is None:
        return None
    with _bytes_like("ColumnSink.append", what, value, " or None") as data:
        if len(data) > _DATA_MAX:
            raise OverflowError("a column's data passed 2 GiB in one chunk")
        return bytes(data)


class ColumnSink:
    """Records appended as Arrow column buffers; ``finish`` hands them over and starts again.

    A sink belongs to one poll, used by one thread at a time. The compiled twin's ``fill`` lets the GIL go while it
    writes into the buffers and refuses calls from other threads meanwhile (``RuntimeError``); this one has no
    such window. ``expected_bytes`` is a sizing hint, the bytes of the batches about to be filled: the compiled
    sink sizes its buffers for the poll after its first fill; it changes no row, and this sink ignores it.
    """

    def __init__(self, include_headers: bool, expected_bytes: int = 0) -> None:
        if not isinstance(include_headers, bool):
            kind = type(include_headers).__name__
            raise TypeError(f"ColumnSink() argument 'include_headers' must be bool, not {kind}")
        if _int("ColumnSink", "expected_bytes", expected_bytes) < 0:
            raise ValueError(f"ColumnSink() argument 'expected_bytes' must be >= 0, not {expected_bytes}")
        self.include_headers = include_headers
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self._topic = array("i")
        self._partition = array("i")
        self._offset = array("q")
        self._timestamp = array("q")
        self._timestamp_type = array("b")
        self._key = _Binary(True)
        self._value = _Binary(True)
        self._header_offsets = array("i", [0])
        self._header_key = _Binary(False)
        self._header_value = _Binary(True)
        self._headers = 0

    @property
    def data_bytes(self) -> int:
        """Bytes in the binary columns' data so far (a chunk is finished before 2 GiB)."""
        return len(self._key.data) + len(self._value.data) + len(self._header_value.data)

    def fill(
        self, batch: Any, pos: int, left: int, position: int, limit: int, topic: int, partition: int
    ) -> tuple[int, int, int]:
        """Appends up to ``limit`` records of ``batch`` as rows of topic number ``topic``; as ``fill_records``."""
        fname = "ColumnSink.fill"
        buf = _cursor_arguments(fname, batch, pos, left, position, limit)
        _int_in(fname, "topic", topic, _INT32)
        _int_in(fname, "partition", partition, _INT32)
        cursor = _Batch(fname, buf, pos, left)
        timestamp_type = 1 if cursor.log_append else 0
        taken = 0
        while cursor.left > 0 and taken < limit:
            rec = _next(cursor, position)
            if rec.offset < position:
                continue
            self._row(topic, partition, rec.offset, rec.timestamp, timestamp_type, rec.key, rec.value, rec.headers)
            position = rec.offset + 1
            taken += 1
        return cursor.pos, cursor.left, position

    def append(
        self,
        topic: int,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...],
    ) -> None:
        """One row from decoded fields (a magic 0/1 record). ``headers``: any iterable of pairs, each any iterable
        of a str and a bytes-like value or None; every argument is checked before the row is written."""
        fname = "ColumnSink.append"
        _int_in(fname, "topic", topic, _INT32)
        _int_in(fname, "partition", partition, _INT32)
        _int_in(fname, "offset", offset, _INT64)
        _int_in(fname, "timestamp", timestamp, _INT64)
        _int_in(fname, "timestamp_type", timestamp_type, _INT8)
        key_bytes = _optional_bytes("argument 'key'", key)
        value_bytes = _optional_bytes("argument 'value'", value)
        try:
            given = iter(headers)
        except TypeError:
            raise TypeError(
                f"{fname}() argument 'headers' must be an iterable of (str, bytes | None) pairs, "
                f"not {type(headers).__name__}"
            ) from None
        pairs: list[tuple[bytes, bytes | None]] = []
        for i, pair in enumerate(tuple(given)):
            try:
                items = tuple(iter(pair))
            except TypeError:
                raise TypeError(
                    f"{fname}() argument 'headers': header {i} must be {_PAIR}, not {type(pair).__name__}"
                ) from None
            if len(items) != 2:
                raise ValueError(f"{fname}() argument 'headers': header {i} must be {_PAIR}, not {len(items)} values")
            header_key, header_value = items
            if not isinstance(header_key, str):
                raise TypeError(
                    f"{fname}() argument 'headers': header {i}'s key must be str, not {type(header_key).__name__}"
                )
            encoded = header_key.encode()
            pairs.append((encoded, _optional_bytes(f"argument 'headers': header {i}'s value", header_value)))
        self._row(topic, partition, offset, timestamp, timestamp_type, key_bytes, value_bytes, pairs)

    def _row(
        self,
        topic: int,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[bytes, bytes | None]],
    ) -> None:
        row = self.rows
        self._key.append(row, key)
        self._value.append(row, value)
        if self.include_headers:
            for header_key, header_value in headers:
                self._header_key.append(self._headers, header_key)
                self._header_value.append(self._headers, header_value)
                self._headers += 1
            self._header_offsets.append(self._headers)
        self._topic.append(topic)
        self._partition.append(partition)
        self._offset.append(offset)
        self._timestamp.append(timestamp)
        self._timestamp_type.append(timestamp_type)
        self.rows = row + 1

    def finish(self) -> dict[str, Any]:
        """The buffers of the rows so far (each a buffer-protocol object, native byte order), then a fresh start.

        Keys: ``rows``, ``topic``, ``partition``, ``offset``, ``timestamp``, ``timestamp_type``, ``key`` and
        ``value`` as ``(validity, offsets, data, null count)``, and with headers ``header_offsets``, ``headers``
        (the number of headers), ``header_key`` (no validity) and ``header_value``.
        """
        parts: dict[str, Any] = {
            "rows": self.rows,
            "topic": self._topic,
            "partition": self._partition,
            "offset": self._offset,
            "timestamp": self._timestamp,
            "timestamp_type": self._timestamp_type,
            "key": self._key.parts(),
            "value": self._value.parts(),
        }
        if self.include_headers:
            parts["header_offsets"] = self._header_offsets
            parts["headers"] = self._headers
            parts["header_key"] = self._header_key.parts()
            parts["header_value"] = self._header_value.parts()
        self._reset()
        return parts
