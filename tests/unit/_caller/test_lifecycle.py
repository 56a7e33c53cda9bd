"""The lifecycle both cores share (``_caller/lifecycle.py``), on stand-in parts: one start however many calls,
closing once, the errors of a closed client named for its kind, ``wakeup`` and the blocking wait."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import attrs
import pytest

from asyncconsumer._caller.lifecycle import ClientCore
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ClientClosedError, KafkaTimeoutError, UnknownBrokerError, WakeupError
from asyncconsumer.events.application import CloseEvent
from asyncconsumer.events.background import CallbackEvent, ErrorEvent


class Thread:
    def __init__(self) -> None:
        self.starts = 0
        self.alive = False
        self.failure: BaseException | None = None

    def start(self) -> None:
        self.starts += 1
        self.alive = True

    def join(self, timeout_s: float) -> bool:
        return not self.alive


@attrs.define
class Parts:
    thread: Thread = attrs.Factory(Thread)
    signal: CallerSignal = attrs.Factory(CallerSignal)
    app_events: ApplicationEventQueue = attrs.Factory(ApplicationEventQueue)
    background_events: BackgroundEventQueue = attrs.Factory(lambda: BackgroundEventQueue(CallerSignal()))


class Core(ClientCore[Parts]):
    NAME = "thing"

    def __init__(self, **settings: Any) -> None:
        self.parts = Parts()
        self.settings = ConsumerConfig.from_kwargs("h:1", **settings)
        self.clock = ManualClock(1_000)
        self.logged: list[str] = []
        self._init_lifecycle()

    def _log_started(self) -> None:
        self.logged.append("started")

    def _log_closed(self, timed_out: float | None) -> None:
        self.logged.append(f"closed {timed_out}")


def test_the_thread_starts_once_and_a_closed_client_is_named_by_its_kind() -> None:
    core = Core()
    threads = [threading.Thread(target=core.start) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert core.parts.thread.starts == 1 and core.logged == ["started"] and core.running
    future = core.close(None)
    assert future is not None
    (event,) = core.parts.app_events.drain()
    assert isinstance(event, CloseEvent) and event.deadline_ms == 1_000 + 30_000
    assert core.close(None) is None
    with pytest.raises(ClientClosedError, match="the thing is closed"):
        core.start()
    core.finish_close(0.1)
    assert core.logged == ["started", "closed 0.1"]  # the stand-in thread never ends: the join timed out


def test_a_dead_background_thread_is_named_with_its_failure() -> None:
    core = Core()
    core.start()
    core.parts.thread.alive = False
    core.parts.thread.failure = RuntimeError("boom")
    with pytest.raises(ClientClosedError, match=r"the thing's background thread stopped: RuntimeError\('boom'\)"):
        core.submit(CloseEvent(deadline_ms=0))
    assert not core.running


def test_a_stopped_background_threads_error_is_raised_once_by_the_next_call_then_its_failure_is_named() -> None:
    core = Core()
    core.start()
    core.parts.background_events.put(CallbackEvent(lambda: None))
    core.parts.background_events.put(ErrorEvent(UnknownBrokerError(99, "the plugin's error")))
    core.parts.thread.alive = False
    core.parts.thread.failure = RuntimeError("boom")
    with pytest.raises(UnknownBrokerError, match="the plugin's error"):
        core.submit(CloseEvent(deadline_ms=0))
    with pytest.raises(ClientClosedError, match="background thread stopped: RuntimeError"):
        core.submit(CloseEvent(deadline_ms=0))
    assert len(core.parts.background_events.drain()) == 1  # the callback stays


def test_a_client_never_started_closes_without_an_event() -> None:
    core = Core()
    assert core.close(5) is None
    assert not core.parts.app_events
    core.finish_close(1.0)
    assert core.logged == []


def test_the_blocking_wait_returns_the_result_raises_on_wakeup_and_times_out() -> None:
    core = Core(default_api_timeout_ms=1_000)
    done: Future[int] = Future()
    threading.Timer(0.05, lambda: done.set_result(7)).start()
    assert core.wait(done) == 7
    pending: Future[int] = Future()
    threading.Timer(0.05, core.wakeup).start()
    with pytest.raises(WakeupError):
        core.wait(pending)
    core.check_wakeup()  # once per wakeup()
    assert core.timeout_s(None) == 2.0 and core.timeout_s(500) == 1.5

    def one_second_later() -> None:  # on the client's clock: the wait reads no other
        core.clock.advance(1_000)
        core.parts.signal.notify()

    threading.Timer(0.05, one_second_later).start()
    with pytest.raises(KafkaTimeoutError, match="the thing's background thread did not answer within 1 s"):
        core.wait(pending, 0)


def test_events_come_up_to_the_first_error_which_the_next_call_raises_then_the_rest() -> None:
    core = Core()
    first, second, third = (CallbackEvent(print) for _ in range(3))
    boom, later = ErrorEvent(UnknownBrokerError("boom")), ErrorEvent(UnknownBrokerError("later"))
    for event in (first, second, boom, third, later):
        core.parts.background_events.put(event)
    ids = {id(first): "first", id(second): "second", id(third): "third"}  # callback events compare equal

    def names(events: list[Any]) -> list[str]:
        return [ids[id(e)] for e in events]

    assert names(core.events_until_error()) == ["first", "second"]
    with pytest.raises(UnknownBrokerError, match="boom"):
        core.events_until_error()
    assert names(core.events_until_error()) == ["third"]
    with pytest.raises(UnknownBrokerError, match="later"):
        core.events_until_error()
    assert core.events_until_error() == []
