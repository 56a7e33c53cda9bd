"""The processing core driven by hand on a ``ManualClock``: no loop, no task, no sleep. Lanes in order, commits that
cover only finished records (with the metadata of what finished past them) and only when due, failed and fenced
commits that count for nothing, revocations and losses, backpressure, retries, skip and stop, and the metrics."""

from __future__ import annotations

import pytest

from asyncconsumer._caller.processing.commits import CommitBatch
from asyncconsumer._caller.processing.core import POLL_EVERY_MS, ProcessingCore, ProcessingOptions
from asyncconsumer._caller.processing.progress import METADATA_PREFIX
from asyncconsumer._caller.processing.scheduler import Ordering
from asyncconsumer._clock import ManualClock
from asyncconsumer.errors import ConfigError
from asyncconsumer.records import ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def record(tp: TopicPartition, offset: int, key: bytes | None = None) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, offset, 0, 0, key, b"v%d" % offset, (), None, 1, 1)


def polled(*records: ConsumerRecord) -> ConsumerRecords:
    by_partition: dict[TopicPartition, list[ConsumerRecord]] = {}
    for r in records:
        by_partition.setdefault(TopicPartition(r.topic, r.partition), []).append(r)
    return ConsumerRecords(by_partition)


def started(clock: ManualClock, **options: object) -> ProcessingCore:
    core = ProcessingCore(ProcessingOptions(**options))  # type: ignore[arg-type]
    core.start(clock.now_ms())
    return core


def run_all(core: ProcessingCore) -> list[int]:
    """Takes and finishes every ready record, one at a time, until none is ready; returns their offsets."""
    offsets = []
    while (unit := core.take_one()) is not None:
        core.succeeded(*unit)
        offsets.append(unit[1].offset)
    return offsets


def offsets_of(batch: CommitBatch | None) -> dict[TopicPartition, OffsetAndMetadata]:
    assert batch is not None
    return batch.offsets


# --- options ---------------------------------------------------------------------------------------------------------


def test_bad_options_are_config_errors_naming_the_option() -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        ProcessingOptions(concurrency=0)
    with pytest.raises(ConfigError, match="on_error"):
        ProcessingOptions(on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"ordering.*'sideways'"):
        ProcessingOptions(ordering="sideways")
    assert ProcessingOptions(ordering="partition").ordering is Ordering.PARTITION


# --- lanes ------------------------------------------------------------------------------------------------------------


def test_a_key_runs_one_record_at_a_time_in_offset_order_and_keys_side_by_side() -> None:
    core = started(ManualClock())
    core.receive(polled(record(TP0, 0, b"a"), record(TP0, 1, b"a"), record(TP0, 2, b"b")))
    first, second = core.take_one(), core.take_one()
    assert first is not None and second is not None
    assert [first[1].offset, second[1].offset] == [0, 2]  # a's second record waits for its first
    assert core.take_one() is None
    core.succeeded(*first)
    third = core.take_one()
    assert third is not None and third[1].offset == 1


def test_records_a_previous_owner_finished_past_its_commit_are_not_run_again() -> None:
    core = started(ManualClock())
    records = polled(*(record(TP0, o) for o in range(8)))
    assert core.unknown(records) == [TP0]
    core.receive(records, {TP0: OffsetAndMetadata(0, f"{METADATA_PREFIX}1-5")})
    assert core.unknown(records) == []
    assert sorted(run_all(core)) == [0, 6, 7]
    assert offsets_of(core.commit_batch()) == {TP0: OffsetAndMetadata(8, "")}


# --- commits ----------------------------------------------------------------------------------------------------------


def test_a_commit_is_due_each_interval_and_covers_only_the_finished_prefix_plus_the_metadata() -> None:
    clock = ManualClock(1_000)
    core = started(clock, commit_interval_ms=5_000, ordering="none")
    core.receive(polled(*(record(TP0, o) for o in range(5))))
    units = [core.take_one() for _ in range(5)]
    for unit in units[1:3]:  # 1 and 2 finish; 0 still runs
        assert unit is not None
        core.succeeded(*unit)
    assert core.tick(clock.advance(4_999)) is None  # not due yet
    assert offsets_of(core.tick(clock.advance(1))) == {TP0: OffsetAndMetadata(0, f"{METADATA_PREFIX}1-2")}
    assert core.tick(clock.advance(4_999)) is None  # the next one is an interval on
    assert units[0] is not None
    core.succeeded(*units[0])
    assert offsets_of(core.tick(clock.advance(1))) == {TP0: OffsetAndMetadata(3, "")}


def test_the_driver_is_told_to_come_back_by_the_next_commit_and_within_the_poll_bound() -> None:
    clock = ManualClock(0)
    core = started(clock, commit_interval_ms=250)
    assert core.next_wakeup_ms(0) == POLL_EVERY_MS
    assert core.next_wakeup_ms(200) == 250
    assert core.next_wakeup_ms(300) == 300  # overdue: now, never in the past
    assert started(clock, commits=False).next_wakeup_ms(7) == 7 + POLL_EVERY_MS


def test_a_failed_commit_counts_for_nothing_and_the_next_one_carries_the_same_offsets() -> None:
    clock = ManualClock(0)
    core = started(clock, commit_interval_ms=100)
    core.receive(polled(record(TP0, 0), record(TP0, 1)))
    run_all(core)
    failed = core.tick(clock.advance(100))
    assert offsets_of(failed) == {TP0: OffsetAndMetadata(2, "")}  # the sink raised: the core is not told
    again = core.tick(clock.advance(100))
    assert offsets_of(again) == {TP0: OffsetAndMetadata(2, "")}
    assert again is not None
    core.committed(again)
    assert core.tick(clock.advance(100)) is None  # stored: nothing moved since
    assert core.commit_batch() is None


def test_a_commit_that_lands_after_its_partition_was_lost_and_assigned_again_counts_for_nothing() -> None:
    """A fenced member's partitions are lost; if they come back, what the old assignment's commit stored says
    nothing about the new one, so the new progress is committed in its own right."""
    clock = ManualClock(0)
    core = started(clock)
    core.receive(polled(record(TP0, 0), record(TP0, 1)))
    run_all(core)
    in_flight = core.commit_batch()
    assert offsets_of(in_flight) == {TP0: OffsetAndMetadata(2, "")}
    core.lose({TP0})
    core.receive(polled(record(TP0, 2)), {TP0: OffsetAndMetadata(2, "")})
    assert in_flight is not None
    core.committed(in_flight)  # late success of the lost assignment's commit
    assert offsets_of(core.commit_batch()) == {TP0: OffsetAndMetadata(2, "")}


def test_without_a_group_nothing_is_ever_due_or_committed() -> None:
    clock = ManualClock(0)
    core = started(clock, commits=False)
    core.receive(polled(record(TP0, 0)))
    run_all(core)
    assert core.tick(clock.advance(1_000_000)) is None
    assert core.commit_batch() is None


# --- rebalances -------------------------------------------------------------------------------------------------------


def test_a_revocation_drops_what_waits_settles_what_runs_commits_then_rewinds() -> None:
    clock = ManualClock(1_000)
    core = started(clock, revoke_timeout_ms=30_000)
    core.receive(polled(*(record(TP0, o, b"one key") for o in range(5)), record(TP1, 0, b"one key")))
    running = core.take_one()
    other = core.take_one()
    assert running is not None and running[1].offset == 0 and other is not None and other[1].partition == 1
    settlement = core.revoke({TP0}, clock.now_ms())
    assert settlement.dropped == 4 and settlement.deadline_ms == 31_000
    assert settlement.covers(running) and not settlement.covers(other)
    assert core.take_one() is None  # nothing of TP0 starts any more
    core.succeeded(*running)
    assert offsets_of(core.commit_batch({TP0})) == {TP0: OffsetAndMetadata(1, "")}
    assert core.forget({TP0}) == {TP0: 1}  # 1-4 waited: the next owner (or this member, if it comes back) runs them
    assert core.commit_batch({TP0}) is None and TP0 not in core.positions()


def test_lost_partitions_are_dropped_and_what_still_runs_of_them_is_never_committed() -> None:
    core = started(ManualClock())
    core.receive(polled(record(TP0, 0, b"a"), record(TP0, 1, b"a"), record(TP1, 0)))
    running = core.take_one()
    assert running is not None and running[1].partition == 0
    core.lose({TP0})
    assert core.scheduler.waiting == 1  # TP1's record; TP0's waiting one went
    core.succeeded(*running)  # finishes into a progress no commit reads
    assert set(offsets_of(core.commit_batch())) == {TP1}
    assert core.metrics(0).running == 0


def test_stopping_settles_every_running_record_and_rewinds_every_partition_to_what_finished() -> None:
    clock = ManualClock(0)
    core = started(clock, revoke_timeout_ms=10)
    core.receive(polled(record(TP0, 0, b"a"), record(TP0, 1, b"a"), record(TP1, 5)))
    unit = core.take_one()
    assert unit is not None
    settlement = core.wind_down(clock.now_ms())
    assert core.stopping and settlement.partitions is None and settlement.deadline_ms == 10
    assert settlement.covers(unit)
    core.succeeded(*unit)
    assert core.positions() == {TP0: 1, TP1: 5}


# --- backpressure -----------------------------------------------------------------------------------------------------


def test_a_partition_at_the_bound_is_paused_and_resumed_once_at_half_of_it() -> None:
    core = started(ManualClock(), max_in_flight_per_partition=10, ordering="none")
    core.receive(polled(*(record(TP0, o) for o in range(10)), record(TP1, 0)))
    assert core.backpressure() == ([TP0], [])
    assert core.backpressure() == ([], [])  # paused already
    eased = []
    while (unit := core.take_one()) is not None:
        if unit[1].partition == 0:
            core.succeeded(*unit)
            eased.append(core.eased(TP0))
    assert eased == [False, False, False, False, True, False, False, False, False, False]  # load 5: half the bound
    assert core.paused == set()


def test_a_unit_that_ends_without_finishing_also_resumes_its_partition_at_half_the_bound() -> None:
    core = started(ManualClock(), max_in_flight_per_partition=4, ordering="none")
    core.receive(polled(*(record(TP0, o) for o in range(4))))
    units = [core.take_one() for _ in range(4)]
    assert core.backpressure() == ([TP0], []) and core.metrics(0).paused == frozenset({TP0})
    assert units[0] is not None and units[1] is not None
    assert core.finished(units[0]) == []  # load 3
    assert core.finished(units[1]) == [TP0]  # load 2: half the bound
    assert core.backpressure() == ([], [])


# --- failures ---------------------------------------------------------------------------------------------------------


def test_retries_back_off_doubling_then_a_skip_counts_as_finished() -> None:
    core = started(ManualClock(), retries=2, retry_backoff_ms=100, on_error="skip")
    core.receive(polled(record(TP0, 0), record(TP0, 1)))
    unit = core.take_one()
    assert unit is not None
    error = RuntimeError("bad record")
    assert [core.retry_backoff_ms(unit, attempt, error) for attempt in (1, 2, 3)] == [100, 200, None]
    assert core.skips(error)
    core.skip(unit, error)
    core.finished(unit)
    run_all(core)
    assert offsets_of(core.commit_batch()) == {TP0: OffsetAndMetadata(2, "")}
    metrics = core.metrics(0)
    assert (metrics.retries, metrics.skipped, metrics.completed, metrics.failed) == (2, 1, 1, 0)


def test_giving_up_stops_with_the_first_error_and_leaves_the_record_uncommitted() -> None:
    core = started(ManualClock(), ordering="none")
    core.receive(polled(record(TP0, 0), record(TP0, 1), record(TP0, 2)))
    units = [core.take_one() for _ in range(3)]
    assert units[0] is not None and units[1] is not None and units[2] is not None
    core.succeeded(*units[0])
    assert core.retry_backoff_ms(units[1], 1, ValueError("first")) is None  # no retries
    assert not core.skips(ValueError("first"))
    core.give_up(units[1], ValueError("first"))
    core.finished(units[1])
    core.succeeded(*units[2])
    core.stop(RuntimeError("later"))
    assert core.stopping and isinstance(core.error, ValueError)
    assert offsets_of(core.commit_batch()) == {TP0: OffsetAndMetadata(1, f"{METADATA_PREFIX}1")}  # 2 done, past 1
    assert core.metrics(0).failed == 1


# --- batches ----------------------------------------------------------------------------------------------------------


def test_a_batch_takes_up_to_its_size_of_lanes_and_counts_as_one_completion() -> None:
    core = started(ManualClock(), batch_size=3)
    core.receive(polled(*(record(TP0, o, b"k%d" % (o % 2)) for o in range(6))))
    batch = core.take(3)
    assert [r.offset for _, r in batch] == [0, 1]  # one per lane: k0 and k1
    core.complete(batch)
    assert core.finished(batch) == []
    assert [r.offset for _, r in core.take(3)] == [2, 3]
    assert core.metrics(0).completed == 1


# --- metrics ----------------------------------------------------------------------------------------------------------


def test_metrics_give_the_rate_on_the_given_clock_the_lag_and_the_handler_time_percentiles() -> None:
    clock = ManualClock(10_000)
    core = started(clock, ordering="none")
    core.receive(polled(*(record(TP0, o) for o in range(300))))
    core.tick(clock.now_ms())
    for _ in range(200):
        unit = core.take_one()
        assert unit is not None
        core.succeeded(*unit)
    core.tick(clock.advance(2_000))
    for seconds in (0.001, 0.002, 0.003, 0.010):
        core.timed(seconds)
    metrics = core.metrics(clock.now_ms())
    assert metrics.completed == 200 and metrics.completed_per_second == 100.0  # 200 over 2 s of the manual clock
    assert metrics.waiting == 100 and metrics.running == 0 and metrics.commit_lag == 100
    assert metrics.handler_seconds_p50 == 0.003 and metrics.handler_seconds_max == 0.010
    assert metrics.handler_seconds_avg == pytest.approx(0.004)


def test_the_poll_waits_only_while_every_worker_has_a_ready_record_waiting_for_it() -> None:
    core = started(ManualClock(), concurrency=2, ordering="none")
    assert not core.saturated
    core.receive(polled(record(TP0, 0)))
    assert not core.saturated  # one waits: an idle worker could start another
    core.receive(polled(record(TP0, 1)))
    assert core.saturated


# --- runs of one partition (process_transactionally) --------------------------------------------------------------


def test_runs_hand_out_one_partitions_records_in_order_and_the_partition_waits_for_its_run() -> None:
    core = started(ManualClock(), ordering="partition", batch_size=3, runs=True)
    core.receive(polled(*(record(TP0, o) for o in range(5)), *(record(TP1, o) for o in range(2))))
    first, second = core.take(3), core.take(3)
    assert [(lane.partition.tp, r.offset) for lane, r in first] == [(TP0, 0), (TP0, 1), (TP0, 2)]
    assert [(lane.partition.tp, r.offset) for lane, r in second] == [(TP1, 0), (TP1, 1)]
    assert core.take(3) == []  # TP0's next run waits for its first to finish
    core.complete(first)
    core.finished(first)
    third = core.take(3)
    assert [r.offset for _, r in third] == [3, 4]
    core.complete(third)
    core.finished(third)
    assert core.take(3) == []
    assert core.scheduler.running == 2 and core.scheduler.load(TP0) == 0
    assert offsets_of(core.commit_batch([TP0])) == {TP0: OffsetAndMetadata(5, "")}


def test_a_failed_run_frees_its_partition_for_the_next_one_without_moving_the_prefix() -> None:
    core = started(ManualClock(), ordering="partition", batch_size=2, runs=True, on_error="skip")
    core.receive(polled(*(record(TP0, o) for o in range(4))))
    run = core.take(2)
    core.finished(run)  # neither completed nor skipped: the prefix stays
    assert [r.offset for _, r in core.take(2)] == [2, 3]
    assert offsets_of(core.commit_batch([TP0])) == {TP0: OffsetAndMetadata(0, "")}


def test_a_fatal_error_is_neither_retried_nor_skipped() -> None:
    class Fenced(Exception):
        pass

    core = started(ManualClock(), retries=5, on_error="skip", fatal=(Fenced,))
    core.receive(polled(record(TP0, 0)))
    unit = core.take_one()
    assert unit is not None
    assert core.retry_backoff_ms(unit, 1, Fenced()) is None
    assert not core.skips(Fenced())
    assert core.retry_backoff_ms(unit, 1, ValueError()) == 100 and core.skips(ValueError())
