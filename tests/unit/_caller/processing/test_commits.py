"""The commit policies on a ``ManualClock``: when ``IntervalCommits`` is due, what it picks (only what moved since the
last commit that succeeded), and that a success counts only for the progress it was read from."""

from __future__ import annotations

import pytest

from asyncconsumer._caller.processing.commits import IntervalCommits, NoCommits
from asyncconsumer._caller.processing.progress import METADATA_PREFIX, PartitionProgress
from asyncconsumer._clock import ManualClock
from asyncconsumer.records import OffsetAndMetadata, TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def progress_at(committed: int, received: int, finished: list[int]) -> PartitionProgress:
    progress = PartitionProgress(committed)
    progress.receive_all(list(range(committed, received)))
    for offset in finished:
        progress.complete(offset)
    return progress


def test_due_once_per_interval_from_the_start_and_never_before_it() -> None:
    clock = ManualClock(500)
    policy = IntervalCommits(1_000)
    assert policy.next_due_ms() is None and not policy.due(clock.now_ms())  # not started
    policy.start(clock.now_ms())
    assert policy.next_due_ms() == 1_500
    assert not policy.due(clock.advance(999))
    assert policy.due(clock.advance(1))
    assert not policy.due(clock.now_ms())  # once
    assert policy.next_due_ms() == 2_500
    assert policy.due(clock.advance(5_000))  # late: due once, then an interval from now
    assert policy.next_due_ms() == 7_500


def test_an_interval_below_one_millisecond_is_refused() -> None:
    with pytest.raises(ValueError, match="interval_ms"):
        IntervalCommits(0)


def test_it_picks_what_moved_since_the_last_success_and_a_failure_changes_nothing() -> None:
    policy = IntervalCommits(1_000)
    held = {TP0: progress_at(0, 4, [1, 2]), TP1: progress_at(10, 12, [10, 11])}
    batch = policy.pick(held, None)
    assert batch is not None
    assert batch.offsets == {TP0: OffsetAndMetadata(0, f"{METADATA_PREFIX}1-2"), TP1: OffsetAndMetadata(12, "")}
    assert policy.pick(held, None) == batch  # not stored yet (the commit failed, say): the same again
    policy.stored(batch, held)
    assert policy.pick(held, None) is None
    held[TP0].complete(0)
    moved = policy.pick(held, [TP0, TP1])
    assert moved is not None and moved.offsets == {TP0: OffsetAndMetadata(3, "")}
    assert policy.pick(held, [TopicPartition("t", 9)]) is None  # not held: nothing


def test_a_success_counts_only_for_the_progress_it_was_read_from() -> None:
    policy = IntervalCommits(1_000)
    held = {TP0: progress_at(0, 2, [0, 1])}
    batch = policy.pick(held, None)
    assert batch is not None
    held[TP0] = progress_at(2, 2, [])  # lost and assigned again while the commit was on its way
    policy.stored(batch, held)
    assert policy.pick(held, None) is not None


def test_forgotten_partitions_are_picked_again_in_full() -> None:
    policy = IntervalCommits(1_000)
    held = {TP0: progress_at(0, 1, [0])}
    batch = policy.pick(held, None)
    assert batch is not None
    policy.stored(batch, held)
    policy.forget([TP0])
    assert policy.pick(held, None) == batch


def test_no_commits_is_never_due_and_picks_nothing() -> None:
    policy = NoCommits()
    policy.start(0)
    assert policy.next_due_ms() is None and not policy.due(10**9)
    assert policy.pick({TP0: progress_at(0, 1, [0])}, None) is None
