"""Hand-built record batches for tests (aiokafka's builders; tests may import aiokafka directly): v2 batches, a
transaction marker, a corrupt legacy (magic 1) gzip wrapper, and compression bombs; and aiokafka's reading of a v2
batch, the tests' independent second reading of what our decoder reads."""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Sequence

import cramjam
from aiokafka.codec import gzip_encode
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
from aiokafka.record.util import calc_crc32c

GZIP = 1
"""The gzip codec in a message's attributes."""
SNAPPY = 2
LZ4 = 3
ZSTD = 4


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


def build_legacy(base_offset: int, magic: int, values: Sequence[bytes], *, compression: int = 0) -> bytes:
    """A magic 0/1 message set as a broker stores one: a message per value at offsets base_offset, base_offset+1,
    ..., or, compressed, one wrapper holding them, which carries its last message's offset (inside, magic 1
    counts from 0 and magic 0 keeps the absolute offsets)."""
    builder = LegacyRecordBatchBuilder(magic, compression, 1 << 20)
    for i, value in enumerate(values):
        inner = i if compression and magic == 1 else base_offset + i
        builder.append(inner, 1_700_000_000_000 + i if magic else None, b"k%d" % i, value)
    data = bytearray(builder.build())
    if compression:
        data[0:8] = (base_offset + len(values) - 1).to_bytes(8, "big", signed=True)  # outside the CRC
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


def aiokafka_reading(plain: bytes | memoryview) -> list[tuple[object, ...]]:
    """(offset, timestamp, timestamp type, key, value, headers) of each record of an uncompressed v2 batch, as
    aiokafka's Cython reader reads them; whatever it raises on a malformed batch comes out as it is."""
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, tuple(r.headers))
        for r in DefaultRecordBatch(bytes(plain))
    ]


# --- compression bombs --------------------------------------------------------------------------------------------

_MIB = 1 << 20
_V2_HEADER = struct.Struct(">qiiBIhiqqqhii")  # offset, length, leader epoch, magic, crc, attributes, ... , count


@functools.cache
def compressed_zeros(codec: int, mib: int) -> bytes:
    """``mib`` MiB of zeros compressed with ``codec`` (1 gzip, 2 snappy-java, 3 lz4, 4 zstd), made a MiB at a time
    (or, for gzip and snappy, one independent compressed MiB repeated), so a GiB costs the test little."""
    zeros = bytes(_MIB)
    if codec == GZIP:
        deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)  # refers to nothing before it
        crc = 0
        for _ in range(mib):
            crc = zlib.crc32(zeros, crc)
        trailer = struct.pack("<II", crc, (mib * _MIB) & 0xFFFFFFFF)
        return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + block * mib + deflate.flush() + trailer
    if codec == SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(bytes(32 << 10)))
        framed = struct.pack(">i", len(block)) + block
        return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + framed * (mib * 32)
    compressor: cramjam.lz4.Compressor | cramjam.zstd.Compressor
    if codec == LZ4:
        compressor = cramjam.lz4.Compressor(level=1, content_checksum=True, block_linked=False)
    else:
        compressor = cramjam.zstd.Compressor(level=1)
    for _ in range(mib):
        compressor.compress(zeros)
    return bytes(compressor.finish())


def batch_around(base_offset: int, codec: int, payload: bytes, records: int = 1) -> bytes:
    """A v2 batch of ``records`` records whose (compressed) records section is ``payload`` as given, CRC right."""
    stamp = 1_700_000_000_000
    length = _V2_HEADER.size - 12 + len(payload)
    header = _V2_HEADER.pack(base_offset, length, 0, 2, 0, codec, records - 1, stamp, stamp, -1, -1, -1, records)
    body = header + payload
    crc = calc_crc32c(body[21:])
    return body[:17] + crc.to_bytes(4, "big") + body[21:]


def legacy_wrapper_around(offset: int, codec: int, value: bytes) -> bytes:
    """A CRC-valid magic 1 message (a compressed wrapper) whose value is ``value`` as given."""
    body = struct.pack(">bbqi", 1, codec, 1_700_000_000_000, -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def legacy_message_set(values: Sequence[bytes | None]) -> bytes:
    """Magic 1 messages with relative offsets 0, 1, ..., gzip-compressed: the value of a wrapper
    (``legacy_wrapper_around(base + len(values) - 1, GZIP, ...)``)."""
    inner = bytearray()
    for i, value in enumerate(values):
        builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
        builder.append(0, 1_700_000_000_000 + i, b"k%d" % i, value)
        message = bytearray(builder.build())
        message[0:8] = i.to_bytes(8, "big")
        inner += message
    return bytes(gzip_encode(bytes(inner)))
