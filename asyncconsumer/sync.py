"""``Consumer``: the blocking face, for scripts and PySpark; it talks to the same background thread.

Heartbeats and fetches run on that thread, not on calls into this object, so a slow caller is not a dead one. Its
methods are declared once for both faces, in ``_caller/consumer_methods.py``; here is what only this face has.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from asyncconsumer._caller.consumer_methods import ConsumerMethods
from asyncconsumer._caller.faces import BlockingFace
from asyncconsumer._caller.processing.blocking import BlockingProcessing
from asyncconsumer._caller.processing.core import OnSkip, ProcessingMetrics, ProcessingOptions
from asyncconsumer._caller.processing.transactional import BlockingTxHandler, transactional_options
from asyncconsumer.errors import IllegalStateError
from asyncconsumer.records import ConsumerRecord
from asyncconsumer.stores.base import BlockingOffsetStore, open_store


class Consumer(BlockingFace[ConsumerRecord], ConsumerMethods):
    """A blocking Kafka consumer with the same methods as ``AsyncConsumer``, plus ``wakeup()``."""

    _processing: BlockingProcessing | None = None

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
        if self._processing is not None:
            raise IllegalStateError("process() is already running on this consumer")
        options = ProcessingOptions(
            concurrency=concurrency,
            ordering=ordering,
            batch_size=batch_size,
            max_in_flight_per_partition=max_in_flight_per_partition,
            commit_interval_ms=commit_interval_ms,
            revoke_timeout_ms=revoke_timeout_ms,
            retries=retries,
            retry_backoff_ms=retry_backoff_ms,
            on_error=on_error,  # type: ignore[arg-type]  # checked by ProcessingOptions
            on_skip=on_skip,
        )
        self._processing = BlockingProcessing(self._core, handler, options, executor)
        try:
            self._processing.run()
        finally:
            self._processing = None

    def process_transactionally(
        self,
        handler: BlockingTxHandler,
        offsets: str | BlockingOffsetStore,
        *,
        concurrency: int = 16,
        executor: Executor | None = None,
        batch_size: int = 100,
        max_in_flight_per_partition: int = 1_000,
        mirror_interval_ms: int | None = 5_000,
        revoke_timeout_ms: int = 30_000,
        retries: int = 0,
        retry_backoff_ms: int = 100,
        on_error: str = "stop",
        on_skip: OnSkip | None = None,
        store_timeout_ms: int = 60_000,
    ) -> None:
        """``AsyncConsumer.process_transactionally`` for code that is not async: ``handler(records, tx)`` runs in a
        thread pool with ``tx`` the sync side's connection (``sqlite3.Connection``, ``psycopg.Connection``) inside
        the transaction; ``offsets`` is a URL or a ``BlockingOffsetStore``. Returns after ``stop_processing()``;
        ``wakeup()`` ends it with ``WakeupError``."""
        if self._processing is not None:
            raise IllegalStateError("process() is already running on this consumer")
        store = open_store(offsets, blocking=True)
        options = transactional_options(
            self._core,
            concurrency=concurrency,
            batch_size=batch_size,
            max_in_flight_per_partition=max_in_flight_per_partition,
            mirror_interval_ms=mirror_interval_ms,
            revoke_timeout_ms=revoke_timeout_ms,
            retries=retries,
            retry_backoff_ms=retry_backoff_ms,
            on_error=on_error,
            on_skip=on_skip,
        )
        self._processing = BlockingProcessing(
            self._core,
            handler,
            options,
            executor,
            offsets=store,  # type: ignore[arg-type]  # open_store gave the blocking side
            store_timeout_ms=store_timeout_ms,
        )
        try:
            self._processing.run()
        finally:
            self._processing = None

    def stop_processing(self) -> None:
        """Makes ``process`` return once the records running settle and what finished is committed; callable from
        any thread."""
        processing = self._processing
        if processing is not None:
            processing.stop()

    def processing_metrics(self) -> ProcessingMetrics | None:
        """What ``process`` has waiting, running and finished (None when it is not running)."""
        processing = self._processing
        return processing.metrics() if processing is not None else None
