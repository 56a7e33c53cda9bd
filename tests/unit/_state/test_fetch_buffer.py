"""The fetch buffer's adaptive limit: it starts at half the bound and grows only when the caller keeps running the
buffer dry while the background is held back by the limit."""

from __future__ import annotations

from asyncconsumer._state.fetch_buffer import AUTO_MAX_BYTES, GROW_AFTER_DRY_POLLS, CompletedFetch, FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.records import TopicPartition
from tests.support.fetch_buffer import held_back

TP = TopicPartition("t", 0)
MIB = 1 << 20


def test_the_limit_starts_where_asked_and_room_is_bounded_by_it() -> None:
    buffer = FetchBuffer(8 * MIB, CallerSignal(), 4 * MIB)
    assert buffer.limit == 4 * MIB
    assert buffer.room(floor=1) == 4 * MIB
    assert FetchBuffer(8 * MIB, CallerSignal()).limit == 8 * MIB  # no initial limit: the bound
    assert FetchBuffer(1, CallerSignal(), 0).limit == 1  # never below one byte


def test_dry_polls_with_the_background_held_back_double_the_limit_up_to_the_bound() -> None:
    buffer = FetchBuffer(8 * MIB, CallerSignal(), 3 * MIB)
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    for _ in range(GROW_AFTER_DRY_POLLS - 1):
        held_back(buffer)
        buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 3 * MIB
    buffer.reserve(buffer.limit)
    assert buffer.room(floor=1) == 0  # the background now waits for room
    buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 6 * MIB
    assert woken == [True]  # the grown limit is room: the waiting background is woken
    assert buffer.room(floor=1) == 3 * MIB
    buffer.unreserve(3 * MIB)
    for _ in range(GROW_AFTER_DRY_POLLS):
        held_back(buffer)
        buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 8 * MIB  # capped at the bound
    for _ in range(GROW_AFTER_DRY_POLLS):
        held_back(buffer)
        buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 8 * MIB


def test_polls_that_are_not_dry_between_dry_ones_do_not_break_the_run() -> None:
    """A poll may take one whole response and part of the next: it is full, and the next one is dry."""
    buffer = FetchBuffer(8 * MIB, CallerSignal(), 4 * MIB)
    for _ in range(GROW_AFTER_DRY_POLLS):
        held_back(buffer)
        buffer.poll_done(returned=10, ran_dry=False)
        buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 8 * MIB


def test_the_limit_stays_when_only_one_side_waits() -> None:
    buffer = FetchBuffer(8 * MIB, CallerSignal(), 4 * MIB)
    # The caller runs dry but the background was never held back: the broker or the network is the limit.
    for _ in range(10 * GROW_AFTER_DRY_POLLS):
        buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 4 * MIB
    # The background is held back but every poll gets all it asked for: the caller is the limit.
    for _ in range(10 * GROW_AFTER_DRY_POLLS):
        held_back(buffer)
        buffer.poll_done(returned=10, ran_dry=False)
    assert buffer.limit == 4 * MIB
    # Polls that returned nothing (waiting for data) count for neither.
    for _ in range(10 * GROW_AFTER_DRY_POLLS):
        held_back(buffer)
        buffer.poll_done(returned=0, ran_dry=True)
    assert buffer.limit == 4 * MIB


def test_a_dry_poll_without_the_background_held_back_restarts_the_count() -> None:
    buffer = FetchBuffer(8 * MIB, CallerSignal(), 4 * MIB)
    for _ in range(GROW_AFTER_DRY_POLLS - 1):
        held_back(buffer)
        buffer.poll_done(returned=10, ran_dry=True)
    buffer.poll_done(returned=10, ran_dry=True)  # the background kept up this time
    for _ in range(GROW_AFTER_DRY_POLLS - 1):
        held_back(buffer)
        buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 4 * MIB
    held_back(buffer)
    buffer.poll_done(returned=10, ran_dry=True)
    assert buffer.limit == 8 * MIB


def test_added_fetches_reach_the_caller_only_when_delivered_and_wake_it_then() -> None:
    signal = CallerSignal()
    buffer = FetchBuffer(8 * MIB, signal)
    fetch = CompletedFetch(TopicPartition("t", 0), 0, 0, 1, memoryview(b"x"), 1)
    seen = signal.seq
    buffer.add_all([fetch])
    assert buffer.buffered_bytes == 1  # counted at once: the background fetches within the limit
    assert buffer.take() is None and signal.seq == seen  # but not the caller's until the loop delivers it
    assert buffer.deliver()
    assert signal.seq != seen
    assert buffer.take() is fetch
    assert not buffer.deliver()  # nothing staged: no wake-up


def test_a_buffer_sized_to_its_assignment_follows_the_partitions_and_a_fixed_one_does_not() -> None:
    # fetch_buffer_bytes=None: 8 MiB up to 128 partitions, 64 KiB a partition above, up to 64 MiB
    auto = FetchBuffer.starting_at_half(None, CallerSignal())
    assert (auto.limit, auto.bound) == (4 << 20, 8 << 20)  # before any assignment: the old default's
    auto.fit_partitions(4)
    assert (auto.limit, auto.bound) == (4 << 20, 8 << 20)
    auto.fit_partitions(1_024)
    assert (auto.limit, auto.bound) == (32 << 20, 64 << 20)  # the limit starts at half the new bound
    auto.fit_partitions(4_096)
    assert auto.bound == AUTO_MAX_BYTES == 64 << 20
    auto.fit_partitions(256)
    assert (auto.limit, auto.bound) == (16 << 20, 16 << 20)  # fewer partitions: at most the smaller bound
    fixed = FetchBuffer.starting_at_half(8 << 20, CallerSignal())
    fixed.fit_partitions(1_024)
    assert (fixed.limit, fixed.bound) == (4 << 20, 8 << 20)  # the user's budget holds


def test_a_refused_background_is_woken_once_a_release_frees_the_room_it_asked_for_not_at_every_part() -> None:
    """With thousands of partitions a response is released part by part: a wake per part had the background walk
    every partition each time (poll_arrow at 4,096 partitions: 20x the fetch manager's turns)."""
    from asyncconsumer._state.fetch_buffer import ResponseShare

    buffer = FetchBuffer(4 * MIB, CallerSignal())
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    big = ResponseShare(3 * MIB)
    parts = [CompletedFetch(TopicPartition("t", p), 0, 0, 1, memoryview(b""), 1, None, big) for p in range(100)]
    buffer.add_all(parts, big)
    small = CompletedFetch(TP, 0, 0, 1, memoryview(b"x" * 100), 1)
    buffer.add_all([small])
    buffer.deliver()
    assert buffer.room(floor=2 * MIB) == 0  # 1 MiB free, less than asked
    for part in parts[:-1]:
        buffer.release(part)
    buffer.release(small)
    assert woken == []  # nothing freed reached the floor (the response is counted whole, until its last part)
    buffer.release(parts[-1])
    assert woken == [True]
    assert buffer.room(floor=2 * MIB) == 4 * MIB
