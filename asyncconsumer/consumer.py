"""``AsyncConsumer``: the asyncio face of the consumer. It never touches a socket; the background thread does.

Its methods are declared once for both faces, in ``_caller/consumer_methods.py``; here is what only this face has.
"""

from __future__ import annotations

import attrs

from asyncconsumer._caller.consumer_methods import ConsumerMethods
from asyncconsumer._caller.faces import AsyncFace
from asyncconsumer._caller.processing.core import OnSkip, ProcessingMetrics, ProcessingOptions
from asyncconsumer._caller.processing.driver import Handler, ProcessingDriver
from asyncconsumer._caller.processing.port import driver_over, run_process
from asyncconsumer._caller.processing.transactional import (
    AsyncTxHandler,
    AsyncUnits,
    Claims,
    Leases,
    run_transactionally,
    transactional_driver,
    transactional_options,
)
from asyncconsumer.errors import IllegalStateError
from asyncconsumer.records import ConsumerRecord
from asyncconsumer.stores.base import OffsetStore, open_store


class AsyncConsumer(AsyncFace[ConsumerRecord], ConsumerMethods):
    """A Kafka consumer for asyncio code; heartbeats and fetches keep going while your loop is busy.

    Config keys are Pythonic (``fetch_max_wait_ms``) or Java-style (``"fetch.max.wait.ms"``); see ``ConsumerConfig``.
    """

    _engine: ProcessingDriver | None = None

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
        self._engine = driver_over(self._core, handler, options)
        try:
            await run_process(self._core, self._engine)
        finally:
            self._engine = None

    async def process_transactionally(
        self,
        handler: AsyncTxHandler,
        offsets: str | OffsetStore,
        *,
        concurrency: int = 16,
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
        """Exactly once into a database: ``await handler(records, tx)`` for up to ``batch_size`` records of one
        partition, in offset order, with ``tx`` an open transaction of the offset store ``offsets`` (a URL such as
        ``"sqlite:///app.db"`` or ``"postgresql://..."``, or an ``OffsetStore``); the partition's next offset is
        written in that transaction and committed with what the handler wrote. Partitions run side by side (up to
        ``concurrency``), each partition's batches one after another.

        Positions come from the store: each newly assigned partition is claimed there (its lease epoch bumped, the
        fencing token) and sought to its stored offset (``auto_offset_reset`` where none is stored). A member whose
        partition was claimed by another since fails its transaction with ``OffsetStoreFencedError``, and nothing
        it wrote lands. A handler that raises rolls back; then ``retries``, ``on_error`` and ``on_skip(records,
        error)`` as in ``process`` (a skipped batch's offset is written alone). The finished offsets are mirrored to
        the group's committed offsets every ``mirror_interval_ms`` (None: never), for lag tools only: they are never
        read back. A store that cannot be reached is retried, pausing processing, for ``store_timeout_ms``, then
        ``OffsetStoreUnavailableError``. See the guide, "Exactly once into a database".
        """
        if self._engine is not None:
            raise IllegalStateError("process() is already running on this consumer")
        store = open_store(offsets, blocking=False)
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
        leases = Leases()
        units = AsyncUnits(store, leases, handler, on_skip, self._core.clock, store_timeout_ms)  # type: ignore[arg-type]
        options = attrs.evolve(options, on_skip=units.skip)
        self._engine, hook = transactional_driver(
            self._core, units.handle, options, Claims(store), leases, store_timeout_ms
        )
        try:
            await run_transactionally(self._core, self._engine, hook)
        finally:
            self._engine = None

    def stop_processing(self) -> None:
        """Makes ``process`` return once the records running settle and what finished is committed."""
        if self._engine is not None:
            self._engine.stop()

    def processing_metrics(self) -> ProcessingMetrics | None:
        """What ``process`` has waiting, running and finished (None when it is not running)."""
        return self._engine.metrics() if self._engine is not None else None
