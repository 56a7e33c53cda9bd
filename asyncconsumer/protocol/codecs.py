"""Bounded decompression of record data: a batch never decompresses past a limit, whatever its stream claims.

A compressed stream is measured before its output is allocated, from what the format itself states:

* snappy (raw, or snappy-java's blocks): every block starts with its decompressed length; the sum is exact (a
  block that claims more than 22 times its own size is corrupt: no snappy copy expands further);
* lz4 frames: a stored block holds its own size; a compressed one at most the frame's block maximum (64 KiB to
  4 MiB) and at most 255 times its compressed size (no LZ4 sequence expands more);
* zstd frames: a raw or RLE block holds its stated size; a compressed one at most the format's block maximum
  (the window, and never more than 128 KiB);
* in lz4 and zstd, a frame that states its content size is held to it.

When that measure is within the limit, the output buffer is allocated at that size and cramjam decompresses into it
(it cannot write past the buffer: a stream that lies about its sizes fails there, as corrupt); when it is not,
nothing is decompressed. gzip states no size that can be trusted: zlib inflates it a chunk at a time and stops one
byte past the limit, into a buffer sized by the size its trailer states when that is plausible. So memory stays
within the limit plus a chunk, and a bomb costs little more than reading its
headers (a 1 GiB zstd bomb is refused after reading 129 block headers at a 16 MiB limit).
"""

from __future__ import annotations

import struct
import zlib

import cramjam

__all__ = ["COMPRESSIBLE", "GZIP", "LZ4", "SNAPPY", "ZSTD", "DecompressionLimitError", "compress", "decompress"]

GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
"""Kafka's codec numbers, in a v2 batch's attributes and a legacy message's alike."""

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_SKIPPABLE_FIRST = 0x184D2A50
"""Skippable frames (magic 0x184D2A50 to 0x184D2A5F, then a 32-bit size) are shared by lz4 and zstd."""
_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_LZ4_MAX_RATIO = 255
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 << 10
_SNAPPY_MAX_RATIO = 22
"""A snappy copy of up to 64 bytes takes 3 bytes at least: no block decompresses to more than 64/3 its size."""
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16
_GZIP_CHUNK = 1 << 20
_GZIP_PIECE = 256 << 10
_GZIP_MIN = 18
"""A gzip member's header and trailer."""
_DEFLATE_MAX_RATIO = 1032


class DecompressionLimitError(Exception):
    """The data would decompress to more than ``limit`` bytes; ``detail`` says what its stream states."""

    def __init__(self, limit: int, detail: str) -> None:
        super().__init__(f"more than {limit} bytes: {detail}")
        self.limit = limit
        self.detail = detail


COMPRESSIBLE = frozenset({GZIP, ZSTD})
"""The codecs ``compress`` writes: standard gzip and zstd frames, which every Kafka reads as written. (Kafka's lz4
and snappy streams have framing quirks of their own; the consumer never needed to write them.)"""


def compress(codec: int, data: bytes) -> bytes:
    """``data`` as one gzip member or one zstd frame (for a KIP-714 telemetry payload); ``ValueError`` otherwise."""
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"cannot compress with codec {codec}")


def decompress(codec: int, data: memoryview, limit: int, head: int = 0) -> memoryview:
    """``data`` decompressed, after ``head`` bytes left for the caller to fill (a batch header), in one new buffer.

    Raises ``DecompressionLimitError`` when the output would exceed ``limit`` bytes, before allocating it where the
    format allows; ``ValueError`` (or the codec's own error) for malformed data.
    """
    if codec == GZIP:
        return _gunzip(data, limit, head)
    if codec == SNAPPY:
        return _unsnappy(data, limit, head)
    if codec == LZ4:
        measure, into = _lz4_bound, cramjam.lz4.decompress_into
    elif codec == ZSTD:
        measure, into = _zstd_bound, cramjam.zstd.decompress_into
    else:
        raise ValueError(f"unknown compression codec {codec}")
    try:
        size = measure(data, limit)
    except (struct.error, IndexError) as exc:
        raise ValueError(f"{'lz4' if codec == LZ4 else 'zstd'} frame cut off") from exc
    out = memoryview(bytearray(head + size))
    return out[: head + into(data, out[head:])]


def _gunzip(data: memoryview, limit: int, head: int) -> memoryview:
    """gzip members one after another, zero padding between and after them allowed (as Python's gzip allows).

    The input goes to zlib a piece at a time and comes out a chunk at a time: zlib copies the input it has not used
    yet on every call, so whole-input calls would copy a large batch over and over. The output buffer is first
    sized by what the last member's trailer states, when that is plausible (within the limit, and within
    deflate's 1032:1), so a producer's single member is inflated into it with no copy more.
    """
    stated = int(_U32.unpack_from(data, len(data) - 4)[0]) if len(data) >= _GZIP_MIN else 0
    out = bytearray(head + min(stated, limit, _DEFLATE_MAX_RATIO * len(data)))
    at = head
    inflate: zlib._Decompress | None = None
    members = 0
    start = 0
    pending: bytes | memoryview = b""
    while True:
        if not pending:
            if start >= len(data):
                break
            pending = data[start : start + _GZIP_PIECE]
            start += len(pending)
        if inflate is None:
            pending = bytes(pending).lstrip(b"\0")  # zero padding before the next member, if any
            if not pending:
                continue
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            members += 1
        chunk = inflate.decompress(pending, _GZIP_CHUNK)
        at = _put(out, at, chunk, head, limit)
        if inflate.eof:
            pending, inflate = inflate.unused_data, None
        else:
            pending = inflate.unconsumed_tail
    if inflate is not None:
        at = _put(out, at, inflate.flush(), head, limit)  # a match cut short by the chunk's end: a few bytes
        if not inflate.eof:
            raise ValueError("gzip data ends before its last member does")
    if not members:
        raise ValueError("no gzip member")
    del out[at:]
    return memoryview(out)


def _put(out: bytearray, at: int, chunk: bytes, head: int, limit: int) -> int:
    """Writes ``chunk`` at ``at`` (growing ``out`` past its first size if need be); returns where it ends."""
    end = at + len(chunk)
    if end - head > limit:
        raise DecompressionLimitError(limit, f"gzip data inflated past {limit} bytes before its end")
    if end > len(out):
        del out[at:]
        out += chunk
    else:
        out[at:end] = chunk
    return end


def _snappy_length(data: memoryview, pos: int, end: int) -> int:
    """The decompressed length a raw snappy block starts with (a little-endian base-128 number of at most 5
    bytes); ``ValueError`` if unreadable or more than the block can hold."""
    value = 0
    for shift in range(0, 35, 7):
        if pos + shift // 7 >= end:
            break
        byte = data[pos + shift // 7]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value > _SNAPPY_MAX_RATIO * (end - pos):
                raise ValueError(f"snappy block of {end - pos} bytes claiming {value}")
            return value
    raise ValueError("snappy block without a readable length")


def _unsnappy(data: memoryview, limit: int, head: int) -> memoryview:
    blocks: list[tuple[int, int, int]] = []
    """(start, end, decompressed length) of each raw snappy block."""
    total = 0
    end = len(data)
    if end >= _XERIAL_HEADER and data[: len(_XERIAL_MAGIC)] == _XERIAL_MAGIC:
        pos = _XERIAL_HEADER
        while pos < end:
            if pos + 4 > end:
                raise ValueError("snappy-java block size cut off")
            stop = pos + 4 + int.from_bytes(data[pos : pos + 4], "big")
            pos += 4
            if stop > end:
                raise ValueError("snappy-java block longer than the data")
            length = _snappy_length(data, pos, stop)
            total += length
            if total > limit:
                raise DecompressionLimitError(limit, f"snappy blocks declaring {total} bytes and more")
            blocks.append((pos, stop, length))
            pos = stop
    else:
        total = _snappy_length(data, 0, end)
        if total > limit:
            raise DecompressionLimitError(limit, f"a snappy block declaring {total} bytes")
        blocks.append((0, end, total))
    out = memoryview(bytearray(head + total))
    at = head
    for start, stop, length in blocks:
        if cramjam.snappy.decompress_raw_into(data[start:stop], out[at : at + length]) != length:
            raise ValueError("snappy block shorter than it declares")
        at += length
    return out


def _skippable(data: memoryview, pos: int, magic: int) -> int | None:
    """The position after a skippable frame at ``pos``, or None if ``magic`` is not one's."""
    if _SKIPPABLE_FIRST <= magic <= _SKIPPABLE_FIRST + 15:
        return pos + 8 + int(_U32.unpack_from(data, pos + 4)[0])
    return None


def _lz4_bound(data: memoryview, limit: int) -> int:
    """The most the lz4 frames in ``data`` can decompress to (see the module docstring)."""
    pos = total = 0
    end = len(data)
    while pos < end:
        magic = _U32.unpack_from(data, pos)[0]
        skipped = _skippable(data, pos, magic)
        if skipped is not None:
            pos = skipped
            continue
        if magic != _LZ4_MAGIC:
            raise ValueError(f"not an lz4 frame (magic {magic:#x})")
        flags, descriptor = data[pos + 4], data[pos + 5]
        block_max = _LZ4_BLOCK_MAX.get(descriptor >> 4 & 7)
        if flags >> 6 != 1 or block_max is None:
            raise ValueError(f"unsupported lz4 frame descriptor {flags:#x} {descriptor:#x}")
        pos += 6
        content: int | None = None
        if flags & 0x08:
            content = int(_U64.unpack_from(data, pos)[0])
            pos += 8
        pos += (4 if flags & 0x01 else 0) + 1  # dictionary id, header checksum
        block_checksum = 4 if flags & 0x10 else 0
        frame = 0
        while True:
            word = int(_U32.unpack_from(data, pos)[0])
            pos += 4
            if not word:
                break
            size = word & 0x7FFFFFFF
            if size > block_max:
                raise ValueError(f"lz4 block of {size} bytes in a frame of {block_max}-byte blocks")
            frame += size if word & 0x80000000 else min(block_max, size * _LZ4_MAX_RATIO)
            held = frame if content is None else min(frame, content)
            if total + held > limit:
                raise DecompressionLimitError(limit, f"lz4 blocks that may hold {total + held} bytes and more")
            pos += size + block_checksum
        pos += 4 if flags & 0x04 else 0  # content checksum
        total += frame if content is None else min(frame, content)
    if pos > end:
        raise ValueError("lz4 frame cut off")
    return total


def _zstd_bound(data: memoryview, limit: int) -> int:
    """The most the zstd frames in ``data`` can decompress to (see the module docstring)."""
    pos = total = 0
    end = len(data)
    while pos < end:
        magic = _U32.unpack_from(data, pos)[0]
        skipped = _skippable(data, pos, magic)
        if skipped is not None:
            pos = skipped
            continue
        if magic != _ZSTD_MAGIC:
            raise ValueError(f"not a zstd frame (magic {magic:#x})")
        descriptor = data[pos + 4]
        pos += 5
        if descriptor & 0x08:
            raise ValueError("zstd frame with its reserved bit set")
        single_segment = descriptor & 0x20
        window = 0
        if not single_segment:
            exponent, mantissa = data[pos] >> 3, data[pos] & 7
            base = 1 << (10 + exponent)
            window = base + (base >> 3) * mantissa
            pos += 1
        pos += (0, 1, 2, 4)[descriptor & 3]  # dictionary id
        size_bytes = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        content: int | None = None
        if size_bytes:
            if pos + size_bytes > end:
                raise ValueError("zstd frame header cut off")
            content = int.from_bytes(data[pos : pos + size_bytes], "little") + (256 if size_bytes == 2 else 0)
            pos += size_bytes
        block_max = min(content if single_segment and content is not None else window, _ZSTD_BLOCK_MAX)
        frame = 0
        while True:
            if pos + 3 > end:
                raise ValueError("zstd block header cut off")
            header = int.from_bytes(data[pos : pos + 3], "little")
            pos += 3
            kind, size = header >> 1 & 3, header >> 3
            if kind == 3 or (kind == 2 and size > _ZSTD_BLOCK_MAX):
                raise ValueError(f"zstd block of type {kind} and {size} bytes")
            frame += block_max if kind == 2 else size
            pos += 1 if kind == 1 else size
            held = frame if content is None else min(frame, content)
            if total + held > limit:
                raise DecompressionLimitError(limit, f"zstd blocks that may hold {total + held} bytes and more")
            if header & 1:
                break
        pos += 4 if descriptor & 0x04 else 0  # content checksum
        total += held
    if pos > end:
        raise ValueError("zstd frame cut off")
    return total
