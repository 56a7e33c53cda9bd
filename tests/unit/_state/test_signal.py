"""The caller signal: waits that end when the background moves it, time out, or are cancelled."""

from __future__ import annotations

import asyncio
import threading

import pytest

from asyncconsumer._state.signal import CallerSignal


@pytest.mark.anyio
async def test_an_async_wait_ends_when_the_signal_moves_or_times_out() -> None:
    signal = CallerSignal()
    seen = signal.seq
    threading.Timer(0.05, signal.notify).start()
    assert await signal.wait_async(seen, 5.0) is True
    assert await signal.wait_async(signal.seq, 0.05) is False
    assert await signal.wait_async(seen, 5.0) is True  # it moved since ``seen``: at once


@pytest.mark.anyio
async def test_a_cancelled_wait_raises_even_when_the_signal_comes_in_the_same_turn() -> None:
    """Python 3.11's asyncio.wait_for returns the result instead of raising when the awaited future completes in the
    turn it is cancelled: a cancelled poll then went on polling (a test's clean-up hung on it)."""
    signal = CallerSignal()
    waiting = asyncio.create_task(signal.wait_async(signal.seq, 30.0))
    await asyncio.sleep(0)  # the task now waits on its future
    signal.notify()  # resolves that future in the next turn (call_soon_threadsafe)...
    waiting.cancel()  # ...the same turn the cancellation arrives
    with pytest.raises(asyncio.CancelledError):
        await waiting


def test_a_blocking_wait_ends_when_the_signal_moves_or_times_out() -> None:
    signal = CallerSignal()
    seen = signal.seq
    threading.Timer(0.05, signal.notify).start()
    assert signal.wait(seen, 5.0) is True
    assert signal.wait(signal.seq, 0.05) is False
