"""Record sets: walking batch headers (background side) and decoding batches (caller side).

This is the only module that imports aiokafka's record reader (its Cython ``_crecords`` when built). Batch headers
are read with ``struct`` so the background thread never decodes a record; decoding happens in the caller's ``poll``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import attrs
from aiokafka.errors import CorruptRecordException, UnsupportedCodecError
from aiokafka.record.default_records import DefaultRecordBatch
from aiokafka.record.legacy_records import LegacyRecordBatch

_HEADER = struct.Struct(">qi")  # base offset, batch length (the bytes after this 12-byte prefix)
_LOG_OVERHEAD = 12
_MAGIC_AT = 16
_V2_LAST_OFFSET_DELTA_AT = 23
_V2_LEADER_EPOCH_AT = 12
_V2_ATTRIBUTES_AT = 21
_V2_PRODUCER_ID_AT = 43
_V2_HEADER_SIZE = 61
_LEGACY_MIN_SIZE = _LOG_OVERHEAD + 14
_V2_CRC_AT = 17
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")


def _hardware_crc32c() -> Any:
    """google-crc32c's C implementation (SSE4.2/ARMv8 CRC instructions: ~10x aiokafka's table-driven CRC), or
    ``None`` when only its pure-Python fallback is available here."""
    try:
        import google_crc32c
    except ImportError:
        return None
    return google_crc32c.value if google_crc32c.implementation == "c" else None


_crc32c = _hardware_crc32c()

__all__ = [
    "BatchError",
    "RecordBatchView",
    "complete_prefix",
    "iter_batches",
]


class BatchError(Exception):
    """A batch could not be read; ``offset`` is its base offset. Turned into ``CorruptRecordError`` by callers."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


def complete_prefix(records: memoryview) -> tuple[int, int | None]:
    """(bytes of the complete batches at the start of ``records``, the offset after the last of them).

    A fetch response may end with a partial batch; it is cut off here and fetched again next time. The offset is
    ``None`` when not even one batch is complete.
    """
    pos = 0
    end = len(records)
    next_offset: int | None = None
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
        else:
            # A legacy (wrapper) message carries the offset of its last inner message.
            next_offset = base_offset + 1
        pos = batch_end
    return pos, next_offset


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

    def decode(self, check_crc: bool) -> Iterator[Any]:
        """The batch's records (aiokafka record objects: offset, timestamp, key, value, headers...)."""
        try:
            if self.magic >= 2:
                batch: Any = DefaultRecordBatch(self.buffer)
            else:
                batch = LegacyRecordBatch(bytes(self.buffer), self.magic)
            if check_crc and not self._crc_ok(batch):
                raise BatchError(self.base_offset, "CRC check failed")
            # aiokafka's batch may be iterated only once, so materialise it; callers resume a list iterator.
            return iter(list(batch))
        except BatchError:
            raise
        except (CorruptRecordException, UnsupportedCodecError, ValueError, IndexError, struct.error) as exc:
            raise BatchError(self.base_offset, f"{type(exc).__name__}: {exc}") from exc

    def _crc_ok(self, batch: Any) -> bool:
        """A v2 batch's CRC32C with the hardware implementation when there is one, else aiokafka's check."""
        if self.magic >= 2 and _crc32c is not None:
            stored = int(_U32.unpack_from(self.buffer, _V2_CRC_AT)[0])
            return bool(_crc32c(bytes(self.buffer[_V2_ATTRIBUTES_AT:])) == stored)
        return bool(batch.validate_crc())

    def control_type(self) -> int | None:
        """For a control batch: 0 for an ABORT marker, 1 for COMMIT; ``None`` if unreadable."""
        try:
            for record in DefaultRecordBatch(self.buffer):
                key = record.key
                if key is not None and len(key) >= 4:
                    return int(_I16.unpack_from(key, 2)[0])
        except (CorruptRecordException, ValueError, IndexError, struct.error):
            return None
        return None


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
        if magic >= 2:
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
