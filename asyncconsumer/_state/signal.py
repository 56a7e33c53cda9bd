"""Wakes the caller, whether it waits in a thread (sync facade) or on an asyncio loop."""

from __future__ import annotations

import asyncio
import contextlib
import threading


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class CallerSignal:
    """A sequence number the background bumps; callers wait until it moves past what they saw."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._seq = 0
        """Bumped by any thread (``notify``) under the condition; read without it by waiters taking a snapshot."""
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        """asyncio callers waiting: added and removed by them, taken by ``notify``; under the condition."""

    @property
    def seq(self) -> int:
        return self._seq

    def notify(self) -> None:
        """Called from any thread; cheap when nobody waits."""
        with self._cond:
            self._seq += 1
            self._cond.notify_all()
            waiters, self._async_waiters = self._async_waiters, []
        for loop, fut in waiters:
            with contextlib.suppress(RuntimeError):  # the waiter's loop is closed: nobody to wake
                loop.call_soon_threadsafe(_resolve, fut)

    def wait(self, seen: int, timeout_s: float) -> bool:
        """Blocks until ``seq != seen`` or the timeout passes; True if it moved."""
        with self._cond:
            return self._cond.wait_for(lambda: self._seq != seen, timeout_s)

    async def wait_async(self, seen: int, timeout_s: float) -> bool:
        """Waits until ``seq != seen`` or the timeout passes; True if it moved. A cancellation always propagates,
        even when the signal comes in the same loop turn (``asyncio.wait_for`` of Python 3.11 would swallow it and
        return, so a cancelled ``poll`` went on polling)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        entry = (loop, fut)
        with self._cond:
            if self._seq != seen:
                return True
            self._async_waiters.append(entry)
        try:
            async with asyncio.timeout(timeout_s):
                await fut
            return True
        except TimeoutError:
            return False
        finally:
            with self._cond:
                if entry in self._async_waiters:
                    self._async_waiters.remove(entry)
