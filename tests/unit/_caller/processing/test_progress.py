"""The committable offset is the end of the finished prefix, gaps are no unfinished records, and the metadata
remembers what finished past it, within its limit, so that a next owner skips exactly that."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer._caller.processing.progress import (
    METADATA_PREFIX,
    PartitionProgress,
    decode_done,
    encode_done,
)


def test_the_prefix_ends_at_the_first_record_not_finished() -> None:
    progress = PartitionProgress(committed=100)
    for offset in range(100, 106):
        assert progress.receive(offset)
    assert progress.committable == 100
    progress.complete(101)
    progress.complete(103)
    assert progress.committable == 100  # 100 is still running
    progress.complete(100)
    assert progress.committable == 102
    assert progress.metadata() == f"{METADATA_PREFIX}1"  # 103 finished past the prefix
    for offset in (102, 104, 105):
        progress.complete(offset)
    assert (progress.committable, progress.metadata(), progress.pending) == (106, "", 0)


def test_gaps_between_offsets_hold_nothing_back() -> None:
    """Compaction and transaction markers leave offsets no record has: they are not waited for."""
    progress = PartitionProgress(committed=0)
    progress.receive(5)
    assert progress.committable == 5
    progress.complete(5)
    assert progress.committable == 6
    progress.receive(9)
    progress.complete(9)
    assert progress.committable == 10


def test_a_next_owner_skips_what_the_metadata_says_finished() -> None:
    first = PartitionProgress(committed=0)
    for offset in range(10):
        first.receive(offset)
    for offset in (2, 3, 4, 7):
        first.complete(offset)
    committed, metadata = first.committable, first.metadata()
    assert (committed, metadata) == (0, f"{METADATA_PREFIX}2-4,7")

    second = PartitionProgress(committed, metadata)
    handled = [offset for offset in range(10) if second.receive(offset)]
    assert handled == [0, 1, 5, 6, 8, 9]
    for offset in handled:
        second.complete(offset)
    assert second.committable == 10


def test_what_a_previous_owner_finished_stays_in_the_metadata_until_the_prefix_passes_it() -> None:
    progress = PartitionProgress(10, f"{METADATA_PREFIX}5")  # 15 finished, nothing received yet
    assert progress.metadata() == f"{METADATA_PREFIX}5"
    progress.receive(10)
    progress.complete(10)
    assert progress.metadata() == f"{METADATA_PREFIX}4"  # relative to the new committable, 11


@pytest.mark.parametrize(
    "metadata", ["", "user metadata", f"{METADATA_PREFIX}x", f"{METADATA_PREFIX}3-1", f"{METADATA_PREFIX}0"]
)
def test_metadata_that_is_not_ours_or_not_well_formed_skips_nothing(metadata: str) -> None:
    assert decode_done(7, metadata) == frozenset()


def test_the_metadata_keeps_within_its_limit_by_dropping_the_highest_ranges() -> None:
    done = range(2, 20_000, 2)  # every other offset: one range each
    text = encode_done(0, done, limit=100)
    assert len(text) <= 100
    kept = decode_done(0, text)
    assert kept and kept == set(sorted(done)[: len(kept)])  # the lowest ones: the next owner's duplicates are the rest


def test_records_must_arrive_in_offset_order_and_finish_once() -> None:
    progress = PartitionProgress(0)
    progress.receive(3)
    with pytest.raises(ValueError, match="offset order"):
        progress.receive(3)
    progress.complete(3)
    with pytest.raises(ValueError, match="not awaiting"):
        progress.complete(3)


def test_offsets_appended_to_finished_are_folded_in_checked_at_the_next_read() -> None:
    progress = PartitionProgress(0)
    progress.receive_all(list(range(6)))
    progress.finished.extend([1, 0, 4])
    assert progress.pending == 6  # nothing folded yet: a read from another thread changes nothing
    assert (progress.committable, progress.metadata(), progress.pending) == (2, f"{METADATA_PREFIX}2", 4)
    progress.finished.extend([2, 2])
    with pytest.raises(ValueError, match="offset 2 was not awaiting"):
        progress.fold()
    progress.finished.append(9)  # never received
    with pytest.raises(ValueError, match="offset 9 was not awaiting"):
        progress.fold()
    progress.finished.extend([2, 3, 5])
    assert (progress.committable, progress.pending) == (6, 0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=60),
    st.randoms(use_true_random=False),
    st.integers(min_value=0, max_value=60),
)
def test_a_crash_at_any_point_loses_nothing_and_repeats_only_the_unfinished(
    gaps: list[int], rng: random.Random, crash_after: int
) -> None:
    """Records finish in random order; at the crash the committable offset and metadata are committed. The next
    owner handles exactly the records the first one had not finished: nothing lost, nothing finished twice."""
    offsets = []
    offset = 0
    for gap in gaps:
        offset += gap
        offsets.append(offset)
    first = PartitionProgress(committed=0)
    for o in offsets:
        first.receive(o)
    order = offsets[:]
    rng.shuffle(order)
    finished = set(order[:crash_after])
    for o in order[:crash_after]:
        first.complete(o)
    committed = first.committable
    second = PartitionProgress(committed, first.metadata(limit=10_000))
    handled_again = {o for o in offsets if o >= committed and second.receive(o)}  # it fetches from `committed`
    assert handled_again == set(offsets) - finished


def test_receive_all_checks_the_order_like_receive() -> None:
    progress = PartitionProgress(0)
    assert progress.receive_all([2, 3]) is None
    with pytest.raises(ValueError, match="offset order"):
        progress.receive_all([3, 4])
    with pytest.raises(ValueError, match="offset order"):
        progress.receive_all([9, 5])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=8), min_size=1, max_size=10),
    st.randoms(use_true_random=False),
    st.sets(st.integers(min_value=1, max_value=40), max_size=10),
)
def test_receive_all_by_batches_is_receive_one_by_one(
    batches: list[list[int]], rng: random.Random, finished_before: set[int]
) -> None:
    """What the engine does per fetched batch ends where per-record ``receive`` ends: the same records to handle,
    and, as they finish in any order, the same committable offset and metadata after each."""
    metadata = encode_done(0, finished_before)
    one, many = PartitionProgress(0, metadata), PartitionProgress(0, metadata)
    offset = 0
    to_handle: list[int] = []
    for gaps in batches:
        batch = []
        for gap in gaps:
            offset += gap
            batch.append(offset)
        by_one = [o for o in batch if one.receive(o)]
        chosen = many.receive_all(batch)
        assert (batch if chosen is None else chosen) == by_one
        to_handle += by_one
    rng.shuffle(to_handle)
    for o in to_handle:
        one.complete(o)
        many.complete(o)
        assert (one.committable, one.metadata(), one.pending) == (many.committable, many.metadata(), many.pending)
    assert one.committable == offset + 1
