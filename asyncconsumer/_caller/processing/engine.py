"""``AsyncConsumer.process``: many records in flight, each lane in order, commits that cover only finished work.

One coroutine polls and hands records to the ``Scheduler``; each record (or batch) runs in a task of its own, and
its end frees its lane and starts what may start next. Per partition a ``PartitionProgress`` says what may be
committed: the finished prefix, and in the metadata the finished offsets past it. Commits go out every
``commit_interval_ms``, on revocation (after the partition's running records settle, within
``revoke_timeout_ms``), and when processing stops. Auto-commit of polled positions is off meanwhile: a position
says what was polled, not what was handled.

Backpressure: a partition with ``max_in_flight_per_partition`` records waiting or running is paused, and resumed at
half of that, so memory stays bounded whatever the backlog.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, Protocol

import attrs

from asyncconsumer._caller.processing.progress import PartitionProgress
from asyncconsumer._caller.processing.scheduler import Ordering, Scheduler
from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError, KafkaError
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.records import ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition

log = get_logger("asyncconsumer.processing")

Handler = Callable[[Any], Awaitable[Any]]
"""An async callable taking one record, or a list of records when ``batch_size`` is set."""

OnSkip = Callable[[Any, BaseException], Any]
"""Called with the record (or batch) and its last error when ``on_error="skip"`` gives up on it; may be async."""


class ProcessingConsumer(Protocol):
    """What the engine needs of a consumer (``AsyncConsumer`` has it; unit tests drive a fake)."""

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords: ...
    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None) -> None: ...
    async def committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]: ...
    async def seek(self, partition: TopicPartition, offset: int) -> None: ...
    async def pause(self, *partitions: TopicPartition) -> None: ...
    async def resume(self, *partitions: TopicPartition) -> None: ...


@attrs.frozen
class ProcessingOptions:
    """``process``'s settings, checked once."""

    concurrency: int = 100
    ordering: Ordering = Ordering.KEY
    batch_size: int | None = None
    max_in_flight_per_partition: int = 1_000
    commit_interval_ms: int = 5_000
    revoke_timeout_ms: int = 30_000
    retries: int = 0
    retry_backoff_ms: int = 100
    on_error: Literal["stop", "skip"] = "stop"
    on_skip: OnSkip | None = None
    commits: bool = True
    """False without a consumer group: nothing to commit to."""

    def __attrs_post_init__(self) -> None:
        for name in ("concurrency", "max_in_flight_per_partition", "commit_interval_ms"):
            if getattr(self, name) < 1:
                raise ConfigError(name, f"must be at least 1, got {getattr(self, name)!r}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError("batch_size", f"must be at least 1 (or None), got {self.batch_size!r}")
        for name in ("revoke_timeout_ms", "retries", "retry_backoff_ms"):
            if getattr(self, name) < 0:
                raise ConfigError(name, f"must be at least 0, got {getattr(self, name)!r}")
        if self.on_error not in ("stop", "skip"):
            raise ConfigError("on_error", f"must be 'stop' or 'skip', got {self.on_error!r}")


@attrs.frozen
class ProcessingMetrics:
    """A snapshot of ``process``: what waits, what runs, what finished, and how far commits trail."""

    running: int
    waiting: int
    completed: int
    failed: int
    """Records (or batches) whose handler raised after its retries."""
    skipped: int
    retries: int
    commit_lag: int
    """Records received and not yet inside a committable prefix, over every partition."""
    paused: frozenset[TopicPartition]
    handler_seconds_avg: float


class ProcessingEngine:
    """One run of ``process`` over ``consumer``.

    ``concurrency`` worker coroutines take records from the scheduler and await the handler; an idle worker waits
    on a future of its own, so new work wakes exactly as many workers as it can keep busy, and no task is created
    per record. A worker yields to the loop every ``_YIELD_EVERY`` records, so a handler that never awaits does not
    starve polling.
    """

    _YIELD_EVERY = 64

    def __init__(self, consumer: ProcessingConsumer, handler: Handler, options: ProcessingOptions) -> None:
        self._consumer = consumer
        self._handler = handler
        self._options = options
        self._scheduler = Scheduler(options.ordering)
        self._progress: dict[TopicPartition, PartitionProgress] = {}
        self._committed: dict[TopicPartition, tuple[int, str]] = {}
        self._workers: set[asyncio.Task[None]] = set()
        self._idle: collections.deque[asyncio.Future[None]] = collections.deque()
        self._in_flight: dict[int, tuple[list[ConsumerRecord], asyncio.Future[None], asyncio.Task[None]]] = {}
        """Units running, by ``id``: their records, a future that ends with them, and the worker running them."""
        self._background: set[asyncio.Task[None]] = set()
        self._paused: set[TopicPartition] = set()
        self._stop = asyncio.Event()
        self._closing = False
        self._error: BaseException | None = None
        self._completed = self._failed = self._skipped = self._retries = 0
        self._handler_seconds = 0.0

    # --- the caller's controls -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ends ``run`` after the records running settle and the finished work is committed."""
        self._stop.set()

    def metrics(self) -> ProcessingMetrics:
        ends = self._completed + self._failed + self._skipped
        return ProcessingMetrics(
            running=self._scheduler.running,
            waiting=self._scheduler.waiting,
            completed=self._completed,
            failed=self._failed,
            skipped=self._skipped,
            retries=self._retries,
            commit_lag=sum(p.pending for p in self._progress.values()),
            paused=frozenset(self._paused),
            handler_seconds_avg=self._handler_seconds / ends if ends else 0.0,
        )

    @property
    def rebalance_hook(self) -> ConsumerRebalanceListener:
        """What must run when partitions come and go, before the user's listener."""
        return _Hook(self)

    # --- the loop --------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Polls, dispatches and commits until ``stop``, cancellation or a handler error under ``on_error="stop"``;
        then lets the running records settle, commits what finished, and raises the error, if any."""
        next_commit = time.monotonic() + self._options.commit_interval_ms / 1000
        log.info("processing.started", concurrency=self._options.concurrency, ordering=self._options.ordering.value)
        for _ in range(self._options.concurrency):
            self._spawn_worker()
        try:
            while not self._stop.is_set():
                # Before polling, not right after: the workers have had their turn at what the last poll brought.
                await self._apply_backpressure()
                # at most the bound per poll: a partition just below it ends at most twice the bound
                records = await self._consumer.poll(
                    timeout_ms=100, max_records=self._options.max_in_flight_per_partition
                )
                await self._receive(records)
                self._wake_idle()
                await asyncio.sleep(0)
                if time.monotonic() >= next_commit:
                    await self._commit(self._progress)
                    next_commit = time.monotonic() + self._options.commit_interval_ms / 1000
        finally:
            self._stop.set()
            await self._settle(list(self._in_flight), self._options.revoke_timeout_ms / 1000)
            await self._stop_workers()
            with contextlib.suppress(KafkaError):
                await self._commit(self._progress)
            # Positions back to what was handled: polled records that never ran are polled again by whatever the
            # caller does next, and an auto-commit of positions afterwards cannot skip them.
            for tp, progress in self._progress.items():
                with contextlib.suppress(KafkaError):
                    await self._consumer.seek(tp, progress.committable)
            log.info("processing.stopped", completed=self._completed, failed=self._failed, skipped=self._skipped)
        if self._error is not None:
            raise self._error

    async def _receive(self, records: ConsumerRecords) -> None:
        unknown = [tp for tp in records if tp not in self._progress]
        if unknown:
            committed = await self._consumer.committed(unknown) if self._options.commits else {}
            for tp in unknown:
                found = committed.get(tp)
                first = records[tp][0].offset
                self._progress[tp] = (
                    PartitionProgress(found.offset, found.metadata) if found is not None else PartitionProgress(first)
                )
        for tp, batch in records.items():
            progress = self._progress[tp]
            for record in batch:
                if progress.receive(record.offset):
                    self._scheduler.add(record)

    # --- the workers -----------------------------------------------------------------------------------------
    def _spawn_worker(self) -> None:
        worker = asyncio.ensure_future(self._work())
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)

    def _wake_idle(self) -> None:
        ready = self._scheduler.ready
        while self._idle and ready > 0:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(None)
                ready -= 1

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        assert me is not None
        size = self._options.batch_size or 1
        since_yield = 0
        while not self._closing:
            unit = [] if self._stop.is_set() else self._scheduler.take(size)
            if not unit:
                waiter = loop.create_future()
                self._idle.append(waiter)
                await waiter
                continue
            ended = loop.create_future()
            self._in_flight[id(unit)] = (unit, ended, me)
            try:
                await self._handle(unit)
            except asyncio.CancelledError:
                if not self._closing:  # abandoned past the deadline: another worker takes this one's place
                    self._spawn_worker()
                raise
            except Exception as exc:  # on_skip raised, say: stop, and say why
                if self._error is None:
                    self._error = exc
                self._stop.set()
            finally:
                del self._in_flight[id(unit)]
                ended.set_result(None)
                for record in unit:
                    self._scheduler.done(record)
                self._ease(unit[0])
                self._wake_idle()
            since_yield += 1
            if since_yield >= self._YIELD_EVERY:
                since_yield = 0
                await asyncio.sleep(0)

    async def _stop_workers(self) -> None:
        self._closing = True
        for waiter in self._idle:
            if not waiter.done():
                waiter.set_result(None)
        self._idle.clear()
        for worker in list(self._workers):
            worker.cancel()
        if self._workers:
            await asyncio.wait(list(self._workers))

    async def _handle(self, unit: list[ConsumerRecord]) -> None:
        argument: Any = unit if self._options.batch_size is not None else unit[0]
        attempt = 0
        started = time.perf_counter()
        try:
            while True:
                try:
                    await self._handler(argument)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if attempt < self._options.retries:
                        attempt += 1
                        self._retries += 1
                        log.info(
                            "processing.retry",
                            partition=f"{unit[0].topic}-{unit[0].partition}",
                            offset=unit[0].offset,
                            attempt=attempt,
                            error=repr(exc),
                        )
                        await asyncio.sleep(self._options.retry_backoff_ms * 2 ** (attempt - 1) / 1000)
                        continue
                    await self._give_up(unit, argument, exc)
                    return
                self._completed += 1
                self._complete(unit)
                return
        finally:
            self._handler_seconds += time.perf_counter() - started

    async def _give_up(self, unit: list[ConsumerRecord], argument: Any, error: Exception) -> None:
        first = unit[0]
        where = {"partition": f"{first.topic}-{first.partition}", "offset": first.offset, "error": repr(error)}
        if self._options.on_error == "skip":
            if self._options.on_skip is not None:
                result = self._options.on_skip(argument, error)
                if inspect.isawaitable(result):
                    await result
            self._skipped += 1
            log.warning("processing.skipped", **where)
            self._complete(unit)
            return
        self._failed += 1
        log.error("processing.failed", **where)
        if self._error is None:
            self._error = error
        self._stop.set()  # the record stays unfinished: no commit covers it

    def _complete(self, unit: list[ConsumerRecord]) -> None:
        for record in unit:
            progress = self._progress.get(TopicPartition(record.topic, record.partition))
            if progress is not None:  # None: the partition was lost meanwhile
                progress.complete(record.offset)

    # --- backpressure ----------------------------------------------------------------------------------------
    async def _apply_backpressure(self) -> None:
        bound = self._options.max_in_flight_per_partition
        full = [tp for tp in self._progress if tp not in self._paused and self._scheduler.load(tp) >= bound]
        if full:
            self._paused.update(full)  # before the await: the workers may drain them meanwhile, and resume them
            await self._consumer.pause(*full)
        eased = [tp for tp in self._paused if self._scheduler.load(tp) <= bound // 2]
        if eased:
            self._paused.difference_update(eased)
            await self._consumer.resume(*eased)

    def _ease(self, record: ConsumerRecord) -> None:
        """Resumes ``record``'s partition as soon as its load is down to half the bound, not at the next poll:
        a poll of paused partitions only would wait its whole timeout while the workers run dry."""
        tp = TopicPartition(record.topic, record.partition)
        if tp in self._paused and self._scheduler.load(tp) <= self._options.max_in_flight_per_partition // 2:
            self._paused.discard(tp)
            resuming = asyncio.ensure_future(self._consumer.resume(tp))
            self._background.add(resuming)
            resuming.add_done_callback(self._background.discard)

    # --- commits ---------------------------------------------------------------------------------------------
    async def _commit(self, partitions: Iterable[TopicPartition]) -> None:
        if not self._options.commits:
            return
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp in partitions:
            progress = self._progress.get(tp)
            if progress is None:
                continue
            now = (progress.committable, progress.metadata())
            if self._committed.get(tp) != now:
                offsets[tp] = OffsetAndMetadata(*now)
        if not offsets:
            return
        try:
            await self._consumer.commit(offsets)
        except KafkaError as exc:  # the next interval, revocation or stop tries again
            log.warning("processing.commit_failed", partitions=len(offsets), error=str(exc))
            return
        for tp, committed in offsets.items():
            self._committed[tp] = (committed.offset, committed.metadata)

    async def _settle(self, units: list[int], timeout_s: float) -> None:
        """Waits for the running ``units`` up to ``timeout_s``, then cancels their workers: their records stay
        unfinished, so no commit covers them and the next owner handles them again."""
        entries = [self._in_flight[u] for u in units if u in self._in_flight]
        if not entries:
            return
        _, late = await asyncio.wait([ended for _, ended, _ in entries], timeout=timeout_s)
        if late:
            log.warning("processing.abandoned", records=sum(len(unit) for unit, ended, _ in entries if ended in late))
            for _, ended, worker in entries:
                if ended in late:
                    worker.cancel()
            await asyncio.wait(late)

    # --- rebalances (run inside poll, before the user's listener) ----------------------------------------------
    async def revoked(self, partitions: set[TopicPartition]) -> None:
        """Drop what waits, let what runs settle (within ``revoke_timeout_ms``), commit the finished prefix, and
        rewind the position to it, in case the partition comes back to this member."""
        dropped = self._scheduler.revoke(partitions)
        running = [
            key
            for key, (unit, _, _) in self._in_flight.items()
            if TopicPartition(unit[0].topic, unit[0].partition) in partitions
        ]
        await self._settle(running, self._options.revoke_timeout_ms / 1000)
        await self._commit(partitions)
        for tp in partitions:
            progress = self._progress.pop(tp, None)
            self._committed.pop(tp, None)
            self._paused.discard(tp)
            if progress is not None:
                with contextlib.suppress(KafkaError):
                    await self._consumer.seek(tp, progress.committable)
        log.info("processing.revoked", partitions=len(partitions), dropped=len(dropped), running=len(running))

    def lost(self, partitions: set[TopicPartition]) -> None:
        """The partitions are another member's already: drop their state; nothing may be committed for them."""
        self._scheduler.revoke(partitions)
        for tp in partitions:
            self._progress.pop(tp, None)
            self._committed.pop(tp, None)
            self._paused.discard(tp)


class _Hook(ConsumerRebalanceListener):
    def __init__(self, engine: ProcessingEngine) -> None:
        self._engine = engine

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        await self._engine.revoked(partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._engine.lost(partitions)
