"""More consumer-group tests against the real broker (Tansu): members in separate processes killed with SIGKILL,
static membership, the coordinator's connection cut, a pattern that matches a topic created later,
``max_poll_interval_ms``, and cooperative-sticky rebalancing.

As in ``test_groups.py``, every member uses ``session_timeout_ms=6000`` (Tansu holds a join about half of it) and
every wait is a condition with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import pytest

from asyncconsumer import (
    AsyncConsumer,
    ConsumerRecord,
    OffsetAndMetadata,
    PollIntervalExceededError,
    TopicPartition,
)
from asyncconsumer.tools.embedded_broker import EmbeddedBroker
from tests.conftest import ProxiedBroker, TopicFactory, unique_topic_name
from tests.faultproxy import API_FIND_COORDINATOR, API_HEARTBEAT, API_LEAVE_GROUP
from tests.integration.test_groups import (
    JOIN_TIMEOUT_S,
    SESSION_TIMEOUT_MS,
    Poller,
    RecordingListener,
    all_partitions,
    by_partition,
    consume_until,
    consumed,
    describe,
    group_consumer,
    new_group_id,
    produced_offsets,
    stable_pair,
)
from tests.produce import ProducedRecord, ProduceHelper
from tests.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

MEMBER_SCRIPT = Path(__file__).with_name("group_member.py")
SESSION_S = SESSION_TIMEOUT_MS / 1000


def merge(*waves: dict[int, list[ProducedRecord]]) -> dict[int, list[int]]:
    """Offsets per partition over several ``produce.values`` calls, in offset order."""
    out: dict[int, list[int]] = defaultdict(list)
    for wave in waves:
        for partition, offsets in produced_offsets(wave).items():
            out[partition].extend(offsets)
    return {p: sorted(offsets) for p, offsets in out.items()}


def pairs(offsets: dict[int, list[int]]) -> set[tuple[int, int]]:
    return {(p, o) for p, os in offsets.items() for o in os}


def union_by_partition(seen: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for partition, offset in sorted(set(seen)):
        out[partition].append(offset)
    return dict(out)


class CommittingPoller(Poller):
    """A :class:`Poller` that commits each batch's next offsets before the next poll."""

    async def _run(self) -> None:
        while not self._stopping:
            records = list((await self.consumer.poll(timeout_ms=100)).records())
            if not records:
                continue
            self.records.extend(records)
            offsets: dict[TopicPartition, OffsetAndMetadata | int] = {
                TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.offset + 1) for r in records
            }
            await self.consumer.commit(offsets)

    def seen(self) -> set[tuple[int, int]]:
        return {(r.partition, r.offset) for r in self.records}


# --- 1. members in separate processes, one killed with SIGKILL --------------------------------------------------


class MemberProcess:
    """``group_member.py`` in a child process; reads back the JSON lines it writes."""

    def __init__(self, index: int, bootstrap: str, group_id: str, topic: str, directory: Path) -> None:
        self.index = index
        self.out_path = directory / f"member-{index}.jsonl"
        self.log_path = directory / f"member-{index}.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(MEMBER_SCRIPT), bootstrap, group_id, topic, str(self.out_path)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def lines(self) -> list[dict[str, Any]]:
        """Every complete line written so far (a line being written when the process was killed is left out)."""
        if not self.out_path.exists():
            return []
        text = self.out_path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]

    def owned(self) -> tuple[int, frozenset[int]] | None:
        """(generation, partitions) of the last assignment line, None before the first."""
        last = [line for line in self.lines() if line["kind"] == "assignment"]
        if not last:
            return None
        return last[-1]["generation"], frozenset(last[-1]["partitions"])

    def processed(self) -> list[tuple[int, int, float]]:
        """(partition, offset, time written) of every record it processed, in order."""
        return [(p, o, line["t"]) for line in self.lines() if line["kind"] == "records" for p, o in line["records"]]

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"member {self.index} exited with {self.proc.returncode}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM (a clean close) and wait for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._log.close()


def group_view(members: Iterable[MemberProcess]) -> str:
    return "; ".join(f"member {m.index}: {m.owned()}, {len(m.processed())} processed" for m in members)


def one_generation_owns_all(members: list[MemberProcess], partitions: int, after: int = -1) -> int | None:
    """The generation in which ``members`` (each owning something) split ``0..partitions-1`` exactly, if they do."""
    owned = [m.owned() for m in members]
    if any(o is None or not o[1] for o in owned):
        return None
    generations = {o[0] for o in owned if o is not None}
    sets = [o[1] for o in owned if o is not None]
    if (
        len(generations) != 1
        or sum(len(s) for s in sets) != partitions
        or frozenset().union(*sets) != set(range(partitions))
    ):
        return None
    generation = generations.pop()
    return generation if generation > after else None


async def settle_and_pick_victim(
    members: list[MemberProcess], partitions: int, timeout: float
) -> tuple[int, MemberProcess, list[MemberProcess], frozenset[int]]:
    """Waits until one generation splits every partition among ``members`` (all alive); the first member is the one
    to kill: (generation, victim, survivors, the victim's partitions)."""

    def stable() -> bool:
        for m in members:
            m.check_alive()
        return one_generation_owns_all(members, partitions) is not None

    await wait_for_async(stable, timeout=timeout, message=lambda: group_view(members))
    generation = one_generation_owns_all(members, partitions)
    assert generation is not None
    victim_owns = members[0].owned()
    assert victim_owns is not None
    return generation, members[0], members[1:], victim_owns[1]


async def test_a_killed_member_process_is_replaced_after_its_session_and_nothing_is_skipped(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    name = topic(6)
    before = produce.values(name, 600, 6)
    group_id = new_group_id()
    members = [MemberProcess(i, broker.bootstrap_servers, group_id, name, tmp_path) for i in range(3)]
    waves: list[dict[int, list[ProducedRecord]]] = [before]
    producing: asyncio.Task[None] | None = None
    try:
        generation, victim, survivors, victim_partitions = await settle_and_pick_victim(
            members, 6, timeout=2 * JOIN_TIMEOUT_S
        )

        async def keep_producing() -> None:  # 15 waves of 60 records (10 per partition), ~0.2 s apart
            for i in range(15):
                waves.append(await produce.values_async(name, 60, 6, start=600 + 60 * i))
                await asyncio.sleep(0.2)

        producing = asyncio.create_task(keep_producing())

        def victim_is_consuming_new_records() -> bool:
            victim.check_alive()
            return any(p in victim_partitions and o >= 100 for p, o, _ in victim.processed())

        await wait_for_async(
            victim_is_consuming_new_records, timeout=JOIN_TIMEOUT_S, message=lambda: group_view(members)
        )
        kill_time = time.time()
        victim.kill()
        await asyncio.wait_for(producing, 60)
        expected = merge(*waves)
        assert sum(len(offsets) for offsets in expected.values()) == 1500

        def survivors_took_over() -> bool:
            for m in survivors:
                m.check_alive()
            return one_generation_owns_all(survivors, 6, after=generation) is not None

        await wait_for_async(
            survivors_took_over, timeout=SESSION_S + 2 * JOIN_TIMEOUT_S, message=lambda: group_view(members)
        )
        takeover_s = time.time() - kill_time

        def everything_processed() -> bool:
            for m in survivors:
                m.check_alive()
            return pairs(expected) <= {(p, o) for m in members for p, o, _ in m.processed()}

        await wait_for_async(everything_processed, timeout=JOIN_TIMEOUT_S, message=lambda: group_view(members))
        for m in survivors:
            assert m.stop() == 0, f"member {m.index} did not close cleanly:\n{m.log_tail()}"
            assert m.lines()[-1]["kind"] == "closed"
    finally:
        if producing is not None and not producing.done():
            producing.cancel()
            await asyncio.gather(producing, return_exceptions=True)
        for m in members:
            m.kill()

    processings: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    for m in members:
        for p, o, t in m.processed():
            processings[(p, o)].append((m.index, t))
    # At least once, none skipped: per partition, the union of what the members processed is what was produced.
    assert union_by_partition(processings) == expected
    # Duplicates only from the kill: the victim processed it (and may not have committed it), then a survivor.
    duplicates = {key: sorted(seen, key=lambda s: s[1]) for key, seen in processings.items() if len(seen) > 1}
    for (p, o), seen in duplicates.items():
        first, *again = seen
        assert first[0] == victim.index and p in victim_partitions, f"{p}/{o} processed twice: {seen}"
        assert all(index != victim.index and t > kill_time for index, t in again), f"{p}/{o}: {seen}"
    commit_failures = [line for m in members for line in m.lines() if line["kind"] == "commit_failed"]
    print(
        f"\nkilled member {victim.index} owning {sorted(victim_partitions)}; survivors took over {takeover_s:.1f} s "
        f"later; {len(duplicates)} duplicate(s); commit failures: {commit_failures}"
    )
    assert takeover_s >= SESSION_S * 0.8  # no LeaveGroup from a killed process: the broker waited for its session


# --- 2. static membership -------------------------------------------------------------------------------------


async def test_a_restarted_static_member_gets_its_partitions_back_in_the_same_generation(
    proxied_broker: ProxiedBroker,
) -> None:
    name = proxied_broker.create_topic(4)
    produced = await proxied_broker.produce.values_async(name, 40, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    bootstrap = proxied_broker.bootstrap_servers
    proxy = proxied_broker.proxy

    first = group_consumer(bootstrap, group_id, group_instance_id="static-1")
    await first.start()
    try:
        await first.subscribe([name])
        got = await consume_until(first, 40)
        assert by_partition(got) == produced_offsets(produced)
        await first.commit()
        owned = first.assignment()
        meta = first.group_metadata()
        assert owned == partitions
        assert meta.group_instance_id == "static-1"
        leaves = proxy.requests_by_api[API_LEAVE_GROUP]
    finally:
        await first.close()
    closed_at = time.monotonic()
    assert proxy.requests_by_api[API_LEAVE_GROUP] == leaves  # a static member leaves by its session expiring

    second = group_consumer(bootstrap, group_id, group_instance_id="static-1")
    await second.start()
    try:
        await second.subscribe([name])
        rejoined_s = time.monotonic() - closed_at
        got2: list[ConsumerRecord] = []
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not second.assignment():
            assert time.monotonic() < deadline, f"no assignment within {JOIN_TIMEOUT_S} s"
            got2.extend((await second.poll(timeout_ms=100)).records())
        assert rejoined_s < SESSION_S  # it asked to join while its old session was still alive
        assert second.assignment() == owned
        # Kafka answers a known group.instance.id with the current generation and no rebalance; so does Tansu (a
        # dynamic member that leaves and comes back makes Tansu bump the generation, 0 -> 1).
        assert second.group_metadata().generation_id == meta.generation_id
        assert second.group_metadata().group_instance_id == "static-1"

        more = await proxied_broker.produce.values_async(name, 20, 4, start=40)
        got2 += await consume_until(second, 20 - len(got2))
        assert (await second.poll(timeout_ms=300)).count() == 0
        assert by_partition(got2) == produced_offsets(more)  # resumed at the committed offsets
    finally:
        await second.close()


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason=(
        "Tansu 0.6 rebalances when a static member restarts in a group with another member: ~6 s after the static "
        "member closed (its old session's end), the other member's heartbeat is answered REBALANCE_IN_PROGRESS, it "
        "revokes its partitions and the group moves to generation 1. aiokafka 0.14 sees the same (and worse: its "
        "restarted static member is then rejoined as a new member again and again). Kafka answers the known "
        "group.instance.id with the cached assignment and no rebalance."
    ),
)
async def test_a_restarted_static_member_does_not_disturb_the_other_members(broker: EmbeddedBroker) -> None:
    name = unique_topic_name("static-pair")
    broker.create_topic(name, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    other_listener = RecordingListener()
    static = group_consumer(broker.bootstrap_servers, group_id, group_instance_id="static-1")
    other = group_consumer(broker.bootstrap_servers, group_id)
    restarted = group_consumer(broker.bootstrap_servers, group_id, group_instance_id="static-1")
    await asyncio.gather(static.start(), other.start(), restarted.start())
    pollers: list[Poller] = []
    try:
        await static.subscribe([name])
        await other.subscribe([name], listener=other_listener)
        p_static, p_other = Poller(static), Poller(other)
        pollers += [p_static, p_other]
        await wait_for_async(
            lambda: stable_pair(static, other, partitions, p_static, p_other),
            timeout=2 * JOIN_TIMEOUT_S,
            message=lambda: f"static owns {describe(static.assignment())}, other {describe(other.assignment())}",
        )
        owned, kept, meta = static.assignment(), other.assignment(), other.group_metadata()
        mark = len(other_listener.events)
        await p_static.stop()
        await static.close()
        closed_at = time.monotonic()

        await restarted.subscribe([name])
        p_restarted = Poller(restarted)
        pollers.append(p_restarted)

        # Until the restarted member is back or the other one is disturbed; then watch past the old session's end.
        def back_or_disturbed() -> bool:
            p_restarted.check()
            return bool(restarted.assignment()) or bool(other_listener.nonempty(mark))

        await wait_for_async(back_or_disturbed, timeout=JOIN_TIMEOUT_S)
        while time.monotonic() < closed_at + SESSION_S + 2 and not other_listener.nonempty(mark):
            p_other.check()
            await asyncio.sleep(0.05)
        assert other_listener.nonempty(mark) == []
        assert other.group_metadata() == meta
        assert other.assignment() == kept
        assert restarted.assignment() == owned
    finally:
        for poller in pollers:
            await poller.abandon()
        await asyncio.gather(static.close(), other.close(), restarted.close())


# --- 3. the coordinator's connection cut ----------------------------------------------------------------------


async def test_a_member_rediscovers_its_coordinator_after_connections_are_cut(proxied_broker: ProxiedBroker) -> None:
    name = proxied_broker.create_topic(4)
    proxy = proxied_broker.proxy
    waves = [await proxied_broker.produce.values_async(name, 200, 4)]
    consumer = group_consumer(proxied_broker.bootstrap_servers, new_group_id())
    await consumer.start()
    poller: CommittingPoller | None = None
    try:
        await consumer.subscribe([name])
        poller = CommittingPoller(consumer)
        active = poller

        def caught_up() -> bool:
            active.check()
            return pairs(merge(*waves)) <= active.seen() and consumer.assignment() == all_partitions(name, 4)

        await wait_for_async(caught_up, timeout=JOIN_TIMEOUT_S, message=lambda: f"{len(active.seen())} records")
        meta = consumer.group_metadata()
        drops = 0
        for round_ in range(5):
            # Cut every connection (the coordinator's among them) while a wave is being produced and consumed.
            wave = asyncio.create_task(proxied_broker.produce.values_async(name, 100, 4, start=200 + 100 * round_))
            await asyncio.sleep(0.05)
            lookups, heartbeats = proxy.requests_by_api[API_FIND_COORDINATOR], proxy.requests_by_api[API_HEARTBEAT]
            assert proxy.drop_connections() > 0
            drops += 1
            waves.append(await wave)

            def rediscovered(lookups: int = lookups, heartbeats: int = heartbeats) -> bool:
                # It looked its coordinator up again and heartbeats to it (twice, so past the reconnection).
                active.check()
                return (
                    proxy.requests_by_api[API_FIND_COORDINATOR] > lookups
                    and proxy.requests_by_api[API_HEARTBEAT] >= heartbeats + 2
                )

            await wait_for_async(rediscovered, timeout=JOIN_TIMEOUT_S, message=lambda: f"{proxy.requests_by_api}")
            await wait_for_async(
                caught_up,
                timeout=JOIN_TIMEOUT_S,
                message=lambda: f"{len(active.seen())} of {len(pairs(merge(*waves)))} records after the cuts",
            )
        await poller.stop()
        # Cuts much shorter than the session cost no rebalance: same member, same generation, same partitions.
        assert consumer.group_metadata() == meta
        assert consumer.assignment() == all_partitions(name, 4)
        assert union_by_partition(poller.seen()) == merge(*waves)
        print(f"\n{len(poller.records) - len(poller.seen())} duplicate(s) over {drops} cuts")
    finally:
        if poller is not None:
            await poller.abandon()
        await consumer.close()


# --- 4. a pattern matches a topic created later -------------------------------------------------------------


async def test_a_pattern_subscription_picks_up_a_topic_created_later(
    broker: EmbeddedBroker, produce: ProduceHelper
) -> None:
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


# --- 5. max_poll_interval_ms ----------------------------------------------------------------------------------


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
        assert listener.nonempty(mark) == [("revoked", [0, 1])]  # given up on leaving, reported in that poll

        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while len({(r.partition, r.offset) for r in got}) < 150:
            assert time.monotonic() < deadline, f"{len(got)} records after the rejoin: {listener.nonempty(mark)}"
            await poll_and_commit()
        assert (await consumer.poll(timeout_ms=300)).count() == 0
        assert consumer.assignment() == all_partitions(name, 2)
        assert consumer.group_metadata().generation_id > generation
        assert listener.nonempty(mark) == [("revoked", [0, 1]), ("assigned", [0, 1])]
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


# --- 6. cooperative-sticky ------------------------------------------------------------------------------------


class SnapshotPoller(Poller):
    """A :class:`Poller` that also keeps the consumer's assignment after every poll."""

    def __init__(self, consumer: AsyncConsumer) -> None:
        self.snapshots: list[frozenset[TopicPartition]] = []
        super().__init__(consumer)

    async def _run(self) -> None:
        while not self._stopping:
            self.records.extend((await self.consumer.poll(timeout_ms=100)).records())
            self.snapshots.append(frozenset(self.consumer.assignment()))


async def test_cooperative_sticky_revokes_only_the_partitions_that_move(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = produce.values(name, 200, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    settings: dict[str, Any] = {"partition_assignment_strategy": ("cooperative-sticky",)}
    l1, l2 = RecordingListener(), RecordingListener()
    c1 = group_consumer(broker.bootstrap_servers, group_id, **settings)
    c2 = group_consumer(broker.bootstrap_servers, group_id, **settings)
    pollers: list[Poller] = []
    await asyncio.gather(c1.start(), c2.start())
    try:
        await c1.subscribe([name], listener=l1)
        p1 = SnapshotPoller(c1)
        pollers.append(p1)

        def c1_owns_everything() -> bool:
            p1.check()
            return c1.assignment() == partitions

        await wait_for_async(
            c1_owns_everything, timeout=JOIN_TIMEOUT_S, message=lambda: f"c1 owns {describe(c1.assignment())}"
        )
        first_generation = c1.group_metadata().generation_id
        mark = len(p1.snapshots)

        await c2.subscribe([name], listener=l2)
        p2 = SnapshotPoller(c2)
        pollers.append(p2)
        await wait_for_async(
            lambda: stable_pair(c1, c2, partitions, p1, p2) and len(consumed(p1, p2)) == 200,
            timeout=2 * JOIN_TIMEOUT_S,
            message=lambda: (
                f"c1 owns {describe(c1.assignment())}, c2 {describe(c2.assignment())}; "
                f"c1 saw {l1.nonempty()}, c2 saw {l2.nonempty()}"
            ),
        )
        await p1.stop()
        await p2.stop()
        kept, moved = c1.assignment(), c2.assignment()
        assert (len(kept), len(moved)) == (2, 2)
        assert c1.group_metadata().generation_id > first_generation
        # c1 gave up exactly what moved (in one or more revocations, never everything) and nothing it kept.
        revoked = l1.of("revoked")
        assert all(r < partitions for r in revoked), l1.nonempty()
        assert frozenset().union(*revoked) == moved, l1.nonempty()
        assert l1.of("lost") == []
        assert [a for a in l1.of("assigned") if a] == [partitions]
        assert all(kept <= snapshot for snapshot in p1.snapshots[mark:]), "c1 lost a partition it kept"
        assert [r for r in l2.of("revoked") if r] == []
        assert frozenset().union(*l2.of("assigned")) == moved
        assert union_by_partition(consumed(p1, p2)) == produced_offsets(produced)
    finally:
        for poller in pollers:
            await poller.abandon()
        await asyncio.gather(c1.close(), c2.close())


# --- 7. up to four members, joining and leaving one by one ----------------------------------------------------


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
async def test_four_members_join_and_leave_one_by_one_and_every_record_is_consumed_exactly_once(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper, strategy: str
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
