"""``Consumer``: the blocking face, for scripts and PySpark; it talks to the same background thread.

Heartbeats and fetches run on that thread, not on calls into this object, so a slow caller is not a dead one. Its
methods are declared once for both faces, in ``_caller/consumer_methods.py``; here is what only this face has.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from asyncconsumer._caller.consumer_methods import ConsumerMethods
from asyncconsumer._caller.faces import BlockingFace
from asyncconsumer._caller.processing.engine import OnSkip, ProcessingMetrics
from asyncconsumer.records import ConsumerRecord


class Consumer(BlockingFace[ConsumerRecord], ConsumerMethods):
    """A blocking Kafka consumer with the same methods as ``AsyncConsumer``, plus ``wakeup()``."""

    _processing: tuple[Any, asyncio.AbstractEventLoop] | None = None

    # --- concurrent processing -------------------------------------------------------------------------------
    def process(
        self,
        handler: Callable[[Any], Any],
        *,
        concurrency: int = 16,
        executor: Executor | None = None,
        ordering: str = "key",
        batch_size: int | None = None,
        max_in_flight_per_partition: int = 1_000,
        commit_interval_ms: int = 5_000,
        revoke_timeout_ms: int = 30_000,
        retries: int = 0,
        retry_backoff_ms: int = 100,
        on_error: str = "stop",
        on_skip: OnSkip | None = None,
    ) -> None:
        """``AsyncConsumer.process`` for code that is not async: ``handler(record)`` runs in a thread pool
        (``executor``, or one of ``concurrency`` threads), with the same ordering, commits and failure policies.
        Returns after ``stop_processing()`` (from any thread); ``wakeup()`` ends it with ``WakeupError``."""
        from asyncconsumer.consumer import AsyncConsumer

        face = AsyncConsumer._over(self._core)
        pool = executor if executor is not None else ThreadPoolExecutor(concurrency, "asyncconsumer-process")

        async def run() -> None:
            loop = asyncio.get_running_loop()

            async def call(argument: Any) -> Any:
                return await loop.run_in_executor(pool, handler, argument)

            self._processing = (face, loop)
            await face.process(
                call,
                concurrency=concurrency,
                ordering=ordering,
                batch_size=batch_size,
                max_in_flight_per_partition=max_in_flight_per_partition,
                commit_interval_ms=commit_interval_ms,
                revoke_timeout_ms=revoke_timeout_ms,
                retries=retries,
                retry_backoff_ms=retry_backoff_ms,
                on_error=on_error,
                on_skip=on_skip,
            )

        try:
            asyncio.run(run())
        finally:
            self._processing = None
            if executor is None:
                pool.shutdown(wait=True)

    def stop_processing(self) -> None:
        """Makes ``process`` return once the records running settle and what finished is committed; callable from
        any thread."""
        processing = self._processing
        if processing is not None:
            face, loop = processing
            with contextlib.suppress(RuntimeError):  # the loop has just ended: process is returning anyway
                loop.call_soon_threadsafe(face.stop_processing)

    def processing_metrics(self) -> ProcessingMetrics | None:
        """What ``process`` has waiting, running and finished (None when it is not running)."""
        processing = self._processing
        return processing[0].processing_metrics() if processing is not None else None
