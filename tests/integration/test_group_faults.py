"""Consumer groups under faults, end to end against the real broker (Tansu), counting records.

1. The coordinator's connection cut while a JoinGroup or SyncGroup is in flight: the group still forms and every
   record is consumed once.
2. The coordinator's connection cut while an OffsetCommit is in flight: ``commit()`` succeeds after a retry, or
   raises a clear retriable error; a restarted member resumes at what was committed, skipping nothing.
3. The broker restarted under a running group (a fresh, empty Tansu on the same port, the topic created again):
   the member rejoins, starts the new partitions per ``auto_offset_reset`` and keeps consuming.
4. A member process SIGKILLed while it holds partitions and has processed records it has not committed: the
   others take over; together they processed every record (at least once), none skipped; duplicates counted.

Every test prints its figures (records, duplicates, faults, timings); duplicates are allowed only where an
uncommitted crash makes at-least-once redeliver. Members use ``session_timeout_ms=6000`` as in ``test_groups.py``
(Tansu holds a join about half of it) and every wait is a condition with a deadline.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from asyncconsumer import (
    AsyncConsumer,
    ConsumerRecord,
    KafkaError,
    KafkaTimeoutError,
    OffsetAndMetadata,
    TopicPartition,
)
from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker
from tests.conftest import Broker, ProxiedBroker, TopicFactory, unique_topic_name
from tests.support.consume import by_partition
from tests.support.faultproxy import (
    API_JOIN_GROUP,
    API_OFFSET_COMMIT,
    API_SYNC_GROUP,
    CLOSE,
    FrameAction,
)
from tests.support.groups import (
    JOIN_TIMEOUT_S,
    Poller,
    all_partitions,
    consume_until,
    describe,
    group_consumer,
    merge,
    new_group_id,
    pairs,
    stable_pair,
    union_by_partition,
)
from tests.support.member_process import (
    MEMBER_SCRIPT,
    MemberProcess,
    group_view,
    one_generation_owns_all,
    settle_and_pick_victim,
)
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for_async, wait_until

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


def duplicates_of(returned: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(partition, offset) pairs returned more than once, sorted."""
    return sorted(key for key, times in Counter(returned).items() if times > 1)


def offsets_of(records: list[ConsumerRecord]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


class CutFirst:
    """A proxy mutator that closes the connection instead of forwarding the first ``count`` frames of ``api_key``
    (the coordinator's connection, since only it carries group requests); counts what it cut."""

    def __init__(self, api_key: int, count: int = 1) -> None:
        self.api_key = api_key
        self.left = count
        self.cut = 0

    def __call__(self, api_key: int, payload: bytes) -> FrameAction | None:
        if api_key != self.api_key or self.left <= 0:
            return None
        self.left -= 1
        self.cut += 1
        return CLOSE


class JoinClock:
    """A request mutator that notes when each JoinGroup request went out, then applies ``inner`` (if any)."""

    def __init__(self, inner: Callable[[int, bytes], FrameAction | None] | None = None) -> None:
        self.inner = inner
        self.sent: list[float] = []

    def __call__(self, api_key: int, payload: bytes) -> FrameAction | None:
        if api_key == API_JOIN_GROUP:
            self.sent.append(time.monotonic())
        return self.inner(api_key, payload) if self.inner is not None else None

    def held_for(self, seconds: float) -> bool:
        """The last JoinGroup went out at least ``seconds`` ago."""
        return bool(self.sent) and time.monotonic() - self.sent[-1] >= seconds


HELD_S = 1.0
"""How long the broker has been holding a JoinGroup when the test cuts its connection (Tansu holds one ~3 s)."""


# --- 1. the coordinator's connection cut mid-rebalance ----------------------------------------------------------


async def test_a_group_forms_when_the_coordinator_connection_is_cut_during_join_and_sync(
    proxied_broker: ProxiedBroker,
) -> None:
    """The first member's JoinGroup is cut while the broker holds it, then its SyncGroup's answer is cut: the member
    joins again each time, owns every partition and consumes every record once."""
    name = proxied_broker.create_topic(4)
    proxy = proxied_broker.proxy
    produced = await proxied_broker.produce.values_async(name, 200, 4)
    sync_answer = CutFirst(API_SYNC_GROUP)
    proxy.set_response_mutator(sync_answer)
    join_clock = JoinClock()
    proxy.set_request_mutator(join_clock)
    consumer = group_consumer(proxied_broker.bootstrap_servers, new_group_id())
    await consumer.start()
    poller: Poller | None = None
    started = time.monotonic()
    try:
        await consumer.subscribe([name])
        poller = Poller(consumer)
        active = poller

        # The first JoinGroup is answered MEMBER_ID_REQUIRED at once; the second is held (~3 s): cut it there.
        def join_cut() -> int:
            active.check()
            return (
                proxy.responses_by_api[API_JOIN_GROUP] >= 1
                and join_clock.held_for(HELD_S)
                and proxy.drop_connections_awaiting(API_JOIN_GROUP)
            )

        await wait_for_async(join_cut, timeout=JOIN_TIMEOUT_S, message=lambda: f"{proxy.requests_by_api}")
        held_join_cut_at = time.monotonic() - started

        def formed() -> bool:
            active.check()
            return consumer.assignment() == all_partitions(name, 4) and len(active.records) >= 200

        await wait_for_async(
            formed,
            timeout=2 * JOIN_TIMEOUT_S,
            message=lambda: (
                f"owns {describe(consumer.assignment())}, {len(active.records)} records, "
                f"{sync_answer.cut} SyncGroup answers cut, requests {dict(proxy.requests_by_api)}"
            ),
        )
        formed_s = time.monotonic() - started
        assert (await consumer.poll(timeout_ms=300)).count() == 0
        await poller.stop()
        joins, syncs = proxy.requests_by_api[API_JOIN_GROUP], proxy.requests_by_api[API_SYNC_GROUP]
    finally:
        if poller is not None:
            await poller.abandon()
        await consumer.close()

    returned = offsets_of(poller.records)
    duplicates = duplicates_of(returned)
    print(
        f"\njoin cut at {held_join_cut_at:.1f} s, {sync_answer.cut} SyncGroup answer cut; formed after "
        f"{formed_s:.1f} s ({joins} JoinGroup, {syncs} SyncGroup requests); {len(returned)} records returned, "
        f"{len(set(returned))} distinct of 200 produced, {len(duplicates)} duplicates"
    )
    assert sync_answer.cut == 1
    assert joins >= 3, f"{joins} JoinGroup requests: the cut join was not sent again"
    assert union_by_partition(returned) == merge(produced), f"{len(set(returned))} of 200 distinct records"
    assert duplicates == [], f"{len(duplicates)} records consumed twice: {duplicates[:10]}"


async def test_a_rebalance_completes_when_the_coordinator_connections_are_cut_during_join_and_sync(
    proxied_broker: ProxiedBroker,
) -> None:
    """A second member joins a stable one; both JoinGroups of the rebalance are cut while the broker holds them,
    then the first SyncGroup request is cut before it reaches the broker. The pair forms and, with auto-commit
    (which commits before a revocation), every record is consumed exactly once across the two."""
    name = proxied_broker.create_topic(4)
    proxy = proxied_broker.proxy
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    waves = [await proxied_broker.produce.values_async(name, 200, 4)]
    c1 = group_consumer(proxied_broker.bootstrap_servers, group_id, enable_auto_commit=True)
    c2 = group_consumer(proxied_broker.bootstrap_servers, group_id, enable_auto_commit=True)
    await asyncio.gather(c1.start(), c2.start())
    pollers: list[Poller] = []
    try:
        await c1.subscribe([name])
        p1 = Poller(c1)
        pollers.append(p1)

        def c1_has_everything() -> bool:
            p1.check()
            return c1.assignment() == partitions and len(p1.records) >= 200

        await wait_for_async(c1_has_everything, timeout=JOIN_TIMEOUT_S, message=lambda: f"{len(p1.records)} records")
        generation = c1.group_metadata().generation_id
        joins = proxy.requests_by_api[API_JOIN_GROUP]
        sync_request = CutFirst(API_SYNC_GROUP)
        join_clock = JoinClock(sync_request)
        proxy.set_request_mutator(join_clock)
        started = time.monotonic()

        await c2.subscribe([name])
        p2 = Poller(c2)
        pollers.append(p2)
        producing = asyncio.create_task(proxied_broker.produce.values_async(name, 200, 4, start=200))
        # c2's first join is answered MEMBER_ID_REQUIRED at once; then c2 and c1 (told by its heartbeat) join and
        # are held until the rebalance completes: cut every connection holding a JoinGroup, until both were cut.
        cuts = 0

        def both_joins_cut() -> bool:
            nonlocal cuts
            for p in pollers:
                p.check()
            if proxy.requests_by_api[API_JOIN_GROUP] >= joins + 3 and join_clock.held_for(HELD_S):
                cuts += proxy.drop_connections_awaiting(API_JOIN_GROUP)
            return cuts >= 2

        await wait_for_async(
            both_joins_cut, timeout=JOIN_TIMEOUT_S, message=lambda: f"{cuts} cut; {dict(proxy.requests_by_api)}"
        )
        waves.append(await producing)
        expected = merge(*waves)

        def formed_and_consumed() -> bool:
            return stable_pair(c1, c2, partitions, p1, p2) and pairs(expected) <= {
                (r.partition, r.offset) for p in pollers for r in p.records
            }

        await wait_for_async(
            formed_and_consumed,
            timeout=3 * JOIN_TIMEOUT_S,
            message=lambda: (
                f"c1 owns {describe(c1.assignment())}, c2 {describe(c2.assignment())}; "
                f"{sync_request.cut} SyncGroup requests cut; {len(p1.records)} + {len(p2.records)} records"
            ),
        )
        formed_s = time.monotonic() - started
        for p in pollers:
            await p.stop()
        new_generation = c1.group_metadata().generation_id
        all_joins = proxy.requests_by_api[API_JOIN_GROUP] - joins
    finally:
        for p in pollers:
            await p.abandon()
        await asyncio.gather(c1.close(), c2.close())

    returned = [(r.partition, r.offset) for p in pollers for r in p.records]
    duplicates = duplicates_of(returned)
    print(
        f"\n{cuts} held JoinGroups cut, {sync_request.cut} SyncGroup request cut; the pair formed after "
        f"{formed_s:.1f} s (generation {generation} -> {new_generation}, {all_joins} JoinGroup requests); "
        f"{len(returned)} records returned, {len(set(returned))} distinct of 400 produced, "
        f"{len(duplicates)} duplicates"
    )
    assert sync_request.cut == 1
    assert new_generation > generation
    assert union_by_partition(returned) == expected, f"{len(set(returned))} of 400 distinct records"
    assert duplicates == [], f"{len(duplicates)} records consumed twice: {duplicates[:10]}"


# --- 2. the coordinator's connection cut mid-commit -------------------------------------------------------------


@pytest.mark.parametrize("cut", ["request", "answer", "every-request", "stalled"])
async def test_a_commit_survives_or_fails_clearly_when_the_coordinator_connection_is_cut(
    proxied_broker: ProxiedBroker, cut: str
) -> None:
    """``request``: the OffsetCommit never reaches the broker; ``answer``: the broker applied it but its answer
    is lost; ``every-request``: every attempt is cut until the commit's deadline; ``stalled``: the broker stops
    answering (every connection held open) past the deadline. The first two succeed after a retry; the last two
    raise a retriable ``KafkaTimeoutError`` that says what timed out and why (a stalled commit may still land
    once the broker answers again). Then a second member of the group resumes exactly at what was committed:
    records past it come again (at least once), none is skipped."""
    name = proxied_broker.create_topic(4)
    proxy = proxied_broker.proxy
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    first_wave = await proxied_broker.produce.values_async(name, 400, 4)
    first = group_consumer(proxied_broker.bootstrap_servers, group_id)
    await first.start()
    mutator = CutFirst(API_OFFSET_COMMIT, count=1_000 if cut == "every-request" else 1)
    try:
        await first.subscribe([name])
        got = await consume_until(first, 400)
        consumed = {tp: await first.position(tp) for tp in sorted(partitions)}
        assert consumed == dict.fromkeys(sorted(partitions), 100)
        half = dict.fromkeys(sorted(partitions), 50)
        await first.commit(dict(half))  # half of it committed without faults; then the rest through the fault

        if cut == "answer":
            proxy.set_response_mutator(mutator)
        elif cut == "stalled":
            proxy.blackhole(True)
        else:
            proxy.set_request_mutator(mutator)
        commits = proxy.requests_by_api[API_OFFSET_COMMIT]
        started = time.monotonic()
        error: KafkaError | None = None
        try:
            await first.commit(timeout_ms=3_000)
        except KafkaError as exc:
            error = exc
        commit_s = time.monotonic() - started
        attempts = proxy.requests_by_api[API_OFFSET_COMMIT] - commits
        proxy.set_request_mutator(None)
        proxy.set_response_mutator(None)
        proxy.blackhole(False)  # the held commit goes on to the broker, ahead of the look-up below
        committed = await first.committed(sorted(partitions))
        committed_offsets = {tp: c.offset if c is not None else None for tp, c in committed.items()}
        generation = first.group_metadata().generation_id
    finally:
        await first.close()  # auto-commit is off: close commits nothing

    print(
        f"\ncut {cut}: commit {'raised ' + repr(error) if error else 'succeeded'} after {commit_s:.2f} s, "
        f"{attempts} OffsetCommit attempts ({mutator.cut} cut); committed {list(committed_offsets.values())}"
    )
    if cut in ("every-request", "stalled"):
        assert isinstance(error, KafkaTimeoutError) and error.retriable, f"expected a retriable timeout: {error!r}"
        assert f"offset commit for 4 partitions of group {group_id!r} timed out after" in str(error), str(error)
    if cut == "every-request":
        assert attempts >= 2, f"{attempts} attempts: the commit was not retried"
        assert "last error: lost the connection to group coordinator (broker " in str(error), str(error)
        assert committed_offsets == half, "a commit that was never delivered changed the committed offsets"
        expected_start = half
    elif cut == "stalled":
        assert attempts == 1 and "the last one unanswered" in str(error), f"{attempts} attempts: {error}"
        assert committed_offsets in (half, consumed), committed_offsets  # the held commit may have landed late
        expected_start = {tp: offset or 0 for tp, offset in committed_offsets.items()}
    else:
        assert error is None, f"the commit did not survive a cut {cut}: {error!r}"
        assert mutator.cut == 1 and attempts == 2, f"{attempts} attempts, {mutator.cut} cut"
        assert committed_offsets == consumed
        expected_start = consumed
    assert commit_s < 3.5
    assert generation >= 0, "the member left its group"

    # A new member of the group starts at the committed offsets: records past them come again, none is skipped.
    second_wave = await proxied_broker.produce.values_async(name, 40, 4, start=400)
    second = group_consumer(proxied_broker.bootstrap_servers, group_id)
    await second.start()
    try:
        await second.subscribe([name])
        redelivered = sum(100 - expected_start[tp] for tp in partitions)
        again = await consume_until(second, redelivered + 40)
        assert (await second.poll(timeout_ms=300)).count() == 0
    finally:
        await second.close()
    restarted_at = {p: min(offsets) for p, offsets in by_partition(again).items()}
    returned = offsets_of(got) + offsets_of(again)
    duplicates = duplicates_of(returned)
    print(f"the second member started at {restarted_at}; {len(duplicates)} duplicates ({redelivered} expected)")
    assert restarted_at == {tp.partition: expected_start[tp] for tp in partitions}
    assert union_by_partition(returned) == merge(first_wave, second_wave)
    assert len(duplicates) == redelivered
    assert all(o >= expected_start[TopicPartition(name, p)] for p, o in duplicates)


# --- 3. the broker restarted under a running group --------------------------------------------------------------


class TolerantPoller(Poller):
    """A :class:`Poller` that commits each batch and keeps polling through errors, noting each (time, error)."""

    def __init__(self, consumer: AsyncConsumer) -> None:
        self.errors: list[tuple[float, KafkaError]] = []
        super().__init__(consumer)

    async def _run(self) -> None:
        while not self._stopping:
            try:
                records = list((await self.consumer.poll(timeout_ms=100)).records())
                self.records.extend(records)
                if records:
                    await self.consumer.commit(
                        {TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.offset + 1) for r in records}
                    )
            except KafkaError as exc:
                self.errors.append((time.monotonic(), exc))
                await asyncio.sleep(0.1)  # an error does not wait out the poll timeout; do not spin on it


def start_broker_on(port: int, timeout_s: float = 15.0) -> EmbeddedBroker:
    """A fresh broker listening on ``port`` (retried while the old listener's port is still being released)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return EmbeddedBroker.start(port=port)
        except BrokerStartError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


@pytest.mark.parametrize("topic_back", ["at-once", "after-the-rejoin"])
async def test_a_group_recovers_when_the_broker_restarts_empty_on_the_same_port(
    broker: Broker, topic_back: str
) -> None:
    """Tansu keeps everything in memory: the restarted broker (killed, then a fresh one on the same port) has no
    topic, no group and no committed offset. The member must rejoin, start the re-created topic's partitions per
    ``auto_offset_reset`` (earliest) and consume what is produced after the restart; errors on the way must be
    typed, and nothing may hang. The topic comes back at once, or only once the member has rejoined the new broker
    (so the group first forms with nothing to assign, and must notice the topic when it appears).

    The test restarts brokers of its own; it asks for the session's ``broker`` only to be skipped (or failed, in
    CI) as every broker test is when Tansu cannot start."""
    first = EmbeddedBroker.start()
    port = first.port
    brokers = [first]
    name = unique_topic_name("restart")
    partitions = all_partitions(name, 2)
    first.create_topic(name, 2)
    produce = ProduceHelper(first.bootstrap_servers)
    before = await produce.values_async(name, 100, 2)
    consumer = group_consumer(first.bootstrap_servers, new_group_id())
    await consumer.start()
    poller: TolerantPoller | None = None
    try:
        await consumer.subscribe([name])
        poller = TolerantPoller(consumer)
        active = poller
        await wait_for_async(
            lambda: len(active.records) >= 100 and consumer.assignment() == partitions,
            timeout=JOIN_TIMEOUT_S,
            message=lambda: f"{len(active.records)} records, errors {active.errors}",
        )
        generation = consumer.group_metadata().generation_id
        rebalances = consumer.metrics().rebalances
        stopped_at = time.monotonic()
        await asyncio.to_thread(first.stop, 0.5)  # Tansu lingers on SIGTERM while clients are connected: kill it
        second = await asyncio.to_thread(start_broker_on, port)
        brokers.append(second)
        restarted_s = time.monotonic() - stopped_at
        if topic_back == "after-the-rejoin":

            def rejoined() -> bool:  # Tansu may take the old member id back: count the assignments instead
                active.check()
                return consumer.metrics().rebalances > rebalances and consumer.group_metadata().generation_id >= 0

            await wait_for_async(
                rejoined,
                timeout=2 * JOIN_TIMEOUT_S,
                message=lambda: f"{consumer.group_metadata()}; errors {[repr(e) for _, e in active.errors][-5:]}",
            )
            assert consumer.assignment() == set(), "assigned partitions of a topic the broker does not have"
        await asyncio.to_thread(second.create_topic, name, 2)
        after = await produce.values_async(name, 100, 2, start=1_000)
        after_values = {r.value for recs in after.values() for r in recs}

        def recovered() -> bool:
            active.check()
            return after_values <= {r.value for r in active.records[100:]}

        await wait_for_async(
            recovered,
            timeout=3 * JOIN_TIMEOUT_S,
            message=lambda: (
                f"{len(active.records) - 100} records after the restart; owns "
                f"{describe(consumer.assignment())}, generation {consumer.group_metadata().generation_id}; "
                f"errors {[repr(e) for _, e in active.errors][-5:]}"
            ),
        )
        recovered_s = time.monotonic() - stopped_at
        await poller.stop()
        meta = consumer.group_metadata()
        rebalances_after = consumer.metrics().rebalances
        committed = await consumer.committed(sorted(partitions))
    finally:
        if poller is not None:
            await poller.abandon()
        await consumer.close(timeout_ms=5_000)
        for broker in brokers:
            broker.stop()

    old, new = poller.records[:100], poller.records[100:]
    new_values = [r.value for r in new]
    duplicates = len(new_values) - len(set(new_values))
    errors = Counter(type(e).__name__ for _, e in poller.errors)
    print(
        f"\nbroker back after {restarted_s:.1f} s; the member consumed the new records {recovered_s:.1f} s after the "
        f"stop (generation {generation} -> {meta.generation_id}, {rebalances_after - rebalances} assignments); "
        f"{len(new)} records after the restart, "
        f"{len(set(new_values))} distinct of 100, {duplicates} duplicates; errors on the way: {dict(errors)}"
    )
    for _, error in poller.errors:
        print(f"  {error!r}")
    assert by_partition(old) == merge(before)
    assert by_partition(new) == merge(after), "after the restart, not every new record came exactly once from 0"
    assert {tp: c.offset if c else None for tp, c in committed.items()} == dict.fromkeys(sorted(partitions), 50)
    assert meta.generation_id >= 0 and meta.member_id
    assert rebalances_after > rebalances, "the member consumed the new broker's partitions without joining its group"


# --- 4. a member process SIGKILLed while it holds partitions ----------------------------------------------------

MEMBER_SESSION_MS = {"tansu": 4_000, "kafka": 6_000}
"""The member processes' session: Tansu holds their joins ~2 s and a killed member's partitions move ~4 s later;
Kafka refuses sessions below its ``group.min.session.timeout.ms`` (6 s) with INVALID_SESSION_TIMEOUT."""


class CommitLaterMember(MemberProcess):
    """``group_member.py`` committing only in its revoke callback and on close (the interval is longer than the
    test), so what it processed since its last rebalance is uncommitted when it is killed."""

    def __init__(self, index: int, bootstrap: str, group_id: str, topic: str, directory: Path, session_ms: int) -> None:
        self.index = index
        self.out_path = directory / f"member-{index}.jsonl"
        self.log_path = directory / f"member-{index}.log"
        self._log = self.log_path.open("wb")
        argv = [sys.executable, str(MEMBER_SCRIPT), bootstrap, group_id, topic, str(self.out_path)]
        argv += ["--session-timeout-ms", str(session_ms), "--commit-interval-ms", "600000"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)


async def test_a_member_killed_holding_uncommitted_records_is_taken_over_and_nothing_is_skipped(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    name = topic(6)
    partitions = all_partitions(name, 6)
    waves = [await produce.values_async(name, 600, 6)]
    group_id = new_group_id()
    session_ms = MEMBER_SESSION_MS[broker.kind]
    members: list[MemberProcess] = [
        CommitLaterMember(i, broker.bootstrap_servers, group_id, name, tmp_path, session_ms) for i in range(3)
    ]
    observer = AsyncConsumer(broker.bootstrap_servers, group_id=group_id)  # reads committed offsets, never joins
    await observer.start()
    producing: asyncio.Task[None] | None = None
    try:
        generation, victim, survivors, victim_partitions = await settle_and_pick_victim(
            members, 6, timeout=3 * JOIN_TIMEOUT_S
        )

        async def keep_producing() -> None:  # 10 waves of 60 records (10 per partition), ~0.2 s apart
            for i in range(10):
                waves.append(await produce.values_async(name, 60, 6, start=600 + 60 * i))
                await asyncio.sleep(0.2)

        producing = asyncio.create_task(keep_producing())

        async def victim_holds_uncommitted_new_records() -> bool:
            victim.check_alive()
            processed = [(p, o) for p, o, _ in victim.processed() if p in victim_partitions]
            if not any(o >= 100 for _, o in processed):
                return False
            committed = await observer.committed([TopicPartition(name, p) for p in victim_partitions])
            done = {tp.partition: c.offset if c else 0 for tp, c in committed.items()}
            return any(o >= done[p] for p, o in processed)

        await wait_until(victim_holds_uncommitted_new_records, JOIN_TIMEOUT_S, lambda: group_view(members))
        kill_time = time.time()
        victim.kill()
        killed_at = time.monotonic()
        # Nobody commits the victim's partitions until they move (a session from now): what is committed now is
        # where the survivors will start them.
        at_death = await observer.committed([TopicPartition(name, p) for p in victim_partitions])
        committed_at_death = {tp.partition: c.offset if c else 0 for tp, c in at_death.items()}
        assert time.monotonic() - killed_at < session_ms / 1000 / 2, "the look-up took too long to trust"
        await asyncio.wait_for(producing, 60)
        expected = merge(*waves)
        assert sum(len(offsets) for offsets in expected.values()) == 1200

        def survivors_took_over() -> bool:
            for m in survivors:
                m.check_alive()
            return one_generation_owns_all(survivors, 6, after=generation) is not None

        await wait_for_async(survivors_took_over, timeout=2 * JOIN_TIMEOUT_S, message=lambda: group_view(members))
        takeover_s = time.time() - kill_time

        def everything_processed() -> bool:
            for m in survivors:
                m.check_alive()
            return pairs(expected) <= {(p, o) for m in members for p, o, _ in m.processed()}

        await wait_for_async(everything_processed, timeout=JOIN_TIMEOUT_S, message=lambda: group_view(members))
        for m in survivors:
            assert m.stop() == 0, f"member {m.index} did not close cleanly:\n{m.log_tail()}"
            assert m.lines()[-1]["kind"] == "closed"
        final = await observer.committed(sorted(partitions))
    finally:
        if producing is not None and not producing.done():
            producing.cancel()
            await asyncio.gather(producing, return_exceptions=True)
        for m in members:
            m.kill()
        await observer.close()

    processings: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    for m in members:
        for p, o, t in m.processed():
            processings[(p, o)].append((m.index, t))
    duplicates = {key: sorted(seen, key=lambda s: s[1]) for key, seen in processings.items() if len(seen) > 1}
    uncommitted = {(p, o) for p, o, _ in victim.processed() if p in victim_partitions and o >= committed_at_death[p]}
    total = sum(len(seen) for seen in processings.values())
    print(
        f"\nkilled member {victim.index} owning {sorted(victim_partitions)} with {len(uncommitted)} processed records "
        f"uncommitted (committed {committed_at_death}); survivors took over {takeover_s:.1f} s later; "
        f"{total} processings of {len(processings)} distinct records (1200 produced), {len(duplicates)} duplicates"
    )
    # At least once, none skipped: per partition, the union of what the members processed is what was produced.
    assert union_by_partition(processings) == expected
    # Duplicates are exactly what the victim processed and had not committed, each processed again by a survivor.
    assert uncommitted, "the victim had committed everything it processed: nothing tested the redelivery"
    assert set(duplicates) == uncommitted, f"{sorted(set(duplicates) ^ uncommitted)[:10]}"
    for (p, o), seen in duplicates.items():
        first, *again = seen
        assert first[0] == victim.index and len(again) == 1, f"{p}/{o} processed by {seen}"
        assert again[0][0] != victim.index and again[0][1] > kill_time, f"{p}/{o}: {seen}"
    # The survivors committed what they processed when they closed.
    assert {tp.partition: c.offset if c else None for tp, c in final.items()} == {
        p: len(offsets) for p, offsets in expected.items()
    }
