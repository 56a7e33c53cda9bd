"""A consumer with no broker answering, for the unit tests of what the faces promise on their own: an address
nothing listens on, and running one call of an ``AsyncConsumer`` on a fresh loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from asyncconsumer import AsyncConsumer

REFUSED = "127.0.0.1:1"
"""Nothing listens on port 1: every connection is refused at once."""


def run_async(consumer: AsyncConsumer, call: Callable[[AsyncConsumer], Any]) -> Any:
    """Runs ``call(consumer)`` (a coroutine) on a fresh loop, then closes the consumer."""

    async def main() -> Any:
        try:
            return await call(consumer)
        finally:
            await consumer.close(timeout_ms=1_000)

    return asyncio.run(main())
