"""Consumer groups against the real broker (Tansu): subscribe (by name, or by a pattern that matches a topic created
later), assignment, rebalance listeners, commits, leaving (on close, or by not polling within
``max_poll_interval_ms``), a blocked event loop, the blocking consumer, and members joining and leaving one by one.

Static membership, cooperative-sticky and killed member processes are in the other ``test_groups_*.py``, a member's
connections cut again and again in ``test_reconnect.py``, more faults under a group in ``test_group_faults.py``.

Tansu holds a new classic group's first JoinGroup (and every rejoin of a rebalance) for about half the member's
session timeout, where Kafka waits group.initial.rebalance.delay.ms: with ``session_timeout_ms=6000`` a join takes
about 3 s, so every test here uses that and waits on conditions with deadlines well above it.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import Counter, defaultdict
from typing import Any

import pytest

from asyncconsumer import (
    AsyncConsumer,
    Consumer,
    ConsumerRecord,
    OffsetAndMetadata,
    PollIntervalExceededError,
    TopicPartition,
)
from tests.conftest import Broker, ProxiedBroker, TopicFactory, unique_topic_name
from tests.support.consume import by_partition
from tests.support.faultproxy import API_LEAVE_GROUP
from tests.support.groups import (
    GROUP_SETTINGS,
    HEARTBEAT_INTERVAL_MS,
    JOIN_TIMEOUT_S,
    SESSION_TIMEOUT_MS,
    AsyncRecordingListener,
    CommittingHook,
    Poller,
    RecordingListener,
    all_partitions,
    committed_offsets,
    consume_until,
    consumed,
    describe,
    group_consumer,
    merge,
    new_group_id,
    offsets_of,
    pairs,
    produced_offsets,
    stable_pair,
    union_by_partition,
)
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for, wait_for_async, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


async def test_one_member_owns_every_partition_and_commits_its_positions(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
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
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
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
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
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
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
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


def test_the_blocking_consumer_in_a_group(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
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


# --- a pattern matches a topic created later ------------------------------------------------------------------


async def test_a_pattern_subscription_picks_up_a_topic_created_later(broker: Broker, produce: ProduceHelper) -> None:
    prefix = unique_topic_name("pattern")
    first = f"{prefix}.first"
    broker.create_topic(first, 2)
    produced_first = produce.values(first, 20, 2)
    consumer = group_consumer(broker.bootstrap_servers, new_group_id(), metadata_max_age_ms=500)
    await consumer.start()
    poller: Poller | None = None
    try:
        await consumer.subscribe(pattern=re.escape(prefix) + r"\..*")
        poller = Poller(consumer)
        active = poller

        def has(topic: str, offsets: dict[int, list[int]]) -> bool:
            active.check()
            return pairs(offsets) <= {(r.partition, r.offset) for r in active.records if r.topic == topic}

        await wait_for_async(
            lambda: has(first, produced_offsets(produced_first)) and consumer.assignment() == all_partitions(first, 2),
            timeout=JOIN_TIMEOUT_S,
            message=lambda: f"owns {sorted(consumer.assignment())}, {len(active.records)} records",
        )
        later = f"{prefix}.later"
        broker.create_topic(later, 3)
        broker.create_topic(f"{prefix}-no-dot", 1)  # does not match
        produced_later = produce.values(later, 30, 3)
        expected = all_partitions(first, 2) | all_partitions(later, 3)
        await wait_for_async(
            lambda: has(later, produced_offsets(produced_later)) and consumer.assignment() == expected,
            timeout=JOIN_TIMEOUT_S,
            message=lambda: f"owns {sorted(consumer.assignment())}, {len(active.records)} records",
        )
        await poller.stop()
        assert consumer.subscription() == {first, later}
        assert {r.topic for r in poller.records} == {first, later}
    finally:
        if poller is not None:
            await poller.abandon()
        await consumer.close()


# --- max_poll_interval_ms -------------------------------------------------------------------------------------


async def test_a_member_that_stops_polling_leaves_and_rejoins_on_its_next_poll(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(2)
    proxy = proxied_broker.proxy
    first_wave = await proxied_broker.produce.values_async(name, 100, 2)
    listener = RecordingListener()
    consumer = group_consumer(proxied_broker.bootstrap_servers, new_group_id(), max_poll_interval_ms=2_000)
    await consumer.start()
    got: list[ConsumerRecord] = []

    async def poll_and_commit() -> int:
        records = list((await consumer.poll(timeout_ms=100, max_records=10)).records())
        got.extend(records)
        if records:
            await consumer.commit(
                {TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.offset + 1) for r in records}
            )
        return len(records)

    try:
        await consumer.subscribe([name], listener=listener)
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while len(got) < 50:  # about half of it, in batches of 10, each committed
            assert time.monotonic() < deadline, f"{len(got)} of 50 records"
            await poll_and_commit()
        generation = consumer.group_metadata().generation_id
        leaves = proxy.requests_by_api[API_LEAVE_GROUP]
        mark = len(listener.events)

        await asyncio.sleep(3.5)  # the caller does not poll; the loop stays free (heartbeats would still go)
        second_wave = await proxied_broker.produce.values_async(name, 50, 2, start=100)
        # It left ~2 s into the pause (the test below times that), so the LeaveGroup has gone out by now.
        await wait_for_async(
            lambda: proxy.requests_by_api[API_LEAVE_GROUP] == leaves + 1,
            timeout=1,
            message=lambda: f"{proxy.requests_by_api[API_LEAVE_GROUP] - leaves} LeaveGroup requests",
        )
        with pytest.raises(PollIntervalExceededError):
            await consumer.poll(timeout_ms=100)
        assert listener.nonempty(mark) == [("lost", [0, 1])]  # lost on leaving (Java's classic consumer), in that poll

        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while len({(r.partition, r.offset) for r in got}) < 150:
            assert time.monotonic() < deadline, f"{len(got)} records after the rejoin: {listener.nonempty(mark)}"
            await poll_and_commit()
        assert (await consumer.poll(timeout_ms=300)).count() == 0
        assert consumer.assignment() == all_partitions(name, 2)
        assert consumer.group_metadata().generation_id > generation
        assert listener.nonempty(mark) == [("lost", [0, 1]), ("assigned", [0, 1])]
        assert by_partition(got) == merge(first_wave, second_wave)  # every batch was committed: none twice or skipped
    finally:
        await consumer.close()


async def test_the_leave_group_goes_out_when_max_poll_interval_passes(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(1)
    arrivals: list[float] = []

    def note_leave(api_key: int, payload: bytes) -> None:
        if api_key == API_LEAVE_GROUP:
            arrivals.append(time.monotonic())

    proxied_broker.proxy.set_request_mutator(note_leave)
    consumer = group_consumer(proxied_broker.bootstrap_servers, new_group_id(), max_poll_interval_ms=2_000)
    await consumer.start()
    try:
        await consumer.subscribe([name])
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment"
            await consumer.poll(timeout_ms=100)
        await consumer.pause(*consumer.assignment())  # no fetch in flight: nothing else wakes the background loop
        last_poll = time.monotonic()
        await wait_for_async(lambda: arrivals, timeout=10, message="no LeaveGroup")
        assert arrivals[0] - last_poll < 2.0 + 1.0, f"LeaveGroup {arrivals[0] - last_poll:.2f} s after the last poll"
    finally:
        await consumer.close()


# --- up to four members, joining and leaving one by one -------------------------------------------------------


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
async def test_four_members_join_and_leave_one_by_one_and_every_record_is_consumed_exactly_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, strategy: str
) -> None:
    """1 → 4 → 1 members, records produced between steps. After every rebalance one generation owns each partition
    exactly once; with auto-commit (which commits before a revocation and on close) nothing is consumed twice."""
    name = topic(8)
    partitions = all_partitions(name, 8)
    group_id = new_group_id()
    settings: dict[str, Any] = {"partition_assignment_strategy": (strategy,), "enable_auto_commit": True}
    waves = [produce.values(name, 80, 8)]
    members: list[tuple[AsyncConsumer, Poller]] = []
    everyone: list[tuple[AsyncConsumer, Poller]] = []
    generations: list[int] = []
    steps: list[str] = []

    def view() -> str:
        parts = []
        for c, _ in members:
            meta = c.group_metadata()
            parts.append(f"{meta.member_id[-6:]} gen {meta.generation_id} owns {describe(c.assignment())}")
        return "; ".join(parts)

    async def settle(step: str) -> None:
        started = time.monotonic()

        def settled() -> bool:
            for _, poller in members:
                poller.check()
            owned = [c.assignment() for c, _ in members]
            ids = {c.group_metadata().generation_id for c, _ in members}
            return (
                len(ids) == 1
                and ids.pop() > (generations[-1] if generations else -1)
                and all(owned)
                and sum(len(o) for o in owned) == len(partitions)
                and frozenset().union(*owned) == partitions
            )

        await wait_for_async(settled, timeout=3 * JOIN_TIMEOUT_S, message=lambda: f"{step}: {view()}")
        generations.append(members[0][0].group_metadata().generation_id)
        steps.append(f"{step} {time.monotonic() - started:.1f}s")
        waves.append(await produce.values_async(name, 80, 8, start=80 * len(waves)))

    try:
        for n in range(1, 5):
            consumer = group_consumer(broker.bootstrap_servers, group_id, **settings)
            await consumer.start()
            await consumer.subscribe([name])
            members.append((consumer, Poller(consumer)))
            everyone.append(members[-1])
            await settle(f"{n} member(s)")
        while len(members) > 1:
            consumer, poller = members.pop(0)
            await poller.stop()
            await consumer.close()  # commits its positions, then LeaveGroup
            await settle(f"{len(members)} member(s) left")

        expected = merge(*waves)
        total = sum(len(offsets) for offsets in expected.values())
        await wait_for_async(
            lambda: len(consumed(*(p for _, p in everyone))) == total,
            timeout=JOIN_TIMEOUT_S,
            message=lambda: f"{len(consumed(*(p for _, p in everyone)))} of {total} records",
        )
        await members[0][1].stop()
    finally:
        for consumer, poller in everyone:
            await poller.abandon()
            await consumer.close()

    print(f"\n{strategy}: generations {generations}; settled after {', '.join(steps)}")
    returned = [(r.partition, r.offset) for _, poller in everyone for r in poller.records]
    assert union_by_partition(returned) == expected  # none skipped
    duplicates = sorted(x for x, times in Counter(returned).items() if times > 1)
    assert duplicates == [], f"consumed twice across clean rebalances: {duplicates[:20]}"


# --- what the caller's processing engine builds on (issue 34): auto-commit off at run time, the rebalance hook ----

AUTO_COMMIT_MS = 200


async def test_auto_commit_switched_off_at_run_time_commits_nothing_even_on_unsubscribe_and_close_and_on_again_commits(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.values(name, 100, 2)
    partitions = all_partitions(name, 2)
    group_id = new_group_id()
    nothing = dict.fromkeys(range(2), None)
    settings: dict[str, Any] = {"enable_auto_commit": True, "auto_commit_interval_ms": AUTO_COMMIT_MS}

    first = group_consumer(broker.bootstrap_servers, group_id, **settings)
    try:
        await asyncio.wrap_future(first._core.set_auto_commit(False))
        listener = RecordingListener()  # with a listener, leaving would commit on the caller's side too
        await first.subscribe([name], listener=listener)
        assert len(await consume_until(first, 100)) == 100
        # Ten intervals of polling, each checked: nothing is committed at any point.
        deadline = time.monotonic() + 10 * AUTO_COMMIT_MS / 1000
        while time.monotonic() < deadline:
            await first.poll(timeout_ms=50)
            assert await committed_offsets(first, partitions) == nothing
        await first.unsubscribe()  # the revoke callback runs; no commit before it
        assert listener.of("revoked")[-1] == partitions
        assert await committed_offsets(first, partitions) == nothing
        await first.subscribe([name], listener=listener)
        assert len(await consume_until(first, 100)) == 100  # from the beginning again: nothing was committed
    finally:
        await first.close()  # neither the caller's commit before leaving nor the background's last one

    second = group_consumer(broker.bootstrap_servers, group_id, **settings)
    try:
        assert await committed_offsets(second, partitions) == nothing
        await asyncio.wrap_future(second._core.set_auto_commit(False))
        await asyncio.wrap_future(second._core.set_auto_commit(True))
        await second.subscribe([name])
        assert len(await consume_until(second, 100)) == 100
        half = dict.fromkeys(range(2), 50)

        async def committed_on_the_interval() -> bool:
            await second.poll(timeout_ms=50)
            return await committed_offsets(second, partitions) == half

        await wait_until(committed_on_the_interval, JOIN_TIMEOUT_S, lambda: "auto-commit back on never committed")
    finally:
        await second.close()


async def test_the_rebalance_hook_hears_a_revocation_without_a_listener_before_the_partitions_move_and_commits(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """Classic, eager (range): the hook, installed before ``subscribe`` (which has no listener), hears the revocation
    a second member's join causes while its member still holds every partition and the other holds none; nothing
    was auto-committed (off at run time); the offset it commits from inside the callback is where the new owner
    starts."""
    name = topic(4)
    produce.values(name, 400, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    first = group_consumer(
        broker.bootstrap_servers, group_id, enable_auto_commit=True, auto_commit_interval_ms=AUTO_COMMIT_MS
    )
    second = group_consumer(broker.bootstrap_servers, group_id)
    others: list[AsyncConsumer] = []
    calls: list[tuple[str, str]] = []
    hook = CommittingHook(first, others, 30, calls)
    pollers: list[Poller] = []
    try:
        await asyncio.wrap_future(first._core.set_auto_commit(False))
        await asyncio.wrap_future(first._core.set_rebalance_hook(hook))
        await first.subscribe([name])
        p1 = Poller(first)
        pollers.append(p1)

        def first_has_everything() -> bool:
            p1.check()
            return len(consumed(p1)) == 400

        await wait_for_async(first_has_everything, JOIN_TIMEOUT_S, message=lambda: f"{len(p1.records)} records")
        assert [p for p in hook.assigned if p] == [partitions]
        others.append(second)
        await second.subscribe([name])
        p2 = Poller(second)
        pollers.append(p2)

        def moved() -> bool:
            got = offsets_of(p2)
            return stable_pair(first, second, partitions, p1, p2) and all(
                got.get(tp.partition, [])[-1:] == [99] for tp in second.assignment()
            )

        await wait_for_async(
            moved,
            2 * JOIN_TIMEOUT_S,
            message=lambda: (
                f"first {describe(first.assignment())}, second {describe(second.assignment())}, "
                f"second read {offsets_of(p2)}"
            ),
        )
        await p1.stop()
        await p2.stop()
        (revocation,) = hook.revocations
        kept = frozenset(first.assignment())
    finally:
        for poller in pollers:
            await poller.abandon()
        await asyncio.gather(first.close(), second.close())
    assert [r.partitions for r in hook.revocations[1:]] == [kept]  # close: the hook revokes what was kept, first
    assert revocation.partitions == partitions  # eager: everything, before the group hands anything out
    assert revocation.commit_error is None
    assert revocation.held_by_member >= partitions and not revocation.held_by_others
    assert set(revocation.committed_before.values()) == {None}  # no commit-before-revoke, no interval commit
    got = offsets_of(p2)
    assert {p: got[p] for p in describe(second.assignment())} == {
        p: list(range(30, 100)) for p in describe(second.assignment())
    }
