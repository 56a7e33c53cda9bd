"""``Consumer.process``: the same driver over the blocking consumer's own core, on an event loop of its own in the
caller's thread, with the handler (a plain function) run in a thread pool. ``stop`` and ``metrics`` may be called
from any thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.processing.core import ProcessingMetrics, ProcessingOptions
from asyncconsumer._caller.processing.port import driver_over, run_process


class BlockingProcessing:
    """One run of ``Consumer.process``: ``run`` blocks until it ends (``stop``, ``wakeup()``, an error)."""

    def __init__(
        self,
        core: ConsumerCore,
        handler: Callable[[Any], Any],
        options: ProcessingOptions,
        executor: Executor | None = None,
    ) -> None:
        self._core = core
        self._handler = handler
        self._pool = executor or ThreadPoolExecutor(options.concurrency, "asyncconsumer-process")
        self._owns_pool = executor is None
        self._driver = driver_over(core, self._call, options, interruptible=True)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop ``run`` drives while it runs, for ``stop`` from other threads."""
        self._stop_asked = False
        """``stop`` came before the loop ran: the run stops as soon as it starts."""

    def run(self) -> None:
        try:
            asyncio.run(self._run())
        finally:
            if self._owns_pool:
                self._pool.shutdown(wait=True)

    async def _run(self) -> None:
        with self._lock:
            self._loop = asyncio.get_running_loop()
            if self._stop_asked:
                self._driver.stop()
        try:
            await run_process(self._core, self._driver)
        finally:
            with self._lock:
                self._loop = None

    async def _call(self, argument: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._handler, argument)

    def stop(self) -> None:
        """From any thread: ``run`` returns once the records running settle and what finished is committed."""
        with self._lock:
            if self._loop is None:
                self._stop_asked = True
                return
            self._loop.call_soon_threadsafe(self._driver.stop)

    def metrics(self) -> ProcessingMetrics:
        """From any thread."""
        return self._driver.metrics()
