"""The asyncio driver of ``process``: the poll loop, ``concurrency`` worker coroutines and the consumer calls around
the sans-I/O ``ProcessingCore`` (``core.py``), on the injected clock.

One coroutine polls, feeds the records to the core, and commits when the core says one is due; the workers take
records (or batches) from the core and await the handler. Commits go to an ``OffsetSink`` (``commits.py``): the
group's committed offsets for ``process``. Auto-commit of polled positions is off meanwhile (``port.py``): a position
says what was polled, not what was handled.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from asyncconsumer._caller.processing.commits import CommitBatch, OffsetSink
from asyncconsumer._caller.processing.core import ProcessingCore, ProcessingMetrics, ProcessingOptions, Settlement, Unit
from asyncconsumer._clock import Clock
from asyncconsumer._logs import get_logger
from asyncconsumer.errors import CommitFailedError, KafkaError
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.records import ConsumerRecord, ConsumerRecords, TopicPartition

log = get_logger("asyncconsumer.processing")

Handler = Callable[[Any], Awaitable[Any]]
"""An async callable taking one record, or a list of records when ``batch_size`` is set."""


class ProcessingConsumer(Protocol):
    """What the driver does to a consumer (``port.ConsumerPort`` over a consumer's core; unit tests drive a fake)."""

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords: ...
    async def seek(self, partition: TopicPartition, offset: int) -> None: ...
    async def pause(self, *partitions: TopicPartition) -> None: ...
    async def resume(self, *partitions: TopicPartition) -> None: ...


_TIMED_MASK = 7
"""A worker times one record in eight (``turn & _TIMED_MASK == 0``): two clock reads per record are a tenth of
what ``process`` costs a handler that returns at once, and a sample of one in eight gives the same percentiles."""


class ProcessingDriver:
    """One run of ``process`` over ``consumer``: the core's decisions carried out with tasks and consumer calls.

    ``concurrency`` worker coroutines take records from the core and await the handler; no task or future is made
    per record. An idle worker waits on a future of its own, and new work wakes one at a time: a worker that takes
    a record while more are ready wakes the next, so a handler that awaits I/O brings every worker it can use into
    play within a few turns of the loop, while one that never awaits keeps the work on the worker that has it. A
    worker yields to the loop every ``_YIELD_EVERY`` records, so such a handler does not starve polling.
    """

    _YIELD_EVERY = 64

    def __init__(
        self,
        consumer: ProcessingConsumer,
        handler: Handler,
        options: ProcessingOptions,
        clock: Clock,
        sink: OffsetSink | None,
        core: ProcessingCore | None = None,
    ) -> None:
        self._consumer = consumer
        self._handler = handler
        self._options = options
        self._clock = clock
        self._sink = sink if options.commits else None
        self._turn = asyncio.Lock()
        """Held by the commit under way: commits go one at a time, in the order they were made."""
        self._interval: asyncio.Future[None] | None = None
        """The interval's commit under way, beside the polling (at most one)."""
        self.core = core if core is not None else ProcessingCore(options)
        self._workers: list[asyncio.Task[None] | None] = [None] * options.concurrency
        self._current: list[Unit | None] = [None] * options.concurrency
        """Per worker, the unit it runs."""
        self._idle: collections.deque[asyncio.Future[bool]] = collections.deque()
        self._waking = 0
        """Idle workers woken and not yet running: while one is on its way, no other is woken."""
        self._starved: asyncio.Future[None] | None = None
        """Made while the poll loop waits for the workers to run out of ready records; the first idle one ends it."""
        self._ended: asyncio.Future[None] | None = None
        """Made while something waits for running units to end (``_settle``); any unit's end completes it."""
        self._background: set[asyncio.Task[None]] = set()
        self._closing = False

    # --- the caller's controls -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ends ``run`` after the records running settle and the finished work is committed."""
        self.core.stop()
        self._wake_poller()

    def metrics(self) -> ProcessingMetrics:
        """The core's snapshot, safe from any thread."""
        return self.core.metrics(self._clock.now_ms())

    @property
    def rebalance_hook(self) -> ConsumerRebalanceListener:
        """What must run when partitions come and go, before the user's listener."""
        return _Hook(self)

    # --- the loop --------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Polls, dispatches and commits until ``stop``, cancellation or a handler error under ``on_error="stop"``;
        then lets the running records settle, commits what finished, and raises the error, if any."""
        core, clock, consumer = self.core, self._clock, self._consumer
        bound = self._options.max_in_flight_per_partition
        core.start(clock.now_ms())
        for slot in range(self._options.concurrency):
            self._spawn_worker(slot)
        try:
            while not core.stopping:
                now = clock.now_ms()
                # no poll while every worker has work: more would only wait (then pause) here; a worker idle while
                # records wait in lanes that others run may start a key a poll brings, and the poll keeps the
                # backpressure counting
                if core.saturated and not self._idle:
                    await self._until_starved((core.next_wakeup_ms(now) - now) / 1000)
                    now = clock.now_ms()
                full, eased = core.backpressure()
                if full:
                    await consumer.pause(*full)
                if eased:
                    await consumer.resume(*eased)
                # at most the bound per poll: a partition just below it ends at most twice the bound
                records = await consumer.poll(timeout_ms=max(0, core.next_wakeup_ms(now) - now), max_records=bound)
                unknown = core.unknown(records)
                core.receive(records, await self._sink.load(unknown) if unknown and self._sink is not None else None)
                self._wake_idle()
                await asyncio.sleep(0)
                # the interval's commit goes beside the polling, one at a time: a coordinator that does not answer
                # holds up no record of the partitions whose leaders do
                if core.tick(clock.now_ms()) is not None and (self._interval is None or self._interval.done()):
                    self._interval = asyncio.ensure_future(self._commit(None))
        finally:
            await self._settle(core.wind_down(clock.now_ms()))
            await self._stop_workers()
            if self._interval is not None:
                await asyncio.gather(self._interval, return_exceptions=True)
            await self._commit(None)
            for tp, offset in core.positions().items():
                with contextlib.suppress(KafkaError):
                    await consumer.seek(tp, offset)
            log.info("processing.stopped", completed=core.completed, failed=core.failed, skipped=core.skipped)
        if core.error is not None:
            raise core.error

    # --- the workers -----------------------------------------------------------------------------------------
    def _spawn_worker(self, slot: int) -> None:
        work = self._work if self._options.batch_size is None else self._work_batches
        worker = self._workers[slot] = asyncio.ensure_future(work(slot))
        worker.add_done_callback(functools.partial(self._worker_ended, slot))

    def _worker_ended(self, slot: int, worker: asyncio.Task[None]) -> None:
        """A worker ends by cancellation only; any other end is a bug here, and must stop ``run`` loudly (what it
        ran is unfinished: settling does not wait for it)."""
        if not worker.cancelled() and (error := worker.exception()) is not None:
            if self._workers[slot] is worker:
                self._current[slot] = None
            log.error("processing.worker_failed", error=repr(error))
            self.core.stop(error)
            self._wake_poller()
            self._unit_ended()

    def _wake_idle(self) -> None:
        """Wakes one idle worker when records are ready and none is on its way already (it wakes the next)."""
        scheduler = self.core.scheduler
        while self._idle and not self._waking and scheduler.ready:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(True)
                self._waking += 1

    async def _work(self, slot: int) -> None:
        """A worker for single records: the path every record of a no-op handler takes, so kept lean. It runs a
        lane's waiting records one after another (``succeeded_next``, up to the lane's streak) and hands the lane
        back after; ``current[slot]`` keeps the unit the turn started with, whose lane is what settling reads."""
        loop = asyncio.get_running_loop()
        core = self.core
        scheduler = core.scheduler
        take, succeeded, succeeded_next, paused = core.take_one, core.succeeded, core.succeeded_next, core.paused
        handler = self._handler
        current, idle = self._current, self._idle
        now_ns = self._clock.now_ns
        timed_mask, yield_mask = _TIMED_MASK, self._YIELD_EVERY - 1
        turn = started = 0
        while not self._closing:
            unit = None if core.stopping else take()
            if unit is None:
                await self._wait_idle(loop)
                continue
            if idle and not self._waking and scheduler.ready:
                self._wake_idle()
            current[slot] = unit
            lane, running = unit
            record: ConsumerRecord | None = running
            while record is not None:
                turn += 1
                timed = not turn & timed_mask
                if timed:
                    started = now_ns()
                try:
                    await handler(record)
                except BaseException as exc:  # no finally: the path of every record stays free of a flag
                    await self._not_finished(slot, (lane, record), record, exc, started if timed else None)
                    break
                if timed:
                    core.timed((now_ns() - started) / 1e9)
                if core.stopping:
                    succeeded(lane, record)
                    record = None
                else:
                    record = succeeded_next(lane, record)
                if paused and core.eased(tp := lane.partition.tp):
                    self._resume((tp,))
                if record is None:
                    current[slot] = None
                if self._ended is not None:
                    self._unit_ended()
                if not turn & yield_mask:
                    await asyncio.sleep(0)

    async def _not_finished(
        self, slot: int, unit: Unit, argument: Any, error: BaseException, started_ns: int | None
    ) -> None:
        """A single record's handler raised (or was cancelled): the failure policies, then its lane goes on."""
        try:
            if isinstance(error, asyncio.CancelledError):
                self._cancelled(slot)
                raise error
            if not isinstance(error, Exception):  # KeyboardInterrupt, SystemExit: not the handler's to survive
                raise error
            await self._handler_raised(slot, unit, argument, error)
        finally:
            if started_ns is not None:
                self.core.timed((self._clock.now_ns() - started_ns) / 1e9)
            self._current[slot] = None
            if eased := self.core.finished(unit):
                self._resume(eased)
            if self._ended is not None:
                self._unit_ended()

    async def _work_batches(self, slot: int) -> None:
        """A worker for ``batch_size``: up to that many records of different lanes, handed over as one list."""
        loop = asyncio.get_running_loop()
        core = self.core
        batch_size = self._options.batch_size or 1
        now_ns = self._clock.now_ns
        since_yield = 0
        while not self._closing:
            unit = [] if core.stopping else core.take(batch_size)
            if not unit:
                await self._wait_idle(loop)
                continue
            if self._idle and not self._waking and core.scheduler.ready:
                self._wake_idle()
            self._current[slot] = unit
            records = [record for _, record in unit]
            started = now_ns()
            try:
                await self._handler(records)
            except asyncio.CancelledError:
                self._cancelled(slot)
                raise
            except Exception as exc:
                await self._handler_raised(slot, unit, records, exc)
            else:
                core.complete(unit)
            finally:
                core.timed((now_ns() - started) / 1e9)
                self._current[slot] = None
                if eased := core.finished(unit):
                    self._resume(eased)
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
            await asyncio.wait([starved], timeout=max(timeout_s, 0))
        finally:
            self._starved = None

    def _wake_poller(self) -> None:
        if self._starved is not None and not self._starved.done():
            self._starved.set_result(None)

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

    async def _handler_raised(self, slot: int, unit: Unit, argument: Any, error: Exception) -> None:
        try:
            await self._after_failure(unit, argument, error)
        except asyncio.CancelledError:
            self._cancelled(slot)
            raise
        except Exception as stop:  # on_skip raised, say: stop, and say why
            self.core.stop(stop)
            self._wake_poller()

    async def _after_failure(self, unit: Unit, argument: Any, error: Exception) -> None:
        """The handler raised on its first attempt: retries with the core's backoff, then skips or gives up."""
        core = self.core
        attempt = 1
        while (backoff_ms := core.retry_backoff_ms(unit, attempt, error)) is not None:
            attempt += 1
            await asyncio.sleep(backoff_ms / 1000)
            try:
                await self._handler(argument)
            except Exception as exc:
                error = exc
                continue
            core.complete(unit)
            return
        if not core.skips(error):
            core.give_up(unit, error)
            self._wake_poller()
            return
        on_skip = self._options.on_skip
        if on_skip is not None:
            result = on_skip(argument, error)
            if inspect.isawaitable(result):
                await result
        core.skip(unit, error)

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

    def _resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Resumes partitions the core found eased as a unit ended, in the background: not at the next poll."""
        resuming = asyncio.ensure_future(self._consumer.resume(*partitions))
        self._background.add(resuming)
        resuming.add_done_callback(self._background.discard)

    # --- commits ---------------------------------------------------------------------------------------------
    async def _commit(self, partitions: Iterable[TopicPartition] | None) -> None:
        """Commits of ``partitions`` (None: all held) take their turn, and their offsets then: an interval's, a
        revocation's and the last one land in the order they were made, so committed offsets never move back."""
        async with self._turn:
            batch = self.core.commit_batch(partitions)
            if batch is not None:
                await self._store(batch)

    async def _store(self, batch: CommitBatch) -> None:
        """Stores ``batch`` through the sink; a failure is logged and changes nothing (the next interval,
        revocation or stop tries again), and a member fenced meanwhile hears of its lost partitions in ``poll``."""
        if self._sink is None:
            return
        try:
            await self._sink.store(batch.offsets)
        except KafkaError as exc:
            log.warning(
                "processing.commit_failed",
                partitions=len(batch.offsets),
                error=str(exc),
                fenced=isinstance(exc, CommitFailedError),
            )
            return
        self.core.committed(batch)

    def _running(self, settlement: Settlement) -> list[int]:
        """The workers running a unit of the settlement's partitions."""
        return [slot for slot, unit in enumerate(self._current) if unit is not None and settlement.covers(unit)]

    async def _settle(self, settlement: Settlement) -> int:
        """Waits for the units running on the settlement's partitions up to its deadline, then cancels their
        workers: their records stay unfinished, so no commit covers them and the next owner handles them again.
        Returns how many units were running when it started."""
        loop = asyncio.get_running_loop()
        running = len(self._running(settlement))
        while slots := self._running(settlement):
            remaining = settlement.deadline_ms - self._clock.now_ms()
            if remaining <= 0:
                late = [worker for slot in slots if (worker := self._workers[slot]) is not None]
                records = sum(len(unit) if isinstance(unit := self._current[slot], list) else 1 for slot in slots)
                log.warning("processing.abandoned", records=records)
                for worker in late:
                    worker.cancel()
                if late:
                    await asyncio.wait(late)
                break
            if self._ended is None or self._ended.done():
                self._ended = loop.create_future()
            await asyncio.wait([self._ended], timeout=remaining / 1000)
        return running

    # --- rebalances (run inside poll, before the user's listener) ----------------------------------------------
    async def revoked(self, partitions: set[TopicPartition]) -> None:
        """Drop what waits, let what runs settle (within ``revoke_timeout_ms``), commit the finished prefix, and
        rewind the position to it, in case the partition comes back to this member."""
        settlement = self.core.revoke(partitions, self._clock.now_ms())
        running = await self._settle(settlement)
        await self._commit(partitions)
        for tp, offset in self.core.forget(partitions).items():
            with contextlib.suppress(KafkaError):
                await self._consumer.seek(tp, offset)
        log.info(
            "processing.revoked",
            partitions=len(partitions),
            dropped=settlement.dropped,
            running=running,
        )

    def lost(self, partitions: set[TopicPartition]) -> None:
        """The partitions are another member's already: drop their state; nothing may be committed for them."""
        self.core.lose(partitions)
        log.info("processing.lost", partitions=len(partitions))


class _Hook(ConsumerRebalanceListener):
    def __init__(self, driver: ProcessingDriver) -> None:
        self._driver = driver

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        await self._driver.revoked(partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._driver.lost(partitions)
