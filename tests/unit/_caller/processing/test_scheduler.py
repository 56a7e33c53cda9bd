"""Records of one lane run one at a time in offset order, lanes run side by side, and a revocation drops only
what had not started."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer._caller.processing.scheduler import Ordering, Scheduler, lane_of
from asyncconsumer.records import ConsumerRecord, TopicPartition


def record(partition: int, offset: int, key: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("t", partition, offset, 0, 0, key, b"v", (), None, 1, 1)


def test_one_key_runs_one_record_at_a_time_and_other_keys_run_beside_it() -> None:
    scheduler = Scheduler(Ordering.KEY)
    a0, b1, a2, b3 = record(0, 0, b"a"), record(0, 1, b"b"), record(0, 2, b"a"), record(0, 3, b"b")
    for r in (a0, b1, a2, b3):
        scheduler.add(r)
    assert scheduler.take(10) == [a0, b1]
    assert (scheduler.running, scheduler.waiting) == (2, 2)
    scheduler.done(b1)
    assert scheduler.take(10) == [b3]
    scheduler.done(a0)
    assert scheduler.take(10) == [a2]
    assert scheduler.load(TopicPartition("t", 0)) == 2


def test_the_same_key_in_two_partitions_is_two_lanes() -> None:
    scheduler = Scheduler(Ordering.KEY)
    scheduler.add(record(0, 0, b"a"))
    scheduler.add(record(1, 0, b"a"))
    assert len(scheduler.take(10)) == 2


def test_partition_ordering_runs_one_record_per_partition() -> None:
    scheduler = Scheduler(Ordering.PARTITION)
    for offset in range(3):
        scheduler.add(record(0, offset, b"k%d" % offset))
    scheduler.add(record(1, 0, None))
    assert [(r.partition, r.offset) for r in scheduler.take(10)] == [(0, 0), (1, 0)]


def test_no_ordering_runs_everything_up_to_the_limit() -> None:
    scheduler = Scheduler(Ordering.NONE)
    for offset in range(5):
        scheduler.add(record(0, offset, b"same"))
    assert [r.offset for r in scheduler.take(3)] == [0, 1, 2]
    assert [r.offset for r in scheduler.take(3)] == [3, 4]


def test_a_revocation_drops_what_waits_and_keeps_what_runs() -> None:
    scheduler = Scheduler(Ordering.KEY)
    running, waiting, other = record(0, 0, b"a"), record(0, 1, b"a"), record(1, 0, b"a")
    for r in (running, waiting, other):
        scheduler.add(r)
    assert scheduler.take(1) == [running]
    assert scheduler.revoke([TopicPartition("t", 0)]) == [waiting]
    assert scheduler.load(TopicPartition("t", 0)) == 1  # the running record, still to be awaited
    scheduler.done(running)
    assert scheduler.take(10) == [other]
    assert scheduler.load(TopicPartition("t", 0)) == 0


def test_a_null_key_is_a_lane_of_its_own() -> None:
    assert lane_of(record(0, 0, None), Ordering.KEY) == lane_of(record(0, 5, None), Ordering.KEY)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(list(Ordering)),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=80),
    st.integers(min_value=1, max_value=6),
    st.randoms(use_true_random=False),
)
def test_every_record_runs_once_within_the_limit_and_each_lane_in_offset_order(
    ordering: Ordering, arrivals: list[tuple[int, int]], limit: int, rng: random.Random
) -> None:
    scheduler = Scheduler(ordering)
    next_offset = [0, 0, 0]
    pending = []
    for partition, key in arrivals:
        pending.append(record(partition, next_offset[partition], b"%d" % key))
        next_offset[partition] += 1
    running: list[ConsumerRecord] = []
    started: list[ConsumerRecord] = []
    while pending or running or scheduler.waiting:
        if pending and rng.random() < 0.5:
            scheduler.add(pending.pop(0))
        for r in scheduler.take(limit - len(running)):
            lanes_running = {lane_of(x, ordering) for x in running}
            assert lane_of(r, ordering) not in lanes_running
            running.append(r)
            started.append(r)
        assert len(running) <= limit
        if running and rng.random() < 0.5:
            scheduler.done(running.pop(rng.randrange(len(running))))
    assert sorted((r.partition, r.offset) for r in started) == sorted(
        (p, o) for p in range(3) for o in range(next_offset[p])
    )
    by_lane: dict[object, list[int]] = {}
    for r in started:
        by_lane.setdefault(lane_of(r, ordering), []).append(r.offset)
    assert all(offsets == sorted(offsets) for offsets in by_lane.values())
