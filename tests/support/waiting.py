"""Wait on a condition with a deadline instead of sleeping and hoping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["wait_for", "wait_for_async", "wait_until"]

T = TypeVar("T")


def _describe(message: str | Callable[[], str]) -> str:
    return message() if callable(message) else message


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 10.0,
    *,
    interval: float = 0.01,
    message: str | Callable[[], str] = "",
) -> T:
    """Call ``predicate`` until it returns something truthy and return that; AssertionError at ``timeout``.

    ``message`` (or a callable producing it, evaluated at the timeout) says what was awaited. Exceptions from
    ``predicate`` propagate. Blocks the calling thread: from a coroutine use :func:`wait_for_async`.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = _describe(message)
            raise AssertionError(f"condition not met within {timeout} s" + (f": {detail}" if detail else ""))
        time.sleep(interval)


async def wait_for_async(
    predicate: Callable[[], T] | Callable[[], Awaitable[T]],
    timeout: float = 10.0,
    *,
    interval: float = 0.01,
    message: str | Callable[[], str] = "",
) -> T:
    """Like :func:`wait_for`, without blocking the event loop; ``predicate`` may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            detail = _describe(message)
            raise AssertionError(f"condition not met within {timeout} s" + (f": {detail}" if detail else ""))
        await asyncio.sleep(interval)


async def wait_until(check: Callable[[], Awaitable[bool]], timeout: float, message: Callable[[], str]) -> None:
    """``wait_for_async`` for a coroutine check (mypy cannot pick the type variable of its union signature)."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"condition not met within {timeout} s: {message()}"
        await asyncio.sleep(0.01)
