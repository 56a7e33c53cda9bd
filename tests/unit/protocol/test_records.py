"""Record sets as ``protocol/records.py`` reads them: batch headers walked without decoding (the background's
``complete_batches``), and one batch prepared for the decoder (CRC, decompression within a limit, magic 0/1)."""

from __future__ import annotations

import pytest

from asyncconsumer.protocol.records import (
    BatchError,
    BatchTooLargeError,
    complete_batches,
    complete_prefix,
    iter_batches,
)
from tests.support.batches import (
    GZIP,
    ZSTD,
    batch_around,
    build_batch,
    build_control_batch,
    compressed_zeros,
    legacy_message_set,
    legacy_wrapper_around,
)


def test_complete_batches_cut_a_partial_batch_off_and_give_the_last_ones_leader_epoch() -> None:
    first = build_batch(10, [b"a", b"b"], leader_epoch=3)
    second = build_batch(12, [b"c"], leader_epoch=5)
    data = memoryview(first + second + second[:20])  # a response may end inside a batch
    assert complete_batches(data) == (len(first) + len(second), 13, 5)
    assert complete_prefix(data) == (len(first) + len(second), 13)


def test_not_even_one_complete_batch_is_nothing_and_no_offset() -> None:
    batch = build_batch(0, [b"x"])
    assert complete_batches(memoryview(batch[:-1])) == (0, None, -1)
    assert complete_prefix(memoryview(b"")) == (0, None)


def test_a_legacy_message_counts_with_its_own_offset_and_no_epoch() -> None:
    wrapper = legacy_wrapper_around(41, GZIP, legacy_message_set([b"v1", b"v2"]))
    assert complete_batches(memoryview(wrapper)) == (len(wrapper), 42, -1)


def test_iter_batches_reads_each_header_and_ignores_trailing_bytes() -> None:
    data = build_batch(0, [b"a", b"b"], leader_epoch=7) + build_control_batch(2, 99, commit=True)
    views = list(iter_batches(memoryview(data + b"\x00" * 5)))
    assert [(v.base_offset, v.next_offset, v.magic, v.leader_epoch) for v in views] == [(0, 2, 2, 7), (2, 3, 2, -1)]
    assert [(v.is_control, v.is_transactional, v.producer_id) for v in views] == [(False, False, -1), (True, True, 99)]
    assert views[1].control_type() == 1  # COMMIT


def test_an_unknown_magic_is_a_batch_error_naming_its_offset() -> None:
    batch = bytearray(build_batch(5, [b"a"]))
    batch[16] = 3  # the magic byte
    with pytest.raises(BatchError, match="unknown record batch magic 3") as raised:
        list(iter_batches(memoryview(bytes(batch))))
    assert raised.value.offset == 5


def test_plain_checks_the_crc_only_when_asked() -> None:
    batch = bytearray(build_batch(0, [b"value"]))
    batch[-1] ^= 0xFF  # a flipped bit in the last record
    (view,) = iter_batches(memoryview(bytes(batch)))
    with pytest.raises(BatchError, match="CRC check failed"):
        view.plain(check_crc=True)
    assert view.plain(check_crc=False) is view.buffer  # uncompressed: the batch itself


def test_plain_gives_a_compressed_batch_uncompressed_with_its_header() -> None:
    batch = build_batch(100, [b"v" * 1000, b"w" * 1000], compression=GZIP)
    (view,) = iter_batches(memoryview(batch))
    plain = view.plain(check_crc=True)
    (uncompressed,) = iter_batches(plain)
    assert (uncompressed.base_offset, uncompressed.next_offset) == (100, 102)
    assert len(plain) > len(batch)  # the records, no longer compressed


def test_a_batch_that_would_decompress_past_the_limit_is_refused_before_it_is() -> None:
    (view,) = iter_batches(memoryview(batch_around(7, ZSTD, compressed_zeros(ZSTD, 4), records=1)))
    with pytest.raises(BatchTooLargeError) as raised:
        view.plain(check_crc=True, max_bytes=1 << 20)
    assert (raised.value.offset, raised.value.limit) == (7, 1 << 20)


def test_legacy_messages_decode_with_their_own_offsets() -> None:
    wrapper = legacy_wrapper_around(11, GZIP, legacy_message_set([b"v1", b"v2"]))
    (view,) = iter_batches(memoryview(wrapper))
    records = view.legacy_records(check_crc=True)
    assert [(r.offset, r.key, r.value) for r in records] == [(10, b"k0", b"v1"), (11, b"k1", b"v2")]
