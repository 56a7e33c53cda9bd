"""Looking inside a running consumer's background without breaking the thread rule: the look runs on its thread.

The caller's side never reads what the background thread owns (``_background/owned.py``). Tests that need a value
only the background has (a fetch session's epoch, when metadata was last refreshed) ask for it this way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from asyncconsumer import AsyncConsumer, Consumer
from asyncconsumer._background.builder import BackgroundParts

T = TypeVar("T")


def submit(consumer: AsyncConsumer | Consumer, look: Callable[[BackgroundParts], T]) -> Future[T]:
    """Runs ``look(parts)`` on the consumer's background loop (started); its result, or its error, in the future."""
    parts = consumer._core.parts
    loop = parts.thread._control._loop
    assert loop is not None and parts.thread.alive, "the consumer's background thread is not running"
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(look(parts.owned))
        except BaseException as exc:
            done.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return done


def on_background(consumer: AsyncConsumer | Consumer, look: Callable[[BackgroundParts], T], timeout: float = 5.0) -> T:
    """``submit`` and wait (from a thread)."""
    return submit(consumer, look).result(timeout)


async def on_background_async(
    consumer: AsyncConsumer | Consumer, look: Callable[[BackgroundParts], T], timeout: float = 5.0
) -> T:
    """``submit`` and await (from a coroutine)."""
    return await asyncio.wait_for(asyncio.wrap_future(submit(consumer, look)), timeout)
