"""KIP-848 against Apache Kafka's own group coordinator: ``group_protocol="consumer"`` joins, grows 1 → 3 and shrinks
to 1 with every record counted, revokes before a partition is assigned elsewhere, commits at the member epoch, is
fenced and rejoins, keeps a static member's partitions across a restart, uses the coordinator's assignors, subscribes
with a regular expression the coordinator matches, shares a group with librdkafka's consumer, and keeps ``process``
whole through a rebalance.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import pytest

from asyncconsumer import AsyncConsumer, ConfigError, ConsumerRecord, TopicPartition
from asyncconsumer.errors import InvalidRegularExpressionError, UnsupportedAssignorError
from tests.conftest import Broker, TopicFactory, unique_topic_name
from tests.support.faultproxy import DROP, FaultProxy
from tests.support.groups import (
    CommittingHook,
    OrderListener,
    Poller,
    RecordingListener,
    all_partitions,
    consume_until,
    describe,
    new_group_id,
    offsets_of,
    owners_disjoint,
    produced_offsets,
)
from tests.support.kafka_broker import KafkaCluster
from tests.support.processing import PARTITIONS, rebalance_while_processing
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.anyio, pytest.mark.kafka_only("Tansu has no ConsumerGroupHeartbeat (API 68)")]

SETTINGS: dict[str, Any] = {"group_protocol": "consumer", "auto_offset_reset": "earliest"}
SETTLE_S = 30.0
API_CONSUMER_GROUP_HEARTBEAT = 68

Timeline = list[tuple[float, str, str, frozenset[TopicPartition]]]


def member(bootstrap: str, group_id: str, **overrides: Any) -> AsyncConsumer:
    return AsyncConsumer(bootstrap, group_id=group_id, **{**SETTINGS, **overrides})


def balanced(consumers: list[AsyncConsumer], count: int) -> bool:
    sizes = sorted(len(c.assignment()) for c in consumers)
    return sum(sizes) == count and sizes[-1] - sizes[0] <= 1 and owners_disjoint(*consumers)


def offsets_by_partition(records: Iterable[ConsumerRecord]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for r in records:
        out[r.partition].append(r.offset)
    return {p: sorted(o) for p, o in out.items()}


class TimedListener(RecordingListener):
    """Records every callback with when it ran, in a timeline all members share."""

    def __init__(self, name: str, timeline: Timeline) -> None:
        super().__init__()
        self.name = name
        self.timeline = timeline

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        super().on_partitions_revoked(partitions)
        self.timeline.append((time.monotonic(), self.name, "revoked", frozenset(partitions)))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        super().on_partitions_assigned(partitions)
        self.timeline.append((time.monotonic(), self.name, "assigned", frozenset(partitions)))


def assigned_while_held(timeline: Timeline, released: dict[str, float]) -> list[str]:
    """Each time a partition was assigned to a member while another member still held it (had not revoked it nor
    left the group, ``released`` saying when each member that left was closed)."""
    holder: dict[TopicPartition, str] = {}
    wrong: list[str] = []
    events = sorted(timeline + [(t, name, "left", frozenset()) for name, t in released.items()], key=lambda e: e[0])
    for _, name, kind, partitions in events:
        if kind == "left":
            holder = {tp: owner for tp, owner in holder.items() if owner != name}
        for tp in partitions:
            if kind == "assigned":
                if tp in holder and holder[tp] != name:
                    wrong.append(f"{tp} assigned to {name} while {holder[tp]} held it")
                holder[tp] = name
            elif holder.get(tp) == name:
                del holder[tp]
    return wrong


async def test_one_member_joins_consumes_everything_and_commits_at_its_member_epoch(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    produced = await produce.values_async(name, 400, 4)
    partitions = all_partitions(name, 4)
    listener = RecordingListener()
    consumer = member(broker.bootstrap_servers, new_group_id(), enable_auto_commit=False)
    try:
        await consumer.subscribe([name], listener=listener)
        got = await consume_until(consumer, 400, SETTLE_S, max_records=150)
        assert offsets_by_partition(got) == produced_offsets(produced)
        assert consumer.assignment() == partitions
        assert listener.nonempty() == [("assigned", [0, 1, 2, 3])]
        meta = consumer.group_metadata()
        assert len(meta.member_id) == 22 and meta.generation_id > 0  # the member epoch stands in for the generation
        await consumer.commit()  # OffsetCommit v9+ carries the member id and epoch, and Kafka checks both
        committed = await consumer.committed(sorted(partitions))
        assert {tp: c.offset if c else None for tp, c in committed.items()} == dict.fromkeys(partitions, 100)
    finally:
        await consumer.close()


async def test_one_to_three_to_one_members_revoke_before_reassigning_and_consume_each_record_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(6)
    group_id = new_group_id()
    timeline: Timeline = []
    released: dict[str, float] = {}
    listeners = [TimedListener(f"m{i}", timeline) for i in range(3)]
    consumers = [member(broker.bootstrap_servers, group_id, enable_auto_commit=True) for _ in range(3)]
    pollers: list[Poller] = []
    active: list[AsyncConsumer] = []
    overlaps: list[str] = []
    produced = 0

    async def watch() -> None:
        while True:
            if not owners_disjoint(*active):
                overlaps.append(str([describe(c.assignment()) for c in active]))
            await asyncio.sleep(0.005)

    def settled() -> bool:
        for poller, consumer in zip(pollers, consumers, strict=False):
            if consumer in active:
                poller.check()
        return balanced(active, 6)

    watcher = asyncio.create_task(watch())
    try:
        for i, consumer in enumerate(consumers):  # 1 → 2 → 3 members, records produced before each step
            await produce.values_async(name, 300, 6, start=produced)
            produced += 300
            await consumer.subscribe([name], listener=listeners[i])
            pollers.append(Poller(consumer))
            active.append(consumer)
            await wait_for_async(settled, SETTLE_S, message=lambda: str([describe(c.assignment()) for c in active]))
        for leaving in (2, 1):  # 3 → 2 → 1: a member leaves cleanly (commits in its revoke, then the leave epoch)
            await produce.values_async(name, 300, 6, start=produced)
            produced += 300
            await pollers[leaving].stop()
            active.remove(consumers[leaving])
            await consumers[leaving].close()
            released[f"m{leaving}"] = time.monotonic()
            await wait_for_async(settled, SETTLE_S, message=lambda: str([describe(c.assignment()) for c in active]))
        everything = {p: list(range(produced // 6)) for p in range(6)}
        await wait_for_async(
            lambda: (
                offsets_by_partition({(r.partition, r.offset): r for p in pollers for r in p.records}.values())
                == everything
            ),
            60,
            message="records",
        )
        assert overlaps == []
        assert consumers[0].assignment() == all_partitions(name, 6)
        assert assigned_while_held(timeline, released) == []
        # Each record once: what moved was committed in its revoke callback and resumed from there.
        assert offsets_by_partition(r for p in pollers for r in p.records) == everything
    finally:
        watcher.cancel()
        for poller in pollers:
            await poller.abandon()
        await asyncio.gather(*(c.close() for c in consumers))


def group_members(kafka: KafkaCluster, group_id: str) -> list[Any]:
    """The members Kafka's coordinator has, through ConsumerGroupDescribe (librdkafka's admin client)."""
    described = kafka.admin().describe_consumer_groups([group_id])[group_id].result(timeout=10)
    return list(described.members)


async def test_a_member_fenced_by_the_coordinator_loses_its_partitions_and_rejoins() -> None:
    """Heartbeats dropped for longer than the session (10 s here) make Kafka remove the member; its next heartbeat
    is answered UNKNOWN_MEMBER_ID (or FENCED_MEMBER_EPOCH): it reports its partitions lost and joins again."""
    proxy = FaultProxy("127.0.0.1", 0).start()
    kafka = KafkaCluster.start(advertised_ports=[proxy.port])
    proxy.set_target("127.0.0.1", kafka.port)
    try:
        name = unique_topic_name("fenced")
        kafka.create_topic(name, 2)
        await ProduceHelper(kafka.bootstrap_servers).values_async(name, 100, 2)
        listener = RecordingListener()
        group_id = new_group_id()
        consumer = member(kafka.bootstrap_servers, group_id, request_timeout_ms=3_000)
        try:
            await consumer.subscribe([name], listener=listener)
            await consume_until(consumer, 100, SETTLE_S)
            first = consumer.group_metadata()
            proxy.set_request_mutator(lambda api, payload: DROP if api == API_CONSUMER_GROUP_HEARTBEAT else None)
            await wait_for_async(lambda: not group_members(kafka, group_id), 60, message="Kafka kept the member")
            proxy.set_request_mutator(None)

            async def lost_then_rejoined() -> bool:
                await consumer.poll(timeout_ms=100)  # the callbacks run inside poll
                return bool(listener.of("lost")) and consumer.assignment() == all_partitions(name, 2)

            await wait_for_async(lost_then_rejoined, SETTLE_S, message=lambda: str(listener.events))
            assert listener.of("lost")[0] == all_partitions(name, 2)
            again = consumer.group_metadata()
            assert (again.member_id, again.generation_id) != (first.member_id, first.generation_id)
            assert [m.member_id for m in group_members(kafka, group_id)] == [again.member_id]
        finally:
            await consumer.close()
    finally:
        kafka.stop()
        proxy.stop()


async def test_a_static_member_restarted_within_its_session_gets_its_partitions_back_and_the_other_keeps_its(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(4)
    await produce.values_async(name, 100, 4)
    group_id = new_group_id()
    other_listener = RecordingListener()
    other = member(broker.bootstrap_servers, group_id, group_instance_id="other")
    static = member(broker.bootstrap_servers, group_id, group_instance_id="static")
    others_poller: Poller | None = None
    try:
        await other.subscribe([name], listener=other_listener)
        await static.subscribe([name])
        others_poller = Poller(other)
        await wait_for_async(lambda: balanced([other, static], 4), SETTLE_S, message=lambda: str(static.assignment()))
        held = static.assignment()
        calls_before = len(other_listener.events)
        await static.close()  # the leave heartbeat carries epoch -2: Kafka keeps the assignment for the session
        static = member(broker.bootstrap_servers, group_id, group_instance_id="static")
        await static.subscribe([name])
        await wait_for_async(lambda: static.assignment() == held, SETTLE_S, message=lambda: str(static.assignment()))
        others_poller.check()
        assert other_listener.nonempty(calls_before) == []  # no rebalance for the member that stayed
        assert other.assignment() == all_partitions(name, 4) - held
    finally:
        if others_poller is not None:
            await others_poller.abandon()
        await asyncio.gather(other.close(), static.close())


@pytest.mark.parametrize("assignor", ["range", "uniform"])
async def test_the_coordinators_assignor_is_the_one_asked_for(
    broker: Broker, produce: ProduceHelper, assignor: str
) -> None:
    names = [unique_topic_name(f"{assignor}-a"), unique_topic_name(f"{assignor}-b")]
    for name in names:
        broker.create_topic(name, 3)
    group_id = new_group_id()
    consumers = [
        member(broker.bootstrap_servers, group_id, group_remote_assignor=assignor, group_instance_id=f"m{i}")
        for i in range(2)
    ]
    try:
        for consumer in consumers:
            await consumer.subscribe(names)
        await wait_for_async(
            lambda: (
                sum(len(c.assignment()) for c in consumers) == 6
                and owners_disjoint(*consumers)
                and all(c.assignment() for c in consumers)
            ),
            SETTLE_S,
        )
        shapes = [{t: sorted(tp.partition for tp in c.assignment() if tp.topic == t) for t in names} for c in consumers]
        if assignor == "range":  # co-partitioned: a member has the same partition numbers of both topics
            assert all(shape[names[0]] == shape[names[1]] for shape in shapes), shapes
            assert sorted(len(shape[names[0]]) for shape in shapes) == [1, 2]
        else:  # uniform spreads the six partitions 3 and 3
            assert sorted(sum(len(v) for v in shape.values()) for shape in shapes) == [3, 3]
    finally:
        await asyncio.gather(*(c.close() for c in consumers))


async def test_an_unknown_remote_assignor_is_raised_once_from_poll(broker: Broker, topic: TopicFactory) -> None:
    name = topic(1)
    consumer = member(broker.bootstrap_servers, new_group_id(), group_remote_assignor="no-such-assignor")
    try:
        await consumer.subscribe([name])
        with pytest.raises(UnsupportedAssignorError, match="no-such-assignor"):
            for _ in range(100):
                await consumer.poll(timeout_ms=200)
    finally:
        await consumer.close()


async def test_a_pattern_is_matched_by_the_coordinator_including_a_topic_created_later(
    broker: Broker, produce: ProduceHelper
) -> None:
    prefix = unique_topic_name("regex")
    first, later, unmatched = f"{prefix}-a", f"{prefix}-b", f"x{prefix}-c"
    broker.create_topic(first, 2)
    broker.create_topic(unmatched, 1)
    await produce.values_async(first, 20, 2)
    await produce.values_async(unmatched, 5, 1)
    consumer = member(broker.bootstrap_servers, new_group_id())
    try:
        await consumer.subscribe(pattern=rf"{prefix}-.*")  # RE2/J on the broker: the whole name must match
        got = await consume_until(consumer, 20, SETTLE_S)
        assert {r.topic for r in got} == {first}
        broker.create_topic(later, 1)
        await produce.values_async(later, 7, 1)
        more = await consume_until(consumer, 7, 60)
        assert {r.topic for r in more} == {later}
        assert consumer.assignment() == all_partitions(first, 2) | all_partitions(later, 1)
        assert (await consumer.poll(timeout_ms=500)).count() == 0  # nothing of the unmatched topic
    finally:
        await consumer.close()


async def test_a_pattern_the_coordinator_refuses_is_a_config_error_naming_it(broker: Broker) -> None:
    consumer = member(broker.bootstrap_servers, new_group_id())
    try:
        await consumer.subscribe(pattern=r"events(?=-x)")  # a lookahead: Python has it, RE2/J does not
        with pytest.raises(InvalidRegularExpressionError) as raised:
            for _ in range(100):
                await consumer.poll(timeout_ms=200)
        assert isinstance(raised.value, ConfigError) and raised.value.key == "pattern"
        assert "events(?=-x)" in str(raised.value)
    finally:
        await consumer.close()


async def test_a_group_shared_with_librdkafka_owns_each_partition_once_and_loses_nothing(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """Ownership is judged by both members' rebalance callbacks on one timeline: the coordinator may give a
    partition to one member only after the other's revoke callback ran (each client acknowledges a revocation
    after its callback). Records: every one consumed, none by both (each side commits what it consumed)."""
    from confluent_kafka import Consumer as RdKafkaConsumer
    from confluent_kafka import TopicPartition as RdTopicPartition

    name = topic(6)
    await produce.values_async(name, 300, 6)  # a second wave once both hold partitions
    group_id = new_group_id()
    timeline: Timeline = []
    released: dict[str, float] = {}

    def note(kind: str) -> Any:
        def callback(_: Any, partitions: list[RdTopicPartition]) -> None:
            parts = frozenset(TopicPartition(tp.topic, tp.partition) for tp in partitions)
            timeline.append((time.monotonic(), "librdkafka", kind, parts))

        return callback

    theirs = RdKafkaConsumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group_id,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    their_records: list[tuple[int, int]] = []
    stop = threading.Event()

    def run_theirs() -> None:
        theirs.subscribe([name], on_assign=note("assigned"), on_revoke=note("revoked"), on_lost=note("revoked"))
        while not stop.is_set():
            message = theirs.poll(0.1)
            if message is not None and message.error() is None:
                their_records.append((message.partition(), message.offset()))
                theirs.commit(message=message, asynchronous=False)
        theirs.close()  # revokes (its callback runs) and leaves: its partitions come to us
        released["librdkafka"] = time.monotonic()

    thread = threading.Thread(target=run_theirs)
    thread.start()
    ours = member(broker.bootstrap_servers, group_id, enable_auto_commit=True)
    poller: Poller | None = None
    try:
        await ours.subscribe([name], listener=TimedListener("ours", timeline))
        poller = Poller(ours)

        def their_partitions() -> set[TopicPartition]:
            held: set[TopicPartition] = set()
            for _, who, kind, parts in list(timeline):
                if who == "librdkafka":
                    held = held | parts if kind == "assigned" else held - parts
            return held

        def shared() -> bool:
            assert poller is not None
            poller.check()
            return bool(ours.assignment()) and bool(their_partitions())

        await wait_for_async(shared, SETTLE_S, message=lambda: f"ours {describe(ours.assignment())}: {timeline}")
        await produce.values_async(name, 300, 6, start=300)

        def both_consumed() -> bool:
            assert poller is not None
            poller.check()
            return any(r.offset >= 50 for r in poller.records) and any(o >= 50 for _, o in their_records)

        await wait_for_async(both_consumed, SETTLE_S, message=lambda: f"{len(poller.records)} {len(their_records)}")
        stop.set()
        await asyncio.to_thread(thread.join, 30)
        await wait_for_async(lambda: ours.assignment() == all_partitions(name, 6), SETTLE_S)
        everything = {p: list(range(100)) for p in range(6)}

        def union() -> dict[int, list[int]]:
            assert poller is not None
            seen = {(r.partition, r.offset) for r in poller.records} | set(their_records)
            out: dict[int, list[int]] = defaultdict(list)
            for p, o in seen:
                out[p].append(o)
            return {p: sorted(o) for p, o in out.items()}

        await wait_for_async(
            lambda: union() == everything, 60, message=lambda: str({p: len(o) for p, o in union().items()})
        )
        assert assigned_while_held(timeline, released) == []
        ours_seen = {(r.partition, r.offset) for r in poller.records}
        assert ours_seen.isdisjoint(their_records), sorted(ours_seen & set(their_records))[:10]
    finally:
        stop.set()
        thread.join(30)
        if poller is not None:
            await poller.abandon()
        await ours.close()


async def test_the_rebalance_hook_runs_first_hears_a_revocation_before_the_partitions_move_and_commits(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    """KIP-848 (incremental): the hook, installed after ``subscribe``, runs before the user's listener every time;
    when a second member joins it hears the revocation of what is to move while its member still holds it and the
    other does not, commits an offset from inside the callback (auto-commit off at run time), and the new owner
    starts there."""
    name = topic(4)
    await produce.values_async(name, 400, 4)
    partitions = all_partitions(name, 4)
    group_id = new_group_id()
    first = member(broker.bootstrap_servers, group_id, enable_auto_commit=True, auto_commit_interval_ms=200)
    second = member(broker.bootstrap_servers, group_id, enable_auto_commit=False)
    others: list[AsyncConsumer] = []
    calls: list[tuple[str, str]] = []
    hook = CommittingHook(first, others, 30, calls)
    pollers: list[Poller] = []
    try:
        await asyncio.wrap_future(first._core.set_auto_commit(False))
        await first.subscribe([name], listener=OrderListener(calls))
        await asyncio.wrap_future(first._core.set_rebalance_hook(hook))  # after subscribe, before any poll
        p1 = Poller(first)
        pollers.append(p1)

        def first_has_everything() -> bool:
            p1.check()
            return len({(r.partition, r.offset) for r in p1.records}) == 400

        await wait_for_async(first_has_everything, SETTLE_S, message=lambda: f"{len(p1.records)} records")
        assert [p for p in hook.assigned if p] == [partitions]
        others.append(second)
        await second.subscribe([name])
        p2 = Poller(second)
        pollers.append(p2)

        def moved() -> bool:
            p1.check()
            p2.check()
            got = offsets_of(p2)
            return (
                balanced([first, second], 4)
                and bool(hook.revocations)
                and all(got.get(tp.partition, [])[-1:] == [99] for tp in second.assignment())
            )

        await wait_for_async(
            moved,
            SETTLE_S,
            message=lambda: (
                f"first {describe(first.assignment())}, second {describe(second.assignment())}, "
                f"second read {offsets_of(p2)}"
            ),
        )
        await p1.stop()
        await p2.stop()
        (revocation,) = hook.revocations
        moved_partitions = frozenset(second.assignment())
    finally:
        for poller in pollers:
            await poller.abandon()
        await asyncio.gather(first.close(), second.close())
    assert revocation.partitions == moved_partitions and len(moved_partitions) == 2  # only what moves
    assert revocation.commit_error is None
    assert revocation.held_by_member >= revocation.partitions and not (revocation.held_by_others & moved_partitions)
    assert set(revocation.committed_before.values()) == {None}  # no commit-before-revoke, no interval commit
    got = offsets_of(p2)
    assert {p: got[p] for p in describe(moved_partitions)} == {
        p: list(range(30, 100)) for p in describe(moved_partitions)
    }
    # Every callback, in poll or before leaving on close: the hook's first, then the listener's of the same kind.
    assert calls[0::2] == [("hook", kind) for _, kind in calls[1::2]]
    assert calls[1::2] == [("listener", kind) for _, kind in calls[0::2]]
    assert ("hook", "revoked") in calls


async def test_a_rebalance_while_processing_loses_nothing_and_never_runs_a_record_twice_at_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``process`` while a second member joins, then the first leaves (see ``tests.support.processing``): KIP-848
    revokes incrementally, each revocation heard by the engine's hook inside ``poll`` before the member acknowledges
    it in a heartbeat (every second or so: the broker's ``group.consumer.heartbeat.interval.ms`` in the tests)."""
    await rebalance_while_processing(
        broker.bootstrap_servers,
        topic(PARTITIONS),
        produce,
        monkeypatch,
        incremental=True,
        settings={"group_protocol": "consumer"},
    )
