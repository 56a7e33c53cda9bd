"""The loop's handle: made before every part that needs it, so no part is wired to a thread that does not exist yet.

Parts on the background thread ask for another pass over the managers (``poll_again``: work handed to a manager
after its turn) or for the close (``request_close``); any thread wakes the loop (``wakeup``). The network thread
reads the requests each iteration and binds the wake-up to its event loop once that loop runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from asyncconsumer.events.application import CloseEvent


class LoopControl:
    """What parts may ask of the loop. ``wakeup`` is thread-safe; the others are for the background thread."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_wake: Callable[[], None] = lambda: None
        self._wake_pending = False
        """Set by any thread's ``wakeup`` and cleared on the background loop: coalesces wake-ups."""
        self._poll_again = False
        """Background only: set by ``poll_again`` since the current pass over the managers began."""
        self.close_event: CloseEvent | None = None
        """Background only: the caller's close, once the event processor has it."""

    def bind(self, loop: asyncio.AbstractEventLoop, on_wake: Callable[[], None]) -> None:
        """The network thread, as its loop starts: wake-ups from now on run ``on_wake`` on that loop."""
        self._on_wake = on_wake
        self._loop = loop

    def wakeup(self) -> None:
        """Any thread: cut the loop's sleep short. Before the loop runs there is nothing to wake."""
        loop = self._loop
        if loop is None or self._wake_pending:
            return
        self._wake_pending = True
        with contextlib.suppress(RuntimeError):  # the loop has already stopped
            loop.call_soon_threadsafe(self._woken)

    def _woken(self) -> None:
        self._wake_pending = False
        self._on_wake()

    def poll_again(self) -> None:
        """Background: a manager was handed work during the pass, maybe after its turn; poll them all again before
        sleeping."""
        self._poll_again = True

    def begin_pass(self) -> None:
        """Background, as a pass over the managers begins: what was handed over before it, the pass sees."""
        self._poll_again = False

    @property
    def again(self) -> bool:
        """Background, after the pass: whether a part asked for another one meanwhile."""
        return self._poll_again

    def request_close(self, event: CloseEvent) -> None:
        """Background: the event processor has the caller's close; the loop closes after this iteration."""
        self.close_event = event
