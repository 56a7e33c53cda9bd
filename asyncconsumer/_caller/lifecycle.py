"""The caller's side of a client's life, shared by the consumers' core and the share consumers' core: the lazy
start, the close event, ``wakeup``, deadlines, one event per call, and a blocking wait on an event's future."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future
from typing import Any, Generic, Protocol, TypeVar

from asyncconsumer._clock import Clock, wall_ms
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ClientClosedError, KafkaTimeoutError, WakeupError
from asyncconsumer.events.application import ApplicationEvent, ClientInstanceIdEvent, CloseEvent
from asyncconsumer.events.background import BackgroundEvent, ErrorEvent
from asyncconsumer.records import GroupMembershipOperation

T = TypeVar("T")


class _Parts(Protocol):
    """What the lifecycle needs of a client's parts: the thread's handle, the caller's signal, the event queue."""

    @property
    def thread(self) -> Any: ...

    @property
    def signal(self) -> CallerSignal: ...

    @property
    def app_events(self) -> ApplicationEventQueue: ...

    @property
    def background_events(self) -> BackgroundEventQueue: ...


P = TypeVar("P", bound=_Parts)


class ClientCore(Generic[P]):
    """What every client's core does with its parts (``parts.thread``, ``parts.signal``, ``parts.app_events``).

    ``NAME`` is the client in the caller's words ("the consumer is closed"); subclasses log their own start and close.
    """

    NAME = "consumer"
    parts: P
    settings: ConsumerConfig
    clock: Clock

    def _init_lifecycle(self) -> None:
        self.started = False
        self.closed = False
        self._start_lock = threading.Lock()
        self._wakeup_requested = False
        """Set by ``wakeup()`` from any thread, cleared by the caller's thread when it raises ``WakeupError``."""

    def wall_clock(self) -> int:
        """Unix epoch milliseconds, for the dates ``metrics()`` shows (the client's ``clock`` is monotonic)."""
        return wall_ms()

    def _log_started(self) -> None:
        """Subclasses: the start's log event."""

    def _log_closed(self, timed_out: float | None) -> None:
        """Subclasses: the close's log events (``timed_out``: the join's timeout in seconds, if it passed)."""

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Starts the background thread unless it runs already: called by every call that needs it, so an explicit
        ``start()`` is never required (as with Java's and confluent-kafka's clients). Thread-safe."""
        self._check_open()
        if self.started:
            return
        with self._start_lock:
            if self.started:
                return
            self.parts.thread.start()
            self.started = True
        self._log_started()

    def close(
        self,
        timeout_ms: int | None,
        group_membership: GroupMembershipOperation = GroupMembershipOperation.DEFAULT,
    ) -> Future[None] | None:
        """Asks the background to stop, doing ``group_membership`` with the group place; ``None`` if it never started
        or already stopped. Later calls raise."""
        with self._start_lock:  # no start() can slip in between: a closed client never starts
            if self.closed:
                return None
            self.closed = True
        if not self.started or not self.parts.thread.alive:
            return None
        event = CloseEvent(
            deadline_ms=self.deadline(timeout_ms if timeout_ms is not None else 30_000),
            group_membership=group_membership,
        )
        self.parts.app_events.put(event)
        return event.future

    def finish_close(self, timeout_s: float) -> None:
        if not self.started:
            return
        joined = self.parts.thread.join(max(timeout_s, 0.0))
        self._log_closed(None if joined else timeout_s)

    def _check_open(self) -> None:
        if self.closed:
            raise ClientClosedError(f"the {self.NAME} is closed")
        if self.started and not self.parts.thread.alive:
            # The error it stopped with first, once, whichever call comes first (a fatal plugin's, say); then this.
            error = self.parts.background_events.take_error()
            if error is not None:
                raise error
            raise ClientClosedError(f"the {self.NAME}'s background thread stopped: {self.parts.thread.failure!r}")

    @property
    def running(self) -> bool:
        """Started, not closed, and its background thread alive: there is something to close or leave."""
        return self.started and not self.closed and self.parts.thread.alive

    # --- wakeup (any thread) -----------------------------------------------------------------------------------
    def wakeup(self) -> None:
        """Makes the blocking call in progress, or the next one, raise ``WakeupError``; callable from any thread."""
        self._wakeup_requested = True
        self.parts.signal.notify()

    def check_wakeup(self) -> None:
        """Raises ``WakeupError`` once per ``wakeup()`` (caller's thread)."""
        if self._wakeup_requested:
            self._wakeup_requested = False
            raise WakeupError("wakeup() was called: the blocking call was interrupted; nothing consumed is lost")

    def events_until_error(self) -> list[BackgroundEvent]:
        """What the background delivered, in order, up to its first error: the events before the error are returned
        to be handled first, and the error is raised by the next call (at once if none came before it); the rest
        wait behind it."""
        events = self.parts.background_events.drain()
        for i, event in enumerate(events):
            if isinstance(event, ErrorEvent):
                self.parts.background_events.put_back(events[i:] if i else events[1:])
                if i:
                    return events[:i]
                raise event.error
        return events

    def deadline(self, timeout_ms: int | None) -> int:
        return self.clock.now_ms() + (self.settings.default_api_timeout_ms if timeout_ms is None else timeout_ms)

    def client_instance_id(self, timeout_ms: int | None) -> Future[uuid.UUID]:
        return self.submit(ClientInstanceIdEvent(deadline_ms=self.deadline(timeout_ms)))

    def submit(self, event: ApplicationEvent) -> Future[Any]:
        self.start()
        self.parts.app_events.put(event)
        return event.future

    def timeout_s(self, timeout_ms: int | None) -> float:
        """How long a blocking caller waits for an event's future: its deadline plus a little grace."""
        return (self.settings.default_api_timeout_ms if timeout_ms is None else timeout_ms) / 1000 + 1.0

    def wait(self, future: Future[T], timeout_ms: int | None = None) -> T:
        """A blocking face's wait: the future's result, or the error the background gave it; ``WakeupError`` if
        ``wakeup()`` is called meanwhile. A timeout of our own comes only when the background does not answer by
        the deadline plus a grace second (its own ``KafkaTimeoutError``, which names what timed out, comes first)."""
        signal = self.parts.signal
        future.add_done_callback(lambda _: signal.notify())
        give_up_ms = self.clock.now_ms() + int(self.timeout_s(timeout_ms) * 1000)
        while True:
            seen = signal.seq
            if future.done():
                return future.result()
            self.check_wakeup()
            left = (give_up_ms - self.clock.now_ms()) / 1000
            if left <= 0:
                raise KafkaTimeoutError(
                    f"the {self.NAME}'s background thread did not answer within {self.timeout_s(timeout_ms):.0f} s"
                )
            signal.wait(seen, left)
