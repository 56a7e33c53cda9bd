"""The C extension's CRC-32C (``_crc32c.c`` behind ``_v2records_c.crc32c``): both its implementations, the CPU's
crc32 instruction and the portable tables, give google-crc32c's results on any bytes at any alignment, chain like
``zlib.crc32``, and are what ``RecordBatchView`` checks v2 batches with when the extension is built."""

from __future__ import annotations

import functools
import platform
import re
import struct
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import google_crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol import records as records_module
from asyncconsumer.protocol.records import iter_batches
from tests.support.batches import build_batch
from tests.support.gil import exported, run_beside

compiled: ModuleType | None
try:
    from asyncconsumer.protocol import _v2records_c as compiled
except ImportError:
    compiled = None

pytestmark = pytest.mark.skipif(
    compiled is None, reason="the C extension is not built (test_v2records.test_compiled_decoder_in_use)"
)


def _implementations() -> list[Callable[..., int]]:
    assert compiled is not None
    return [compiled.crc32c, compiled.crc32c_software]


def test_known_answer() -> None:
    # RFC 3720 (iSCSI) B.4 and the usual check value of "123456789".
    for crc in _implementations():
        assert crc(b"123456789") == 0xE3069283
        assert crc(bytes(32)) == 0x8A9136AA
        assert crc(b"\xff" * 32) == 0x62A8AB43
        assert crc(bytes(range(32))) == 0x46DD794E
        assert crc(b"") == 0


def test_the_cpu_instruction_is_used_where_there_is_one() -> None:
    assert compiled is not None
    cpuinfo = Path("/proc/cpuinfo")
    if platform.machine() != "x86_64" or not cpuinfo.exists():
        pytest.skip("checked on Linux x86-64 (elsewhere: the portable tables, unless the build targets SSE4.2)")
    expected = "sse4.2" if " sse4_2" in cpuinfo.read_text() else "software"
    assert expected == compiled.CRC32C_IMPLEMENTATION


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # 200 kB inputs on a busy box
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.integers(0, 200_000).flatmap(lambda n: st.randoms(use_true_random=False).map(lambda r: r.randbytes(n))),
    ),
    misalign=st.integers(0, 15),
    split=st.floats(0, 1),
)
def test_same_as_google_crc32c(data: bytes, misalign: int, split: float) -> None:
    """Any length up to 200 kB (past every interleaved block size), starting at any alignment, whole or chained."""
    expected = google_crc32c.value(data)
    view = memoryview(bytes(misalign) + data)[misalign:]
    cut = int(len(data) * split)
    for crc in _implementations():
        assert crc(view) == expected
        assert crc(view[cut:], crc(view[:cut])) == expected
        assert crc(bytearray(data)) == expected


@given(st.integers(0, 0xFFFF_FFFF), st.binary(max_size=100))
def test_continues_from_any_value(value: int, data: bytes) -> None:
    for crc in _implementations():
        assert crc(data, value) == google_crc32c.extend(value, data)


def test_bad_arguments() -> None:
    """Each refused with a TypeError or ValueError naming the argument."""
    for crc in _implementations():
        name = crc.__name__
        data = f"{name}() argument 'data' must be a C-contiguous bytes-like object"
        value = f"{name}() argument 'value' must be"
        with pytest.raises(TypeError, match=rf"^{re.escape(data)}, not str$"):
            crc("text")
        with pytest.raises(TypeError, match=rf"^{re.escape(data)}, not memoryview$"):
            crc(memoryview(b"abcdef")[::2])  # a view of non-contiguous memory
        with pytest.raises(TypeError, match="takes 1 or 2 positional arguments"):
            crc()
        with pytest.raises(TypeError, match="takes 1 or 2 positional arguments"):
            crc(b"", 0, 0)
        with pytest.raises(TypeError, match=rf"^{re.escape(value)} int, not float$"):
            crc(b"", 1.0)
        with pytest.raises(
            ValueError, match=rf"^{re.escape(value)} a 32-bit CRC \(from 0 to 4294967295\), not 4294967296$"
        ):
            crc(b"", 1 << 32)
        with pytest.raises(ValueError, match=rf"^{re.escape(value)} a 32-bit CRC \(from 0 to 4294967295\), not -1$"):
            crc(b"", -1)
        assert crc(b"", 0xFFFF_FFFF) == 0xFFFF_FFFF


def test_a_large_buffer_is_read_with_the_gil_released() -> None:
    """Over a buffer past 64 KiB another thread runs Python code meanwhile; the results stay right."""
    data = bytearray(bytes(range(256)) * (16 << 12))  # 16 MiB
    expected = google_crc32c.value(bytes(data))
    for crc in _implementations():
        results, ran_during = run_beside(functools.partial(crc, data), exported(data))
        assert ran_during > 0, f"{crc.__name__}: no other thread ran during {len(results)} calls"
        assert results == [expected] * len(results)


def test_a_small_buffer_keeps_the_gil() -> None:
    """Below 64 KiB giving the GIL away would cost more than the CRC: no other thread runs during the call."""
    assert compiled is not None
    crc32c = compiled.crc32c
    data = bytearray(65_535)
    results, ran_during = run_beside(lambda: crc32c(data), exported(data), attempts=50)
    assert (ran_during, len(results)) == (0, 50)


def test_batches_are_checked_by_the_compiled_crc() -> None:
    assert compiled is not None
    good = build_batch(5, [b"hello", b"world"] * 100)
    assert compiled.crc32c(memoryview(good)[21:]) == struct.unpack_from(">I", good, 17)[0]
    assert records_module._crc32c is compiled.crc32c
    [batch] = iter_batches(memoryview(good))
    assert batch._crc_ok()
    bad = bytearray(good)
    bad[-1] ^= 1
    [batch] = iter_batches(memoryview(bad))
    assert not batch._crc_ok()
