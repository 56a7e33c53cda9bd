"""The sans-I/O core of ``process``: which record runs next, what finished, what to commit and when, what to pause,
and what a revocation drops and rewinds. It never awaits, never reads a clock (``now_ms`` is given) and never
touches the consumer: the driver (``driver.py``) owns the tasks, the consumer calls and the clock, and feeds it.

Per partition a ``PartitionProgress`` says what may be committed: the finished prefix, and in the metadata the
finished offsets past it. The ``CommitPolicy`` says when a commit is due and what is worth one (``commits.py``).
Backpressure: a partition with ``max_in_flight_per_partition`` records waiting or running is paused, and resumed at
half of that, so memory stays bounded whatever the backlog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import attrs

from asyncconsumer._caller.processing.commits import CommitBatch, CommitPolicy, IntervalCommits, NoCommits
from asyncconsumer._caller.processing.progress import PartitionProgress
from asyncconsumer._caller.processing.scheduler import Lane, Ordering, Scheduler
from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError
from asyncconsumer.metrics import RateMeter
from asyncconsumer.records import ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition

log = get_logger("asyncconsumer.processing")

OnSkip = Callable[[Any, BaseException], Any]
"""Called with the record (or batch) and its last error when ``on_error="skip"`` gives up on it; may be async."""

Pair = tuple[Lane, ConsumerRecord]
Unit = Pair | list[Pair]
"""What one handler call runs: a record with its lane, or with ``batch_size`` a list of them."""

POLL_EVERY_MS = 100
"""The longest the driver goes without polling: the consumer keeps polling (and rebalancing) while slow handlers
hold every worker."""


def _ordering(value: Ordering | str) -> Ordering:
    try:
        return Ordering(value)
    except ValueError:
        raise ConfigError("ordering", f"must be 'key', 'partition' or 'none', got {value!r}") from None


@attrs.frozen
class ProcessingOptions:
    """``process``'s settings, checked once."""

    concurrency: int = 100
    ordering: Ordering = attrs.field(default=Ordering.KEY, converter=_ordering)
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
    runs: bool = False
    """``batch_size`` records of one lane per handler call (``take_run``) instead of one per lane: with
    ``ordering="partition"``, a partition's records in offset order (``process_transactionally``)."""
    fatal: tuple[type[BaseException], ...] = ()
    """Errors that are never retried nor skipped: the unit gives up at once and processing stops with the error
    (an offset store's ``OffsetStoreError``: fenced, unreachable past its bound)."""

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


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


class Settlement:
    """Partitions that go (a revocation) or all of them (stopping), and until when what still runs of them is
    awaited: the driver, which knows what each of its workers runs, cancels the rest at ``deadline_ms``, unfinished,
    so no commit covers it."""

    __slots__ = ("deadline_ms", "dropped", "partitions")

    def __init__(self, partitions: frozenset[TopicPartition] | None, deadline_ms: int, dropped: int) -> None:
        self.partitions = partitions
        """None: every partition."""
        self.deadline_ms = deadline_ms
        self.dropped = dropped
        """Records that waited and were dropped (the next owner handles them)."""

    def covers(self, unit: Unit) -> bool:
        """Whether ``unit`` runs a record of these partitions."""
        if self.partitions is None:
            return True
        pairs = unit if isinstance(unit, list) else [unit]
        return any(lane.partition.tp in self.partitions for lane, _ in pairs)


class ProcessingCore:
    """One run of ``process``, as state: the scheduler, each partition's progress, the commit policy, backpressure,
    the failure policy and the counters ``metrics`` reports.

    The driver takes work (``take_one``, ``take``) and reports how it ended (``succeeded`` on the hot path, then
    ``eased`` if anything is paused; else ``complete``, ``skip``, ``give_up`` and ``finished``). It feeds it polled
    records (``receive``), asks ``tick`` after each poll whether a commit is due and ``next_wakeup_ms`` how long it
    may wait, reports how each commit went (``committed``), and reports rebalances (``revoke`` then ``forget``,
    ``lose``) and the end (``wind_down``, ``positions``).
    """

    def __init__(self, options: ProcessingOptions, policy: CommitPolicy | None = None) -> None:
        self.options = options
        self.scheduler = scheduler = Scheduler(options.ordering)
        self.take_one = scheduler.take_one
        self.take = scheduler.take_run if options.runs else scheduler.take
        self._runs = options.runs
        self._done_run = scheduler.done_run
        self.succeeded = scheduler.finish
        """The handler returned for a record (no batches): ``succeeded(lane, record)``. The path of every record, so
        the scheduler's own method (one call); then ``eased`` if anything is ``paused``."""
        self.succeeded_next = scheduler.finish_next
        """``succeeded``, and the record its lane runs next on the same worker, or None (``Scheduler.finish_next``):
        what the single-record worker calls, so a lane's records run without a hand-over each."""
        self._done = scheduler.done
        self.policy: CommitPolicy = (
            policy
            if policy is not None
            else IntervalCommits(options.commit_interval_ms)
            if options.commits
            else NoCommits()
        )
        self.progress: dict[TopicPartition, PartitionProgress] = {}
        self.paused: set[TopicPartition] = set()
        self._half = options.max_in_flight_per_partition // 2
        self.stopping = False
        self.error: BaseException | None = None
        self._completed = self.failed = self.skipped = self.retries = 0
        """``_completed``: batches, and records finished by a retry (``succeeded`` counts in the scheduler)."""
        self._handler_seconds = 0.0
        self._latencies = [0.0] * LATENCY_SAMPLES
        self.latency_count = 0
        self._rate = RateMeter(window_s=5.0)
        """Units finished (completed or skipped), sampled at each ``tick``: ``completed_per_second``."""

    # --- running ---------------------------------------------------------------------------------------------
    def start(self, now_ms: int) -> None:
        self.policy.start(now_ms)
        log.info("processing.started", concurrency=self.options.concurrency, ordering=self.options.ordering.value)

    def stop(self, error: BaseException | None = None) -> None:
        """No more work is taken; ``error`` (the first one given) is what ``process`` raises in the end."""
        self.stopping = True
        if error is not None and self.error is None:
            self.error = error

    @property
    def completed(self) -> int:
        """Records (or batches) the handler finished."""
        return self._completed + self.scheduler.completed

    @property
    def saturated(self) -> bool:
        """Whether a poll now would only add waiting records: some are ready and at least ``concurrency`` wait, so
        every worker has work without it (fewer than that, and a poll may bring keys idle workers can start)."""
        scheduler = self.scheduler
        return bool(scheduler.ready) and scheduler.waiting >= self.options.concurrency

    def next_wakeup_ms(self, now_ms: int) -> int:
        """When the driver must be back: the next commit due, and at most ``POLL_EVERY_MS`` from now."""
        due = self.policy.next_due_ms()
        wake = now_ms + POLL_EVERY_MS
        return wake if due is None or due > wake else max(due, now_ms)

    def tick(self, now_ms: int) -> CommitBatch | None:
        """After each poll: samples the rate, folds what finished into each partition's progress (``commit_lag``
        reads it from any thread), and returns the commit due now, if one is and anything moved."""
        self._rate.sample(now_ms, self.completed + self.skipped, 0)
        for progress in self.progress.values():
            if progress.finished:
                progress.fold()
        if not self.policy.due(now_ms):
            return None
        return self.policy.pick(self.progress, None)

    # --- records in ------------------------------------------------------------------------------------------
    def unknown(self, records: ConsumerRecords) -> list[TopicPartition]:
        """Partitions in ``records`` with no progress yet: the driver loads their stored offsets for ``receive``."""
        progress = self.progress
        return [tp for tp in records if tp not in progress]

    def receive(
        self, records: ConsumerRecords, stored: Mapping[TopicPartition, OffsetAndMetadata | None] | None = None
    ) -> None:
        """Polled records, to run; ``stored`` has the offsets loaded for the partitions ``unknown`` named (a
        partition with none starts at its first record)."""
        scheduler, all_progress = self.scheduler, self.progress
        for tp, batch in records.items():
            progress = all_progress.get(tp)
            if progress is None:
                found = stored.get(tp) if stored is not None else None
                progress = (
                    PartitionProgress(found.offset, found.metadata)
                    if found is not None
                    else PartitionProgress(batch[0].offset)
                )
                all_progress[tp] = scheduler.partition(tp).progress = progress
            fresh = progress.receive_all([record.offset for record in batch])
            if fresh is None:
                scheduler.add_all(scheduler.partition(tp), batch)
            elif fresh:
                handle = set(fresh)
                scheduler.add_all(scheduler.partition(tp), [r for r in batch if r.offset in handle])

    # --- work out --------------------------------------------------------------------------------------------
    def finished(self, unit: Unit) -> list[TopicPartition]:
        """``unit`` ended, well or not (completions reported apart): its lanes go on. Returns the paused partitions
        that may be resumed now."""
        pairs = unit if isinstance(unit, list) else [unit]
        if self._runs and pairs:
            self._done_run(pairs[0][0], len(pairs))
        else:
            for lane, _ in pairs:
                self._done(lane)
        if not self.paused:
            return []
        return [tp for tp in {lane.partition.tp for lane, _ in pairs} if self.eased(tp)]

    def complete(self, unit: Unit) -> None:
        """The handler (or a retry of it) finished ``unit``."""
        self._completed += 1
        self._complete(unit)

    def retry_backoff_ms(self, unit: Unit, attempt: int, error: BaseException) -> int | None:
        """The handler's ``attempt`` (1: the first call) raised ``error``: how long to wait before the next
        attempt, or None when the retries are spent (then ``skip`` or ``give_up``)."""
        if attempt > self.options.retries or isinstance(error, self.options.fatal):
            return None
        self.retries += 1
        first = self._first(unit)
        log.info(
            "processing.retry",
            partition=f"{first.topic}-{first.partition}",
            offset=first.offset,
            attempt=attempt,
            error=repr(error),
        )
        return int(self.options.retry_backoff_ms * 2 ** (attempt - 1))

    def skips(self, error: BaseException) -> bool:
        """Whether a unit whose retries are spent is skipped (after ``on_skip``) rather than stopping ``process``;
        never for a ``fatal`` error."""
        return self.options.on_error == "skip" and not isinstance(error, self.options.fatal)

    def skip(self, unit: Unit, error: BaseException) -> None:
        """``unit`` is given up on and handed to ``on_skip``: it counts as finished."""
        self.skipped += 1
        log.warning("processing.skipped", **self._where(unit, error))
        self._complete(unit)

    def give_up(self, unit: Unit, error: BaseException) -> None:
        """``unit`` failed for good under ``on_error="stop"``: it stays unfinished (no commit covers it) and
        processing stops with ``error``."""
        self.failed += 1
        log.error("processing.failed", **self._where(unit, error))
        self.stop(error)

    def timed(self, seconds: float) -> None:
        """One handler call's time, for the metrics."""
        self._handler_seconds += seconds
        count = self.latency_count
        self._latencies[count & (LATENCY_SAMPLES - 1)] = seconds
        self.latency_count = count + 1

    def _complete(self, unit: Unit) -> None:
        for lane, record in unit if isinstance(unit, list) else [unit]:
            progress = lane.partition.progress
            if progress is not None:
                progress.finished.append(record.offset)

    @staticmethod
    def _first(unit: Unit) -> ConsumerRecord:
        return unit[0][1] if isinstance(unit, list) else unit[1]

    def _where(self, unit: Unit, error: BaseException) -> dict[str, Any]:
        first = self._first(unit)
        return {"partition": f"{first.topic}-{first.partition}", "offset": first.offset, "error": repr(error)}

    # --- backpressure ----------------------------------------------------------------------------------------
    def backpressure(self) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """Before each poll: the partitions to pause (at the bound) and to resume (down to half of it), already
        counted as such (the workers may drain them while the driver awaits the pause)."""
        bound = self.options.max_in_flight_per_partition
        load, paused = self.scheduler.load, self.paused
        full = [tp for tp in self.progress if tp not in paused and load(tp) >= bound]
        paused.update(full)
        eased = [tp for tp in paused if load(tp) <= self._half]
        paused.difference_update(eased)
        return full, eased

    def eased(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` was paused and may be resumed now, its load down to half the bound (then it counts as
        resumed): the driver asks as a record of it finishes, and resumes it at once (a poll of paused partitions
        only would wait its whole timeout while the workers run dry)."""
        if tp in self.paused and self.scheduler.load(tp) <= self._half:
            self.paused.discard(tp)
            return True
        return False

    # --- commits ---------------------------------------------------------------------------------------------
    def commit_batch(self, partitions: Iterable[TopicPartition] | None = None) -> CommitBatch | None:
        """What to commit now of ``partitions`` (None: all held), outside the interval (a revocation, stopping)."""
        return self.policy.pick(self.progress, partitions)

    def committed(self, batch: CommitBatch) -> None:
        """The sink stored ``batch``: partitions revoked, lost or assigned again meanwhile are left out."""
        self.policy.stored(batch, self.progress)

    # --- rebalances and the end ------------------------------------------------------------------------------
    def revoke(self, partitions: Iterable[TopicPartition], now_ms: int) -> Settlement:
        """The partitions go: what waits is dropped (the next owner handles it); what runs is to be awaited up to
        ``revoke_timeout_ms``. Their progress stays until ``forget``, so the commit after the settling covers what
        finished meanwhile."""
        chosen = frozenset(partitions)
        dropped = self.scheduler.revoke(chosen)
        return Settlement(chosen, now_ms + self.options.revoke_timeout_ms, len(dropped))

    def wind_down(self, now_ms: int) -> Settlement:
        """Stopping: nothing more starts; every running record is to be awaited up to ``revoke_timeout_ms``."""
        self.stopping = True
        return Settlement(None, now_ms + self.options.revoke_timeout_ms, 0)

    def forget(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """After a revocation's commit: drops the partitions' state; returns where to rewind each one's position
        (its finished prefix), in case it comes back to this member."""
        chosen = list(partitions)
        rewind = {}
        for tp in chosen:
            progress = self.progress.pop(tp, None)
            self.paused.discard(tp)
            if progress is not None:
                rewind[tp] = progress.committable
        self.policy.forget(chosen)
        return rewind

    def lose(self, partitions: Iterable[TopicPartition]) -> None:
        """The partitions are another member's already: their state goes, and nothing is committed for them (what
        still runs of them finishes into a progress no commit reads)."""
        chosen = list(partitions)
        self.scheduler.revoke(chosen)
        for tp in chosen:
            self.progress.pop(tp, None)
            self.paused.discard(tp)
        self.policy.forget(chosen)

    def positions(self) -> dict[TopicPartition, int]:
        """Where each partition's position goes when processing ends: back to what was handled, so records polled
        and never run are polled again by whatever the caller does next."""
        return {tp: progress.committable for tp, progress in self.progress.items()}

    # --- metrics ---------------------------------------------------------------------------------------------
    def metrics(self, now_ms: int) -> ProcessingMetrics:
        """A snapshot, safe from any thread (the blocking ``Consumer`` asks from its callers' threads): it copies
        each collection in one C-level call and changes nothing."""
        progress = list(self.progress.values())
        timed = self.latency_count
        recent = sorted(self._latencies[: min(timed, LATENCY_SAMPLES)])
        return ProcessingMetrics(
            running=self.scheduler.running,
            waiting=self.scheduler.waiting,
            completed=self.completed,
            failed=self.failed,
            skipped=self.skipped,
            retries=self.retries,
            commit_lag=sum(p.pending for p in progress),
            paused=frozenset(self.paused),
            handler_seconds_avg=self._handler_seconds / timed if timed else 0.0,
            completed_per_second=self._rate.rates(now_ms, self.completed + self.skipped, 0)[0],
            handler_seconds_p50=_percentile(recent, 0.5),
            handler_seconds_p99=_percentile(recent, 0.99),
            handler_seconds_max=recent[-1] if recent else 0.0,
        )
