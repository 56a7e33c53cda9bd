"""Hand-built record batches for tests (aiokafka's builders; tests may import aiokafka directly): v2 batches, a
transaction marker, and a corrupt legacy (magic 1) gzip wrapper."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from aiokafka.codec import gzip_encode
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

GZIP = 1
"""The gzip codec in a message's attributes."""


def build_batch(
    base_offset: int,
    values: Sequence[bytes | None],
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamp: int = 1_700_000_000_000,
    headers: Sequence[tuple[str, bytes | None]] = (),
    compression: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
    leader_epoch: int | None = None,
) -> bytes:
    """One v2 batch whose records have offsets base_offset, base_offset+1, ...; ``leader_epoch`` is written as
    the broker writes its leader's epoch (outside the CRC)."""
    builder = DefaultRecordBatchBuilder(
        2,
        compression,
        int(transactional),
        producer_id,
        0 if producer_id >= 0 else -1,
        0 if producer_id >= 0 else -1,
        1 << 26,
    )
    for i, value in enumerate(values):
        key = keys[i] if keys is not None else None
        builder.append(i, timestamp + i, key, value, list(headers))
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big", signed=True)
    if leader_epoch is not None:
        data[12:16] = leader_epoch.to_bytes(4, "big", signed=True)
    return bytes(data)


def build_control_batch(offset: int, producer_id: int, commit: bool) -> bytes:
    """A transaction marker (COMMIT or ABORT) as the broker writes it."""
    builder = DefaultRecordBatchBuilder(2, 0, 1, producer_id, 0, -1, 1 << 20)
    key = (0).to_bytes(2, "big") + (1 if commit else 0).to_bytes(2, "big")
    value = (0).to_bytes(2, "big") + (0).to_bytes(4, "big")
    builder.append(0, 1_700_000_000_000, key, value, [])
    data = bytearray(builder.build())
    data[0:8] = offset.to_bytes(8, "big", signed=True)
    # attributes: set the control bit (0x20) and recompute the CRC over the bytes after it.
    attributes = int.from_bytes(data[21:23], "big") | 0x20
    data[21:23] = attributes.to_bytes(2, "big")
    from aiokafka.record.util import calc_crc32c

    data[17:21] = calc_crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def legacy_wrapper_with_inner_length(length: int) -> bytes:
    """A CRC-valid magic 1 gzip wrapper of two messages, the second claiming to be ``length`` bytes long."""
    inner = bytearray()
    for i in range(2):
        builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
        builder.append(0, 1_700_000_000_000, b"k", b"v%d" % i)
        message = bytearray(builder.build())
        message[0:8] = i.to_bytes(8, "big")
        inner += message
    second = len(inner) // 2
    inner[second + 8 : second + 12] = struct.pack(">i", length)
    value = gzip_encode(bytes(inner))
    # The wrapper: offset (of its last message), length, crc, magic 1, attributes gzip, timestamp, null key, value.
    body = struct.pack(">bbqi", 1, GZIP, 1_700_000_000_000, -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 1, len(body) + 4, zlib.crc32(body)) + body
