"""The share consumer's fetch buffer: the consumer's memory bound, with a share consumer's rules for when a ShareFetch
may go (nothing buffered, or one response ahead of the caller)."""

from __future__ import annotations

from asyncconsumer._state.fetch_buffer import CompletedFetch, ResponseShare
from asyncconsumer._state.share_fetch_buffer import ShareFetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.records import TopicPartition

TP = TopicPartition("t", 0)
MIB = 1 << 20


def test_empty_or_wait_allows_a_share_fetch_only_when_nothing_is_held_and_the_release_wakes_the_background() -> None:
    buffer = ShareFetchBuffer(8 * MIB, CallerSignal())
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
    assert buffer.empty_or_wait()  # a fetch in flight to another broker does not hold this one back...
    assert buffer.room(floor=1) == 8 * MIB - 5  # ...but its bytes are not offered again


def test_one_response_ahead_counts_a_share_response_until_its_last_part_is_released() -> None:
    """A share consumer fetches again as an answer arrives for a caller holding nothing, never a second ahead."""
    buffer = ShareFetchBuffer(8 * MIB, CallerSignal())
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
