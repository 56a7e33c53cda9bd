"""``AsyncConsumer``: the asyncio face of the consumer. It never touches a socket; the background thread does."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from asyncconsumer._caller import arrow_table
from asyncconsumer._caller.core import ConsumerCore, to_partition
from asyncconsumer._caller.processing.engine import (
    Handler,
    OnSkip,
    ProcessingEngine,
    ProcessingMetrics,
    ProcessingOptions,
)
from asyncconsumer._caller.processing.scheduler import Ordering
from asyncconsumer.config import ConsumerConfig, ConsumerSettings, Settings
from asyncconsumer.errors import ConfigError, IllegalStateError, KafkaError
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.metrics import ConsumerMetrics
from asyncconsumer.records import (
    ConsumerRecord,
    ConsumerRecords,
    GroupMetadata,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    TopicPartition,
)

if TYPE_CHECKING:
    import pyarrow

T = TypeVar("T")


async def _wait(future: Future[T]) -> T:
    return await asyncio.wrap_future(future)


class AsyncConsumer:
    """A Kafka consumer for asyncio code; heartbeats and fetches keep going while your loop is busy.

    Config keys are Pythonic (``fetch_max_wait_ms``) or Java-style (``"fetch.max.wait.ms"``); see ``ConsumerConfig``.
    """

    def __init__(self, config: Settings = None, /, **settings: Unpack[ConsumerSettings]) -> None:
        """``AsyncConsumer("host:9092", group_id="g")``, or a settings mapping with Java keys
        (``{"bootstrap.servers": ..., "group.id": ...}``). Safe to create outside a running loop; the background
        thread starts with the first awaited call that needs it."""
        self._core = ConsumerCore(ConsumerConfig.from_settings(config, **settings))
        self._pending: list[ConsumerRecord] = []
        self._engine: ProcessingEngine | None = None

    @classmethod
    def _over(cls, core: ConsumerCore) -> AsyncConsumer:
        """An asyncio face on ``core``, which another face made: how the blocking ``Consumer.process`` runs."""
        face = cls.__new__(cls)
        face._core = core
        face._pending = []
        face._engine = None
        return face

    @property
    def config(self) -> ConsumerConfig:
        return self._core.config

    # --- lifecycle -------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Starts the background thread now; optional, as every call that needs it starts it."""
        self._core.start()

    async def close(self, timeout_ms: int | None = None) -> None:
        """Stops the background thread; returns within ``timeout_ms`` (default 30 s) even if brokers are gone."""
        timeout = 30_000 if timeout_ms is None else timeout_ms
        deadline = self._core.clock.now_ms() + timeout
        if self._core.running:
            await self._before_leaving()
        future = self._core.close(timeout)
        if future is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout / 1000 + 0.5):  # not wait_for: 3.11's can swallow a cancel
                    await asyncio.wrap_future(future)
        remaining = (deadline - self._core.clock.now_ms()) / 1000 + 0.5
        await asyncio.to_thread(self._core.finish_close, remaining)

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # --- assignment ------------------------------------------------------------------------------------------
    async def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Replaces the manual assignment; new partitions start per ``auto_offset_reset`` unless sought."""
        await _wait(self._core.assign(partitions))

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned to this consumer now, by ``assign`` or by its group."""
        return self._core.subscriptions.assigned()

    # --- positions -------------------------------------------------------------------------------------------
    async def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """The next ``poll`` returns ``partition`` from ``offset``."""
        await _wait(self._core.seek(partition, offset))

    async def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Evaluated lazily, like Java: the position is looked up on the next ``poll`` or ``position``."""
        await _wait(self._core.reset_positions(partitions, "earliest"))

    async def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Evaluated lazily, like Java: the next ``poll`` starts after the last record (the high watermark, or the last
        stable offset under ``read_committed``)."""
        await _wait(self._core.reset_positions(partitions, "latest"))

    async def position(self, partition: TopicPartition | tuple[str, int], timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll`` will return for ``partition``."""
        return await _wait(self._core.position(partition, timeout_ms))

    async def pause(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Stops fetching ``partitions`` until ``resume``; their positions and anything buffered for them are kept."""
        await _wait(self._core.set_paused(partitions, True))

    async def resume(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Fetches ``partitions`` again after ``pause``."""
        await _wait(self._core.set_paused(partitions, False))

    def paused(self) -> set[TopicPartition]:
        """The partitions paused now."""
        return self._core.subscriptions.paused()

    def metrics(self) -> ConsumerMetrics:
        """A snapshot: records and bytes consumed (totals, rates), fetch latency, buffered bytes, per-partition
        position and lag, rebalances, heartbeat age, coordinator, connections. Cheap; safe to call any time. What the
        background knows is as of its last loop iteration, never older than the records a ``poll`` returned."""
        return self._core.metrics()

    def highwater(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        """The high watermark seen in the last fetch of ``partition`` (None before any)."""
        return self._core.subscriptions.high_watermark(to_partition(partition))

    # --- offsets and metadata --------------------------------------------------------------------------------
    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition (ListOffsets ``earliest``)."""
        return await _wait(self._core.edge_offsets(partitions, latest=False, timeout_ms=timeout_ms))

    async def end_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (ListOffsets ``latest``; the last stable offset under
        ``read_committed``)."""
        return await _wait(self._core.edge_offsets(partitions, latest=True, timeout_ms=timeout_ms))

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given one, per partition (None if there is none)."""
        return await _wait(self._core.offsets_for_times(timestamps, timeout_ms))

    async def topics(self, timeout_ms: int | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the cluster has, with its partitions."""
        return await _wait(self._core.topic_metadata(None, timeout_ms))

    async def partitions_for(self, topic: str, timeout_ms: int | None = None) -> list[PartitionInfo]:
        """The partitions of ``topic``; empty when the topic does not exist."""
        result = await _wait(self._core.topic_metadata(topic, timeout_ms))
        return result.get(topic, [])

    # --- consuming -------------------------------------------------------------------------------------------
    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords:
        """Records that have arrived, waiting up to ``timeout_ms`` for the first; raises what the background hit.

        Rebalance listener callbacks run here, before records are returned. Raises ``IllegalStateError`` when
        nothing is subscribed or assigned. Cancel the task to interrupt it: nothing consumed is lost.
        """
        core = self._core
        deadline = core.begin_poll(timeout_ms, max_records)
        return await self._poll_until(deadline, lambda d: core.poll_step(max_records, d), bool)

    async def poll_arrow(
        self, timeout_ms: float = 0, max_records: int | None = None, include_headers: bool = False
    ) -> pyarrow.Table:
        """``poll`` as one ``pyarrow.Table``, decoded with no Python object per record (see ``Consumer.poll_arrow``).

        Columns: ``topic`` (dictionary-encoded), ``partition``, ``offset``, ``timestamp`` (ms, UTC),
        ``timestamp_type``, ``key`` and ``value`` (binary, nulls kept), and with ``include_headers`` ``headers`` (a list
        of ``{key, value}``). Positions move past the rows returned, as with ``poll``; deserializers do not apply.
        Needs pyarrow (the ``arrow`` extra): ``ImportError`` naming it otherwise, before anything is consumed.
        """
        arrow_table.require_pyarrow()
        core = self._core
        deadline = core.begin_poll(timeout_ms, max_records)
        return await self._poll_until(
            deadline, lambda d: core.poll_arrow_step(max_records, include_headers, d), lambda t: t.num_rows > 0
        )

    async def _poll_until(
        self, deadline: int, step: Callable[[int], tuple[T, int, float]], got: Callable[[T], bool]
    ) -> T:
        """``step`` (with the callbacks run first) until it gets something or ``deadline`` passes, waiting for the
        background's signal in between: the loop of ``poll`` and ``poll_arrow``."""
        core = self._core
        while True:
            await self._run_callbacks()
            result, seen, wait_s = step(deadline)
            if got(result) or wait_s <= 0:
                return result
            await core.parts.signal.wait_async(seen, wait_s)

    async def _run_callbacks(self) -> None:
        for event in self._core.take_background_events():
            try:
                for callback in self._core.callbacks_for(event):
                    result = callback()
                    if inspect.isawaitable(result):
                        await result
            finally:
                self._core.callback_done(event)

    # --- groups ----------------------------------------------------------------------------------------------
    async def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join ``group_id`` for ``topics`` (or every topic whose name matches ``pattern``, checked at each metadata
        refresh); partitions are assigned in the background and show up in ``poll``."""
        await _wait(self._core.subscribe(topics, pattern, listener))

    async def unsubscribe(self) -> None:
        """Leaves the group; the listener's ``on_partitions_revoked`` runs first, after an auto-commit."""
        await self._before_leaving()
        await _wait(self._core.unsubscribe())

    async def _before_leaving(self) -> None:
        callbacks = self._core.revoke_callbacks_before_leaving()
        if not callbacks:
            return
        if self._core.auto_commit:
            with contextlib.suppress(KafkaError):
                await self.commit()
        for callback in callbacks:
            result = callback()
            if inspect.isawaitable(result):
                await result

    def subscription(self) -> set[str]:
        """The topics subscribed to; empty when the consumer is not subscribed."""
        return set(self._core.subscriptions.subscription or ())

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout_ms: int | None = None
    ) -> None:
        """Commits ``offsets`` (default: the current positions) and waits for the coordinator's answer."""
        await _wait(self._core.commit(offsets, timeout_ms))

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: Callable[[Mapping[TopicPartition, Any] | None, BaseException | None], Any] | None = None,
    ) -> None:
        """Starts a commit and returns at once; ``callback(offsets, error)`` runs inside a later ``poll``."""
        self._core.commit_async(offsets, callback)

    async def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offset of each partition (None where nothing was committed)."""
        return await _wait(self._core.committed(partitions, timeout_ms))

    def group_metadata(self) -> GroupMetadata:
        """The member's group id, generation (or epoch) and member id, as a transactional producer needs them."""
        return self._core.group_metadata()

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Rejoins the group at once (classic protocol; ignored, with a warning, under ``group_protocol="consumer"``,
        as Java does); returns without waiting."""
        self._core.enforce_rebalance(reason)

    def current_lag(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        """Records between the position and the partition's end as last fetched; None while unknown."""
        return self._core.current_lag(partition)

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

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self

    async def __anext__(self) -> ConsumerRecord:
        while not self._pending:
            if self._core.closed:
                raise StopAsyncIteration
            batch = await self.poll(timeout_ms=1_000)
            self._pending = list(batch.records())
            self._pending.reverse()
        return self._pending.pop()
