"""Bounded decompression: every codec round-trips what producers write, and a bomb is refused within its limit.

Memory is measured two ways: tracemalloc (what Python allocates) and the process's peak resident set (everything,
cramjam's Rust allocations included; Linux's ``/proc/self/clear_refs`` resets the peak).
"""

from __future__ import annotations

import gzip
import os
import random
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import cramjam
import pytest
from aiokafka import codec as aiokafka_codec

from asyncconsumer.protocol.codecs import (
    COMPRESSIBLE,
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    DecompressionLimitError,
    compress,
    decompress,
)
from tests.support.batches import compressed_zeros

MIB = 1 << 20
LIMIT = 16 * MIB
BOMB_MIB = {GZIP: 1024, SNAPPY: 256, LZ4: 1024, ZSTD: 1024}
"""Snappy cannot compress more than ~21:1, so its bomb is 256 MiB (12 MB compressed), the others 1 GiB."""
NAMES = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}


def _payloads() -> Iterator[bytes]:
    rng = random.Random(7)
    yield b""
    yield b"x"
    yield rng.randbytes(5_000)
    yield b"abc" * 100_000
    yield bytes(rng.getrandbits(3) for _ in range(300_000))
    yield rng.randbytes(200_000) + bytes(3 * MIB)


def _zstd_stream(data: bytes) -> bytes:
    """As Java's producer writes zstd: a streamed frame, no content size."""
    compressor = cramjam.zstd.Compressor(level=3)
    for start in range(0, len(data), 16_384):
        compressor.compress(data[start : start + 16_384])
    return bytes(compressor.finish())


def _lz4_stream(data: bytes) -> bytes:
    """As Java's producer writes lz4: independent blocks, no content size; here with a content checksum too."""
    compressor = cramjam.lz4.Compressor(level=1, content_checksum=True, block_linked=False)
    compressor.compress(data)
    return bytes(compressor.finish())


ENCODERS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "gzip": (GZIP, aiokafka_codec.gzip_encode),
    "gzip, two members and padding": (GZIP, lambda d: gzip.compress(d[:100]) + gzip.compress(d[100:]) + b"\0\0"),
    "snappy-java blocks": (SNAPPY, aiokafka_codec.snappy_encode),
    "raw snappy": (SNAPPY, lambda d: aiokafka_codec.snappy_encode(d, xerial_compatible=False)),
    "lz4 frame": (LZ4, aiokafka_codec.lz4_encode),
    "lz4 frame with a content size": (LZ4, lambda d: bytes(cramjam.lz4.compress(d))),
    "lz4 stream": (LZ4, _lz4_stream),
    "zstd frame with a content size": (ZSTD, aiokafka_codec.zstd_encode),
    "zstd stream": (ZSTD, _zstd_stream),
    "zstd, two frames": (ZSTD, lambda d: aiokafka_codec.zstd_encode(d[:100]) + _zstd_stream(d[100:])),
}


@pytest.mark.parametrize("encoder", ENCODERS)
def test_what_producers_write_decompresses_exactly_and_one_byte_less_room_is_refused(encoder: str) -> None:
    codec, encode = ENCODERS[encoder]
    for payload in _payloads():
        data = memoryview(encode(payload))
        out = decompress(codec, data, 100_000_000, head=61)
        assert len(out) == 61 + len(payload)
        assert out[61:] == payload
        if payload:
            with pytest.raises(DecompressionLimitError) as info:
                decompress(codec, data, len(payload) - 1)
            assert info.value.limit == len(payload) - 1


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, ZSTD])
def test_data_of_exactly_the_limit_fits(codec: int) -> None:
    """Exact for gzip (inflated), snappy (declared) and a zstd frame that states its size; lz4 and zstd streams
    are measured by what their blocks can hold, which may be up to one block more."""
    payload = os.urandom(1_000) * 300
    encode = {GZIP: aiokafka_codec.gzip_encode, SNAPPY: aiokafka_codec.snappy_encode, ZSTD: aiokafka_codec.zstd_encode}
    assert decompress(codec, memoryview(encode[codec](payload)), len(payload)) == payload


@contextmanager
def peak_memory() -> Iterator[dict[str, int]]:
    """Measures the peak growth of Python's allocations (``python``) and of the resident set (``rss``)."""
    clear_refs = Path("/proc/self/clear_refs")
    if not clear_refs.exists():
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak resident set")

    def rss_peak() -> int:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:"))

    seen: dict[str, int] = {}
    clear_refs.write_text("5")  # the peak resident set starts again from what is resident now
    base = rss_peak()
    tracemalloc.start()
    try:
        yield seen
        seen["python"] = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    seen["rss"] = rss_peak() - base


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=NAMES.get)
def test_a_bomb_is_refused_within_the_limit(codec: int) -> None:
    bomb = memoryview(compressed_zeros(codec, BOMB_MIB[codec]))
    with peak_memory() as peak, pytest.raises(DecompressionLimitError) as info:
        decompress(codec, bomb, LIMIT, head=61)
    assert info.value.limit == LIMIT
    assert NAMES[codec] in info.value.detail
    # Unbounded, these would take 256 MiB to 1 GiB; gzip inflates up to the limit, the others allocate nothing.
    assert peak["python"] < LIMIT + 4 * MIB, peak
    assert peak["rss"] < LIMIT + 16 * MIB, peak


def test_what_the_bombs_are() -> None:
    """The bombs above are what they say: streams of zeros of their size (checked here at 4 MiB)."""
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        assert decompress(codec, memoryview(compressed_zeros(codec, 4)), 4 * MIB) == bytes(4 * MIB)
    assert len(compressed_zeros(ZSTD, 1024)) < 64 * 1024  # 1 GiB in 32 KB: a real bomb


@pytest.mark.parametrize(
    ("codec", "data", "words"),
    [
        (SNAPPY, b"\xff\xff\xff\x0f" + bytes(20), "snappy block of 24 bytes claiming"),  # 32 MiB from 24 bytes
        (SNAPPY, b"\xff\xff\xff\xff\xff\xff", "without a readable length"),
        (LZ4, b"\x04\x22\x4d\x18\x60\x40\x82" + (70_000).to_bytes(4, "little"), "block of 70000 bytes"),
        (LZ4, b"\x04\x22\x4d\x18\x60\x40\x82" + (10).to_bytes(4, "little") + bytes(3), "cut off"),
        (ZSTD, b"\x28\xb5\x2f\xfd\x08", "reserved bit"),
        (ZSTD, b"\x28\xb5\x2f\xfd\x00\x48" + bytes([0x07, 0x00, 0x00]), "block of type 3"),
        (GZIP, aiokafka_codec.gzip_encode(b"x" * 1_000)[:-20], "ends before"),
        (7, b"", "unknown compression codec 7"),
    ],
)
def test_malformed_streams_are_value_errors_before_anything_is_allocated(codec: int, data: bytes, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        decompress(codec, memoryview(data), LIMIT)


def test_a_zstd_frame_that_understates_its_content_size_is_corrupt_not_an_overflow() -> None:
    """A frame is held to the content size it states: the output buffer has that size, so more fails."""
    frame = bytearray(aiokafka_codec.zstd_encode(b"a" * 1_000 + os.urandom(1_000)))
    assert frame[4] == 0x60  # a single segment and its 2-byte content size (stored minus 256) next
    frame[5:7] = (500 - 256).to_bytes(2, "little")
    with pytest.raises(cramjam.DecompressionError):
        decompress(ZSTD, memoryview(bytes(frame)), LIMIT)


@pytest.mark.parametrize("codec", sorted(COMPRESSIBLE))
def test_compress_round_trips_through_decompress(codec: int) -> None:
    data = b"telemetry " * 1_000
    packed = compress(codec, data)
    assert len(packed) < len(data)
    assert bytes(decompress(codec, memoryview(packed), len(data))) == data


@pytest.mark.parametrize("codec", [LZ4, SNAPPY, 0])
def test_compress_refuses_codecs_it_does_not_write(codec: int) -> None:
    with pytest.raises(ValueError, match="cannot compress"):
        compress(codec, b"x")
