"""``Consumer``: the blocking face, for scripts and PySpark; it talks to the same background thread.

Heartbeats and fetches run on that thread, not on calls into this object, so a slow caller is not a dead one.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from asyncconsumer._caller import arrow_table
from asyncconsumer._caller.core import ConsumerCore, to_partition
from asyncconsumer._caller.processing.engine import OnSkip, ProcessingMetrics
from asyncconsumer.config import ConsumerConfig, ConsumerSettings, Settings
from asyncconsumer.errors import KafkaError
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


async def _awaited(awaitable: Awaitable[Any]) -> None:
    await awaitable


class Consumer:
    """A blocking Kafka consumer with the same methods as ``AsyncConsumer``."""

    def __init__(self, config: Settings = None, /, **settings: Unpack[ConsumerSettings]) -> None:
        """``Consumer("host:9092", group_id="g")``, or ``Consumer({"bootstrap.servers": "host:9092", "group.id":
        "g"})`` with Java keys as confluent-kafka takes them. Usable at once: the background thread starts with the
        first call that needs it."""
        self._core = ConsumerCore(ConsumerConfig.from_settings(config, **settings))
        self._processing: tuple[Any, asyncio.AbstractEventLoop] | None = None

    def _wait(self, future: Future[T], timeout_ms: int | None = None) -> T:
        return self._core.wait(future, timeout_ms)

    @property
    def config(self) -> ConsumerConfig:
        return self._core.config

    def start(self) -> None:
        """Starts the background thread now; optional, as every call that needs it starts it."""
        self._core.start()

    def close(self, timeout_ms: int | None = None) -> None:
        """Leaves the group (after the revoke callback and an auto-commit) and stops the background thread, within
        ``timeout_ms`` (default 30 s) even if the brokers are gone. A no-op on a consumer never used or closed."""
        timeout = 30_000 if timeout_ms is None else timeout_ms
        deadline = self._core.clock.now_ms() + timeout
        if self._core.running:
            self._before_leaving()
        future = self._core.close(timeout)
        if future is not None:
            with contextlib.suppress(TimeoutError):  # the close deadline passed: finish_close still joins
                future.result(timeout / 1000 + 0.5)
        self._core.finish_close((deadline - self._core.clock.now_ms()) / 1000 + 0.5)

    def __enter__(self) -> Consumer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Replaces the manual assignment; new partitions start per ``auto_offset_reset`` unless sought."""
        self._wait(self._core.assign(partitions))

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned to this consumer now, by ``assign`` or by its group."""
        return self._core.subscriptions.assigned()

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """The next ``poll`` returns ``partition`` from ``offset``."""
        self._wait(self._core.seek(partition, offset))

    def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Evaluated lazily, like Java: the position is looked up on the next ``poll`` or ``position``."""
        self._wait(self._core.reset_positions(partitions, "earliest"))

    def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Evaluated lazily, like Java: the next ``poll`` starts after the last record (the high watermark, or the last
        stable offset under ``read_committed``)."""
        self._wait(self._core.reset_positions(partitions, "latest"))

    def position(self, partition: TopicPartition | tuple[str, int], timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll`` will return for ``partition``."""
        return self._wait(self._core.position(partition, timeout_ms), timeout_ms)

    def pause(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Stops fetching ``partitions`` until ``resume``; their positions and anything buffered for them are kept."""
        self._wait(self._core.set_paused(partitions, True))

    def resume(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Fetches ``partitions`` again after ``pause``."""
        self._wait(self._core.set_paused(partitions, False))

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

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition (ListOffsets ``earliest``)."""
        return self._wait(self._core.edge_offsets(partitions, latest=False, timeout_ms=timeout_ms), timeout_ms)

    def end_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (ListOffsets ``latest``; the last stable offset under
        ``read_committed``)."""
        return self._wait(self._core.edge_offsets(partitions, latest=True, timeout_ms=timeout_ms), timeout_ms)

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given one, per partition (None if there is none)."""
        return self._wait(self._core.offsets_for_times(timestamps, timeout_ms), timeout_ms)

    def topics(self, timeout_ms: int | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the cluster has, with its partitions."""
        return self._wait(self._core.topic_metadata(None, timeout_ms), timeout_ms)

    def partitions_for(self, topic: str, timeout_ms: int | None = None) -> list[PartitionInfo]:
        """The partitions of ``topic``; empty when the topic does not exist."""
        return self._wait(self._core.topic_metadata(topic, timeout_ms), timeout_ms).get(topic, [])

    def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords:
        """Records that have arrived, waiting up to ``timeout_ms`` for the first; raises what the background hit.

        Rebalance listener callbacks run here, before records are returned. Raises ``IllegalStateError`` when
        nothing is subscribed or assigned, ``WakeupError`` after ``wakeup()``.
        """
        core = self._core
        deadline = core.begin_poll(timeout_ms, max_records)
        return self._poll_until(deadline, lambda d: core.poll_step(max_records, d), bool)

    def poll_arrow(
        self, timeout_ms: float = 0, max_records: int | None = None, include_headers: bool = False
    ) -> pyarrow.Table:
        """``poll`` as one ``pyarrow.Table``, decoded with no Python object per record.

        Columns: ``topic`` (dictionary-encoded), ``partition``, ``offset``, ``timestamp`` (ms, UTC),
        ``timestamp_type``, ``key`` and ``value`` (binary, nulls kept), and with ``include_headers`` ``headers`` (a list
        of ``{key, value}``). Same semantics as ``poll``: positions move past the rows returned, so ``commit()``
        commits exactly them; seeks, pauses, rebalances, ``read_committed`` and errors behave alike (a corrupt record
        raises at its offset after the rows before it were returned). Deserializers do not apply: keys and values stay
        bytes. A call takes at most the fetches buffered when it starts (up to ``max_records`` rows), so a table
        stays within about ``fetch_buffer_bytes``. Needs pyarrow (the ``arrow`` extra): ``ImportError`` naming it
        otherwise, before anything is consumed.
        """
        arrow_table.require_pyarrow()
        core = self._core
        deadline = core.begin_poll(timeout_ms, max_records)
        return self._poll_until(
            deadline, lambda d: core.poll_arrow_step(max_records, include_headers, d), lambda t: t.num_rows > 0
        )

    def _poll_until(self, deadline: int, step: Callable[[int], tuple[T, int, float]], got: Callable[[T], bool]) -> T:
        """``step`` (with the callbacks run first) until it gets something or ``deadline`` passes, waiting for the
        background's signal in between: the loop of ``poll`` and ``poll_arrow``."""
        core = self._core
        while True:
            core.check_wakeup()
            self._run_callbacks()
            result, seen, wait_s = step(deadline)
            if got(result) or wait_s <= 0:
                return result
            core.parts.signal.wait(seen, wait_s)

    def _run_callbacks(self) -> None:
        for event in self._core.take_background_events():
            try:
                for callback in self._core.callbacks_for(event):
                    result = callback()
                    if inspect.isawaitable(result):
                        asyncio.run(_awaited(result))
            finally:
                self._core.callback_done(event)

    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join ``group_id`` for ``topics`` (or every topic whose name matches ``pattern``); partitions are assigned in
        the background and show up in ``poll``."""
        self._wait(self._core.subscribe(topics, pattern, listener))

    def unsubscribe(self) -> None:
        """Leaves the group; the listener's ``on_partitions_revoked`` runs first, after an auto-commit."""
        self._before_leaving()
        self._wait(self._core.unsubscribe())

    def _before_leaving(self) -> None:
        callbacks = self._core.revoke_callbacks_before_leaving()
        if not callbacks:
            return
        if self._core.auto_commit:
            with contextlib.suppress(KafkaError):
                self.commit()
        for callback in callbacks:
            result = callback()
            if inspect.isawaitable(result):
                asyncio.run(_awaited(result))

    def subscription(self) -> set[str]:
        """The topics subscribed to; empty when the consumer is not subscribed."""
        return set(self._core.subscriptions.subscription or ())

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout_ms: int | None = None
    ) -> None:
        """Commits ``offsets`` (default: the current positions) and waits for the coordinator's answer."""
        self._wait(self._core.commit(offsets, timeout_ms), timeout_ms)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: Callable[[Mapping[TopicPartition, Any] | None, BaseException | None], Any] | None = None,
    ) -> None:
        """Starts a commit and returns at once; ``callback(offsets, error)`` runs inside a later ``poll``."""
        self._core.commit_async(offsets, callback)

    def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offset of each partition (None where nothing was committed)."""
        return self._wait(self._core.committed(partitions, timeout_ms), timeout_ms)

    def group_metadata(self) -> GroupMetadata:
        """The member's group id, generation (or epoch) and member id, as a transactional producer needs them."""
        return self._core.group_metadata()

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

    def wakeup(self) -> None:
        """Interrupts ``poll`` (or another blocking call) in progress, or the next one, with ``WakeupError``; the
        only method that may be called from another thread (Java's ``wakeup``). Nothing consumed is lost."""
        self._core.wakeup()

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Rejoins the group at once (classic protocol; ignored, with a warning, under ``group_protocol="consumer"``,
        as Java does); returns without waiting."""
        self._core.enforce_rebalance(reason)

    def current_lag(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        """Records between the position and the partition's end as last fetched; None while unknown."""
        return self._core.current_lag(partition)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while not self._core.closed:
            yield from self.poll(timeout_ms=1_000).records()
