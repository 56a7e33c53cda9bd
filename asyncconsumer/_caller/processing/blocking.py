"""``Consumer.process``: the same driver over the blocking consumer's own core, on an event loop of its own in the
caller's thread, with the handler (a plain function) run in a thread pool; for ``process_transactionally`` each
unit (its transaction, the handler, the offset, the commit) runs whole in one pool thread. ``stop`` and
``metrics`` may be called from any thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import attrs

from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.processing.core import ProcessingMetrics, ProcessingOptions
from asyncconsumer._caller.processing.port import driver_over, run_process
from asyncconsumer._caller.processing.transactional import (
    BlockingUnits,
    Claims,
    Leases,
    run_transactionally,
    transactional_driver,
)
from asyncconsumer.stores.base import BlockingOffsetStore


class BlockingProcessing:
    """One run of ``Consumer.process``: ``run`` blocks until it ends (``stop``, ``wakeup()``, an error)."""

    def __init__(
        self,
        core: ConsumerCore,
        handler: Callable[..., Any],
        options: ProcessingOptions,
        executor: Executor | None = None,
        *,
        offsets: BlockingOffsetStore | None = None,
        store_timeout_ms: int = 60_000,
    ) -> None:
        self._core = core
        self._pool = executor or ThreadPoolExecutor(options.concurrency, "asyncconsumer-process")
        self._owns_pool = executor is None
        self._run_driver: Callable[[], Awaitable[None]]
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop ``run`` drives while it runs, for ``stop`` from other threads."""
        self._stop_asked = False
        """``stop`` came before the loop ran: the run stops as soon as it starts."""
        if offsets is None:
            self._handler = handler
            self._driver = driver_over(core, self._call, options, interruptible=True)
            self._run_driver = lambda: run_process(core, self._driver)
            return
        # process_transactionally: each unit (transaction, handler, offset, commit) runs whole in a pool thread
        leases = Leases()
        units = BlockingUnits(offsets, leases, handler, options.on_skip, store_timeout_ms, core.clock)
        self._handler = units.handle
        pool = self._pool

        def skip(records: Any, error: BaseException) -> Awaitable[None]:
            return asyncio.get_running_loop().run_in_executor(pool, units.skip, records, error)

        options = attrs.evolve(options, on_skip=skip)
        self._driver, hook = transactional_driver(
            core, self._call, options, Claims(offsets, pool), leases, store_timeout_ms, interruptible=True
        )
        self._run_driver = lambda: run_transactionally(core, self._driver, hook)

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
            await self._run_driver()
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
