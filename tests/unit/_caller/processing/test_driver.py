"""The asyncio driver over a fake consumer and sink, on a ``ManualClock``: the workers bounded by ``concurrency``,
commits when the clock says so and at the end, a commit refused (``CommitFailedError``) that stops nothing, the
rebalance hook, abandoned records, backpressure, failure policies, and metrics read from another thread. The
decisions themselves are the core's (``test_core.py``); the brokers' runs are in
``tests/integration/test_processing.py``. No test here sleeps on the wall clock: each waits for a condition."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import pytest

from asyncconsumer._caller.processing import driver as driver_module
from asyncconsumer._caller.processing.core import ProcessingOptions
from asyncconsumer._caller.processing.driver import Handler, ProcessingDriver
from asyncconsumer._caller.processing.progress import METADATA_PREFIX
from asyncconsumer._clock import ManualClock
from asyncconsumer._logs import Logger
from asyncconsumer.errors import CommitFailedError
from asyncconsumer.records import ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition

pytestmark = pytest.mark.anyio

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def record(tp: TopicPartition, offset: int, key: bytes | None = None) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, offset, 0, 0, key, b"v%d" % offset, (), None, 1, 1)


class FakeConsumer:
    """Hands out queued records a few per poll (none for paused partitions), stores commits (refusing the first
    ``refuse`` of them as a fenced member's), and remembers what was asked."""

    def __init__(
        self,
        records: Iterable[ConsumerRecord],
        per_poll: int = 50,
        committed: dict[TopicPartition, OffsetAndMetadata] | None = None,
        refuse: int = 0,
    ) -> None:
        self.queue = list(records)
        self.per_poll = per_poll
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.refused: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.refuse = refuse
        self.stored = dict(committed or {})
        self.paused: set[TopicPartition] = set()
        self.ever_paused: set[TopicPartition] = set()
        self.seeks: list[tuple[TopicPartition, int]] = []
        self.polls = 0

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords:
        self.polls += 1
        # a real poll with nothing to hand out waits in the selector, which lets other threads (aiosqlite's) run:
        # spinning here would hold the GIL and stall them by its switch interval at every step
        await asyncio.sleep(0 if self.queue else 0.001)
        taken: dict[TopicPartition, list[ConsumerRecord]] = {}
        rest = []
        for r in self.queue:
            tp = TopicPartition(r.topic, r.partition)
            if tp in self.paused or sum(len(v) for v in taken.values()) >= self.per_poll:
                rest.append(r)
            else:
                taken.setdefault(tp, []).append(r)
        self.queue = rest
        return ConsumerRecords(taken)

    async def store(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        if len(self.refused) < self.refuse:
            self.refused.append(dict(offsets))
            raise CommitFailedError("the member was fenced")
        self.commits.append(dict(offsets))
        self.stored.update(offsets)

    async def load(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return {tp: self.stored.get(tp) for tp in partitions}

    async def seek(self, partition: TopicPartition, offset: int) -> None:
        self.seeks.append((partition, offset))

    async def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)
        self.ever_paused.update(partitions)

    async def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(partitions)


def make(consumer: FakeConsumer, handle: Handler, clock: ManualClock | None = None, **options: Any) -> ProcessingDriver:
    return ProcessingDriver(consumer, handle, ProcessingOptions(**options), clock or ManualClock(), consumer)


async def until(condition: Callable[[], Any], timeout_s: float = 5) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.001)  # in the selector, not spinning: see FakeConsumer.poll


async def run_until_handled(driver: ProcessingDriver, handled: list[Any], count: int) -> None:
    runner = asyncio.ensure_future(driver.run())
    await until(lambda: len(handled) >= count or runner.done())
    driver.stop()
    await runner


async def turns(rng: random.Random) -> None:
    for _ in range(rng.randrange(4)):
        await asyncio.sleep(0)


class Events(Logger):
    def __init__(self) -> None:
        super().__init__("asyncconsumer.processing")
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **kw: Any) -> None:
        self.seen.append((event, kw))
        super().warning(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self.seen.append((event, kw))
        super().info(event, **kw)


async def test_key_order_holds_under_random_interleaving_and_concurrency_stays_bounded() -> None:
    rng = random.Random(7)
    records = [record(tp, o, b"k%d" % (o % 10)) for tp in (TP0, TP1) for o in range(300)]
    consumer = FakeConsumer(records)
    running = most = 0
    seen: dict[tuple[int, bytes | None], list[int]] = {}
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await turns(rng)
        seen.setdefault((r.partition, r.key), []).append(r.offset)
        handled.append(r)
        running -= 1

    await run_until_handled(make(consumer, handle, concurrency=8), handled, len(records))
    assert len(handled) == len(records)
    assert 1 < most <= 8
    assert all(offsets == sorted(offsets) for offsets in seen.values())
    assert consumer.stored[TP0] == OffsetAndMetadata(300, "") and consumer.stored[TP1] == OffsetAndMetadata(300, "")


async def test_commits_go_out_when_the_clock_says_so_holding_back_at_a_slow_key_with_the_metadata() -> None:
    clock = ManualClock()
    records = [record(TP0, 0, b"slow"), *(record(TP0, o, b"k%d" % o) for o in range(1, 6))]
    consumer = FakeConsumer(records)
    release = asyncio.Event()
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        if r.key == b"slow":
            await release.wait()
        handled.append(r.offset)

    driver = make(consumer, handle, clock, concurrency=10, commit_interval_ms=1_000)
    runner = asyncio.ensure_future(driver.run())
    await until(lambda: len(handled) == 5 and consumer.polls > 10)
    assert consumer.commits == []  # the interval has not passed on the clock
    clock.advance(1_000)
    await until(lambda: consumer.commits)
    assert consumer.commits == [{TP0: OffsetAndMetadata(0, f"{METADATA_PREFIX}1-5")}]  # 0 runs; 1-5 finished
    release.set()
    await until(lambda: len(handled) == 6)
    driver.stop()
    await runner
    assert consumer.stored[TP0] == OffsetAndMetadata(6, "")


async def test_a_restart_skips_what_the_metadata_says_finished() -> None:
    committed = {TP0: OffsetAndMetadata(0, f"{METADATA_PREFIX}1-5")}
    consumer = FakeConsumer([record(TP0, o) for o in range(8)], committed=committed)
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r.offset)

    await run_until_handled(make(consumer, handle), handled, 3)
    assert sorted(handled) == [0, 6, 7]
    assert consumer.stored[TP0] == OffsetAndMetadata(8, "")


async def test_a_refused_commit_stops_nothing_counts_for_nothing_and_a_lost_partition_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fenced member's commit raises ``CommitFailedError``: logged, not stored, tried again at the next interval;
    then its partitions are lost (``on_partitions_lost``, from its ``poll``), and no commit names them again."""
    events = Events()
    monkeypatch.setattr(driver_module, "log", events)
    clock = ManualClock()
    consumer = FakeConsumer([record(TP0, o) for o in range(3)] + [record(TP1, o) for o in range(2)], refuse=1)
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r)

    driver = make(consumer, handle, clock, commit_interval_ms=100)
    runner = asyncio.ensure_future(driver.run())
    await until(lambda: len(handled) == 5)
    clock.advance(100)
    await until(lambda: consumer.refused)
    assert consumer.refused == [{TP0: OffsetAndMetadata(3, ""), TP1: OffsetAndMetadata(2, "")}]
    assert consumer.commits == [] and not runner.done()
    assert [kw for event, kw in events.seen if event == "processing.commit_failed"] == [
        {"partitions": 2, "error": "the member was fenced", "fenced": True}
    ]
    clock.advance(100)
    await until(lambda: consumer.commits)
    assert consumer.commits == consumer.refused  # nothing moved, and the refused commit is sent again
    driver.rebalance_hook.on_partitions_lost({TP1})
    consumer.queue.append(record(TP0, 3))
    await until(lambda: len(handled) == 6)
    clock.advance(100)
    await until(lambda: len(consumer.commits) == 2)
    assert consumer.commits[1] == {TP0: OffsetAndMetadata(4, "")}  # nothing of TP1 any more
    driver.stop()
    await runner
    assert len(consumer.commits) == 2  # the last commit at the stop had nothing new: TP0 stored, TP1 not ours
    assert not any(tp == TP1 for tp, _ in consumer.seeks)  # a lost partition's position is no longer ours to move


async def test_a_partition_with_too_much_in_flight_is_paused_and_resumed() -> None:
    consumer = FakeConsumer([record(TP0, o, b"one key") for o in range(40)], per_poll=10)
    handled: list[int] = []
    gate = asyncio.Event()

    async def handle(r: ConsumerRecord) -> None:
        await gate.wait()
        handled.append(r.offset)

    driver = make(consumer, handle, max_in_flight_per_partition=10)
    runner = asyncio.ensure_future(driver.run())
    await until(lambda: TP0 in consumer.paused)
    polls = consumer.polls
    await until(lambda: consumer.polls > polls + 5)
    assert driver.metrics().waiting + driver.metrics().running <= 10  # nothing more came while paused
    gate.set()
    await until(lambda: len(handled) == 40)
    driver.stop()
    await runner
    assert TP0 in consumer.ever_paused and TP0 not in consumer.paused


async def test_retries_then_skip_hands_the_record_to_the_callback_and_goes_on() -> None:
    consumer = FakeConsumer([record(TP0, o) for o in range(3)])
    attempts: dict[int, int] = {}
    skipped: list[tuple[int, str]] = []

    async def handle(r: ConsumerRecord) -> None:
        attempts[r.offset] = attempts.get(r.offset, 0) + 1
        if r.offset == 1:
            raise RuntimeError("bad record")

    async def dead_letter(r: ConsumerRecord, e: BaseException) -> None:
        skipped.append((r.offset, str(e)))

    driver = make(consumer, handle, retries=2, retry_backoff_ms=0, on_error="skip", on_skip=dead_letter)
    await run_until_handled(driver, skipped, 1)
    assert attempts[1] == 3 and skipped == [(1, "bad record")]
    assert consumer.stored[TP0].offset == 3  # a skipped record counts as finished
    assert driver.metrics().skipped == 1 and driver.metrics().retries == 2


async def test_stop_on_error_raises_after_the_running_records_settle_and_commits_only_what_finished() -> None:
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(5)])
    finished: list[int] = []
    failing = asyncio.Event()

    async def handle(r: ConsumerRecord) -> None:
        if r.offset == 2:  # 0 and 1 run (on the other two workers) until 2 fails
            failing.set()
            raise ValueError("cannot handle 2")
        if r.offset < 2:
            await failing.wait()
        finished.append(r.offset)

    driver = make(consumer, handle, concurrency=3)
    with pytest.raises(ValueError, match="cannot handle 2"):
        await asyncio.wait_for(driver.run(), 5)
    assert sorted(finished) == [0, 1]  # the ones running settled; nothing started after the failure
    assert consumer.stored[TP0] == OffsetAndMetadata(2, "")  # 2 is handled again after a restart, and what follows


async def test_a_revocation_drops_what_waits_awaits_what_runs_commits_and_rewinds() -> None:
    consumer = FakeConsumer([record(TP0, o, b"one key") for o in range(5)])
    started = asyncio.Event()
    release = asyncio.Event()
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        started.set()
        await release.wait()
        handled.append(r.offset)

    driver = make(consumer, handle)
    runner = asyncio.ensure_future(driver.run())
    await until(started.is_set)
    revocation = asyncio.ensure_future(driver.rebalance_hook.on_partitions_revoked({TP0}))  # type: ignore[arg-type]
    for _ in range(20):
        await asyncio.sleep(0)
    assert not revocation.done()  # it waits for the running record
    release.set()
    await revocation
    driver.stop()
    await runner
    assert handled == [0]  # 1-4 waited and were dropped: the next owner handles them
    assert consumer.stored[TP0] == OffsetAndMetadata(1, "")
    assert consumer.seeks == [(TP0, 1)]


async def test_a_record_running_past_the_revocation_deadline_is_abandoned_and_its_worker_replaced() -> None:
    clock = ManualClock()
    consumer = FakeConsumer([record(TP0, 0, b"stuck"), record(TP1, 0, b"a")], per_poll=1)
    stuck = asyncio.Event()
    cancelled: list[int] = []
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        if r.key == b"stuck":
            stuck.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(r.offset)
                raise
        handled.append(r)

    driver = make(consumer, handle, clock, concurrency=1, revoke_timeout_ms=20)
    runner = asyncio.ensure_future(driver.run())
    await until(stuck.is_set)
    revocation = asyncio.ensure_future(driver.rebalance_hook.on_partitions_revoked({TP0}))  # type: ignore[arg-type]
    for _ in range(20):
        await asyncio.sleep(0)
    assert not revocation.done() and cancelled == []  # within the deadline on the clock: it waits
    clock.advance(20)
    await asyncio.wait_for(revocation, 5)
    assert cancelled == [0]
    assert consumer.stored.get(TP0, OffsetAndMetadata(0)) == OffsetAndMetadata(0, "")  # never covered by a commit
    await until(lambda: len(handled) == 1)  # the one worker was replaced and goes on with the other partition
    driver.stop()
    await runner
    assert handled[0].partition == 1 and consumer.stored[TP1].offset == 1


async def test_batches_hold_up_to_batch_size_records() -> None:
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(10)])
    batches: list[list[int]] = []

    async def handle(batch: list[ConsumerRecord]) -> None:
        batches.append([r.offset for r in batch])

    await run_until_handled(make(consumer, handle, batch_size=4, ordering="none"), batches, 3)
    assert sorted(o for b in batches for o in b) == list(range(10))
    assert max(len(b) for b in batches) <= 4
    assert consumer.stored[TP0] == OffsetAndMetadata(10, "")


async def test_a_handler_that_awaits_brings_every_worker_into_play() -> None:
    """Idle workers are woken one by one, each by the last: with a backlog, all ``concurrency`` of them run."""
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(200)], per_poll=200)
    release = asyncio.Event()
    running = 0

    async def handle(r: ConsumerRecord) -> None:
        nonlocal running
        running += 1
        await release.wait()
        running -= 1

    driver = make(consumer, handle, concurrency=50)
    runner = asyncio.ensure_future(driver.run())
    await until(lambda: running == 50)
    assert driver.metrics().running == 50 and driver.metrics().waiting == 150
    release.set()
    await until(lambda: driver.metrics().completed == 200)
    driver.stop()
    await runner
    assert running == 0 and consumer.stored[TP0].offset == 200


async def test_metrics_time_the_handler_on_the_given_clock() -> None:
    clock = ManualClock()
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(80)])
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        clock.advance(2)  # every handler call takes 2 ms of the clock
        handled.append(r)

    driver = make(consumer, handle, clock, concurrency=4)
    await run_until_handled(driver, handled, 80)
    metrics = driver.metrics()
    assert metrics.completed == 80
    assert driver.core.latency_count >= 8  # one record in eight per worker is timed
    assert metrics.handler_seconds_p50 == metrics.handler_seconds_max == 0.002
    assert metrics.handler_seconds_avg == pytest.approx(0.002)


async def test_a_worker_that_fails_inside_the_driver_stops_processing_with_its_error() -> None:
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(3)])

    async def handle(r: ConsumerRecord) -> None:
        pass

    driver = make(consumer, handle, concurrency=2)

    def broken(*_: Any) -> None:
        raise RuntimeError("a bug in the bookkeeping")

    driver.core.succeeded = driver.core.succeeded_next = broken
    with pytest.raises(RuntimeError, match="bookkeeping"):
        await asyncio.wait_for(driver.run(), 5)


async def test_metrics_may_be_read_from_another_thread_while_partitions_come_and_go() -> None:
    """The blocking ``Consumer`` hands ``processing_metrics()`` to any thread: reading it while the driver adds
    partitions must never see a collection change under its feet."""
    partitions = [TopicPartition("t", p) for p in range(400)]
    consumer = FakeConsumer([record(tp, o, b"k") for o in range(3) for tp in partitions], per_poll=7)
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r)

    driver = make(consumer, handle, concurrency=8)
    errors: list[BaseException] = []
    reads = 0
    done = threading.Event()

    def read() -> None:
        nonlocal reads
        while not done.is_set():
            try:
                driver.metrics()
            except Exception as exc:
                errors.append(exc)
                return
            reads += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads take turns often: a reading that is not safe fails at once
    reader = threading.Thread(target=read)
    reader.start()
    try:
        await run_until_handled(driver, handled, len(partitions) * 3)
    finally:
        done.set()
        reader.join()
        sys.setswitchinterval(interval)
    assert errors == [] and reads > 0
    assert len(handled) == 1_200


class StuckCommits(FakeConsumer):
    """A consumer whose commits wait until ``answer`` is set: a coordinator that does not answer (a black hole)."""

    def __init__(self, records: Iterable[ConsumerRecord], **kw: Any) -> None:
        super().__init__(records, **kw)
        self.answer = asyncio.Event()
        self.waiting = 0
        self.landed: list[dict[TopicPartition, OffsetAndMetadata]] = []

    async def store(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.waiting += 1
        try:
            await self.answer.wait()
        finally:
            self.waiting -= 1
        await super().store(offsets)
        self.landed.append(self.commits[-1])


async def test_a_commit_waiting_for_the_coordinator_holds_up_no_record() -> None:
    """Records of partitions whose leaders answer go on being polled and handled while an interval's commit waits
    for a coordinator that does not answer (the fault suite's long black hole of the coordinator); one such commit at
    a time; the last commit waits for it, then covers everything."""
    consumer = StuckCommits([record(TP0, o) for o in range(300)], per_poll=10)
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r.offset)

    clock = ManualClock()
    driver = make(consumer, handle, clock, concurrency=4, commit_interval_ms=1)
    runner = asyncio.ensure_future(driver.run())
    try:
        await until(lambda: clock.advance(5) and consumer.waiting == 1)
        await until(lambda: clock.advance(5) and len(handled) == 300)  # before the fix: stuck at the first commit
        assert consumer.waiting == 1 and consumer.commits == []  # still the one commit, still unanswered
        driver.stop()
        await asyncio.sleep(0.01)
        assert not runner.done()  # the last commit waits for the one under way
    finally:
        driver.stop()
        consumer.answer.set()
        await asyncio.wait_for(runner, 5)
    offsets = [c[TP0].offset for c in consumer.landed]
    assert offsets[-1] == 300 and offsets == sorted(offsets)  # everything, in the order they were made


async def test_a_revocation_waits_for_the_interval_commit_so_commits_never_move_back() -> None:
    consumer = StuckCommits([record(TP0, o) for o in range(50)], per_poll=5)
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r.offset)

    clock = ManualClock()
    driver = make(consumer, handle, clock, concurrency=2, commit_interval_ms=1)
    runner = asyncio.ensure_future(driver.run())
    try:
        await until(lambda: clock.advance(5) and consumer.waiting == 1 and len(handled) == 50)
        revoking = asyncio.ensure_future(driver.revoked({TP0}))
        await asyncio.sleep(0.01)
        assert consumer.waiting == 1  # the revocation's commit is not sent beside the interval's
        consumer.answer.set()
        await asyncio.wait_for(revoking, 5)
    finally:
        driver.stop()
        consumer.answer.set()
        await asyncio.wait_for(runner, 5)
    offsets = [c[TP0].offset for c in consumer.landed]
    assert offsets[-1] == 50 and offsets == sorted(offsets)


async def test_an_idle_worker_makes_the_driver_poll_while_others_run_long_lanes() -> None:
    """Two workers run keys a and c one record after another (their streaks); two are idle: the driver polls on,
    so key b, in the next poll, starts while a and c run instead of after them (and backpressure keeps counting)."""
    first = [record(TP0, o, b"a" if o % 2 else b"c") for o in range(80)]
    consumer = FakeConsumer(first + [record(TP0, 80 + o, b"b") for o in range(5)], per_poll=80)
    started: list[bytes] = []

    async def handle(r: ConsumerRecord) -> None:
        started.append(r.key)
        await asyncio.sleep(0)

    driver = make(consumer, handle, concurrency=4)
    await run_until_handled(driver, started, 85)
    assert started.index(b"b") < len(started) - 1 - started[::-1].index(b"a")  # b began before a's last record
