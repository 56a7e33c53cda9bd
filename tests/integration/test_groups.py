"""Consumer groups against the real broker (Tansu): subscribe, assignment, rebalance listeners, commits, leaving.

Tansu holds a new classic group's first JoinGroup (and every rejoin of a rebalance) for about half the member's
session timeout, where Kafka waits group.initial.rebalance.delay.ms: with ``session_timeout_ms=6000`` a join takes
about 3 s, so every test here uses that and waits on conditions with deadlines well above it.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest

from asyncconsumer import (
    AsyncConsumer,
    Consumer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    OffsetAndMetadata,
    TopicPartition,
)
from asyncconsumer.tools.embedded_broker import EmbeddedBroker
from tests.conftest import ProxiedBroker, TopicFactory
from tests.faultproxy import API_LEAVE_GROUP
from tests.produce import ProducedRecord, ProduceHelper
from tests.waiting import wait_for, wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_INTERVAL_MS = 500
GROUP_SETTINGS: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "session_timeout_ms": SESSION_TIMEOUT_MS,
    "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
    "enable_auto_commit": False,
    "partition_assignment_strategy": ("range",),
}
JOIN_TIMEOUT_S = 20.0
"""A (re)join takes ~3 s on Tansu with a 6 s session; a rebalance with two members up to ~5 s."""


def new_group_id() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def group_consumer(bootstrap: str, group_id: str, **overrides: Any) -> AsyncConsumer:
    return AsyncConsumer(bootstrap, group_id=group_id, **{**GROUP_SETTINGS, **overrides})


def all_partitions(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


def by_partition(records: Iterable[ConsumerRecord]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for r in records:
        out[r.partition].append(r.offset)
    return dict(out)


def produced_offsets(produced: dict[int, list[ProducedRecord]]) -> dict[int, list[int]]:
    return {p: [r.offset for r in recs] for p, recs in produced.items() if recs}


def describe(tps: Iterable[TopicPartition]) -> list[int]:
    return sorted(tp.partition for tp in tps)


class _Recorder:
    """Keeps every callback as ``(kind, partitions)`` and the threads they ran on (list appends are thread-safe)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []
        self.threads: set[str] = set()

    def _note(self, kind: str, partitions: Iterable[TopicPartition]) -> None:
        self.threads.add(threading.current_thread().name)
        self.events.append((kind, frozenset(partitions)))

    def of(self, kind: str, since: int = 0) -> list[frozenset[TopicPartition]]:
        return [parts for k, parts in self.events[since:] if k == kind]

    def nonempty(self, since: int = 0) -> list[tuple[str, list[int]]]:
        """The callbacks since ``since`` that carried partitions (an empty revocation at the first join is
        allowed: Kafka's classic consumer makes one), readable in an assertion message."""
        return [(k, describe(parts)) for k, parts in self.events[since:] if parts]


class RecordingListener(_Recorder, ConsumerRebalanceListener):
    """A listener with plain callbacks."""

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self._note("revoked", partitions)

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._note("assigned", partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._note("lost", partitions)


class AsyncRecordingListener(_Recorder, ConsumerRebalanceListener):
    """A listener with coroutine callbacks (the consumer awaits them inside ``poll``)."""

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self._note("revoked", partitions)

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self._note("assigned", partitions)

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        await asyncio.sleep(0)
        self._note("lost", partitions)


async def consume_until(
    consumer: AsyncConsumer, count: int, timeout_s: float = JOIN_TIMEOUT_S, max_records: int | None = None
) -> list[ConsumerRecord]:
    """Polls until ``count`` records arrived (failing at the deadline); returns them in arrival order."""
    got: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"only {len(got)} of {count} records within {timeout_s} s"
        records = await consumer.poll(timeout_ms=int(min(remaining, 0.5) * 1000), max_records=max_records)
        got.extend(records.records())
    return got


async def wait_until(check: Callable[[], Awaitable[bool]], timeout: float, message: Callable[[], str]) -> None:
    """``wait_for_async`` for a coroutine check (mypy cannot pick the type variable of its union signature)."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"condition not met within {timeout} s: {message()}"
        await asyncio.sleep(0.01)


class Poller:
    """Polls one AsyncConsumer in a task of the test's loop, collecting records, until ``stop()``."""

    def __init__(self, consumer: AsyncConsumer) -> None:
        self.consumer = consumer
        self.records: list[ConsumerRecord] = []
        self._stopping = False
        self._task: asyncio.Task[None] = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while not self._stopping:
            self.records.extend((await self.consumer.poll(timeout_ms=100)).records())

    def check(self) -> None:
        """Raise what the polling task raised, if it ended."""
        if self._task.done():
            self._task.result()
            raise AssertionError("the polling task ended without being stopped")

    async def stop(self) -> None:
        """Let the current poll finish (its records are kept), then end the task."""
        self._stopping = True
        await asyncio.wait_for(self._task, 10)

    async def abandon(self) -> None:
        """On the way out of a failed test: cancel the task, whatever it was doing."""
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


def consumed(*pollers: Poller) -> set[tuple[int, int]]:
    """(partition, offset) of every record the pollers returned, duplicates folded."""
    return {(r.partition, r.offset) for poller in pollers for r in poller.records}


def stable_pair(c1: AsyncConsumer, c2: AsyncConsumer, partitions: set[TopicPartition], *pollers: Poller) -> bool:
    """Both in the same generation, each owning something, the two owning every partition exactly once."""
    for poller in pollers:
        poller.check()
    a1, a2 = c1.assignment(), c2.assignment()
    return (
        bool(a1)
        and bool(a2)
        and not (a1 & a2)
        and a1 | a2 == partitions
        and c1.group_metadata().generation_id == c2.group_metadata().generation_id
    )


async def test_one_member_owns_every_partition_and_commits_its_positions(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = produce.values(name, 400, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    listener = AsyncRecordingListener()
    consumer = group_consumer(broker.bootstrap_servers, group_id)
    await consumer.start()
    try:
        assert consumer.assignment() == set()
        assert await consumer.committed(sorted(partitions)) == dict.fromkeys(partitions, None)
        await consumer.subscribe([name], listener=listener)
        assert consumer.subscription() == {name}

        got = await consume_until(consumer, 400, max_records=150)
        assert (await consumer.poll(timeout_ms=300)).count() == 0  # nothing more, nothing twice
        assert by_partition(got) == produced_offsets(produced)
        assert consumer.assignment() == partitions
        assert listener.of("assigned") == [partitions]
        assert listener.nonempty() == [("assigned", [0, 1, 2, 3])]  # no revocation, nothing lost
        meta = consumer.group_metadata()
        assert meta.group_id == group_id
        assert meta.member_id
        assert meta.generation_id >= 0  # Tansu numbers a group's first generation 0; Kafka starts at 1
        metrics = consumer.metrics()
        assert metrics.coordinator_id is not None and metrics.rebalances == 1
        assert metrics.records_consumed_total == 400
        assert {m.lag for m in metrics.partitions.values()} == {0} and len(metrics.partitions) == 4
        await wait_for_async(
            lambda: consumer.metrics().last_heartbeat_age_ms is not None, timeout=5, message="no heartbeat answered"
        )

        await consumer.commit()
        committed = await consumer.committed(sorted(partitions))
        assert {tp: c.offset if c else None for tp, c in committed.items()} == dict.fromkeys(partitions, 100)
        assert {tp: await consumer.position(tp) for tp in partitions} == dict.fromkeys(partitions, 100)
    finally:
        await consumer.close()


async def test_a_new_member_resumes_exactly_at_the_committed_offsets(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = produce.values(name, 400, 4)
    partitions = sorted(all_partitions(name, 4))
    group_id = new_group_id()

    first = group_consumer(broker.bootstrap_servers, group_id)
    await first.start()
    try:
        await first.subscribe([name])
        # Small polls so it stops around half way; everything it returned is what its positions say.
        got1 = await consume_until(first, 200, max_records=25)
        positions = {tp: await first.position(tp) for tp in partitions}
        await first.commit()
    finally:
        await first.close()
    assert len(got1) < 400
    consumed1 = by_partition(got1)
    for tp in partitions:  # per partition, a prefix 0..position-1
        assert consumed1.get(tp.partition, []) == list(range(positions[tp]))

    second = group_consumer(broker.bootstrap_servers, group_id)
    await second.start()
    try:
        committed = await second.committed(partitions)  # a different client sees what the first committed
        assert {tp: c.offset if c else None for tp, c in committed.items()} == positions
        await second.subscribe([name])
        got2 = await consume_until(second, 400 - len(got1), max_records=100)
        assert (await second.poll(timeout_ms=300)).count() == 0
    finally:
        await second.close()
    consumed2 = by_partition(got2)
    for tp in partitions:
        rest = consumed2.get(tp.partition, [])
        if rest:
            assert rest[0] == positions[tp], f"{tp}: the second member started at {rest[0]}, committed {positions[tp]}"
    union = {p: consumed1.get(p, []) + consumed2.get(p, []) for p in range(4)}
    assert union == produced_offsets(produced)  # no gap, no overlap


async def test_two_members_split_the_partitions_and_consume_everything(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = produce.values(name, 400, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    c1 = group_consumer(broker.bootstrap_servers, group_id)
    c2 = group_consumer(broker.bootstrap_servers, group_id)
    pollers: list[Poller] = []
    await asyncio.gather(c1.start(), c2.start())
    try:
        await c1.subscribe([name])
        await c2.subscribe([name])
        p1, p2 = Poller(c1), Poller(c2)
        pollers += [p1, p2]

        def settled() -> bool:
            return stable_pair(c1, c2, partitions, p1, p2) and len(consumed(p1, p2)) == 400

        await wait_for_async(
            settled,
            timeout=2 * JOIN_TIMEOUT_S,
            message=lambda: (
                f"c1 owns {describe(c1.assignment())} (generation {c1.group_metadata().generation_id}), "
                f"c2 owns {describe(c2.assignment())} (generation {c2.group_metadata().generation_id}), "
                f"{len(p1.records)} + {len(p2.records)} records"
            ),
        )
        await p1.stop()
        await p2.stop()
        assert (len(c1.assignment()), len(c2.assignment())) == (2, 2)  # range: 4 partitions over 2 members
        assert c1.group_metadata().member_id != c2.group_metadata().member_id
        # At least once, none skipped: each partition's offsets, over both members, are all that was produced.
        union: dict[int, list[int]] = defaultdict(list)
        for partition, offset in sorted(consumed(p1, p2)):
            union[partition].append(offset)
        assert dict(union) == produced_offsets(produced)
    finally:
        for poller in pollers:
            await poller.abandon()
        await asyncio.gather(c1.close(), c2.close())


async def test_when_a_member_leaves_the_other_takes_over_its_partitions(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(4)
    produced = await proxied_broker.produce.values_async(name, 400, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    l1, l2 = RecordingListener(), RecordingListener()
    c1 = group_consumer(proxied_broker.bootstrap_servers, group_id)
    c2 = group_consumer(proxied_broker.bootstrap_servers, group_id)
    pollers: list[Poller] = []
    c1_closed = False
    await asyncio.gather(c1.start(), c2.start())
    try:
        await c1.subscribe([name], listener=l1)
        await c2.subscribe([name], listener=l2)
        p1, p2 = Poller(c1), Poller(c2)
        pollers += [p1, p2]

        async def each_read_its_partitions_to_the_end() -> bool:
            if not stable_pair(c1, c2, partitions, p1, p2):
                return False
            owned = [(c, tp) for c in (c1, c2) for tp in c.assignment()]
            return all([await c.position(tp) == len(produced[tp.partition]) for c, tp in owned])

        await wait_until(
            each_read_its_partitions_to_the_end,
            timeout=2 * JOIN_TIMEOUT_S,
            message=lambda: (
                f"c1 owns {describe(c1.assignment())}, c2 owns {describe(c2.assignment())}, "
                f"{len(consumed(p1, p2))} of 400 records"
            ),
        )
        await p1.stop()
        await p2.stop()
        leaver_owns = c1.assignment()
        kept = c2.assignment()
        await c1.commit({tp: OffsetAndMetadata(len(produced[tp.partition])) for tp in leaver_owns})
        await c2.commit()
        generation = c2.group_metadata().generation_id
        assert l2.of("assigned")[-1] == kept  # its listener already told it what it owns
        mark = len(l2.events)

        p2 = Poller(c2)
        pollers.append(p2)
        # (aiokafka sends no LeaveGroup here: it leaves only when generation > 0, and Tansu's first one is 0.)
        leaves = proxied_broker.proxy.requests_by_api[API_LEAVE_GROUP]
        c1_closed = True
        await c1.close()
        assert proxied_broker.proxy.requests_by_api[API_LEAVE_GROUP] == leaves + 1  # close sent one LeaveGroup

        def took_over() -> bool:
            p2.check()
            return c2.assignment() == partitions and partitions in l2.of("assigned", mark)

        await wait_for_async(
            took_over,
            timeout=JOIN_TIMEOUT_S,
            message=lambda: f"c2 owns {describe(c2.assignment())}; its listener saw {l2.nonempty(mark)}",
        )
        # Eager (range) rebalance: everything it had is revoked first, then the whole topic is assigned.
        assert l2.nonempty(mark) == [("revoked", describe(kept)), ("assigned", [0, 1, 2, 3])]
        assert c2.group_metadata().generation_id > generation
        assert l2.threads == {threading.current_thread().name}  # listeners run inside poll, on the caller's side

        # It picks up the partitions it gained at the offsets the leaver committed: only the new records come.
        more = await proxied_broker.produce.values_async(name, 40, 4, start=400)

        def got_the_new_ones() -> bool:
            p2.check()
            return len(p2.records) >= 40

        await wait_for_async(got_the_new_ones, timeout=JOIN_TIMEOUT_S, message=lambda: f"{len(p2.records)} of 40")
        await p2.stop()
        assert (await c2.poll(timeout_ms=300)).count() == 0
        assert by_partition(p2.records) == produced_offsets(more)
        assert all(recs[0].offset == len(produced[p]) for p, recs in more.items())
    finally:
        for poller in pollers:
            await poller.abandon()
        if not c1_closed:
            await c1.close()
        await c2.close()


class ThreadedMember:
    """A blocking ``Consumer`` in the group, polled on its own thread: its membership does not depend on the
    test's event loop. It publishes what it owns and its generation after every poll."""

    def __init__(self, bootstrap: str, group_id: str, topic: str) -> None:
        self.listener = RecordingListener()
        self.assignment: set[TopicPartition] = set()
        self.generation: int | None = None
        self.error: BaseException | None = None
        self._bootstrap, self._group_id, self._topic = bootstrap, group_id, topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="threaded-member", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with Consumer(self._bootstrap, group_id=self._group_id, **GROUP_SETTINGS) as consumer:
                consumer.subscribe([self._topic], listener=self.listener)
                while not self._stop.is_set():
                    consumer.poll(timeout_ms=100)
                    self.assignment = consumer.assignment()
                    self.generation = consumer.group_metadata().generation_id
        except BaseException as exc:  # reported by check() and stop()
            self.error = exc

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"the threaded member failed: {self.error!r}") from self.error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)
        assert not self._thread.is_alive(), "the threaded member did not close within 15 s"
        self.check()


async def test_a_blocked_event_loop_keeps_the_membership(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    # Tansu expires a silent member only when another member is active (a lone member blocked for twice its
    # session keeps its generation even with aiokafka, whose heartbeats run on the blocked loop). So the group
    # has a second member on its own thread, which keeps heartbeating and would be rebalanced if ours expired:
    # with aiokafka in place of AsyncConsumer this test fails (Tansu evicts it ~6 s into the block).
    name = topic(4)
    produce.values(name, 40, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    listener = RecordingListener()
    consumer = group_consumer(broker.bootstrap_servers, group_id, max_poll_interval_ms=60_000)
    await consumer.start()
    other = ThreadedMember(broker.bootstrap_servers, group_id, name)
    try:
        await consumer.subscribe([name], listener=listener)

        async def stable() -> bool:
            await consumer.poll(timeout_ms=100)
            other.check()
            mine = consumer.assignment()
            return (
                bool(mine)
                and bool(other.assignment)
                and not (mine & other.assignment)
                and mine | other.assignment == partitions
                and consumer.group_metadata().generation_id == other.generation
            )

        await wait_until(
            stable,
            timeout=2 * JOIN_TIMEOUT_S,
            message=lambda: f"ours owns {describe(consumer.assignment())}, the other {describe(other.assignment)}",
        )
        before = consumer.group_metadata()
        owned = consumer.assignment()
        mark, other_mark = len(listener.events), len(other.listener.events)

        t_end = time.monotonic() + 2 * SESSION_TIMEOUT_MS / 1000
        while time.monotonic() < t_end:  # CPU-bound, no await: the event loop is blocked for two sessions
            pass

        # A rebalance would show within a heartbeat interval (the next heartbeat is answered REBALANCE_IN_PROGRESS
        # or UNKNOWN_MEMBER_ID): keep polling both members for four intervals before judging.
        t_watch = time.monotonic() + 4 * HEARTBEAT_INTERVAL_MS / 1000
        while time.monotonic() < t_watch:
            await consumer.poll(timeout_ms=100)
            other.check()
        assert listener.events[mark:] == []
        assert other.listener.events[other_mark:] == []
        assert consumer.group_metadata() == before
        assert consumer.assignment() == owned
        assert other.generation == before.generation_id
    finally:
        other.stop()
        await consumer.close()


def test_the_blocking_consumer_in_a_group(broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(3)
    produced = produce.values(name, 300, 3)
    partitions = all_partitions(name, 3)
    group_id = new_group_id()
    listener = RecordingListener()
    with Consumer(broker.bootstrap_servers, group_id=group_id, **GROUP_SETTINGS) as consumer:
        consumer.subscribe([name], listener=listener)
        assert consumer.subscription() == {name}
        got: list[ConsumerRecord] = []

        def all_in() -> bool:
            got.extend(consumer.poll(timeout_ms=200).records())
            return len(got) >= 300

        wait_for(all_in, timeout=JOIN_TIMEOUT_S, message=lambda: f"{len(got)} of 300 records")
        assert consumer.poll(timeout_ms=300).count() == 0
        assert by_partition(got) == produced_offsets(produced)
        assert consumer.assignment() == partitions
        assert listener.nonempty() == [("assigned", [0, 1, 2])]
        assert listener.threads == {threading.current_thread().name}
        assert consumer.group_metadata().group_id == group_id

        consumer.commit()
        committed = consumer.committed(sorted(partitions))
        assert {tp: c.offset if c else None for tp, c in committed.items()} == dict.fromkeys(partitions, 100)

        consumer.unsubscribe()
        assert consumer.subscription() == set()
        assert consumer.assignment() == set()
        # Like Java, unsubscribe runs on_partitions_revoked on the caller's thread, once.
        assert listener.nonempty() == [("assigned", [0, 1, 2]), ("revoked", [0, 1, 2])]
        assert listener.threads == {threading.current_thread().name}
