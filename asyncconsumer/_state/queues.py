"""The two queues between the threads. Putting on either wakes the side that reads it."""

from __future__ import annotations

import collections
from collections.abc import Callable

from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.errors import KafkaError
from asyncconsumer.events.application import ApplicationEvent
from asyncconsumer.events.background import BackgroundEvent, ErrorEvent


class ApplicationEventQueue:
    """Caller → background: any caller thread puts, the background drains. ``deque.append``/``popleft`` are
    atomic, so no lock is needed."""

    def __init__(self) -> None:
        self._events: collections.deque[ApplicationEvent] = collections.deque()
        self._wake: Callable[[], None] = lambda: None

    def set_wakeup(self, wake: Callable[[], None]) -> None:
        self._wake = wake

    def put(self, event: ApplicationEvent, *, wake: bool = True) -> None:
        """Queues ``event``; without ``wake``, the background takes it at its next turn (the sender knows one comes
        soon enough)."""
        self._events.append(event)
        if wake:
            self._wake()

    def __bool__(self) -> bool:
        return bool(self._events)

    def drain(self) -> list[ApplicationEvent]:
        events = []
        while self._events:
            events.append(self._events.popleft())
        return events


class BackgroundEventQueue:
    """Background → caller: the background stages events, delivered at the end of its loop iteration after that
    iteration's snapshot is published (a rebalance callback sees its generation in ``group_metadata()``); the
    caller drains inside ``poll``, and puts back what it did not handle yet."""

    def __init__(self, signal: CallerSignal) -> None:
        self._events: collections.deque[BackgroundEvent] = collections.deque()
        self._staged: list[BackgroundEvent] = []
        """Background only: staged, not yet delivered."""
        self._signal = signal

    def stage(self, event: BackgroundEvent) -> None:
        """Background side: ``event`` reaches the caller with the next ``deliver``."""
        self._staged.append(event)

    @property
    def staged(self) -> bool:
        """Background side: events wait for the next ``deliver``."""
        return bool(self._staged)

    def deliver(self) -> bool:
        """Background side, at the end of a loop iteration: hands the staged events to the caller and wakes it."""
        if not self._staged:
            return False
        self._events.extend(self._staged)
        self._staged.clear()
        self._signal.notify()
        return True

    def put(self, event: BackgroundEvent) -> None:
        """Any thread, at once: for events no snapshot goes with (the caller's own, a commit callback)."""
        self._events.append(event)
        self._signal.notify()

    def put_back(self, events: list[BackgroundEvent]) -> None:
        """Caller side: returns events it drained but did not handle to the front, in order (ahead of any the
        background delivered meanwhile)."""
        self._events.extendleft(reversed(events))

    def take_error(self) -> KafkaError | None:
        """Caller side, once the background stopped: the error it delivered and the caller has not drained yet,
        taken out so that it is raised once (the events around it stay)."""
        for event in list(self._events):
            if isinstance(event, ErrorEvent):
                self._events.remove(event)
                return event.error
        return None

    def drain(self) -> list[BackgroundEvent]:
        events = []
        while self._events:
            events.append(self._events.popleft())
        return events

    def __bool__(self) -> bool:
        return bool(self._events)
