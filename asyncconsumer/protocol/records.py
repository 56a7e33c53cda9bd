"""Record sets: walking batch headers (background side) and preparing batches for decoding (caller side).

Batch headers are read with ``struct`` so the background thread never decodes a record. On the caller's side
``RecordBatchView.plain`` checks a v2 batch's CRC and decompresses it, and ``v2decode`` reads its records; magic 0/1
message sets, which a Kafka 4 broker still serves from segments written before it (KIP-724 drops only their
writing), are read here by ``legacy_records``. Corrupt data of any kind is reported as ``BatchError`` only.

Compressed data is decompressed here, within a limit (``codecs.decompress``), into the uncompressed batch it stands
for; a batch that would pass the limit is a ``BatchTooLargeError``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import attrs

from asyncconsumer.config import DEFAULT_RECEIVE_MESSAGE_MAX_BYTES
from asyncconsumer.protocol.codecs import GZIP, LZ4, SNAPPY, DecompressionLimitError, decompress
from asyncconsumer.protocol.v2decode import DecodeError, fill_records

_HEADER = struct.Struct(">qi")  # base offset, batch length (the bytes after this 12-byte prefix)
_LOG_OVERHEAD = 12
_LENGTH_AT = 8
_MAGIC_AT = 16
_V2_LAST_OFFSET_DELTA_AT = 23
_V2_LEADER_EPOCH_AT = 12
_V2_ATTRIBUTES_AT = 21
_V2_CODEC_AT = 22
"""The low byte of the attributes: its three lowest bits are the codec."""
_CODEC_MASK = 0x07
_V2_PRODUCER_ID_AT = 43
_V2_HEADER_SIZE = 61
_LEGACY_MIN_SIZE = _LOG_OVERHEAD + 14
_V2_CRC_AT = 17
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
# Legacy (magic 0/1) message: offset, length, crc, magic, attributes, then (magic 1) a timestamp; key and value follow.
_LEGACY_V0 = struct.Struct(">qiIbb")
_LEGACY_V1 = struct.Struct(">qiIbbq")
_LEGACY_CRC_AT = 12
_LEGACY_LOG_APPEND_TIME = 0x08
_LEGACY_CODECS = (GZIP, SNAPPY, LZ4)


_CRC_CHUNK = 65_536
"""google-crc32c reads only ``bytes``, so a batch is copied for it a chunk at a time: a whole-batch copy would add
the batch's size to the peak memory (large batches are allocated outside the heap's free lists)."""


def _compiled_crc32c() -> Callable[[memoryview], int] | None:
    """The C extension's CRC32C (``_v2records_c.crc32c``: the CPU's crc32 instruction where it has one, else
    slicing-by-8 tables), which reads the batch in place and releases the GIL over large ones; ``None`` when the
    extension is not built (a pure-Python install)."""
    try:
        from asyncconsumer.protocol._v2records_c import crc32c
    except ImportError:
        return None
    return crc32c


def _google_crc32c() -> Callable[[memoryview], int]:
    """google-crc32c's (a dependency): its C implementation (SSE4.2/ARMv8 CRC instructions) where its wheel has
    one, else its pure-Python tables, slow but right."""
    import google_crc32c

    extend = google_crc32c.extend

    def crc32c(data: memoryview) -> int:
        crc = 0
        for start in range(0, len(data), _CRC_CHUNK):
            crc = extend(crc, bytes(data[start : start + _CRC_CHUNK]))
        return int(crc)

    return crc32c


_crc32c = _compiled_crc32c() or _google_crc32c()
"""The CRC32C ``RecordBatchView`` checks v2 batches with: the compiled one, else google-crc32c's."""


__all__ = [
    "BatchError",
    "BatchTooLargeError",
    "LegacyRecord",
    "RecordBatchView",
    "complete_batches",
    "complete_prefix",
    "iter_batches",
]


class BatchError(Exception):
    """A batch could not be read; ``offset`` is its base offset. Turned into ``CorruptRecordError`` by callers."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


class BatchTooLargeError(BatchError):
    """A batch would decompress to more than ``limit`` bytes; ``reason`` says what its compressed stream states.
    Turned into ``RecordBatchTooLargeError`` by callers."""

    def __init__(self, offset: int, limit: int, reason: str) -> None:
        super().__init__(offset, reason)
        self.limit = limit


def complete_prefix(records: memoryview) -> tuple[int, int | None]:
    """(bytes of the complete batches at the start of ``records``, the offset after the last of them).

    A fetch response may end with a partial batch; it is cut off here and fetched again next time. The offset is
    ``None`` when not even one batch is complete.
    """
    length, next_offset, _ = complete_batches(records)
    return length, next_offset


def complete_batches(records: memoryview) -> tuple[int, int | None, int]:
    """``complete_prefix`` and the leader epoch of the last complete batch (-1: unknown, e.g. a legacy message),
    which a consumer validates its position with after a leader change (KIP-320)."""
    pos = 0
    end = len(records)
    next_offset: int | None = None
    epoch = -1
    while end - pos >= _LOG_OVERHEAD + 5:
        base_offset, length = _HEADER.unpack_from(records, pos)
        batch_end = pos + _LOG_OVERHEAD + length
        if length < 0 or batch_end > end:
            break
        magic = records[pos + _MAGIC_AT]
        if magic >= 2:
            if length + _LOG_OVERHEAD < _V2_HEADER_SIZE:
                break
            next_offset = base_offset + _I32.unpack_from(records, pos + _V2_LAST_OFFSET_DELTA_AT)[0] + 1
            epoch = _I32.unpack_from(records, pos + _V2_LEADER_EPOCH_AT)[0]
        else:
            # A legacy (wrapper) message carries the offset of its last inner message.
            next_offset = base_offset + 1
            epoch = -1
        pos = batch_end
    return pos, next_offset, epoch


@attrs.define(slots=True)
class RecordBatchView:
    """One batch's header fields and a decoder for its records."""

    base_offset: int
    next_offset: int
    magic: int
    leader_epoch: int | None
    is_control: bool
    is_transactional: bool
    producer_id: int
    buffer: memoryview

    def legacy_records(self, check_crc: bool, max_bytes: int = DEFAULT_RECEIVE_MESSAGE_MAX_BYTES) -> list[LegacyRecord]:
        """The records of a magic 0/1 message (itself, or the messages its compressed value holds); raises only
        ``BatchError`` (``BatchTooLargeError`` when its value would decompress past ``max_bytes``). A v2 batch is
        read by ``v2decode`` from ``plain`` instead."""
        if self.magic >= 2:
            raise BatchError(self.base_offset, f"a magic {self.magic} batch is read from plain(), not here")
        try:
            if check_crc and not self._legacy_crc_ok():
                raise BatchError(self.base_offset, "CRC check failed")
            return _legacy_records(self.buffer, self.magic, max_bytes)
        except BatchError:
            raise
        except DecompressionLimitError as exc:
            raise BatchTooLargeError(self.base_offset, exc.limit, exc.detail) from exc
        except Exception as exc:  # the codecs under it (zlib, cramjam) raise many types; ours raise ValueError
            raise BatchError(self.base_offset, f"{type(exc).__name__}: {exc}") from exc

    def plain(self, check_crc: bool, max_bytes: int = DEFAULT_RECEIVE_MESSAGE_MAX_BYTES) -> memoryview:
        """A v2 batch, CRC-checked if asked, as the uncompressed batch it stands for (itself when uncompressed):
        what ``v2decode`` reads. Raises only ``BatchError`` (``BatchTooLargeError`` past ``max_bytes``)."""
        try:
            if check_crc and not self._crc_ok():
                raise BatchError(self.base_offset, "CRC check failed")
            codec = self.buffer[_V2_CODEC_AT] & _CODEC_MASK
            return self._decompressed(codec, max_bytes) if codec else self.buffer
        except BatchError:
            raise
        except DecompressionLimitError as exc:
            raise BatchTooLargeError(self.base_offset, exc.limit, exc.detail) from exc
        except Exception as exc:  # the codecs (zlib, cramjam) raise many types
            raise BatchError(self.base_offset, f"{type(exc).__name__}: {exc}") from exc

    def _decompressed(self, codec: int, max_bytes: int) -> memoryview:
        """The uncompressed v2 batch this compressed one stands for: its header (codec bits cleared, length set)
        and its records, decompressed within ``max_bytes``. Its CRC is left stale: it was checked on the original."""
        plain = decompress(codec, self.buffer[_V2_HEADER_SIZE:], max_bytes, head=_V2_HEADER_SIZE)
        plain[:_V2_HEADER_SIZE] = self.buffer[:_V2_HEADER_SIZE]
        plain[_V2_CODEC_AT] &= ~_CODEC_MASK & 0xFF
        _I32.pack_into(plain, _LENGTH_AT, len(plain) - _LOG_OVERHEAD)
        return plain

    def _crc_ok(self) -> bool:
        """A v2 batch's CRC32C, over the bytes from its attributes on."""
        stored = int(_U32.unpack_from(self.buffer, _V2_CRC_AT)[0])
        return _crc32c(self.buffer[_V2_ATTRIBUTES_AT:]) == stored

    def _legacy_crc_ok(self) -> bool:
        """A magic 0/1 message's CRC32 (over the bytes from its magic byte on)."""
        return bool(zlib.crc32(self.buffer[_MAGIC_AT:]) == _U32.unpack_from(self.buffer, _LEGACY_CRC_AT)[0])

    def control_type(self, max_bytes: int = DEFAULT_RECEIVE_MESSAGE_MAX_BYTES) -> int | None:
        """For a control batch: 0 for an ABORT marker, 1 for COMMIT; ``None`` if unreadable (or compressed past
        ``max_bytes``: brokers write markers uncompressed)."""
        if self.magic < 2:
            return None
        records: list[Any] = []
        try:
            fill_records(self.plain(False, max_bytes), -1, 0, _MIN_OFFSET, 1, records, _Marker, "", 0, None)
        except (BatchError, DecodeError):
            return None
        key = records[0].key if records else None
        if key is not None and len(key) >= 4:
            return int(_I16.unpack_from(key, 2)[0])
        return None


class _Marker(NamedTuple):
    """A control record as ``fill_records`` builds it (only the key is read)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int | None
    serialized_key_size: int
    serialized_value_size: int


_MIN_OFFSET = -(1 << 63)


class LegacyRecord(NamedTuple):
    """A record of a magic 0/1 message set, as Kafka reads one (``headers`` always empty: v2 brought them)."""

    offset: int
    timestamp: int | None
    timestamp_type: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _legacy_record(
    offset: int, attributes: int, timestamp: int | None, key: bytes | None, value: bytes | None
) -> LegacyRecord:
    if timestamp is None or timestamp == -1:  # magic 0 has no timestamp; -1 is "none" in magic 1
        return LegacyRecord(offset, None, None, key, value)
    return LegacyRecord(offset, timestamp, 1 if attributes & _LEGACY_LOG_APPEND_TIME else 0, key, value)


def _legacy_bytes(buf: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    """A message's key or value at ``pos`` and the position after it; ``ValueError`` when it does not fit."""
    if pos + 4 > end:
        raise ValueError("message too short for its key and value sizes")
    size = int(_I32.unpack_from(buf, pos)[0])
    pos += 4
    if size == -1:
        return None, pos
    if size < 0 or pos + size > end:
        raise ValueError(f"key or value of {size} bytes in a message with {end - pos} left")
    return bytes(buf[pos : pos + size]), pos + size


class _LegacyMessage(NamedTuple):
    offset: int
    attributes: int
    timestamp: int | None
    key: bytes | None
    value: bytes | None
    end: int
    """Where the next message starts."""


def _read_legacy(buf: memoryview, pos: int, magic: int) -> _LegacyMessage:
    """The message at ``pos``; ``ValueError`` if malformed."""
    header = _LEGACY_V1 if magic == 1 else _LEGACY_V0
    if pos + header.size > len(buf):
        raise ValueError("message shorter than its header")
    fields = header.unpack_from(buf, pos)
    offset, length, _, message_magic, attributes = fields[:5]
    end = pos + _LOG_OVERHEAD + length
    if message_magic != magic:
        raise ValueError(f"message of magic {message_magic} inside a message set of magic {magic}")
    if length < header.size - _LOG_OVERHEAD or end > len(buf):
        raise ValueError(f"message length {length} does not fit in {len(buf) - pos - _LOG_OVERHEAD} bytes")
    key, at = _legacy_bytes(buf, pos + header.size, end)
    value, at = _legacy_bytes(buf, at, end)
    if at != end:
        raise ValueError(f"message length {length} disagrees with its key and value sizes")
    return _LegacyMessage(offset, attributes, fields[5] if magic == 1 else None, key, value, end)


def _legacy_records(buffer: memoryview, magic: int, max_bytes: int) -> list[LegacyRecord]:
    """The records of one magic 0/1 message: itself, or the messages its compressed value holds (decompressed
    within ``max_bytes``, else ``DecompressionLimitError``).

    Every size is checked against what holds it (aiokafka's C reader, which did this before, follows the sizes
    inside a decompressed value unchecked: a CRC-valid negative inner length crashed it or looped forever).
    Raises ``ValueError`` (or a codec's own error) for a malformed message.
    """
    wrapper = _read_legacy(buffer, 0, magic)
    codec = wrapper.attributes & _CODEC_MASK
    if not codec:
        return [_legacy_record(*wrapper[:5])]
    if codec not in _LEGACY_CODECS or (magic == 0 and codec == LZ4):  # zstd needs magic 2; LZ4 magic 1
        raise ValueError(f"compression codec {codec} is not valid for magic {magic}")
    if wrapper.value is None:
        raise ValueError("compressed message without a value")
    inner = decompress(codec, memoryview(wrapper.value), max_bytes)
    messages: list[_LegacyMessage] = []
    pos = 0
    while pos < len(inner):
        message = _read_legacy(inner, pos, magic)
        if message.attributes & _CODEC_MASK:
            raise ValueError("compressed message inside a compressed message")
        messages.append(message)
        pos = message.end
    if not messages:
        raise ValueError("compressed message with no message inside")
    # A magic 1 wrapper carries the offset of its last inner message, whose offsets are relative (0, 1, ...).
    base = max(wrapper.offset - messages[-1].offset, 0) if magic == 1 else 0
    # With log-append time the wrapper's timestamp (and type) stands for every inner message.
    stamp = wrapper if wrapper.attributes & _LEGACY_LOG_APPEND_TIME else None
    return [
        _legacy_record(m.offset + base, (stamp or m).attributes, (stamp or m).timestamp, m.key, m.value)
        for m in messages
    ]


def iter_batches(records: memoryview) -> Iterator[RecordBatchView]:
    """Every complete batch in ``records`` (partial trailing bytes are ignored)."""
    pos = 0
    end = len(records)
    while end - pos >= _LOG_OVERHEAD + 5:
        base_offset, length = _HEADER.unpack_from(records, pos)
        batch_end = pos + _LOG_OVERHEAD + length
        if length < 0 or batch_end > end:
            return
        buffer = records[pos:batch_end]
        magic = records[pos + _MAGIC_AT]
        if magic > 2:
            raise BatchError(base_offset, f"unknown record batch magic {magic}")
        if magic == 2:
            if len(buffer) < _V2_HEADER_SIZE:
                raise BatchError(base_offset, "batch shorter than its header")
            attributes = _I16.unpack_from(buffer, _V2_ATTRIBUTES_AT)[0]
            yield RecordBatchView(
                base_offset=base_offset,
                next_offset=base_offset + _I32.unpack_from(buffer, _V2_LAST_OFFSET_DELTA_AT)[0] + 1,
                magic=magic,
                leader_epoch=_I32.unpack_from(buffer, _V2_LEADER_EPOCH_AT)[0],
                is_control=bool(attributes & 0x20),
                is_transactional=bool(attributes & 0x10),
                producer_id=_I64.unpack_from(buffer, _V2_PRODUCER_ID_AT)[0],
                buffer=buffer,
            )
        else:
            if len(buffer) < _LEGACY_MIN_SIZE:
                raise BatchError(base_offset, "message shorter than its header")
            yield RecordBatchView(
                base_offset=base_offset,
                next_offset=base_offset + 1,
                magic=magic,
                leader_epoch=None,
                is_control=False,
                is_transactional=False,
                producer_id=-1,
                buffer=buffer,
            )
        pos = batch_end
