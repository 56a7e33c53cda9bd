"""Records of one lane run one at a time in offset order, lanes run side by side, and a revocation drops only
what had not started."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer._caller.processing.progress import PartitionProgress
from asyncconsumer._caller.processing.scheduler import STREAK, Lane, Ordering, Scheduler, lane_of
from asyncconsumer.records import ConsumerRecord, TopicPartition


def record(partition: int, offset: int, key: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("t", partition, offset, 0, 0, key, b"v", (), None, 1, 1)


class Driver:
    """The scheduler as the engine drives it: records taken with their lanes, and given back by record."""

    def __init__(self, ordering: Ordering) -> None:
        self.scheduler = Scheduler(ordering)
        self.lanes: dict[ConsumerRecord, Lane] = {}

    def add(self, *records: ConsumerRecord) -> None:
        for r in records:
            self.scheduler.add(r)

    def take(self, limit: int) -> list[ConsumerRecord]:
        taken = self.scheduler.take(limit)
        self.lanes.update((r, lane) for lane, r in taken)
        return [r for _, r in taken]

    def done(self, r: ConsumerRecord) -> None:
        self.scheduler.done(self.lanes.pop(r))


def test_one_key_runs_one_record_at_a_time_and_other_keys_run_beside_it() -> None:
    driver = Driver(Ordering.KEY)
    scheduler = driver.scheduler
    a0, b1, a2, b3 = record(0, 0, b"a"), record(0, 1, b"b"), record(0, 2, b"a"), record(0, 3, b"b")
    driver.add(a0, b1, a2, b3)
    assert driver.take(10) == [a0, b1]
    assert (scheduler.running, scheduler.waiting) == (2, 2)
    driver.done(b1)
    assert driver.take(10) == [b3]
    driver.done(a0)
    assert driver.take(10) == [a2]
    assert scheduler.load(TopicPartition("t", 0)) == 2


def test_the_same_key_in_two_partitions_is_two_lanes() -> None:
    driver = Driver(Ordering.KEY)
    driver.add(record(0, 0, b"a"), record(1, 0, b"a"))
    assert len(driver.take(10)) == 2


def test_partition_ordering_runs_one_record_per_partition() -> None:
    driver = Driver(Ordering.PARTITION)
    driver.add(*(record(0, offset, b"k%d" % offset) for offset in range(3)), record(1, 0, None))
    assert [(r.partition, r.offset) for r in driver.take(10)] == [(0, 0), (1, 0)]


def test_no_ordering_runs_everything_up_to_the_limit() -> None:
    driver = Driver(Ordering.NONE)
    driver.add(*(record(0, offset, b"same") for offset in range(5)))
    assert [r.offset for r in driver.take(3)] == [0, 1, 2]
    assert [r.offset for r in driver.take(3)] == [3, 4]
    assert driver.scheduler.load(TopicPartition("t", 0)) == 5


def test_take_one_hands_out_the_oldest_ready_record_with_its_lane_and_none_when_nothing_is_ready() -> None:
    scheduler = Scheduler(Ordering.KEY)
    a0, a1 = record(0, 0, b"a"), record(0, 1, b"a")
    scheduler.add_all(scheduler.partition(TopicPartition("t", 0)), [a0, a1])
    taken = scheduler.take_one()
    assert taken is not None and taken[1] == a0
    assert scheduler.take_one() is None  # a1 waits for a0's lane
    scheduler.done(taken[0])
    again = scheduler.take_one()
    assert again is not None and again[1] == a1 and again[0] is taken[0]


def test_finish_next_runs_a_lanes_records_on_one_worker_for_a_streak_then_hands_the_lane_back() -> None:
    scheduler = Scheduler(Ordering.KEY)
    tp = TopicPartition("t", 0)
    queue = scheduler.partition(tp)
    queue.progress = PartitionProgress(0)
    a = [record(0, o, b"a") for o in range(0, 2 * STREAK + 4, 2)]
    b = record(0, 1, b"b")
    queue.progress.receive_all(sorted(r.offset for r in [*a, b]))
    scheduler.add_all(queue, sorted([*a, b], key=lambda r: r.offset))
    taken = scheduler.take_one()
    assert taken is not None and taken[1] == a[0]
    lane, current = taken
    ran = [current]
    while (current := scheduler.finish_next(lane, current)) is not None:  # type: ignore[assignment]
        assert (scheduler.running, scheduler.load(tp)) == (1, len(a) + 1 - len(ran))
        ran.append(current)
    assert ran == a[: STREAK + 1]  # the first record and a streak more, in offset order
    assert scheduler.completed == STREAK + 1 and scheduler.running == 0
    # the lane went to the back of the ready lanes: b's turn first, then a's next streak starts whole
    assert [scheduler.take_one()[1] for _ in range(2)] == [b, a[STREAK + 1]]  # type: ignore[index]
    assert queue.progress.committable == 1  # b (offset 1) runs: the prefix stops there


def test_finish_next_takes_nothing_on_for_a_revoked_partition_nor_with_ordering_none() -> None:
    scheduler = Scheduler(Ordering.KEY)
    scheduler.add_all(scheduler.partition(TopicPartition("t", 0)), [record(0, 0, b"a"), record(0, 1, b"a")])
    lane, first = scheduler.take_one()  # type: ignore[misc]
    scheduler.revoke([TopicPartition("t", 0)])
    assert scheduler.finish_next(lane, first) is None and scheduler.running == 0
    unordered = Scheduler(Ordering.NONE)
    unordered.add_all(unordered.partition(TopicPartition("t", 0)), [record(0, 0, b"a"), record(0, 1, b"a")])
    lane, first = unordered.take_one()  # type: ignore[misc]
    assert unordered.finish_next(lane, first) is None and unordered.ready == 1


def test_a_revocation_drops_what_waits_and_keeps_what_runs() -> None:
    driver = Driver(Ordering.KEY)
    scheduler = driver.scheduler
    running, waiting, other = record(0, 0, b"a"), record(0, 1, b"a"), record(1, 0, b"a")
    driver.add(running, waiting, other)
    assert driver.take(1) == [running]
    assert scheduler.revoke([TopicPartition("t", 0)]) == [waiting]
    # the running record is still to be awaited, but counts for the partition no more: it is not ours now
    assert (scheduler.running, scheduler.load(TopicPartition("t", 0))) == (1, 0)
    driver.done(running)
    assert driver.take(10) == [other]
    assert scheduler.load(TopicPartition("t", 0)) == 0


def test_a_revocation_with_no_ordering_takes_every_waiting_record_off_the_ready_queue() -> None:
    driver = Driver(Ordering.NONE)
    driver.add(*(record(0, offset, None) for offset in range(4)), record(1, 0, None))
    assert [r.offset for r in driver.take(1)] == [0]
    assert [r.offset for r in driver.scheduler.revoke([TopicPartition("t", 0)])] == [1, 2, 3]
    assert [(r.partition, r.offset) for r in driver.take(10)] == [(1, 0)]
    assert driver.scheduler.waiting == 0


def test_a_null_key_is_a_lane_of_its_own() -> None:
    assert lane_of(record(0, 0, None), Ordering.KEY) == lane_of(record(0, 5, None), Ordering.KEY)
    driver = Driver(Ordering.KEY)
    driver.add(record(0, 0, None), record(0, 1, None))
    assert [r.offset for r in driver.take(10)] == [0]


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
    driver = Driver(ordering)
    scheduler = driver.scheduler
    next_offset = [0, 0, 0]
    pending = []
    for partition, key in arrivals:
        pending.append(record(partition, next_offset[partition], b"%d" % key))
        next_offset[partition] += 1
    running: list[ConsumerRecord] = []
    started: list[ConsumerRecord] = []
    while pending or running or scheduler.waiting:
        if pending and rng.random() < 0.5:
            driver.add(pending.pop(0))
        for r in driver.take(limit - len(running)):
            lanes_running = {lane_of(x, ordering) for x in running}
            assert lane_of(r, ordering) not in lanes_running
            running.append(r)
            started.append(r)
        assert len(running) <= limit
        assert scheduler.running == len(running)
        assert sum(scheduler.load(TopicPartition("t", p)) for p in range(3)) == len(running) + scheduler.waiting
        if running and rng.random() < 0.5:
            driver.done(running.pop(rng.randrange(len(running))))
    assert sorted((r.partition, r.offset) for r in started) == sorted(
        (p, o) for p in range(3) for o in range(next_offset[p])
    )
    by_lane: dict[object, list[int]] = {}
    for r in started:
        by_lane.setdefault(lane_of(r, ordering), []).append(r.offset)
    assert all(offsets == sorted(offsets) for offsets in by_lane.values())


def test_take_run_takes_one_lanes_records_and_done_run_lets_the_lane_go_on() -> None:
    scheduler = Scheduler(Ordering.PARTITION)
    for offset in range(5):
        scheduler.add(ConsumerRecord("t", 0, offset, 0, 0, None, b"", (), None, 1, 1))
    scheduler.add(ConsumerRecord("t", 1, 0, 0, 0, None, b"", (), None, 1, 1))
    run = scheduler.take_run(4)
    assert [(r.partition, r.offset) for _, r in run] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert (scheduler.running, scheduler.waiting, scheduler.ready) == (4, 2, 1)
    assert [(r.partition, r.offset) for _, r in scheduler.take_run(4)] == [(1, 0)]
    assert scheduler.take_run(4) == []
    scheduler.done_run(run[0][0], len(run))
    assert [(r.partition, r.offset) for _, r in scheduler.take_run(4)] == [(0, 4)]
    assert scheduler.running == 2 and scheduler.ready == 0
