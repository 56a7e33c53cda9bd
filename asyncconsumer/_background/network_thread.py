"""The background thread: its own anyio event loop running one loop over events, managers and the network.

One iteration: drain application events → read ``now`` once → poll every manager in a fixed order and hand their
requests to the delegate → fail events past their deadline → sleep in ``delegate.poll`` until something happens →
publish the snapshot and deliver what the iteration staged. Parts reach the loop through its ``LoopControl``
(``control.py``), made before them: any thread wakes it; on the background thread, a part that hands a manager work
in the middle of the pass (perhaps after that manager's turn: the membership queueing a commit before it revokes)
asks for another pass, and the event processor asks for the close.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence

import anyio
import attrs

from asyncconsumer._background.control import LoopControl
from asyncconsumer._background.owned import Owner
from asyncconsumer._background.processor import EventProcessor
from asyncconsumer._clock import Clock
from asyncconsumer._logs import get_logger
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer.errors import ClientClosedError, KafkaError, PluginError
from asyncconsumer.events.application import CloseEvent
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, RequestManager, UnsentRequest
from asyncconsumer.network.delegate import NetworkClientDelegate

log = get_logger("asyncconsumer.background")


class ConsumerNetworkThread:
    """Owns the delegate and the managers; nothing here runs user code."""

    def __init__(
        self,
        clock: Clock,
        control: LoopControl,
        app_events: ApplicationEventQueue,
        background_events: BackgroundEventQueue,
        processor: EventProcessor,
        managers: Sequence[RequestManager],
        delegate: NetworkClientDelegate,
        name: str = "asyncconsumer-network",
        *,
        publish: Callable[[int], None] = lambda now_ms: None,
        owner: Owner | None = None,
    ) -> None:
        self._clock = clock
        self._control = control
        self._app_events = app_events
        self._background_events = background_events
        self._processor = processor
        self._managers = list(managers)
        self._delegate = delegate
        self._publish = publish
        """Ends every iteration: publishes the snapshot the caller reads (``_state/snapshot.py``), then delivers what
        the iteration staged for the caller (fetched records, background events) and wakes it."""
        self._owner = owner or Owner()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = threading.Event()
        self.failure: BaseException | None = None
        self.iterations = 0
        app_events.set_wakeup(control.wakeup)

    # --- caller side ----------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()
        self._started.wait()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def wakeup(self) -> None:
        """Thread-safe; coalesces wake-ups so a burst of events costs one loop hop."""
        self._control.wakeup()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    # --- background side ------------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            anyio.run(self._main, backend="asyncio")
        except BaseException as exc:  # the thread must not die silently
            self.failure = exc
            log.error("background.crashed", error=repr(exc))
        finally:
            self._started.set()

    async def _main(self) -> None:
        self._owner.claim()
        self._control.bind(asyncio.get_running_loop(), self._delegate.wakeup)
        self._started.set()
        async with anyio.create_task_group() as tg:
            self._delegate.attach(tg)
            try:
                while (closing := self._control.close_event) is None:
                    await self.run_once()
                await self._close(closing)
                self._publish(self._clock.now_ms())
            except Exception as exc:
                log.error("background.failed", error=repr(exc))
                self.failure = exc
                error: KafkaError = (
                    exc  # plugin_errors="fatal": the plugin's error is the one to raise
                    if isinstance(exc, PluginError)
                    else ClientClosedError(f"the consumer's background thread failed: {exc!r}")
                )
                with contextlib.suppress(Exception):  # what was staged before the failure still reaches the caller
                    self._publish(self._clock.now_ms())
                self._background_events.put(ErrorEvent(error))
                self._processor.fail_all(error)
                for event in self._app_events.drain():
                    event.fail(error)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._delegate.close()
                tg.cancel_scope.cancel()

    async def run_once(self) -> None:
        self.iterations += 1
        for event in self._app_events.drain():
            self._processor.process(event)
        if self._control.close_event is not None:
            return  # close now rather than after the next sleep
        now = self._clock.now_ms()
        wait = MAX_POLL_WAIT_MS
        self._control.begin_pass()
        for manager in self._managers:
            result = manager.poll(now)
            if result.unsent_requests:
                self._delegate.add_all(result.unsent_requests, now)
            wait = min(wait, result.time_until_next_poll_ms)
        # After the managers: one that ends its own work at the event's deadline (the commit manager's timeout
        # names the commit, its attempts and its last error) is heard before this generic one.
        self._processor.reap(now)
        deadline = self._processor.next_deadline_ms()
        if deadline is not None:
            wait = min(wait, deadline - now)
        # The loop sleeps only when no work waits: no new event, no manager handed work after its turn, nothing
        # staged for the caller (delivered when this iteration ends).
        if self._app_events or self._control.again or self._background_events.staged:
            wait = 0
        await self._delegate.poll(max(wait, 0), now)
        self._publish(self._clock.now_ms())

    async def _close(self, event: CloseEvent) -> None:
        """Runs each manager's close work (only that) until it is done or the close deadline passes."""
        self._delegate.fail_unsent(ClientClosedError("the consumer is closing"))
        now = self._clock.now_ms()
        remaining: set[int] = set()

        def tracked(unsent: UnsentRequest) -> UnsentRequest:
            remaining.add(id(unsent))

            def on_response(result: object, now_ms: int) -> None:
                remaining.discard(id(unsent))
                unsent.on_response(result, now_ms)

            return attrs.evolve(unsent, on_response=on_response)

        for manager in self._managers:
            result = manager.poll_on_close(now)
            if result.unsent_requests:
                self._delegate.add_all([tracked(u) for u in result.unsent_requests], now)
        while remaining:
            now = self._clock.now_ms()
            if now >= event.deadline_ms:
                log.info("background.close_deadline", pending=len(remaining))
                break
            await self._delegate.poll(min(event.deadline_ms - now, MAX_POLL_WAIT_MS), now)
            self._publish(self._clock.now_ms())
        self._processor.fail_all()
        for pending in self._app_events.drain():
            pending.fail(ClientClosedError("the consumer is closed"))
        event.complete(None)
