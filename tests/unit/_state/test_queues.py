"""The two queues between the threads (``_state/queues.py``): first in, first out, and a put wakes the side that
reads (the background through its wake-up function, the caller through the signal); background events staged during
a loop iteration reach the caller together when it ends."""

from __future__ import annotations

import threading

from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.events.application import CloseEvent, PolledEvent, TopicMetadataEvent
from asyncconsumer.events.background import CallbackEvent, ErrorEvent


def test_application_events_drain_in_order_and_each_put_wakes_the_background() -> None:
    queue = ApplicationEventQueue()
    queue.put(PolledEvent(deadline_ms=1))  # before a wake-up is set: nothing to wake, and nothing lost
    woken: list[int] = []
    queue.set_wakeup(lambda: woken.append(len(woken)))
    events = [TopicMetadataEvent(topic="t", deadline_ms=2), CloseEvent(deadline_ms=3)]
    for event in events:
        queue.put(event)
    assert woken == [0, 1]
    assert queue
    assert [e.deadline_ms for e in queue.drain()] == [1, 2, 3]
    assert not queue and queue.drain() == []


def test_background_events_drain_in_order_and_each_put_moves_the_callers_signal() -> None:
    signal = CallerSignal()
    queue = BackgroundEventQueue(signal)
    seen = signal.seq
    first, second = ErrorEvent(KafkaConnectionError("x")), CallbackEvent(lambda: None)
    queue.put(first)
    queue.put(second)
    assert signal.seq == seen + 2
    assert queue
    assert queue.drain() == [first, second]
    assert not queue


def test_a_caller_waiting_on_the_signal_is_woken_by_a_put_from_another_thread() -> None:
    signal = CallerSignal()
    queue = BackgroundEventQueue(signal)
    seen = signal.seq
    putter = threading.Thread(target=queue.put, args=(CallbackEvent(lambda: None),))
    putter.start()
    assert signal.wait(seen, 10.0) is True
    putter.join(10)
    assert len(queue.drain()) == 1


def test_many_threads_putting_at_once_lose_no_event() -> None:
    queue = ApplicationEventQueue()
    barrier = threading.Barrier(4)

    def put_many(base: int) -> None:
        barrier.wait()
        for i in range(500):
            queue.put(PolledEvent(deadline_ms=base + i))

    threads = [threading.Thread(target=put_many, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    drained = [e.deadline_ms for e in queue.drain()]
    assert sorted(drained) == sorted(k * 1000 + i for k in range(4) for i in range(500))
    for k in range(4):  # each thread's events stay in its own order
        mine = [d for d in drained if k * 1000 <= d < (k + 1) * 1000]
        assert mine == sorted(mine)


def test_staged_background_events_reach_the_caller_only_when_delivered_with_one_wake_up() -> None:
    signal = CallerSignal()
    queue = BackgroundEventQueue(signal)
    seen = signal.seq
    staged = [ErrorEvent(KafkaConnectionError("a")), CallbackEvent(lambda: None)]
    for event in staged:
        queue.stage(event)
    assert not queue and signal.seq == seen  # the loop iteration has not ended
    assert queue.staged  # so the loop does not sleep before it ends
    immediate = CallbackEvent(lambda: None)
    queue.put(immediate)  # put is for events no snapshot goes with: at once
    assert queue.deliver() is True
    assert signal.seq == seen + 2  # one for the put, one for the whole delivery
    assert queue.drain() == [immediate, *staged]
    assert not queue.staged and queue.deliver() is False and signal.seq == seen + 2  # nothing staged: no wake-up


def test_events_put_back_go_ahead_of_those_delivered_meanwhile_in_their_order() -> None:
    queue = BackgroundEventQueue(CallerSignal())
    a, b, c = (CallbackEvent(lambda: None) for _ in range(3))
    queue.put(a)
    queue.put(b)
    drained = queue.drain()
    queue.stage(c)
    queue.deliver()  # the background delivered c while the caller held a and b
    queue.put_back(drained)
    assert queue.drain() == [a, b, c]
