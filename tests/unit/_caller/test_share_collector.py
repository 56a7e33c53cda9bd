"""The caller's side of a share consumer's record path (``_caller/share_collector.py``): only acquired offsets become
``ShareRecord``s, each with its range's delivery count; acquired offsets without a record are gaps; what cannot be
decoded or deserialized is released with an error; ``max_records`` holds the rest for the next poll; ``drop_all``
names everything acquired and never returned."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from asyncconsumer._caller.share_collector import ShareCollector
from asyncconsumer._state.fetch_buffer import CompletedFetch
from asyncconsumer._state.share_fetch_buffer import ShareFetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.snapshot import ShareDemand
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import CorruptRecordError, RecordDeserializationError
from asyncconsumer.protocol.messages.share_fetch import AcquiredRecords
from asyncconsumer.records import ShareRecord, TopicPartition
from tests.support.batches import GZIP, build_batch, build_control_batch, legacy_message_set, legacy_wrapper_around

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def collector(**config: Any) -> tuple[ShareCollector, ShareFetchBuffer]:
    buffer = ShareFetchBuffer(1 << 20, CallerSignal())
    return ShareCollector(ConsumerConfig.from_kwargs("h:1", **config), buffer), buffer


def add(buffer: ShareFetchBuffer, records: bytes, *acquired: tuple[int, int, int], tp: TopicPartition = T0) -> None:
    ranges = tuple(AcquiredRecords(first, last, count) for first, last, count in acquired)
    first, last = ranges[0].first_offset, ranges[-1].last_offset
    buffer.add_all([CompletedFetch(tp, 0, first, last + 1, memoryview(records), -1, acquired=ranges)])
    buffer.deliver()


def offsets(records: list[ShareRecord]) -> list[tuple[int, int]]:
    """(offset, delivery count) of each record."""
    return [(r.offset, r.delivery_count) for r in records]


def values(n: int) -> list[bytes | None]:
    return [b"v%d" % i for i in range(n)]


def test_only_acquired_offsets_are_delivered_each_with_its_ranges_delivery_count() -> None:
    c, buffer = collector()
    add(buffer, build_batch(0, values(6)), (1, 2, 1), (4, 5, 3))
    out = c.collect(100)
    assert offsets(out[T0]) == [(1, 1), (2, 1), (4, 3), (5, 3)]
    assert [r.value for r in out[T0]] == [b"v1", b"v2", b"v4", b"v5"]
    assert out[T0][0][:3] == ("t", 0, 1) and isinstance(out[T0][0], ShareRecord)
    assert c.gaps == {} and c.released == {} and c.errors == []
    assert buffer.buffered_bytes == 0  # decoded and released at once
    assert c.records_returned == 4


def test_a_batch_that_starts_before_and_ends_after_the_acquired_range_gives_only_the_range() -> None:
    c, buffer = collector()
    add(buffer, build_batch(0, values(4)) + build_batch(4, values(6)), (3, 6, 2))
    assert offsets(c.collect(100)[T0]) == [(3, 2), (4, 2), (5, 2), (6, 2)]


def test_acquired_offsets_without_a_record_are_gaps() -> None:
    c, buffer = collector()
    records = build_batch(0, values(2), transactional=True, producer_id=7) + build_control_batch(2, 7, commit=True)
    add(buffer, records + build_batch(5, values(1)), (0, 2, 1), (4, 5, 1))
    out = c.collect(100)
    assert offsets(out[T0]) == [(0, 1), (1, 1), (5, 1)]
    assert c.gaps == {T0: [2, 4]}  # the transaction's marker, and an offset compacted away


def test_max_records_holds_the_rest_for_the_next_collect() -> None:
    c, buffer = collector()
    add(buffer, build_batch(0, values(5)), (0, 4, 1))
    add(buffer, build_batch(0, values(2)), (0, 1, 1), tp=T1)
    first = c.collect(3)
    assert {tp: [r.offset for r in rs] for tp, rs in first.items()} == {T0: [0, 1, 2]}
    assert c.held == 4  # everything buffered was decoded at once, so the buffer is empty for the fetch ahead
    assert buffer.buffered_bytes == 0
    second = c.collect(3)
    assert {tp: [r.offset for r in rs] for tp, rs in second.items()} == {T0: [3, 4], T1: [0]}
    assert c.held == 1 and c.records_returned == 6
    assert c.collect(0) == {}
    assert {tp: [r.offset for r in rs] for tp, rs in c.collect(3).items()} == {T1: [1]}


def test_a_corrupt_batch_releases_what_it_held_and_reports_the_error_once() -> None:
    c, buffer = collector()
    bad = bytearray(build_batch(2, [b"x", b"y"]))
    bad[-1] ^= 0xFF  # the CRC no longer matches
    add(buffer, build_batch(0, values(2)) + bytes(bad) + build_batch(4, values(1)), (0, 4, 1))
    out = c.collect(100)
    assert offsets(out[T0]) == [(0, 1), (1, 1)]  # what came before it is delivered
    assert c.released == {T0: [2, 3, 4]}
    (error,) = c.errors
    assert isinstance(error, CorruptRecordError) and "CRC" in str(error)
    assert c.gaps == {}  # released offsets are not gaps too


def test_a_legacy_message_set_is_refused_and_released() -> None:
    c, buffer = collector()
    add(buffer, legacy_wrapper_around(1, GZIP, legacy_message_set([b"a", b"b"])), (0, 1, 1))
    assert c.collect(100) == {}
    assert c.released == {T0: [0, 1]}
    assert c.gaps == {}  # offset 0 holds a record: acknowledged as a gap, the broker would never deliver it
    assert isinstance(c.errors[0], CorruptRecordError) and "share consumers" in str(c.errors[0])


def test_a_record_that_cannot_be_deserialized_is_released_and_the_others_delivered() -> None:
    def strict(value: bytes | None) -> str:
        if value == b"bad":
            raise ValueError("not text")
        return (value or b"").decode()

    c, buffer = collector(value_deserializer=strict)
    add(buffer, build_batch(0, [b"a", b"bad", b"c"]), (0, 2, 2))
    out = c.collect(100)
    assert [(r.offset, r.value, r.delivery_count) for r in out[T0]] == [(0, "a", 2), (2, "c", 2)]
    assert c.released == {T0: [1]} and c.gaps == {}
    (error,) = c.errors
    assert isinstance(error, RecordDeserializationError) and isinstance(error.__cause__, ValueError)


def test_keys_are_deserialized_too() -> None:
    c, buffer = collector(key_deserializer=lambda k: None if k is None else k.decode().upper())
    add(buffer, build_batch(0, [b"v"], keys=[b"k"]), (0, 0, 1))
    (record,) = c.collect(100)[T0]
    assert (record.key, record.value) == ("K", b"v")


def test_drop_all_names_records_decoded_and_never_returned_and_fetches_never_decoded() -> None:
    c, buffer = collector()
    add(buffer, build_batch(0, values(4)), (0, 3, 1))
    add(buffer, build_batch(10, values(3)), (10, 10, 1), (12, 12, 1), tp=T1)
    c.collect(1)
    assert c.drop_all() == {T0: [1, 2, 3], T1: [10, 12]}
    assert c.held == 0 and len(buffer) == 0 and buffer.buffered_bytes == 0
    assert c.collect(10) == {}


@pytest.mark.parametrize("pause_gc", [True, False])
def test_collect_works_whether_or_not_gc_is_paused(pause_gc: bool) -> None:
    c, buffer = collector(pause_gc_during_poll=pause_gc)
    add(buffer, build_batch(0, values(1)), (0, 0, 1))
    assert offsets(c.collect(10)[T0]) == [(0, 1)]
    assert gc.isenabled()


def test_the_background_hears_of_held_records_before_the_release_wakes_it() -> None:
    """Releasing a decoded fetch's bytes wakes a waiting background; by then ``held`` says what is left, or it
    would fetch for a caller that has records yet."""
    buffer = ShareFetchBuffer(1 << 20, CallerSignal())
    demand = ShareDemand()
    c = ShareCollector(ConsumerConfig.from_kwargs("h:1"), buffer, demand)
    add(buffer, build_batch(0, values(6)), (0, 5, 1))
    assert not buffer.empty_or_wait()  # the background waits for the caller to take what is buffered
    heard: list[int] = []
    buffer.set_space_waiter(lambda: heard.append(demand.held))
    assert len(c.collect(2)[T0]) == 2
    assert heard == [6] and demand.held == 4  # decoded whole, then two taken
    assert len(c.collect(10)[T0]) == 4
    assert demand.held == 0
