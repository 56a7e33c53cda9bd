"""``AsyncConsumer``: the asyncio face of the consumer. It never touches a socket; the background thread does.

Its methods are declared once for both faces, in ``_caller/consumer_methods.py``; here is what only this face has.
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import Future
from typing import TypeVar

from asyncconsumer._caller.consumer_methods import ConsumerMethods
from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.faces import AsyncFace
from asyncconsumer._caller.processing.engine import (
    Handler,
    OnSkip,
    ProcessingEngine,
    ProcessingMetrics,
    ProcessingOptions,
)
from asyncconsumer._caller.processing.scheduler import Ordering
from asyncconsumer.errors import ConfigError, IllegalStateError, KafkaError
from asyncconsumer.records import ConsumerRecord

T = TypeVar("T")


async def _wait(future: Future[T]) -> T:
    return await asyncio.wrap_future(future)


class AsyncConsumer(AsyncFace[ConsumerRecord], ConsumerMethods):
    """A Kafka consumer for asyncio code; heartbeats and fetches keep going while your loop is busy.

    Config keys are Pythonic (``fetch_max_wait_ms``) or Java-style (``"fetch.max.wait.ms"``); see ``ConsumerConfig``.
    """

    _engine: ProcessingEngine | None = None

    @classmethod
    def _over(cls, core: ConsumerCore) -> AsyncConsumer:
        """An asyncio face on ``core``, which another face made: how the blocking ``Consumer.process`` runs."""
        face = cls.__new__(cls)
        face._core = core
        face._pending = []
        face._engine = None
        return face

    # --- concurrent processing -------------------------------------------------------------------------------
    async def process(
        self,
        handler: Handler,
        *,
        concurrency: int = 100,
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
        """Runs ``await handler(record)`` for the records polled, up to ``concurrency`` at once, until
        ``stop_processing()``, cancellation, or a handler error under ``on_error="stop"`` (raised here once the
        records running settled). Commits cover only finished records (see the processing guide).

        ``ordering``: ``"key"`` (a key's records one after another per partition, in offset order), ``"partition"``
        or ``"none"``. With ``batch_size``, the handler takes a list of up to that many records. A handler that
        raises is retried ``retries`` times (backoff doubling from ``retry_backoff_ms``), then stops processing
        (``on_error="stop"``) or is skipped (``"skip"``: ``on_skip(record, error)`` is called, e.g. to produce it
        to a dead-letter topic). Auto-commit of polled positions is off while it runs.
        """
        if self._engine is not None:
            raise IllegalStateError("process() is already running on this consumer")
        try:
            chosen = Ordering(ordering)
        except ValueError:
            raise ConfigError("ordering", f"must be 'key', 'partition' or 'none', got {ordering!r}") from None
        options = ProcessingOptions(
            concurrency=concurrency,
            ordering=chosen,
            batch_size=batch_size,
            max_in_flight_per_partition=max_in_flight_per_partition,
            commit_interval_ms=commit_interval_ms,
            revoke_timeout_ms=revoke_timeout_ms,
            retries=retries,
            retry_backoff_ms=retry_backoff_ms,
            on_error=on_error,  # type: ignore[arg-type]  # checked by ProcessingOptions
            on_skip=on_skip,
            commits=self._core.config.group_id is not None,
        )
        engine = ProcessingEngine(self, handler, options)
        self._engine = engine
        try:
            await _wait(self._core.set_auto_commit(False))
            await _wait(self._core.set_rebalance_hook(engine.rebalance_hook))
            await engine.run()
        finally:
            self._engine = None
            if not self._core.closed:
                with contextlib.suppress(KafkaError):
                    await _wait(self._core.set_rebalance_hook(None))
                    await _wait(self._core.set_auto_commit(self._core.config.enable_auto_commit))

    def stop_processing(self) -> None:
        """Makes ``process`` return once the records running settle and what finished is committed."""
        if self._engine is not None:
            self._engine.stop()

    def processing_metrics(self) -> ProcessingMetrics | None:
        """What ``process`` has waiting, running and finished (None when it is not running)."""
        return self._engine.metrics() if self._engine is not None else None
