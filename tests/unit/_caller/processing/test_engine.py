"""The engine over a fake consumer: concurrency bounded, lanes in order, commits covering only finished records
(with the metadata of what finished past them), backpressure, retries, skip and stop, and revocations."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from asyncconsumer._caller.processing.engine import ProcessingEngine, ProcessingOptions
from asyncconsumer._caller.processing.progress import METADATA_PREFIX
from asyncconsumer._caller.processing.scheduler import Ordering
from asyncconsumer.errors import ConfigError
from asyncconsumer.records import ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition

pytestmark = pytest.mark.anyio

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def record(tp: TopicPartition, offset: int, key: bytes | None = None) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, offset, 0, 0, key, b"v%d" % offset, (), None, 1, 1)


class FakeConsumer:
    """Hands out queued records a few per poll (none for paused partitions) and remembers what was asked."""

    def __init__(
        self,
        records: Iterable[ConsumerRecord],
        per_poll: int = 50,
        committed: dict[TopicPartition, OffsetAndMetadata] | None = None,
    ) -> None:
        self.queue = list(records)
        self.per_poll = per_poll
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.stored = dict(committed or {})
        self.paused: set[TopicPartition] = set()
        self.ever_paused: set[TopicPartition] = set()
        self.seeks: list[tuple[TopicPartition, int]] = []
        self.polls = 0

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords:
        self.polls += 1
        await asyncio.sleep(0)
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

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None) -> None:
        assert offsets is not None
        chosen = {tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o) for tp, o in offsets.items()}
        self.commits.append(chosen)
        self.stored.update(chosen)

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return {tp: self.stored.get(tp) for tp in partitions}

    async def seek(self, partition: TopicPartition, offset: int) -> None:
        self.seeks.append((partition, offset))

    async def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)
        self.ever_paused.update(partitions)

    async def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(partitions)


async def until(condition: Any, timeout_s: float = 5) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.001)


async def run_until_handled(engine: ProcessingEngine, handled: list[Any], count: int) -> None:
    runner = asyncio.ensure_future(engine.run())
    await until(lambda: len(handled) >= count or runner.done())
    engine.stop()
    await runner


def test_bad_options_are_config_errors_naming_the_option() -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        ProcessingOptions(concurrency=0)
    with pytest.raises(ConfigError, match="on_error"):
        ProcessingOptions(on_error="ignore")  # type: ignore[arg-type]


async def test_key_order_holds_under_random_latency_and_concurrency_stays_bounded() -> None:
    rng = random.Random(7)
    records = [record(tp, o, b"k%d" % (o % 10)) for tp in (TP0, TP1) for o in range(300)]
    consumer = FakeConsumer(records)
    running = 0
    most = 0
    seen: dict[tuple[int, bytes], list[int]] = {}
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(rng.random() / 1000)
        seen.setdefault((r.partition, r.key), []).append(r.offset)
        handled.append(r)
        running -= 1

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=8, commit_interval_ms=10))
    await run_until_handled(engine, handled, len(records))
    assert len(handled) == len(records)
    assert 1 < most <= 8
    assert all(offsets == sorted(offsets) for offsets in seen.values())
    assert consumer.stored[TP0].offset == 300 and consumer.stored[TP1].offset == 300
    assert consumer.stored[TP0].metadata == ""


async def test_a_slow_key_holds_the_commit_back_and_the_metadata_remembers_what_finished_past_it() -> None:
    records = [record(TP0, 0, b"slow"), *(record(TP0, o, b"k%d" % o) for o in range(1, 6))]
    consumer = FakeConsumer(records)
    release = asyncio.Event()
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        if r.key == b"slow":
            await release.wait()
        handled.append(r.offset)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=10, commit_interval_ms=1))
    runner = asyncio.ensure_future(engine.run())
    await until(lambda: len(handled) == 5 and consumer.stored.get(TP0) is not None and consumer.stored[TP0].metadata)
    assert consumer.stored[TP0] == OffsetAndMetadata(0, f"{METADATA_PREFIX}1-5")  # 0 runs; 1-5 finished
    release.set()
    await until(lambda: len(handled) == 6)
    engine.stop()
    await runner
    assert consumer.stored[TP0] == OffsetAndMetadata(6, "")


async def test_a_restart_skips_what_the_metadata_says_finished() -> None:
    committed = {TP0: OffsetAndMetadata(0, f"{METADATA_PREFIX}1-5")}
    consumer = FakeConsumer([record(TP0, o) for o in range(8)], committed=committed)
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r.offset)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions())
    await run_until_handled(engine, handled, 3)
    assert sorted(handled) == [0, 6, 7]
    assert consumer.stored[TP0] == OffsetAndMetadata(8, "")


async def test_a_partition_with_too_much_in_flight_is_paused_and_resumed() -> None:
    consumer = FakeConsumer([record(TP0, o, b"one key") for o in range(40)], per_poll=10)
    handled: list[int] = []
    gate = asyncio.Event()

    async def handle(r: ConsumerRecord) -> None:
        await gate.wait()
        handled.append(r.offset)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(max_in_flight_per_partition=10))
    runner = asyncio.ensure_future(engine.run())
    await until(lambda: TP0 in consumer.paused)
    polls = consumer.polls
    await until(lambda: consumer.polls > polls + 5)
    assert engine.metrics().waiting + engine.metrics().running <= 10  # nothing more came while paused
    gate.set()
    await until(lambda: len(handled) == 40)
    engine.stop()
    await runner
    assert TP0 in consumer.ever_paused and TP0 not in consumer.paused


async def test_retries_then_skip_hands_the_record_to_the_callback_and_goes_on() -> None:
    consumer = FakeConsumer([record(TP0, o) for o in range(3)])
    attempts: dict[int, int] = {}
    skipped: list[tuple[int, str]] = []
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        attempts[r.offset] = attempts.get(r.offset, 0) + 1
        if r.offset == 1:
            raise RuntimeError("bad record")
        handled.append(r.offset)

    options = ProcessingOptions(
        retries=2, retry_backoff_ms=1, on_error="skip", on_skip=lambda r, e: skipped.append((r.offset, str(e)))
    )
    engine = ProcessingEngine(consumer, handle, options)
    await run_until_handled(engine, skipped, 1)
    assert attempts[1] == 3 and skipped == [(1, "bad record")]
    assert consumer.stored[TP0].offset == 3  # a skipped record counts as finished
    assert engine.metrics().skipped == 1 and engine.metrics().retries == 2


async def test_stop_on_error_raises_after_the_running_records_settle_and_commits_only_what_finished() -> None:
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(5)])
    finished: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        if r.offset == 2:
            raise ValueError("cannot handle 2")
        await asyncio.sleep(0.01)
        finished.append(r.offset)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=5))
    with pytest.raises(ValueError, match="cannot handle 2"):
        await engine.run()
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

    engine = ProcessingEngine(consumer, handle, ProcessingOptions())
    runner = asyncio.ensure_future(engine.run())
    await until(started.is_set)
    revocation = asyncio.ensure_future(engine.rebalance_hook.on_partitions_revoked({TP0}))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    assert not revocation.done()  # it waits for the running record
    release.set()
    await revocation
    engine.stop()
    await runner
    assert handled == [0]  # 1-4 waited and were dropped: the next owner handles them
    assert consumer.stored[TP0] == OffsetAndMetadata(1, "")
    assert consumer.seeks == [(TP0, 1)]


async def test_batches_hold_up_to_batch_size_records() -> None:
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(10)])
    batches: list[list[int]] = []

    async def handle(batch: list[ConsumerRecord]) -> None:
        batches.append([r.offset for r in batch])

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(batch_size=4, ordering=Ordering.NONE))
    await run_until_handled(engine, batches, 3)
    assert sorted(o for b in batches for o in b) == list(range(10))
    assert max(len(b) for b in batches) <= 4


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

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=50))
    runner = asyncio.ensure_future(engine.run())
    await until(lambda: running == 50)
    assert engine.metrics().running == 50 and engine.metrics().waiting == 150
    release.set()
    await until(lambda: engine.metrics().completed == 200)
    engine.stop()
    await runner
    assert running == 0 and consumer.stored[TP0].offset == 200


async def test_a_record_running_past_the_revocation_deadline_is_abandoned_and_its_worker_replaced() -> None:
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

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=1, revoke_timeout_ms=20))
    runner = asyncio.ensure_future(engine.run())
    await until(stuck.is_set)
    await engine.rebalance_hook.on_partitions_revoked({TP0})  # type: ignore[arg-type]
    assert cancelled == [0]
    assert TP0 not in consumer.stored or consumer.stored[TP0].offset == 0  # never covered by a commit
    await until(lambda: len(handled) == 1)  # the one worker was replaced and goes on with the other partition
    engine.stop()
    await runner
    assert handled[0].partition == 1 and consumer.stored[TP1].offset == 1


async def test_metrics_give_the_rate_and_the_handler_time_percentiles() -> None:
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(80)])
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        await asyncio.sleep(0.002)
        handled.append(r)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=4))
    runner = asyncio.ensure_future(engine.run())
    await until(lambda: len(handled) == 80)
    metrics = engine.metrics()
    engine.stop()
    await runner
    assert metrics.completed == 80
    # one record in eight per worker is timed: 80 records over 4 workers time at least 8
    assert engine._latency_count >= 8
    assert 0.0019 <= metrics.handler_seconds_p50 <= metrics.handler_seconds_p99 <= metrics.handler_seconds_max
    assert 0.0019 <= metrics.handler_seconds_avg <= metrics.handler_seconds_max
    assert metrics.completed_per_second > 0


async def test_a_worker_that_fails_inside_the_engine_stops_processing_with_its_error() -> None:
    consumer = FakeConsumer([record(TP0, o, b"k%d" % o) for o in range(3)])

    async def handle(r: ConsumerRecord) -> None:
        pass

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=2))

    def broken(offset: int) -> None:
        raise RuntimeError("a bug in the bookkeeping")

    original = engine._receive

    async def receive(records: Any) -> None:
        await original(records)
        for progress in engine._progress.values():
            progress.complete = broken  # type: ignore[method-assign]

    engine._receive = receive  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="bookkeeping"):
        await asyncio.wait_for(engine.run(), 5)


async def test_metrics_may_be_read_from_another_thread_while_partitions_come_and_go() -> None:
    """The blocking ``Consumer`` hands ``processing_metrics()`` to any thread: reading it while the engine adds
    partitions must never see a collection change under its feet."""
    partitions = [TopicPartition("t", p) for p in range(400)]
    consumer = FakeConsumer([record(tp, o, b"k") for o in range(3) for tp in partitions], per_poll=7)
    handled: list[ConsumerRecord] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=8))
    errors: list[BaseException] = []
    reads = 0
    done = threading.Event()

    def read() -> None:
        nonlocal reads
        while not done.is_set():
            try:
                engine.metrics()
            except Exception as exc:
                errors.append(exc)
                return
            reads += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads take turns often: a reading that is not safe fails at once
    reader = threading.Thread(target=read)
    reader.start()
    try:
        await run_until_handled(engine, handled, len(partitions) * 3)
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

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None) -> None:
        self.waiting += 1
        try:
            await self.answer.wait()
        finally:
            self.waiting -= 1
        await super().commit(offsets)
        self.landed.append(self.commits[-1])


async def test_a_commit_waiting_for_the_coordinator_holds_up_no_record() -> None:
    """Records of partitions whose leaders answer go on being polled and handled while an interval's commit waits
    for a coordinator that does not answer; one such commit at a time; the last commit waits for it, then covers
    everything."""
    consumer = StuckCommits([record(TP0, o) for o in range(300)], per_poll=10)
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r.offset)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=4, commit_interval_ms=1))
    runner = asyncio.ensure_future(engine.run())
    try:
        await until(lambda: consumer.waiting == 1)
        await until(lambda: len(handled) == 300)  # before the fix: stuck at the first commit's records
        assert consumer.waiting == 1 and consumer.commits == []  # still the one commit, still unanswered
        engine.stop()
        await asyncio.sleep(0.01)
        assert not runner.done()  # the last commit waits for the one under way
    finally:
        engine.stop()
        consumer.answer.set()
        await asyncio.wait_for(runner, 5)
    offsets = [c[TP0].offset for c in consumer.landed]
    assert offsets[-1] == 300 and offsets == sorted(offsets)  # everything, in the order they were made


async def test_a_revocation_waits_for_the_interval_commit_so_commits_never_move_back() -> None:
    consumer = StuckCommits([record(TP0, o) for o in range(50)], per_poll=5)
    handled: list[int] = []

    async def handle(r: ConsumerRecord) -> None:
        handled.append(r.offset)

    engine = ProcessingEngine(consumer, handle, ProcessingOptions(concurrency=2, commit_interval_ms=1))
    runner = asyncio.ensure_future(engine.run())
    try:
        await until(lambda: consumer.waiting == 1 and len(handled) == 50)
        revoking = asyncio.ensure_future(engine.revoked({TP0}))
        await asyncio.sleep(0.01)
        assert consumer.waiting == 1  # the revocation's commit is not sent beside the interval's
        consumer.answer.set()
        await asyncio.wait_for(revoking, 5)
    finally:
        engine.stop()
        consumer.answer.set()
        await asyncio.wait_for(runner, 5)
    offsets = [c[TP0].offset for c in consumer.landed]
    assert offsets[-1] == 50 and offsets == sorted(offsets)
