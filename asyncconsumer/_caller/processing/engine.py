"""``AsyncConsumer.process``: many records in flight, each lane in order, commits that cover only finished work.

One coroutine polls and hands records to the ``Scheduler``; ``concurrency`` worker coroutines take them, each
record (or batch) after the last of its lane, and await the handler. Per partition a ``PartitionProgress`` says what
may be committed: the finished prefix, and in the metadata the finished offsets past it. Commits go out every
``commit_interval_ms`` (beside the polling: one waiting for the coordinator holds up no record), on revocation
(after the partition's running records settle, within ``revoke_timeout_ms``), and when processing stops, one at a
time in the order they were made. Auto-commit of polled positions is off meanwhile: a position says what was polled, not
what was handled.

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
from asyncconsumer.metrics import RateMeter
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
    """A snapshot of ``process``: what waits, what runs, what finished, how fast, and how far commits trail."""

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
    """The mean handler time since the start, over the timed records (one in eight) or batches."""
    completed_per_second: float = 0.0
    """Records (or batches) finished, skipped ones included, per second over the last few seconds."""
    handler_seconds_p50: float = 0.0
    """The median handler time over the last ``LATENCY_SAMPLES`` timed records or batches (one in eight is timed;
    a batch under ``batch_size``, every one)."""
    handler_seconds_p99: float = 0.0
    handler_seconds_max: float = 0.0
    """The longest of those."""


LATENCY_SAMPLES = 1024
"""Handler times kept for the percentiles: the most recent ones (a power of two, for the ring's index)."""

_TIMED_MASK = 7
"""A worker times one record in eight (``turn & _TIMED_MASK == 0``): two clock reads per record are a tenth of
what the engine costs a handler that returns at once, and a sample of one in eight gives the same percentiles."""


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


class ProcessingEngine:
    """One run of ``process`` over ``consumer``.

    ``concurrency`` worker coroutines take records from the scheduler and await the handler; no task or future is
    made per record. An idle worker waits on a future of its own, and new work wakes one at a time: a worker that
    takes a record while more are ready wakes the next, so a handler that awaits I/O brings every worker it can
    use into play within a few turns of the loop, while one that never awaits keeps the work on the worker that
    has it. A worker yields to the loop every ``_YIELD_EVERY`` records, so such a handler does not starve polling.
    """

    _YIELD_EVERY = 64

    def __init__(self, consumer: ProcessingConsumer, handler: Handler, options: ProcessingOptions) -> None:
        self._consumer = consumer
        self._handler = handler
        self._options = options
        self._scheduler = Scheduler(options.ordering)
        self._progress: dict[TopicPartition, PartitionProgress] = {}
        self._committed: dict[TopicPartition, tuple[int, str]] = {}
        self._workers: list[asyncio.Task[None] | None] = [None] * options.concurrency
        self._current: list[Any] = [None] * options.concurrency
        """Per worker, the unit it runs: a ``(lane, record)`` pair, or with ``batch_size`` a list of them."""
        self._idle: collections.deque[asyncio.Future[bool]] = collections.deque()
        self._waking = 0
        """Idle workers woken and not yet running: while one is on its way, no other is woken."""
        self._starved: asyncio.Future[None] | None = None
        """Made while the poll loop waits for the workers to run out of ready records; the first idle one ends it."""
        self._ended: asyncio.Future[None] | None = None
        """Made while something waits for running units to end (``_settle``); any unit's end completes it."""
        self._background: set[asyncio.Task[None]] = set()
        self._interval_commit: asyncio.Task[None] | None = None
        """The interval's commit while it waits for the coordinator: polling and handling go on meanwhile (a
        coordinator that does not answer must not stop the partitions whose leaders do), one such commit at a time."""
        self._commit_lock = asyncio.Lock()
        """One commit at a time, in the order they were asked for (a revocation's waits for the interval's under
        way), each taking the offsets when its turn comes: commits land in order and never move back."""
        self._paused: set[TopicPartition] = set()
        self._stopped = False
        self._closing = False
        self._error: BaseException | None = None
        self._completed = self._failed = self._skipped = self._retries = 0
        self._handler_seconds = 0.0
        self._latencies = [0.0] * LATENCY_SAMPLES
        self._latency_count = 0
        self._rate = RateMeter(window_s=5.0)
        """Units finished (completed or skipped), sampled at each poll: ``completed_per_second``."""

    # --- the caller's controls -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ends ``run`` after the records running settle and the finished work is committed."""
        self._stopped = True
        self._wake_poller()

    def metrics(self) -> ProcessingMetrics:
        """A snapshot, safe from any thread (the blocking ``Consumer`` asks from its callers' threads): it copies
        each collection in one C-level call and changes nothing."""
        progress = list(self._progress.values())
        timed = self._latency_count
        recent = sorted(self._latencies[: min(timed, LATENCY_SAMPLES)])
        return ProcessingMetrics(
            running=self._scheduler.running,
            waiting=self._scheduler.waiting,
            completed=self._completed,
            failed=self._failed,
            skipped=self._skipped,
            retries=self._retries,
            commit_lag=sum(p.pending for p in progress),
            paused=frozenset(self._paused),
            handler_seconds_avg=self._handler_seconds / timed if timed else 0.0,
            completed_per_second=self._completed_per_second(),
            handler_seconds_p50=_percentile(recent, 0.5),
            handler_seconds_p99=_percentile(recent, 0.99),
            handler_seconds_max=recent[-1] if recent else 0.0,
        )

    def _completed_per_second(self) -> float:
        return self._rate.rates(_now_ms(), self._completed + self._skipped, 0)[0]

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
        for slot in range(self._options.concurrency):
            self._spawn_worker(slot)
        try:
            while not self._stopped:
                # No poll while records are ready to start and enough wait to keep every worker busy: more would
                # only wait (then pause) here, not in the fetch buffer. Fewer than that, and another poll may bring
                # keys that idle workers can start. Never longer than the poll timeout, so the consumer keeps
                # polling (and rebalancing) while slow handlers hold every worker.
                if self._scheduler.ready and self._scheduler.waiting >= self._options.concurrency:
                    await self._until_starved(0.1)
                await self._apply_backpressure()
                # at most the bound per poll: a partition just below it ends at most twice the bound
                records = await self._consumer.poll(
                    timeout_ms=100, max_records=self._options.max_in_flight_per_partition
                )
                await self._receive(records)
                self._wake_idle()
                await asyncio.sleep(0)
                self._rate.sample(_now_ms(), self._completed + self._skipped, 0)
                now = time.monotonic()
                if now >= next_commit and self._commit_idle():
                    self._interval_commit = asyncio.ensure_future(self._commit(self._progress))
                    next_commit = time.monotonic() + self._options.commit_interval_ms / 1000
        finally:
            self._stopped = True
            await self._settle(None, self._options.revoke_timeout_ms / 1000)
            await self._stop_workers()
            with contextlib.suppress(KafkaError):
                await self._commit_finished()
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
                progress = (
                    PartitionProgress(found.offset, found.metadata) if found is not None else PartitionProgress(first)
                )
                self._progress[tp] = self._scheduler.partition(tp).progress = progress
        for tp, batch in records.items():
            fresh = self._progress[tp].receive_all([record.offset for record in batch])
            if fresh is None:
                self._scheduler.add_all(self._scheduler.partition(tp), batch)
            elif fresh:
                handle = set(fresh)
                self._scheduler.add_all(self._scheduler.partition(tp), [r for r in batch if r.offset in handle])

    # --- the workers -----------------------------------------------------------------------------------------
    def _spawn_worker(self, slot: int) -> None:
        work = self._work if self._options.batch_size is None else self._work_batches
        worker = self._workers[slot] = asyncio.ensure_future(work(slot))
        worker.add_done_callback(self._worker_ended)

    def _worker_ended(self, worker: asyncio.Task[None]) -> None:
        """A worker ends by cancellation only; any other end is a bug here, and must stop ``run`` loudly."""
        if not worker.cancelled() and (error := worker.exception()) is not None:
            log.error("processing.worker_failed", error=repr(error))
            if self._error is None:
                self._error = error
            self._stopped = True

    def _wake_idle(self) -> None:
        """Wakes one idle worker when records are ready and none is on its way already (it wakes the next)."""
        while self._idle and not self._waking and self._scheduler.ready:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(True)
                self._waking += 1

    async def _work(self, slot: int) -> None:
        """A worker for single records: the path every record of a no-op handler takes, so kept lean."""
        loop = asyncio.get_running_loop()
        scheduler = self._scheduler
        take, done = scheduler.take_one, scheduler.done
        handler = self._handler
        current = self._current
        clock = time.perf_counter
        turn = 0
        started = 0.0
        while not self._closing:
            unit = None if self._stopped else take()
            if unit is None:
                await self._wait_idle(loop)
                continue
            if self._idle and not self._waking and scheduler.ready:
                self._wake_idle()
            lane, record = current[slot] = unit
            turn += 1
            timed = not turn & _TIMED_MASK
            if timed:
                started = clock()
            try:
                await handler(record)
            except asyncio.CancelledError:
                self._cancelled(slot)
                raise
            except Exception as exc:
                await self._handler_raised(slot, unit, record, exc)
            else:
                self._completed += 1
                progress = lane.partition.progress
                if progress is not None:
                    progress.complete(record.offset)
            finally:
                if timed:
                    self._timed(clock() - started)
                current[slot] = None
                done(lane)
                if self._paused:
                    self._ease(lane.partition.tp)
                if self._ended is not None:
                    self._unit_ended()
            if not turn & (self._YIELD_EVERY - 1):
                await asyncio.sleep(0)

    async def _work_batches(self, slot: int) -> None:
        """A worker for ``batch_size``: up to that many records of different lanes, handed over as one list."""
        loop = asyncio.get_running_loop()
        scheduler = self._scheduler
        batch_size = self._options.batch_size or 1
        since_yield = 0
        while not self._closing:
            unit = [] if self._stopped else scheduler.take(batch_size)
            if not unit:
                await self._wait_idle(loop)
                continue
            if self._idle and not self._waking and scheduler.ready:
                self._wake_idle()
            self._current[slot] = unit
            records = [record for _, record in unit]
            started = time.perf_counter()
            try:
                await self._handler(records)
            except asyncio.CancelledError:
                self._cancelled(slot)
                raise
            except Exception as exc:
                await self._handler_raised(slot, unit, records, exc)
            else:
                self._completed += 1
                self._complete(unit)
            finally:
                self._timed(time.perf_counter() - started)
                self._current[slot] = None
                for lane, _ in unit:
                    scheduler.done(lane)
                if self._paused:
                    for tp in {lane.partition.tp for lane, _ in unit}:
                        self._ease(tp)
                if self._ended is not None:
                    self._unit_ended()
            since_yield += 1
            if since_yield >= self._YIELD_EVERY:
                since_yield = 0
                await asyncio.sleep(0)

    async def _until_starved(self, timeout_s: float) -> None:
        """Returns once a worker finds nothing ready (or ``stop``), or after ``timeout_s``."""
        loop = asyncio.get_running_loop()
        self._starved = starved = loop.create_future()
        try:
            await asyncio.wait([starved], timeout=timeout_s)
        finally:
            self._starved = None

    def _wake_poller(self) -> None:
        if self._starved is not None and not self._starved.done():
            self._starved.set_result(None)

    def _timed(self, seconds: float) -> None:
        self._handler_seconds += seconds
        count = self._latency_count
        self._latencies[count & (LATENCY_SAMPLES - 1)] = seconds
        self._latency_count = count + 1

    async def _wait_idle(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._starved is not None:
            self._wake_poller()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._idle.append(waiter)
        if await waiter:
            self._waking -= 1

    def _cancelled(self, slot: int) -> None:
        if not self._closing:  # abandoned past the deadline: another worker takes this one's place
            self._spawn_worker(slot)

    def _unit_ended(self) -> None:
        if self._ended is not None and not self._ended.done():
            self._ended.set_result(None)

    async def _handler_raised(self, slot: int, unit: Any, argument: Any, error: Exception) -> None:
        try:
            await self._after_failure(unit, argument, error)
        except asyncio.CancelledError:
            self._cancelled(slot)
            raise
        except Exception as stop:  # on_skip raised, say: stop, and say why
            if self._error is None:
                self._error = stop
            self._stopped = True

    async def _stop_workers(self) -> None:
        self._closing = True
        for waiter in self._idle:
            if not waiter.done():
                waiter.set_result(False)
        self._idle.clear()
        workers = [worker for worker in self._workers if worker is not None]
        for worker in workers:
            worker.cancel()
        if workers:
            await asyncio.wait(workers)

    async def _after_failure(self, unit: Any, argument: Any, error: Exception) -> None:
        """The handler raised on its first attempt: retries with backoff, then completes, skips or stops."""
        first: ConsumerRecord = unit[1] if self._options.batch_size is None else unit[0][1]
        attempt = 0
        while attempt < self._options.retries:
            attempt += 1
            self._retries += 1
            log.info(
                "processing.retry",
                partition=f"{first.topic}-{first.partition}",
                offset=first.offset,
                attempt=attempt,
                error=repr(error),
            )
            await asyncio.sleep(self._options.retry_backoff_ms * 2 ** (attempt - 1) / 1000)
            try:
                await self._handler(argument)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = exc
                continue
            self._completed += 1
            self._complete(unit)
            return
        await self._give_up(unit, argument, first, error)

    async def _give_up(self, unit: Any, argument: Any, first: ConsumerRecord, error: Exception) -> None:
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
        self._stopped = True  # the record stays unfinished: no commit covers it

    def _complete(self, unit: Any) -> None:
        for lane, record in [unit] if self._options.batch_size is None else unit:
            progress = lane.partition.progress
            if progress is not None:
                progress.complete(record.offset)

    def _unit_partitions(self, unit: Any) -> set[TopicPartition]:
        pairs = [unit] if self._options.batch_size is None else unit
        return {lane.partition.tp for lane, _ in pairs}

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

    def _ease(self, tp: TopicPartition) -> None:
        """Resumes ``tp`` as soon as its load is down to half the bound, not at the next poll: a poll of paused
        partitions only would wait its whole timeout while the workers run dry."""
        if tp in self._paused and self._scheduler.load(tp) <= self._options.max_in_flight_per_partition // 2:
            self._paused.discard(tp)
            resuming = asyncio.ensure_future(self._consumer.resume(tp))
            self._background.add(resuming)
            resuming.add_done_callback(self._background.discard)

    # --- commits ---------------------------------------------------------------------------------------------
    def _commit_idle(self) -> bool:
        """No interval commit is waiting; one that ended with an error other than Kafka's raises it here."""
        task = self._interval_commit
        if task is None:
            return True
        if not task.done():
            return False
        self._interval_commit = None
        task.result()
        return True

    async def _commit_finished(self) -> None:
        """Until the interval's commit, if one waits, has its answer (raising what it raised but Kafka's errors)."""
        task = self._interval_commit
        if task is not None:
            self._interval_commit = None
            await task

    async def _commit(self, partitions: Iterable[TopicPartition]) -> None:
        if not self._options.commits:
            return
        async with self._commit_lock:
            await self._commit_now(partitions)

    async def _commit_now(self, partitions: Iterable[TopicPartition]) -> None:
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
            if tp in self._progress:  # not lost meanwhile (an interval commit runs beside poll)
                self._committed[tp] = (committed.offset, committed.metadata)

    def _running_slots(self, partitions: set[TopicPartition] | None) -> list[int]:
        return [
            slot
            for slot, unit in enumerate(self._current)
            if unit is not None and (partitions is None or not self._unit_partitions(unit).isdisjoint(partitions))
        ]

    async def _settle(self, partitions: set[TopicPartition] | None, timeout_s: float) -> int:
        """Waits for the units running on ``partitions`` (None: all) up to ``timeout_s``, then cancels their
        workers: their records stay unfinished, so no commit covers them and the next owner handles them again.
        Returns how many units were running when it started."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        running = len(self._running_slots(partitions))
        while True:
            slots = self._running_slots(partitions)
            if not slots:
                return running
            remaining = deadline - loop.time()
            if remaining <= 0:
                late = [worker for slot in slots if (worker := self._workers[slot]) is not None]
                records = sum(len(self._current[slot]) if self._options.batch_size else 1 for slot in slots)
                log.warning("processing.abandoned", records=records)
                for worker in late:
                    worker.cancel()
                if late:
                    await asyncio.wait(late)
                return running
            if self._ended is None or self._ended.done():
                self._ended = loop.create_future()
            await asyncio.wait([self._ended], timeout=remaining)

    # --- rebalances (run inside poll, before the user's listener) ----------------------------------------------
    async def revoked(self, partitions: set[TopicPartition]) -> None:
        """Drop what waits, let what runs settle (within ``revoke_timeout_ms``), commit the finished prefix, and
        rewind the position to it, in case the partition comes back to this member."""
        dropped = self._scheduler.revoke(partitions)
        running = await self._settle(set(partitions), self._options.revoke_timeout_ms / 1000)
        await self._commit(partitions)
        for tp in partitions:
            progress = self._progress.pop(tp, None)
            self._committed.pop(tp, None)
            self._paused.discard(tp)
            if progress is not None:
                with contextlib.suppress(KafkaError):
                    await self._consumer.seek(tp, progress.committable)
        log.info("processing.revoked", partitions=len(partitions), dropped=len(dropped), running=running)

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
