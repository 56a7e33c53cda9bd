"""The fetch buffer's adaptive limit: it starts at half the bound and grows only when the caller keeps running the
buffer dry while the background is held back by the limit."""

from __future__ import annotations

from asyncconsumer._state.fetch_buffer import GROW_AFTER_DRY_POLLS, CompletedFetch, FetchBuffer, ResponseShare
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


def test_empty_or_wait_allows_a_share_fetch_only_when_nothing_is_held_and_the_release_wakes_the_background() -> None:
    buffer = FetchBuffer(8 * MIB, CallerSignal())
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    assert buffer.empty_or_wait()
    buffer.add_all([CompletedFetch(TP, 0, 0, 1, memoryview(b"x" * 10), -1)])
    assert not buffer.empty_or_wait()  # held, even before it is delivered
    buffer.deliver()
    fetch = buffer.take()
    assert fetch is not None and not buffer.empty_or_wait()
    buffer.release(fetch)
    assert woken == [True] and buffer.empty_or_wait()
    buffer.reserve(5)
    assert not buffer.empty_or_wait()  # in flight counts too


def test_one_response_ahead_counts_a_share_response_until_its_last_part_is_released() -> None:
    """A share consumer fetches again as an answer arrives for a caller holding nothing, never a second ahead."""
    buffer = FetchBuffer(8 * MIB, CallerSignal())
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    assert buffer.one_response_ahead(caller_holds=False) and buffer.one_response_ahead(caller_holds=True)

    def response() -> list[CompletedFetch]:
        share = ResponseShare(0)
        parts = [
            CompletedFetch(TopicPartition("t", p), 0, 0, 1, memoryview(b"x" * 10), -1, share=share) for p in (0, 1)
        ]
        share.size = 20
        buffer.add_all(parts, share)
        return parts

    response()
    assert buffer.buffered_bytes == 20
    assert buffer.one_response_ahead(caller_holds=False)  # the caller has not started it: one ahead is allowed
    assert not buffer.one_response_ahead(caller_holds=True)  # it still works through older records
    response()
    assert not buffer.one_response_ahead(caller_holds=False)  # two unstarted responses: none more
    buffer.deliver()
    for _ in range(3):
        fetch = buffer.take()
        assert fetch is not None
        buffer.release(fetch)
    assert buffer.buffered_bytes == 20  # the second response's last part is still held
    assert woken == [True]  # the first one's release woke the background
    assert buffer.one_response_ahead(caller_holds=False) and not buffer.one_response_ahead(caller_holds=True)
    last = buffer.take()
    assert last is not None
    buffer.release(last)
    assert buffer.buffered_bytes == 0 and woken == [True, True]
    assert buffer.one_response_ahead(caller_holds=True)
