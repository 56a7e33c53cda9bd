"""The background loop, one iteration at a time, with a manual clock and a recording delegate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from asyncconsumer._background.network_thread import ConsumerNetworkThread
from asyncconsumer._background.processor import ApplicationEventProcessor
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import KafkaTimeoutError
from asyncconsumer.events.application import SeekEvent, TopicMetadataEvent
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import OffsetsManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
)
from asyncconsumer.records import TopicPartition


class RecordingDelegate:
    def __init__(self) -> None:
        self.added: list[tuple[UnsentRequest, int]] = []
        self.polls: list[tuple[int, int]] = []

    def add_all(self, requests: Any, now_ms: int) -> None:
        self.added.extend((r, now_ms) for r in requests)

    async def poll(self, timeout_ms: int, now_ms: int) -> None:
        self.polls.append((timeout_ms, now_ms))

    def wakeup(self) -> None:
        pass


class FixedManager:
    def __init__(self, name: str, wait: int, log: list[tuple[str, int]]) -> None:
        self.name, self.wait, self.log = name, wait, log

    def poll(self, now_ms: int) -> PollResult:
        self.log.append((self.name, now_ms))
        return PollResult(self.wait)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()


def build(
    clock: ManualClock, managers: list[Any]
) -> tuple[ConsumerNetworkThread, ApplicationEventQueue, RecordingDelegate, SubscriptionState, MetadataManager]:
    subs = SubscriptionState("earliest")
    metadata = MetadataManager(["h:1"], 60_000, ExponentialBackoff(100, 1000, jitter=0))
    background = BackgroundEventQueue(CallerSignal())
    offsets = OffsetsManager(subs, metadata, "read_uncommitted", ExponentialBackoff(100, 1000), background.put)
    app = ApplicationEventQueue()
    delegate = RecordingDelegate()
    processor = ApplicationEventProcessor(subs, metadata, offsets, on_close=lambda e: None, last_error=lambda: None)
    thread = ConsumerNetworkThread(clock, app, background, processor, [metadata, *managers], delegate)  # type: ignore[arg-type]
    return thread, app, delegate, subs, metadata


def test_one_iteration_drains_events_then_polls_managers_in_order_with_one_now() -> None:
    clock = ManualClock(1_000)
    log: list[tuple[str, int]] = []
    thread, app, delegate, subs, _ = build(clock, [FixedManager("a", 700, log), FixedManager("b", 300, log)])
    subs.assign([TopicPartition("t", 0)])
    event = SeekEvent(tp=TopicPartition("t", 0), offset=42, deadline_ms=5_000)
    app.put(event)
    anyio.run(thread.run_once)
    assert event.future.result(0) is None
    assert subs.position(TopicPartition("t", 0)) == 42
    assert log == [("a", 1_000), ("b", 1_000)]
    assert delegate.polls == [(300, 1_000)]  # the nearest manager wait; the metadata request is already sent
    assert isinstance(delegate.added[0][0].request, MetadataRequest)


def test_the_loop_sleeps_until_the_nearest_manager_wants_it_capped_at_five_seconds() -> None:
    clock = ManualClock(0)
    log: list[tuple[str, int]] = []
    thread, _, delegate, _, _metadata = build(clock, [FixedManager("a", 700, log), FixedManager("b", 9_000, log)])
    anyio.run(thread.run_once)  # sends the bootstrap metadata request
    delegate.added[0][0].on_response(_empty_metadata(), 0)
    anyio.run(thread.run_once)
    assert delegate.polls[-1] == (700, 0)
    log.clear()
    thread2, _, delegate2, _, _ = build(clock, [FixedManager("b", 9_000, log)])
    anyio.run(thread2.run_once)
    delegate2.added[0][0].on_response(_empty_metadata(), 0)
    anyio.run(thread2.run_once)
    assert delegate2.polls[-1] == (5_000, 0)


def test_events_past_their_deadline_fail_with_a_timeout() -> None:
    clock = ManualClock(0)
    thread, app, _, _, _ = build(clock, [])
    event = TopicMetadataEvent(topic="t", deadline_ms=100)
    app.put(event)
    anyio.run(thread.run_once)
    assert not event.future.done()
    clock.advance(100)
    anyio.run(thread.run_once)
    error = event.future.exception(0)
    assert isinstance(error, KafkaTimeoutError)
    assert str(error) == "looking up topic 't' timed out"  # what the caller asked, never an internal class name


class HandingOver(FixedManager):
    """Hands work to a manager polled before it (as a membership queues a commit before revoking) and says so
    through ``poll_again``; or stages an event for the caller."""

    def __init__(self, log: list[tuple[str, int]], hand_over: Callable[[], None]) -> None:
        super().__init__("late", 9_000, log)
        self.hand_over = hand_over
        self.times = 1

    def poll(self, now_ms: int) -> PollResult:
        if self.times:
            self.times -= 1
            self.hand_over()
        return super().poll(now_ms)


def test_work_handed_to_a_manager_after_its_turn_is_polled_for_before_the_loop_sleeps() -> None:
    clock = ManualClock(0)
    log: list[tuple[str, int]] = []
    early = FixedManager("early", 700, log)
    thread, _, delegate, _, _ = build(clock, [early])
    thread._managers.append(HandingOver(log, thread.poll_again))
    anyio.run(thread.run_once)
    assert delegate.polls == [(0, 0)]  # no sleep: the next iteration polls "early" again at once
    anyio.run(thread.run_once)
    assert delegate.polls[-1] == (700, 0)  # nothing handed over this time: sleep until a manager is due
    assert log == [("early", 0), ("late", 0)] * 2


def test_an_event_staged_for_the_caller_during_the_pass_is_delivered_before_the_loop_sleeps() -> None:
    clock = ManualClock(0)
    log: list[tuple[str, int]] = []
    thread, _, delegate, _, _ = build(clock, [])
    background = thread._background_events
    error = ErrorEvent(KafkaTimeoutError("x"))
    thread._managers.append(HandingOver(log, lambda: background.stage(error)))
    published: list[int] = []

    def publish(now_ms: int) -> None:
        published.append(now_ms)
        background.deliver()

    thread._publish = publish
    anyio.run(thread.run_once)
    assert delegate.polls == [(0, 0)] and published == [0]  # the iteration ends without a sleep
    assert background.drain() == [error]


def _empty_metadata() -> Any:

    return MetadataResponse(brokers=(MetadataResponseBroker(node_id=1, host="h", port=1),), topics=())
