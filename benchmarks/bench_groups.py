"""Consumer-group timings of asyncconsumer against aiokafka and librdkafka, every run in its own process.

    python benchmarks/bench_groups.py                               # every scenario, 3 interleaved reps, Tansu
    python benchmarks/bench_groups.py --broker kafka                # the same against a one-node Apache Kafka
    python benchmarks/bench_groups.py --scenarios settle --reps 5 --json out.json

Scenarios (one broker: ``--broker tansu``, the default, an embedded Tansu; ``--broker kafka``, a one-node Apache
Kafka from ``tests/support/kafka_broker.py``; the same group settings for every client, see ``group_settings``):

- ``first``: one member subscribes to a pre-filled topic in a fresh group; time from ``subscribe`` to the
  first record.
- ``settle``: N members of one client (one process, one loop, each polled continuously) are stable on a
  16-partition topic; one more subscribes; time until all N + 1 hold non-empty, disjoint assignments that cover
  every partition, under one generation. N is 4 on Tansu (as the README's earlier runs) and 3 on Kafka
  (``--settle-members``). asyncconsumer runs it with "range" and with "cooperative-sticky".
- ``blocked``: a member consumes, then the process's event loop is blocked by a busy loop for twice the
  session timeout; afterwards it is polled again and we report whether it kept its membership (same
  generation, same assignment, no rebalance callback). Measured twice per run: the member alone in its group,
  then with a second member of the same client (on its own thread and event loop) that keeps heartbeating.

Curves (issue 32; only when named in ``--scenarios``, e.g. ``--broker kafka --scenarios size,regex``; their report
goes to ``results/groups-curves-<commit>[-kafka].json`` with the tables and one PNG per curve beside it):

- ``size``: N members (1, 4, 16, 32), each in its own process, started, then told to subscribe at once to a
  64-partition topic in one fresh group; time from "go" until all N are settled (as in ``settle``) and held so.
- ``regex``: one member subscribes to a pattern matching 1, 100 or 1,000 single-partition topics; time from
  ``subscribe`` to the first record and to a record from every matching topic.

Variants: asyncconsumer and aiokafka with the classic protocol, librdkafka (``confluent``) with it, and on Kafka
only (Tansu has no KIP-848 coordinator) asyncconsumer and librdkafka with ``group_protocol="consumer"``
(``*-kip848``: the broker assigns, with its default assignor, and sets the session and heartbeat timing).

The parent creates and fills the topics once, then runs every variant in a fresh subprocess per repetition,
interleaved (rep 1: a, b...; rep 2: a, b...), with a fresh group id each time. Each child prints one JSON
line; a child that does not reach its end state within its deadline fails, and so does the whole run
(exit 1; ``--keep-going`` records the failure and goes on). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener as AioListener
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from benchcommon import (
    BROKERS,
    RESULT_MARKER,
    ChildFailed,
    child_argv,
    code_version,
    default_results_path,
    machine,
    median,
    median_min_max,
    note_failure,
    process_cpu_s,
    report_failures,
    spawn_child,
    start_broker,
    write_json,
)

from asyncconsumer import AsyncConsumer, ConsumerRebalanceListener, TopicPartition

Result = dict[str, Any]

SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 1_000
MAX_POLL_INTERVAL_MS = 60_000  # above the blocked scenario's 20 s block
POLL_TIMEOUT_MS = 100  # every member is polled in a loop with this timeout

JOIN_DEADLINE_S = 60.0  # Tansu holds a join ~5 s at a 10 s session; a rebalance of a few members ~5-10 s
WATCH_S = 4 * HEARTBEAT_INTERVAL_MS / 1000  # after a block, poll at least this long before judging
STABLE_FOR_S = 2 * HEARTBEAT_INTERVAL_MS / 1000  # ...and until the end state has held this long
CHILD_TIMEOUT_S = 300.0

PARTITIONS = {"first": 4, "settle": 16, "blocked": 4}
RECORDS = {"first": 1_000, "settle": 1_600, "blocked": 400}
VARIANTS: dict[str, tuple[str, ...]] = {
    "first": ("asyncconsumer", "asyncconsumer-kip848", "aiokafka", "confluent", "confluent-kip848"),
    "settle": (
        "asyncconsumer",
        "asyncconsumer-coop",
        "asyncconsumer-kip848",
        "aiokafka",
        "confluent",
        "confluent-kip848",
    ),
    "blocked": ("asyncconsumer", "asyncconsumer-kip848", "aiokafka", "confluent", "confluent-kip848"),
}
"""Every variant of every scenario; ``variants`` leaves out what the broker cannot run."""
KAFKA_ONLY = frozenset({"asyncconsumer-kip848", "confluent-kip848"})
"""The consumer group protocol (KIP-848): Tansu has only the classic one."""
BASELINE = "aiokafka"  # ratios are variant / aiokafka
SETTLE_MEMBERS = {"tansu": 4, "kafka": 3}
"""Members stable before one more joins in ``settle``: 4 on Tansu (the README's earlier runs measured a fifth
joining four), 3 on Kafka (the issue: a fourth joining three). ``--settle-members`` overrides."""


def variants(scenario: str, broker: str, only: Sequence[str] | None = None) -> tuple[str, ...]:
    """The variants of ``scenario`` that ``broker`` can run, in order, limited to ``only`` when given."""
    return tuple(
        v for v in VARIANTS[scenario] if (broker == "kafka" or v not in KAFKA_ONLY) and (only is None or v in only)
    )


def protocol_of(client: str) -> str:
    """The group protocol a variant uses: "consumer" (KIP-848) for the ``*-kip848`` ones, else "classic"."""
    return "consumer" if client.endswith("-kip848") else "classic"


def group_settings(protocol: str = "classic") -> dict[str, Any]:
    """What every client gets (aiokafka's ``rebalance_timeout_ms`` is set to what asyncconsumer sends, like Java:
    the max poll interval; aiokafka would otherwise send the session timeout). Under the consumer protocol the
    session and heartbeat timing is the broker's (``group.consumer.session.timeout.ms``, ``...heartbeat...``: 10 s
    and 1 s in ``tests/support/kafka_broker.py``, as here): a client may not set them."""
    settings: dict[str, Any] = {
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "max_poll_interval_ms": MAX_POLL_INTERVAL_MS,
    }
    if protocol == "classic":
        settings["session_timeout_ms"] = SESSION_TIMEOUT_MS
        settings["heartbeat_interval_ms"] = HEARTBEAT_INTERVAL_MS
    return settings


def confluent_settings(protocol: str) -> dict[str, Any]:
    """``group_settings`` in librdkafka's names (``partition.assignment.strategy`` range, as the others, under the
    classic protocol; under the consumer protocol ``group.protocol`` instead of it and the timings)."""
    settings: dict[str, Any] = {
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
    }
    if protocol == "classic":
        settings["session.timeout.ms"] = SESSION_TIMEOUT_MS
        settings["heartbeat.interval.ms"] = HEARTBEAT_INTERVAL_MS
        settings["partition.assignment.strategy"] = "range"
    else:
        settings["group.protocol"] = "consumer"
    return settings


class ScenarioTimeout(RuntimeError):
    pass


# ==========================================================================================================
# child side: members of one client behind one small interface
# ==========================================================================================================


Event = tuple[str, list[int]]  # ("revoked" | "assigned" | "lost", partitions), as the listener saw them


class Member(Protocol):
    events: list[Event]

    async def start(self) -> None: ...
    async def subscribe(self, topic: str) -> None: ...
    async def subscribe_pattern(self, pattern: str) -> None: ...
    async def poll(self) -> int: ...
    async def poll_topics(self) -> set[str]: ...
    def assigned(self) -> int: ...
    def partitions(self) -> set[int]: ...
    def generation(self) -> int: ...
    async def close(self) -> None: ...


class _AcListener(ConsumerRebalanceListener):
    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("revoked", sorted(tp.partition for tp in partitions)))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("assigned", sorted(tp.partition for tp in partitions)))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("lost", sorted(tp.partition for tp in partitions)))


class AcMember:
    def __init__(self, bootstrap: str, group_id: str, strategy: str | None) -> None:
        """``strategy`` None: the consumer group protocol (KIP-848), the broker assigns."""
        self.events: list[Event] = []
        if strategy is None:
            self._consumer = AsyncConsumer(
                bootstrap, group_id=group_id, group_protocol="consumer", **group_settings("consumer")
            )
        else:
            self._consumer = AsyncConsumer(
                bootstrap, group_id=group_id, partition_assignment_strategy=(strategy,), **group_settings()
            )

    async def start(self) -> None:
        await self._consumer.start()

    async def subscribe(self, topic: str) -> None:
        await self._consumer.subscribe([topic], listener=_AcListener(self.events))

    async def subscribe_pattern(self, pattern: str) -> None:
        """Every topic whose whole name matches ``pattern`` (classic: matched here on each metadata refresh;
        KIP-848: sent to the coordinator, which matches it)."""
        await self._consumer.subscribe(pattern=pattern, listener=_AcListener(self.events))

    async def poll(self) -> int:
        return (await self._consumer.poll(timeout_ms=POLL_TIMEOUT_MS)).count()

    async def poll_topics(self) -> set[str]:
        records = await self._consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
        return {tp.topic for tp in records.partitions() if records[tp]}

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def assigned(self) -> int:
        return len(self._consumer.assignment())

    def generation(self) -> int:
        return self._consumer.group_metadata().generation_id

    async def close(self) -> None:
        await self._consumer.close()


class _AioListener(AioListener):  # type: ignore[misc]  # aiokafka is untyped
    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.events.append(("revoked", sorted(tp.partition for tp in revoked)))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.events.append(("assigned", sorted(tp.partition for tp in assigned)))


class AioMember:
    def __init__(self, bootstrap: str, group_id: str) -> None:
        self.events: list[Event] = []
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group_id,
            partition_assignment_strategy=(RangePartitionAssignor,),
            rebalance_timeout_ms=MAX_POLL_INTERVAL_MS,
            **group_settings(),
        )

    async def start(self) -> None:
        await self._consumer.start()

    async def subscribe(self, topic: str) -> None:
        self._consumer.subscribe([topic], listener=_AioListener(self.events))

    async def subscribe_pattern(self, pattern: str) -> None:
        self._consumer.subscribe(pattern=f"^{pattern}$", listener=_AioListener(self.events))

    async def poll(self) -> int:
        batch = await self._consumer.getmany(timeout_ms=POLL_TIMEOUT_MS)
        return sum(len(records) for records in batch.values())

    async def poll_topics(self) -> set[str]:
        batch = await self._consumer.getmany(timeout_ms=POLL_TIMEOUT_MS)
        return {tp.topic for tp, records in batch.items() if records}

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def assigned(self) -> int:
        return len(self._consumer.assignment())

    def generation(self) -> int:
        coordinator = self._consumer._coordinator  # no public accessor; -1 outside a generation
        return -1 if coordinator is None else int(coordinator.generation)

    async def close(self) -> None:
        await self._consumer.stop()


_CGMD_MAGIC = b"CGMDv2:"
_CGMD_GENERATION = struct.Struct("=i")


class ConfluentMember:
    """librdkafka (confluent-kafka's ``Consumer``). Its blocking ``consume`` runs on a worker thread (it releases
    the GIL), so one loop polls several members at once as it does the asyncio clients; the rebalance callbacks
    run inside it. Built in ``start`` (librdkafka connects from its own threads as soon as it exists)."""

    def __init__(self, bootstrap: str, group_id: str, protocol: str) -> None:
        self.events: list[Event] = []
        self._config = {"bootstrap.servers": bootstrap, "group.id": group_id, **confluent_settings(protocol)}
        self._consumer: Any = None

    async def start(self) -> None:
        import confluent_kafka

        self._consumer = confluent_kafka.Consumer(self._config)

    async def subscribe(self, topic: str) -> None:
        events = self.events

        def callback(kind: str) -> Callable[[Any, list[Any]], None]:
            # librdkafka (the Python binding) assigns or unassigns by itself after the callback returns.
            return lambda _consumer, partitions: events.append((kind, sorted(tp.partition for tp in partitions)))

        self._consumer.subscribe(
            [topic], on_assign=callback("assigned"), on_revoke=callback("revoked"), on_lost=callback("lost")
        )

    async def subscribe_pattern(self, pattern: str) -> None:
        """librdkafka takes a subscribed name that starts with ``^`` as a regular expression (anchored here at
        both ends, as the others match whole names)."""
        self._consumer.subscribe([f"^{pattern}$"])

    async def poll(self) -> int:
        messages = await asyncio.to_thread(self._consumer.consume, 500, POLL_TIMEOUT_MS / 1000)
        return sum(1 for message in messages if message.error() is None)

    async def poll_topics(self) -> set[str]:
        messages = await asyncio.to_thread(self._consumer.consume, 500, POLL_TIMEOUT_MS / 1000)
        return {message.topic() for message in messages if message.error() is None}

    def partitions(self) -> set[int]:
        return set() if self._consumer is None else {tp.partition for tp in self._consumer.assignment()}

    def assigned(self) -> int:
        return 0 if self._consumer is None else len(self._consumer.assignment())

    def generation(self) -> int:
        """The generation (classic) or member epoch (KIP-848) librdkafka holds: read from its serialized group
        metadata (``rd_kafka_consumer_group_metadata_write``: magic ``CGMDv2:``, then the generation as a native
        int32), the only place the binding exposes it; -1 outside a generation."""
        if self._consumer is None:
            return -1
        data = bytes(self._consumer.consumer_group_metadata())
        if not data.startswith(_CGMD_MAGIC):
            raise RuntimeError(f"unexpected librdkafka group metadata {data[:16]!r}")
        return int(_CGMD_GENERATION.unpack_from(data, len(_CGMD_MAGIC))[0])

    async def close(self) -> None:
        if self._consumer is not None:
            await asyncio.to_thread(self._consumer.close)


def make_member(client: str, bootstrap: str, group_id: str) -> Member:
    if client == "asyncconsumer":
        return AcMember(bootstrap, group_id, "range")
    if client == "asyncconsumer-coop":
        return AcMember(bootstrap, group_id, "cooperative-sticky")
    if client == "asyncconsumer-kip848":
        return AcMember(bootstrap, group_id, None)
    if client == "aiokafka":
        return AioMember(bootstrap, group_id)
    if client in ("confluent", "confluent-kip848"):
        return ConfluentMember(bootstrap, group_id, protocol_of(client))
    raise ValueError(f"unknown client {client!r}")


def new_group_id() -> str:
    return f"bench-groups-{uuid.uuid4().hex[:10]}"


class Snapshot:
    """What a member owns and its generation, read after each poll (safe to read from another thread)."""

    def __init__(self, partitions: set[int], generation: int) -> None:
        self.partitions = frozenset(partitions)
        self.generation = generation

    @classmethod
    def of(cls, member: Member) -> Snapshot:
        return cls(member.partitions(), member.generation())


def settled(snapshots: Sequence[Snapshot], partitions: int) -> bool:
    """Every member owns something, no partition twice, all partitions owned, one generation for all."""
    union: set[int] = set()
    for snap in snapshots:
        if not snap.partitions or snap.partitions & union:
            return False
        union |= snap.partitions
    generations = {snap.generation for snap in snapshots}
    return union == set(range(partitions)) and len(generations) == 1 and min(generations) >= 0


def describe(snapshots: Sequence[Snapshot]) -> str:
    return "; ".join(f"gen {s.generation} owns {sorted(s.partitions)}" for s in snapshots)


# --- first: subscribe to first record -----------------------------------------------------------------------


async def child_first(client: str, bootstrap: str, topic: str) -> Result:
    member = make_member(client, bootstrap, new_group_id())
    t_start = time.perf_counter()
    await member.start()
    start_s = time.perf_counter() - t_start
    t0 = time.perf_counter()
    await member.subscribe(topic)
    assigned_s: float | None = None
    while True:
        got = await member.poll()
        now = time.perf_counter()
        if assigned_s is None and member.partitions():
            assigned_s = now - t0
        if got:
            break
        if now - t0 > JOIN_DEADLINE_S:
            raise ScenarioTimeout(f"no record within {JOIN_DEADLINE_S:.0f} s of subscribe")
    first_s = now - t0
    result = {
        "first_record_s": first_s,
        "assigned_s": first_s if assigned_s is None else assigned_s,
        "start_s": start_s,
        "generation": member.generation(),
        "partitions": sorted(member.partitions()),
    }
    await member.close()
    return result


# --- settle: one more member joins N stable ones (a fifth joins four on Tansu, a fourth three on Kafka) --------


async def child_settle(client: str, bootstrap: str, topic: str, partitions: int, stable: int) -> Result:
    group_id = new_group_id()
    members = [make_member(client, bootstrap, group_id) for _ in range(stable + 1)]
    await asyncio.gather(*(m.start() for m in members))
    stop = asyncio.Event()
    snapshots: list[Snapshot] = [Snapshot(set(), -1) for _ in members]
    polls = [0] * len(members)

    async def keep_polling(i: int) -> None:
        while not stop.is_set():
            await members[i].poll()
            snapshots[i] = Snapshot.of(members[i])
            polls[i] += 1

    async def until_settled(count: int, since: float, what: str) -> float:
        while not settled(snapshots[:count], partitions):
            for task in tasks:
                if task.done() and task.exception() is not None:
                    raise RuntimeError(f"{what}: a member's poll failed: {task.exception()!r}") from task.exception()
            if time.perf_counter() - since > JOIN_DEADLINE_S:
                raise ScenarioTimeout(
                    f"{what}: not settled within {JOIN_DEADLINE_S:.0f} s: {describe(snapshots[:count])}"
                )
            await asyncio.sleep(0.005)
        return time.perf_counter() - since

    tasks: list[asyncio.Task[None]] = []
    try:
        t_stable = time.perf_counter()
        for i in range(stable):
            await members[i].subscribe(topic)
            tasks.append(asyncio.create_task(keep_polling(i)))
        stable_s = await until_settled(stable, t_stable, f"{stable} members")
        await asyncio.sleep(STABLE_FOR_S)  # the first ones stay settled: no rebalance was still on its way
        if not settled(snapshots[:stable], partitions):
            raise ScenarioTimeout(f"{stable} members settled, then moved again: {describe(snapshots[:stable])}")
        generation_before = snapshots[0].generation
        events_before = [len(m.events) for m in members]
        t0 = time.perf_counter()
        await members[stable].subscribe(topic)
        tasks.append(asyncio.create_task(keep_polling(stable)))
        settle_s = await until_settled(stable + 1, t0, "the newcomer")
        generation_after = snapshots[0].generation
        final = [sorted(s.partitions) for s in snapshots]
        callbacks = [
            [e for e in m.events[mark:] if e[1]] for m, mark in zip(members, events_before, strict=True)
        ]  # the non-empty ones: an eager member's revocation of everything, a cooperative one's moved partitions
    finally:
        stop.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(m.close() for m in members), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise RuntimeError(f"a member's poll failed: {errors[0]!r}") from errors[0]
    return {
        "members_before": stable,
        "stable_settle_s": stable_s,
        "settle_s": settle_s,
        "generation_before": generation_before,
        "generation_after": generation_after,
        "rebalances": generation_after - generation_before,
        "assignments": final,
        "callbacks": callbacks,
        "min_polls": min(polls),
    }


# --- blocked: the caller's loop is blocked for two sessions -------------------------------------------------


class Witness:
    """A second member of the same client on its own thread and event loop, polled continuously."""

    def __init__(self, client: str, bootstrap: str, group_id: str, topic: str) -> None:
        self.snapshot = Snapshot(set(), -1)
        self.events: list[Event] = []
        self.generations: list[int] = []  # every generation it was in, in order
        self.error: BaseException | None = None
        self._args = (client, bootstrap, group_id, topic)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="witness", daemon=True)
        self._thread.start()

    async def _run(self) -> None:
        client, bootstrap, group_id, topic = self._args
        try:
            member = make_member(client, bootstrap, group_id)
            self.events = member.events
            await member.start()
            await member.subscribe(topic)
            try:
                while not self._stop.is_set():
                    await member.poll()
                    self.snapshot = Snapshot.of(member)
                    generation = self.snapshot.generation
                    if generation >= 0 and (not self.generations or self.generations[-1] != generation):
                        self.generations.append(generation)
            finally:
                await member.close()
        except BaseException as exc:
            self.error = exc

    def check(self) -> None:
        if self.error is not None:
            raise RuntimeError(f"the witness member failed: {self.error!r}") from self.error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        if self._thread.is_alive():
            raise RuntimeError("the witness member did not close within 30 s")
        self.check()


async def block_and_watch(
    member: Member, witness: Witness | None, partitions: int, block_s: float, what: str
) -> Result:
    """Blocks the loop for ``block_s``, then polls until the group is settled again and has stayed so."""

    def snapshots() -> list[Snapshot]:
        if witness is not None:
            witness.check()
        own = Snapshot.of(member)
        return [own] if witness is None else [own, witness.snapshot]

    before = snapshots()
    if not settled(before, partitions):
        raise RuntimeError(f"{what}: not settled before the block: {describe(before)}")
    mark = len(member.events)
    witness_mark = 0 if witness is None else len(witness.generations)

    t_end = time.monotonic() + block_s
    while time.monotonic() < t_end:  # CPU-bound, no await: the event loop is blocked
        pass
    block_end = time.monotonic()

    generations_seen = [before[0].generation]
    ever_lost = ever_unsettled = False
    stable_since: float | None = None
    while True:
        await member.poll()
        now = time.monotonic()
        snaps = snapshots()
        own = snaps[0]
        if own.generation != generations_seen[-1]:
            generations_seen.append(own.generation)
        if own.generation != before[0].generation or own.partitions != before[0].partitions:
            ever_lost = True
        if settled(snaps, partitions):
            stable_since = now if stable_since is None else stable_since
            if now - block_end >= WATCH_S and now - stable_since >= STABLE_FOR_S:
                break
        else:
            stable_since = None
            ever_unsettled = True
        if now - block_end > JOIN_DEADLINE_S + WATCH_S:
            raise ScenarioTimeout(
                f"{what}: group not settled again within {JOIN_DEADLINE_S + WATCH_S:.0f} s of the block's end: "
                f"{describe(snaps)}"
            )
    after = snapshots()
    callbacks = [e for e in member.events[mark:] if e[1]]
    kept = not ever_lost and not callbacks and after[0].generation == before[0].generation
    result: Result = {
        "kept": kept,
        "generation_before": before[0].generation,
        "generation_after": after[0].generation,
        "generations_seen": generations_seen,  # the member's, as seen by its polls after the block
        "partitions_before": sorted(before[0].partitions),
        "partitions_after": sorted(after[0].partitions),
        "callbacks": callbacks,
        "settled_again_s": stable_since - block_end if ever_unsettled else 0.0,
        "block_s": block_end - (t_end - block_s),
    }
    if witness is not None:
        result["witness_generations"] = witness.generations[witness_mark - 1 if witness_mark else 0 :]
        result["witness_rebalanced"] = len(witness.generations) > witness_mark
    return result


async def child_blocked(client: str, bootstrap: str, topic: str, partitions: int, expect: int) -> Result:
    group_id = new_group_id()
    member = make_member(client, bootstrap, group_id)
    await member.start()
    await member.subscribe(topic)
    block_s = 2 * SESSION_TIMEOUT_MS / 1000
    t0 = time.monotonic()
    consumed = 0
    while consumed < expect or not settled([Snapshot.of(member)], partitions):
        consumed += await member.poll()
        if time.monotonic() - t0 > JOIN_DEADLINE_S:
            raise ScenarioTimeout(f"alone: {consumed} of {expect} records within {JOIN_DEADLINE_S:.0f} s")
    witness: Witness | None = None
    try:
        alone = await block_and_watch(member, None, partitions, block_s, "alone")
        alone["consumed_before"] = consumed
        witness = Witness(client, bootstrap, group_id, topic)
        t1 = time.monotonic()
        while not settled([Snapshot.of(member), witness.snapshot], partitions):
            await member.poll()
            witness.check()
            if time.monotonic() - t1 > JOIN_DEADLINE_S:
                raise ScenarioTimeout(
                    f"with witness: not settled within {JOIN_DEADLINE_S:.0f} s: "
                    f"{describe([Snapshot.of(member), witness.snapshot])}"
                )
        paired_s = time.monotonic() - t1
        paired = await block_and_watch(member, witness, partitions, block_s, "with witness")
        paired["pair_settle_s"] = paired_s
    finally:
        if witness is not None:
            await asyncio.to_thread(witness.stop)
        await member.close()
    return {"alone": alone, "with_witness": paired}


def child_main(args: argparse.Namespace) -> int:
    scenario, client = args.child, args.client
    if scenario == "size":  # one member of a size run: talks to the parent in lines, no result line
        asyncio.run(child_size_member(client, args.bootstrap, args.group, args.topic))
        return 0
    runners: dict[str, Callable[[], Result]] = {
        "first": lambda: asyncio.run(child_first(client, args.bootstrap, args.topic)),
        "settle": lambda: asyncio.run(
            child_settle(client, args.bootstrap, args.topic, args.partitions, args.settle_members)
        ),
        "blocked": lambda: asyncio.run(child_blocked(client, args.bootstrap, args.topic, args.partitions, args.expect)),
        "regex": lambda: asyncio.run(child_regex(client, args.bootstrap, args.group, args.topic, args.expect)),
    }
    result = runners[scenario]()
    result.update(scenario=scenario, client=client)
    print(RESULT_MARKER + json.dumps(result), flush=True)
    return 0


# ==========================================================================================================
# parent side
# ==========================================================================================================


def produce(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
        await producer.start()
        try:
            sent = [await producer.send(topic, b"x" * 100, partition=i % partitions) for i in range(records)]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()

    asyncio.run(run())


WARMUP = {"tansu": 0, "kafka": 1}
"""Unmeasured ``first`` runs per group protocol before the scenarios (``--warmup``). A fresh Kafka creates its
``__consumer_offsets`` topic on the first FindCoordinator and its JVM is cold: without one, whichever variant runs
first waited ~0.9 s more for its first record. Tansu has neither (and its earlier runs had none)."""


def warm_up(broker: Any, runs: int, timeout_s: float) -> list[Result]:
    """``runs`` unmeasured ``first`` runs of asyncconsumer per group protocol the broker has, on a topic of their
    own; returns their results (kept in the report, in no table)."""
    topic = f"bench-groups-warmup-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS["first"])
    produce(broker.bootstrap_servers, topic, PARTITIONS["first"], RECORDS["first"])
    clients = variants("first", broker.kind, ["asyncconsumer", "asyncconsumer-kip848"])
    results = []
    for _ in range(runs):
        for client in clients:
            try:
                result = spawn("first", client, broker.bootstrap_servers, topic, timeout_s, 0)
            except ChildFailed as exc:
                print(f"FAILED [warm-up] {exc}", file=sys.stderr, flush=True)
                raise
            results.append(result)
            print(f"# warm-up (unmeasured): {client} 1st record {result['first_record_s']:.2f} s", flush=True)
    return results


def spawn(scenario: str, client: str, bootstrap: str, topic: str, timeout_s: float, settle_members: int) -> Result:
    argv = child_argv(
        __file__,
        child=scenario,
        client=client,
        bootstrap=bootstrap,
        topic=topic,
        partitions=PARTITIONS[scenario],
        expect=RECORDS[scenario],
        **({"settle-members": settle_members} if scenario == "settle" else {}),
    )
    t0 = time.perf_counter()
    result = spawn_child(argv, f"{scenario}/{client}", timeout_s)
    result["child_wall_s"] = time.perf_counter() - t0
    return result


def verify(result: Result) -> None:
    """The end states the children claim, checked again from what they report."""
    scenario, client = result["scenario"], result["client"]
    problems: list[str] = []
    if scenario == "settle":
        owned = [p for a in result["assignments"] for p in a]
        members = _members_before(result) + 1
        if len(result["assignments"]) != members or not all(result["assignments"]):
            problems.append(f"not {members} non-empty assignments: {result['assignments']}")
        if sorted(owned) != list(range(PARTITIONS["settle"])):
            problems.append(f"assignments do not cover every partition exactly once: {result['assignments']}")
    if scenario == "first" and result["partitions"] != list(range(PARTITIONS["first"])):
        problems.append(f"the lone member owns {result['partitions']}")
    if problems:
        raise ChildFailed(f"{scenario}/{client}: " + "; ".join(problems))


def _members_before(result: Result) -> int:
    """Members stable before the newcomer in a settle run (4 in reports from before it could be chosen)."""
    return int(result.get("members_before", 4))


def _stable_settle_s(result: Result) -> float:
    """The N members' settle time (``four_settle_s`` in reports from before N could be chosen)."""
    return float(result["stable_settle_s"] if "stable_settle_s" in result else result["four_settle_s"])


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _range(values: Sequence[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if values else "-"


def _ratio(value: float | None, base: float | None) -> str:
    return "" if value is None or not base else f" ({value / base:.2f}x)"


def summarise(scenario: str, runs: dict[str, list[Result]], failed: dict[str, int] | None = None) -> dict[str, Result]:
    """Medians per variant (variants whose every run failed get only ``reps`` 0 and ``failed``)."""
    summary: dict[str, Result] = {}
    failed = failed or {}
    for client, results in runs.items():
        if not results:
            summary[client] = {"reps": 0, "failed": failed.get(client, 0)}
    runs = {client: results for client, results in runs.items() if results}
    if scenario in ("first", "settle"):
        metrics = (
            ("first_record_s", "assigned_s", "start_s") if scenario == "first" else ("settle_s", "stable_settle_s")
        )
        if scenario == "settle":
            runs = {
                client: [{**r, "stable_settle_s": _stable_settle_s(r)} for r in results]
                for client, results in runs.items()
            }
        for client, results in runs.items():
            summary[client] = {
                "reps": len(results),
                "failed": failed.get(client, 0),
                "median": {m: median([r[m] for r in results]) for m in metrics},
                "min": {m: min((r[m] for r in results), default=None) for m in metrics},
                "max": {m: max((r[m] for r in results), default=None) for m in metrics},
            }
            if scenario == "settle":
                summary[client]["rebalances"] = [r["rebalances"] for r in results]
                summary[client]["members_before"] = sorted({_members_before(r) for r in results})
        base = summary.get(BASELINE)
        for entry in summary.values():
            entry["ratio_to_aiokafka"] = {
                m: (
                    entry["median"][m] / base["median"][m]
                    if base and entry["median"][m] and base["median"][m]
                    else None
                )
                for m in metrics
            }
    else:
        for client, results in runs.items():
            summary[client] = {"reps": len(results), "failed": failed.get(client, 0)}
            for phase in ("alone", "with_witness"):
                phase_runs = [r[phase] for r in results]
                summary[client][phase] = {
                    "reps": len(phase_runs),
                    "kept": sum(1 for r in phase_runs if r["kept"]),
                    "generations": [r["generations_seen"] for r in phase_runs],
                    "callbacks": [r["callbacks"] for r in phase_runs],
                    "settled_again_s": median([r["settled_again_s"] for r in phase_runs]),
                    "witness_rebalanced": sum(1 for r in phase_runs if r.get("witness_rebalanced")),
                }
    return summary


def _assignor(client: str) -> str:
    if protocol_of(client) == "consumer":
        return "consumer (KIP-848), the broker's default"
    return "classic, " + ("cooperative-sticky" if client.endswith("-coop") else "range")


def _reps(e: Result) -> str:
    return f"{e['reps']}" + (f" ({e['failed']} FAILED)" if e.get("failed") else "")


def table(scenario: str, summary: dict[str, Result]) -> str:
    base = summary.get(BASELINE, {}).get("median", {})
    failed_rows = [f"| {client} | every run FAILED ({e['failed']}) |" for client, e in summary.items() if not e["reps"]]
    summary = {client: e for client, e in summary.items() if e["reps"]}
    if scenario == "first":
        lines = [
            "| client | subscribe → 1st record ms | min-max ms | start() ms | reps |",
            "|---|---:|---:|---:|---:|",
        ]
        for client, e in summary.items():
            med = e["median"]
            ratio = _ratio(med["first_record_s"], base.get("first_record_s"))
            lines.append(
                f"| {client} | {med['first_record_s'] * 1000:.0f}{ratio} "
                f"| {e['min']['first_record_s'] * 1000:.0f}-{e['max']['first_record_s'] * 1000:.0f} "
                f"| {med['start_s'] * 1000:.0f} | {_reps(e)} |"
            )
        return "\n".join(lines + failed_rows)
    if scenario == "settle":
        counts = {n for e in summary.values() for n in e.get("members_before", [4])}
        n = counts.pop() if len(counts) == 1 else None
        newcomer = "newcomer's" if n is None else _ordinal(n + 1)
        lines = [
            f"| client | protocol, assignor | {newcomer} subscribe → settled s | min-max s | generations per join "
            f"| {'first' if n is None else n} members settle s | reps |",
            "|---|---|---:|---:|---|---:|---:|",
        ]
        for client, e in summary.items():
            med = e["median"]
            lines.append(
                f"| {client} | {_assignor(client)} "
                f"| {med['settle_s']:.2f}{_ratio(med['settle_s'], base.get('settle_s'))} "
                f"| {e['min']['settle_s']:.2f}-{e['max']['settle_s']:.2f} "
                f"| {', '.join(str(n) for n in e['rebalances'])} | {med['stable_settle_s']:.2f} | {_reps(e)} |"
            )
        return "\n".join(lines + failed_rows)
    lines = [
        "| client | group | kept membership | member's generations after the block | member's rebalance callbacks "
        "| other member rebalanced | settled again after s (median) |",
        "|---|---|---:|---|---|---:|---:|",
    ]
    for client, phases in summary.items():
        for phase, label in (("alone", "alone"), ("with_witness", "+1 member on its own thread")):
            e = phases[phase]
            gens = "; ".join("→".join(str(g) for g in seen) for seen in e["generations"])
            callbacks = "; ".join(
                ", ".join(f"{kind} {parts}" for kind, parts in run) or "none" for run in e["callbacks"]
            )
            other = f"{e['witness_rebalanced']}/{e['reps']}" if phase == "with_witness" else "-"
            if phases["failed"]:
                other += f" ({phases['failed']} runs FAILED)"
            lines.append(
                f"| {client} | {label} | {e['kept']}/{e['reps']} | {gens} | {callbacks} | {other} "
                f"| {e['settled_again_s']:.2f} |"
            )
    return "\n".join(lines + failed_rows)


def _progress(scenario: str, rep: int, result: Result) -> str:
    client = result["client"]
    if scenario == "first":
        return (
            f"  rep {rep} {client:<19} 1st record {result['first_record_s']:.2f} s "
            f"(assigned {result['assigned_s']:.2f} s, start {result['start_s']:.2f} s)"
        )
    if scenario == "settle":
        return (
            f"  rep {rep} {client:<19} settled {result['settle_s']:.2f} s, generation "
            f"{result['generation_before']}→{result['generation_after']} "
            f"({_members_before(result)} members: {_stable_settle_s(result):.2f} s)"
        )
    parts = []
    for phase in ("alone", "with_witness"):
        r = result[phase]
        parts.append(
            f"{phase}: {'kept' if r['kept'] else 'LOST'} gen {'→'.join(map(str, r['generations_seen']))}"
            f" settled again {r['settled_again_s']:.2f} s"
        )
    return f"  rep {rep} {client:<19} " + "; ".join(parts)


# ==========================================================================================================
# curves (issue 32): time to settle as the group grows, time to consume as a pattern matches more topics
# ==========================================================================================================

CURVE_SCENARIOS = ("size", "regex")
CURVE_VARIANTS: dict[str, tuple[str, ...]] = {
    "size": ("asyncconsumer", "asyncconsumer-kip848", "confluent", "confluent-kip848"),
    "regex": ("asyncconsumer", "asyncconsumer-kip848", "confluent", "confluent-kip848"),
}
SIZE_MEMBERS = (1, 4, 16, 32)
SIZE_PARTITIONS = 64  # 32 members get 2 each
SIZE_RECORDS = 4 * SIZE_PARTITIONS
REGEX_TOPICS = (1, 100, 1_000)
CURVE_DEADLINE_S = 90.0  # go -> settled and held (size), subscribe -> every topic consumed (regex)
READY_DEADLINE_S = 240.0  # N fresh Pythons importing and starting a client, on 2 cores
STOP_DEADLINE_S = 30.0  # members' close after the run, then SIGKILL
MEMBER_MARKER = "MEMBER "
"""A size member prints its JSON lines behind this marker (anything else on its stdout is ignored)."""


def curve_variants(scenario: str, broker: str, only: Sequence[str] | None = None) -> tuple[str, ...]:
    return tuple(
        v
        for v in CURVE_VARIANTS[scenario]
        if (broker == "kafka" or v not in KAFKA_ONLY) and (only is None or v in only)
    )


# --- size: N member processes, one member each --------------------------------------------------------------


def _emit(message: Result) -> None:
    print(MEMBER_MARKER + json.dumps(message), flush=True)


async def child_size_member(client: str, bootstrap: str, group_id: str, topic: str) -> None:
    """One member in its own process. Prints ``ready`` once its client is started, waits for ``go`` on stdin,
    subscribes, then polls until a line (or EOF) on stdin, printing its snapshot (``t`` time.monotonic(), the
    system-wide clock, ``gen``, ``parts``, ``cpu`` its CPU seconds since go) whenever it changes; at the end
    ``done`` with its poll statistics."""
    member = make_member(client, bootstrap, group_id)
    await member.start()
    _emit({"ready": time.monotonic()})
    if (await asyncio.to_thread(sys.stdin.readline)).strip() != "go":
        await member.close()
        return
    stop = asyncio.Event()
    stdin_task = asyncio.create_task(asyncio.to_thread(sys.stdin.readline))
    stdin_task.add_done_callback(lambda _task: stop.set())
    t_go = time.monotonic()
    cpu0 = time.process_time()
    await member.subscribe(topic)
    _emit({"subscribed": time.monotonic(), "subscribe_s": time.monotonic() - t_go})
    last: tuple[int, frozenset[int]] | None = None
    polls = consumed = 0
    max_gap = 0.0
    previous = time.monotonic()
    while not stop.is_set():
        consumed += await member.poll()
        now = time.monotonic()
        max_gap, previous = max(max_gap, now - previous), now
        polls += 1
        snap = Snapshot.of(member)
        if (snap.generation, snap.partitions) != last:
            last = (snap.generation, snap.partitions)
            cpu = time.process_time() - cpu0
            _emit({"t": now, "gen": snap.generation, "parts": sorted(snap.partitions), "cpu": cpu})
    _emit(
        {
            "done": time.monotonic(),
            "polls": polls,
            "max_poll_gap_s": max_gap,
            "consumed": consumed,
            "cpu_s": time.process_time() - cpu0,
        }
    )
    await asyncio.wait_for(member.close(), STOP_DEADLINE_S / 2)


class GroupWatch:
    """The snapshots of N members, each in its own process, as their lines arrive (not necessarily in stamp
    order across processes); whether and since when the group is settled.

    Settled since: the latest stamp among the current snapshots, i.e. when the last member reached the state all
    now hold (each member reports every change, in order, so none changed in between)."""

    def __init__(self, members: int, partitions: int) -> None:
        self.partitions = partitions
        self.snapshots = [Snapshot(set(), -1) for _ in range(members)]
        self.stamps = [0.0] * members
        self.cpu: list[float | None] = [None] * members
        """Each member's CPU seconds since go, as of its latest line (None: not reported)."""
        self.generations: set[int] = set()
        """Every generation (classic) or member epoch (KIP-848) any member reported."""
        self.changes = 0
        self.settled_since: float | None = None

    def update(
        self, member: int, stamp: float, generation: int, partitions: Sequence[int], cpu: float | None = None
    ) -> None:
        self.snapshots[member] = Snapshot(set(partitions), generation)
        self.stamps[member] = stamp
        self.cpu[member] = cpu
        self.changes += 1
        if generation >= 0:
            self.generations.add(generation)
        self.settled_since = max(self.stamps) if settled(self.snapshots, self.partitions) else None

    def cpu_s(self) -> float | None:
        """The members' CPU seconds from go until their latest lines (once settled: until each reached the settled
        state), None unless every member reported its CPU."""
        return None if any(c is None for c in self.cpu) else sum(c for c in self.cpu if c is not None)

    def held(self, now: float, hold_s: float) -> bool:
        """Settled, and held for ``hold_s`` by ``now``."""
        return self.settled_since is not None and now - self.settled_since >= hold_s


def fresh_group(broker: Any, client: str, kip848_group_config: dict[str, str] | None) -> str:
    """A new group id; for a KIP-848 variant with ``kip848_group_config`` (``consumer.heartbeat.interval.ms``,
    ``consumer.assignment.interval.ms``...), the group's configs set to it first (on Kafka only)."""
    group_id = new_group_id()
    if kip848_group_config and protocol_of(client) == "consumer" and broker.kind == "kafka":
        broker.handle.set_group_config(group_id, kip848_group_config)
    return group_id


def parse_group_config(text: str) -> dict[str, str]:
    """``--kip848-group-config``: ``name=value,name=value``."""
    config: dict[str, str] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected name=value, got {item!r}")
        config[name.strip()] = value.strip()
    return config


class _Members:
    """N member processes: their lines on one queue, their stderr in files, all ended on ``close``."""

    def __init__(self, client: str, bootstrap: str, topic: str, n: int, workdir: Path, group_id: str) -> None:
        self.group_id = group_id
        self.lines: queue.Queue[tuple[int, Result | None]] = queue.Queue()
        self.procs: list[subprocess.Popen[str]] = []
        self.stderr_paths = [workdir / f"member-{i}.err" for i in range(n)]
        for i in range(n):
            argv = child_argv(
                __file__, child="size", client=client, bootstrap=bootstrap, topic=topic, group=self.group_id
            )
            with self.stderr_paths[i].open("w") as err:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1
                )
            self.procs.append(proc)
            threading.Thread(target=self._read, args=(i, proc), daemon=True).start()

    def _read(self, index: int, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(MEMBER_MARKER):
                self.lines.put((index, json.loads(line[len(MEMBER_MARKER) :])))
        self.lines.put((index, None))  # EOF: the process ended

    def tell(self, line: str) -> None:
        for proc in self.procs:
            if proc.stdin is not None and proc.poll() is None:
                try:
                    proc.stdin.write(line + "\n")
                    proc.stdin.flush()
                except (BrokenPipeError, OSError):
                    pass

    def stderr_tail(self, index: int) -> str:
        try:
            return self.stderr_paths[index].read_text()[-2000:]
        except OSError:
            return ""

    def close(self) -> None:
        """Asks every member to stop; kills what is still there after ``STOP_DEADLINE_S``."""
        self.tell("stop")
        deadline = time.monotonic() + STOP_DEADLINE_S
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def run_size(client: str, broker: Any, topic: str, n: int, kip848_group_config: dict[str, str] | None = None) -> Result:
    """One size run: N members of ``client`` in N processes, one fresh group; ``go`` once all are started; time
    until they are settled (``settled``) and held so for ``STABLE_FOR_S``. Raises ``ScenarioTimeout`` past
    ``CURVE_DEADLINE_S`` (the members are ended either way)."""
    group_id = fresh_group(broker, client, kip848_group_config)
    with tempfile.TemporaryDirectory(prefix="bench-groups-size-") as workdir:
        t_spawn = time.monotonic()
        members = _Members(client, broker.bootstrap_servers, topic, n, Path(workdir), group_id)
        try:
            return _watch_size(members, n, t_spawn, broker.pid)
        finally:
            members.close()


def _watch_size(members: _Members, n: int, t_spawn: float, broker_pid: int | None) -> Result:
    ready: set[int] = set()
    while len(ready) < n:
        try:
            index, message = members.lines.get(timeout=max(0.01, t_spawn + READY_DEADLINE_S - time.monotonic()))
        except queue.Empty:
            raise ScenarioTimeout(
                f"{n - len(ready)} of {n} members not started within {READY_DEADLINE_S:.0f} s"
            ) from None
        if message is None:
            raise ChildFailed(f"member {index} ended before it was ready:\n{members.stderr_tail(index)}")
        if "ready" in message:
            ready.add(index)
    ready_s = time.monotonic() - t_spawn
    load_at_go = os.getloadavg()[0]
    broker_cpu0 = process_cpu_s(broker_pid)
    watch = GroupWatch(n, SIZE_PARTITIONS)
    subscribe_s: list[float] = []
    done: dict[int, Result] = {}
    timeline: list[tuple[float, int, int, int]] = []  # (s after go, member, generation, partitions owned)
    t_go = time.monotonic()
    members.tell("go")
    while True:
        now = time.monotonic()
        if watch.held(now, STABLE_FOR_S):
            break
        if now - t_go > CURVE_DEADLINE_S:
            raise ScenarioTimeout(
                f"{n} members not settled within {CURVE_DEADLINE_S:.0f} s: generations seen "
                f"{sorted(watch.generations)}; {describe(watch.snapshots)}"
            )
        wait = CURVE_DEADLINE_S - (now - t_go)
        if watch.settled_since is not None:
            wait = min(wait, watch.settled_since + STABLE_FOR_S - now)
        try:
            index, message = members.lines.get(timeout=max(0.01, wait))
        except queue.Empty:
            continue
        if message is None:
            raise ChildFailed(f"member {index} ended during the run:\n{members.stderr_tail(index)}")
        if "t" in message:
            watch.update(index, message["t"], message["gen"], message["parts"], message.get("cpu"))
            timeline.append((round(message["t"] - t_go, 3), index, message["gen"], len(message["parts"])))
        elif "subscribe_s" in message:
            subscribe_s.append(message["subscribe_s"])
    settled_at = watch.settled_since
    assert settled_at is not None
    cpu_to_settle = watch.cpu_s()
    broker_cpu1 = process_cpu_s(broker_pid)
    load_at_end = os.getloadavg()[0]
    final_generation = watch.snapshots[0].generation
    members.tell("stop")
    deadline = time.monotonic() + STOP_DEADLINE_S
    while len(done) < n and time.monotonic() < deadline:
        try:
            index, message = members.lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if message is not None and "done" in message:
            done[index] = message
    return {
        "members": n,
        "settle_s": settled_at - t_go,
        "window_s": time.monotonic() - t_go,
        "final_generation": final_generation,
        "generations_seen": sorted(watch.generations),
        "snapshot_changes": watch.changes,
        "timeline": sorted(timeline),
        "assignments": [sorted(s.partitions) for s in watch.snapshots],
        "ready_s": ready_s,
        "subscribe_s_max": max(subscribe_s, default=None),
        "max_poll_gap_s": max((d["max_poll_gap_s"] for d in done.values()), default=None),
        "member_cpu_s": sum(d["cpu_s"] for d in done.values()) if done else None,
        "member_cpu_to_settle_s": cpu_to_settle,
        "members_reported": len(done),
        "broker_cpu_s": None if broker_cpu0 is None or broker_cpu1 is None else broker_cpu1 - broker_cpu0,
        "load_at_go": load_at_go,
        "load_at_end": load_at_end,
    }


# --- regex: subscribe(pattern) to 1, 100 or 1,000 topics ----------------------------------------------------


def regex_topics(tag: str, count: int) -> list[str]:
    """The topics of one point: ``rx<count>-<tag>-0000``... (distinct prefixes: no pattern matches another's)."""
    return [f"rx{count}-{tag}-{i:04d}" for i in range(count)]


def regex_pattern(tag: str, count: int) -> str:
    """A pattern whose whole-name matches are exactly ``regex_topics(tag, count)``."""
    return f"rx{count}-{tag}-[0-9]{{4}}"


async def child_regex(client: str, bootstrap: str, group_id: str, pattern: str, expect: int) -> Result:
    member = make_member(client, bootstrap, group_id)
    await member.start()
    t0 = time.perf_counter()
    await member.subscribe_pattern(pattern)
    subscribe_s = time.perf_counter() - t0
    seen: set[str] = set()
    first_s = assigned_s = None
    polls = 0
    while len(seen) < expect:
        got = await member.poll_topics()
        polls += 1
        now = time.perf_counter() - t0
        if assigned_s is None and member.assigned() >= expect:
            assigned_s = now
        if got and first_s is None:
            first_s = now
        seen |= got
        if now > CURVE_DEADLINE_S:
            raise ScenarioTimeout(
                f"{len(seen)} of {expect} topics consumed, {member.assigned()} partitions assigned, "
                f"within {CURVE_DEADLINE_S:.0f} s"
            )
    all_s = time.perf_counter() - t0
    result = {
        "topics": expect,
        "subscribe_s": subscribe_s,
        "first_record_s": first_s,
        "assigned_s": all_s if assigned_s is None else assigned_s,
        "all_topics_s": all_s,
        "polls": polls,
        "unexpected": sorted(t for t in seen if not re.fullmatch(pattern, t)),
        "generation": member.generation(),
    }
    await member.close()
    return result


def create_regex_topics(broker: Any, names: Sequence[str], batch: int = 100) -> None:
    """Creates single-partition topics in batches and puts one record in each (librdkafka's producer)."""
    from confluent_kafka import Producer

    if broker.kind == "kafka":
        from confluent_kafka.admin import NewTopic

        admin = broker.handle.admin()
        for start in range(0, len(names), batch):
            chunk = [NewTopic(name, num_partitions=1, replication_factor=1) for name in names[start : start + batch]]
            for future in admin.create_topics(chunk, request_timeout=60).values():
                future.result(timeout=60)
    else:
        for name in names:
            broker.create_topic(name, 1)
    failed: list[str] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    for name in names:
        producer.produce(
            name, b"x" * 100, partition=0, on_delivery=lambda err, msg: failed.append(str(err)) if err else None
        )
        producer.poll(0)
    left = producer.flush(120)
    if left or failed:
        raise RuntimeError(f"producing to the regex topics: {left} not delivered, errors {failed[:3]}")


def spawn_regex(
    client: str,
    broker: Any,
    pattern: str,
    expect: int,
    timeout_s: float,
    kip848_group_config: dict[str, str] | None = None,
) -> Result:
    group_id = fresh_group(broker, client, kip848_group_config)
    argv = child_argv(
        __file__,
        child="regex",
        client=client,
        bootstrap=broker.bootstrap_servers,
        group=group_id,
        topic=pattern,
        expect=expect,
    )
    t0 = time.perf_counter()
    result = spawn_child(argv, f"regex/{client}/{expect}", timeout_s)
    result["child_wall_s"] = time.perf_counter() - t0
    if result.get("unexpected"):
        raise ChildFailed(f"regex/{client}/{expect}: consumed topics outside the pattern: {result['unexpected'][:5]}")
    return result


# --- summary, tables, plots ---------------------------------------------------------------------------------

CURVE_METRICS = {"size": ("settle_s",), "regex": ("first_record_s", "assigned_s", "all_topics_s")}
CURVE_X = {"size": "members", "regex": "topics"}


def summarise_curve(scenario: str, runs: Sequence[Result]) -> dict[str, dict[int, Result]]:
    """Per variant, per point (members or topics): reps, failures, median/min/max of each metric; for size also
    the final generations, the generations seen and the worst poll gap."""
    metrics, x = CURVE_METRICS[scenario], CURVE_X[scenario]
    grouped: dict[str, dict[int, list[Result]]] = {}
    for run in runs:
        grouped.setdefault(run["client"], {}).setdefault(int(run[x]), []).append(run)
    summary: dict[str, dict[int, Result]] = {}
    for client, points in grouped.items():
        summary[client] = {}
        for point, results in sorted(points.items()):
            ok = [r for r in results if not r.get("failed")]
            entry: Result = {"reps": len(ok), "failed": len(results) - len(ok)}
            for m in metrics:
                values = [r[m] for r in ok if r.get(m) is not None]
                entry[m] = median_min_max(values)
            if scenario == "size":
                entry["final_generations"] = [r["final_generation"] for r in ok]
                entry["generations_seen"] = [len(r["generations_seen"]) for r in ok]
                gaps = [r["max_poll_gap_s"] for r in ok if r.get("max_poll_gap_s") is not None]
                entry["max_poll_gap_s"] = max(gaps, default=None)
                loads = [r["load_at_end"] for r in ok if r.get("load_at_end") is not None]
                entry["load_at_end"] = max(loads, default=None)
                cpu = [r["broker_cpu_s"] for r in ok if r.get("broker_cpu_s") is not None]
                entry["broker_cpu_s"] = median(cpu)
                entry["member_cpu_to_settle_s"] = median(
                    [r["member_cpu_to_settle_s"] for r in ok if r.get("member_cpu_to_settle_s") is not None]
                )
            summary[client][point] = entry
    return summary


def _cell(stat: Result, digits: int = 2) -> str:
    if stat["median"] is None:
        return "-"
    text = f"{stat['median']:.{digits}f}"
    if stat["min"] != stat["max"]:
        text += f" ({stat['min']:.{digits}f}-{stat['max']:.{digits}f})"
    return text


def _failed(entry: Result) -> str:
    return f" ({entry['failed']} FAILED)" if entry["failed"] else ""


def curve_table(scenario: str, summary: dict[str, dict[int, Result]]) -> str:
    """The size table (per variant and N: settle time, generations, worst poll gap) or the regex one."""
    if scenario == "size":
        lines = [
            "| client | protocol, assignor | members | go → settled s, median (min-max) | final generation per rep "
            "| generations seen | worst poll gap s | members' CPU go → settled s | broker CPU go → held s | reps |",
            "|---|---|---:|---:|---|---|---:|---:|---:|---:|",
        ]
        for client, points in summary.items():
            for n, e in points.items():
                gap = "-" if e["max_poll_gap_s"] is None else f"{e['max_poll_gap_s']:.2f}"
                members_cpu = e.get("member_cpu_to_settle_s")
                load = "-" if members_cpu is None else f"{members_cpu:.2f}"
                cpu = "-" if e["broker_cpu_s"] is None else f"{e['broker_cpu_s']:.1f}"
                lines.append(
                    f"| {client} | {_assignor(client)} | {n} | {_cell(e['settle_s'])} "
                    f"| {', '.join(map(str, e['final_generations'])) or '-'} "
                    f"| {', '.join(map(str, e['generations_seen'])) or '-'} | {gap} | {load} | {cpu} "
                    f"| {e['reps']}{_failed(e)} |"
                )
        return "\n".join(lines)
    lines = [
        "| client | protocol | topics | subscribe → 1st record s | subscribe → all assigned s "
        "| subscribe → every topic consumed s | reps |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for client, points in summary.items():
        for n, e in points.items():
            lines.append(
                f"| {client} | {protocol_of(client)} | {n:,} | {_cell(e['first_record_s'])} "
                f"| {_cell(e['assigned_s'])} | {_cell(e['all_topics_s'])} | {e['reps']}{_failed(e)} |"
            )
    return "\n".join(lines)


def curve_wide_table(scenario: str, summary: dict[str, dict[int, Result]]) -> str:
    """One row per variant, one column per point: the headline metric's median."""
    metric = "settle_s" if scenario == "size" else "all_topics_s"
    points = sorted({p for entries in summary.values() for p in entries})
    head = "members" if scenario == "size" else "topics"
    lines = [
        "| client | " + " | ".join(f"{p:,} {head}" for p in points) + " |",
        "|---|" + "---:|" * len(points),
    ]
    for client, entries in summary.items():
        cells = []
        for p in points:
            e = entries.get(p)
            if e is None:
                cells.append("")
            elif e[metric]["median"] is None:
                cells.append(f"FAILED ({e['failed']})")
            else:
                cells.append(f"{e[metric]['median']:.2f}{_failed(e)}")
        lines.append(f"| {client} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_curve(scenario: str, summary: dict[str, dict[int, Result]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    styles = (("all_topics_s", "-", "every topic"), ("first_record_s", ":", "1st record"))
    for i, (client, points) in enumerate(summary.items()):
        color = f"C{i}"
        series = [("settle_s", "-", "")] if scenario == "size" else list(styles)
        for metric, line, label in series:
            xs = [p for p, e in points.items() if e[metric]["median"] is not None]
            ys = [points[p][metric]["median"] for p in xs]
            lows = [points[p][metric]["median"] - points[p][metric]["min"] for p in xs]
            highs = [points[p][metric]["max"] - points[p][metric]["median"] for p in xs]
            ax.errorbar(
                xs,
                ys,
                yerr=[lows, highs],
                color=color,
                linestyle=line,
                marker="o",
                capsize=3,
                label=f"{client}" + (f" ({label})" if label else ""),
            )
    ax.set_xscale("log", base=2 if scenario == "size" else 10)
    points = sorted({p for entries in summary.values() for p in entries})
    ax.set_xticks(points, [f"{p:,}" for p in points])
    ax.set_xlabel("members (one process each)" if scenario == "size" else "topics matched by the pattern")
    ax.set_ylabel("go → settled, s" if scenario == "size" else "subscribe → records, s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside the plot, clear of the lines
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _curve_progress(scenario: str, rep: int, result: Result) -> str:
    client = result["client"]
    if result.get("failed"):
        return f"  rep {rep} {client:<21} {CURVE_X[scenario]}={result[CURVE_X[scenario]]} FAILED: {result['error']}"
    if scenario == "size":
        return (
            f"  rep {rep} {client:<21} {result['members']:>2} members settled {result['settle_s']:.2f} s, "
            f"generation {result['final_generation']} (seen {result['generations_seen'][:8]}), "
            f"worst poll gap {result['max_poll_gap_s'] or 0:.2f} s, members' CPU to settle "
            f"{result.get('member_cpu_to_settle_s') or 0:.2f} s, load {result['load_at_end']:.1f}, "
            f"started in {result['ready_s']:.1f} s"
        )
    return (
        f"  rep {rep} {client:<21} {result['topics']:>4} topics: 1st record {result['first_record_s']:.2f} s, "
        f"assigned {result['assigned_s']:.2f} s, every topic {result['all_topics_s']:.2f} s"
    )


def run_curves(
    scenarios: Sequence[str], broker: Any, args: argparse.Namespace, only: Sequence[str] | None, info: Result
) -> tuple[Result, list[str]]:
    """Runs the curve scenarios (reps interleaved: each point's variants in turn, then the next point); a failed
    run is recorded and the run goes on. Returns the report and the failures."""
    report: Result = {"machine": info, "args": vars(args), "scenarios": {}}
    failures: list[str] = []
    bootstrap = broker.bootstrap_servers
    for scenario in scenarios:
        clients = curve_variants(scenario, broker.kind, only)
        if not clients:
            print(f"\n## {scenario}: no variant to run (--clients)")
            continue
        points = tuple(args.size_members) if scenario == "size" else tuple(args.regex_topics)
        runs: list[Result] = []
        setup: Result = {}
        if scenario == "size":
            topic = f"bench-groups-size-{uuid.uuid4().hex[:8]}"
            broker.create_topic(topic, SIZE_PARTITIONS)
            produce(bootstrap, topic, SIZE_PARTITIONS, SIZE_RECORDS)
            setup = {"topic": topic, "partitions": SIZE_PARTITIONS, "records": SIZE_RECORDS}
            print(f"\n## size: topic {topic}, {SIZE_PARTITIONS} partitions, {SIZE_RECORDS} records; members {points}")
        else:
            tag = uuid.uuid4().hex[:6]
            t0 = time.perf_counter()
            for n in points:
                create_regex_topics(broker, regex_topics(tag, n))
            setup = {"tag": tag, "patterns": {n: regex_pattern(tag, n) for n in points}}
            print(
                f"\n## regex: {sum(points)} single-partition topics, one record each, created in "
                f"{time.perf_counter() - t0:.1f} s; patterns {setup['patterns']}"
            )
        for rep in range(1, args.reps + 1):
            for n in points:
                for client in clients:
                    try:
                        if scenario == "size":
                            result = run_size(client, broker, setup["topic"], n, args.kip848_group_config)
                        else:
                            pattern = regex_pattern(setup["tag"], n)
                            result = spawn_regex(client, broker, pattern, n, args.timeout, args.kip848_group_config)
                    except (ChildFailed, ScenarioTimeout) as exc:
                        message = f"FAILED [{scenario} {CURVE_X[scenario]}={n} rep {rep}] {client}: {exc}"
                        print(message[:3000], file=sys.stderr, flush=True)
                        failures.append(message)
                        result = {"failed": True, "error": str(exc).splitlines()[0][:500], CURVE_X[scenario]: n}
                    result.update(client=client, rep=rep, scenario=scenario)
                    runs.append(result)
                    print(_curve_progress(scenario, rep, result), flush=True)
        summary = summarise_curve(scenario, runs)
        report["scenarios"][scenario] = {**setup, "points": list(points), "runs": runs, "summary": summary}
        print(f"\n### {scenario} — {args.reps} reps, medians (min-max)\n")
        print(curve_wide_table(scenario, summary))
        print()
        print(curve_table(scenario, summary), flush=True)
    return report, failures


def write_curves(report: Result, json_path: Path) -> list[Path]:
    """The report as JSON, its tables as markdown beside it, one PNG per curve: the paths written."""
    info = report["machine"]
    write_json(json_path, report)
    written = [json_path]
    lines = [
        f"# bench_groups.py curves — {info.get('broker', '?')}, asyncconsumer at {info.get('code', '?')}",
        "",
        f"{info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}; "
        f"confluent-kafka {info.get('confluent_kafka', '?')} (librdkafka {info.get('librdkafka', '?')}); "
        f"{report['args'].get('reps')} reps.",
    ]
    if report["args"].get("kip848_group_config"):
        lines.append(
            "KIP-848 groups' configs: "
            + ", ".join(f"{k}={v}" for k, v in report["args"]["kip848_group_config"].items())
        )
    for scenario, data in report["scenarios"].items():
        summary = {c: {int(p): e for p, e in pts.items()} for c, pts in data["summary"].items()}
        png = json_path.with_name(json_path.stem + f"-{scenario}.png")
        title = (
            f"{'group size: go → settled' if scenario == 'size' else 'regex subscription: subscribe → records'} "
            f"({info.get('broker', '?')}, {info.get('code', '?')})"
        )
        if report["args"].get("kip848_group_config"):
            title += "\nKIP-848 groups: " + ", ".join(
                f"{k}={v}" for k, v in report["args"]["kip848_group_config"].items()
            )
        plot_curve(scenario, summary, png, title)
        written.append(png)
        lines += [
            "",
            f"## {scenario}",
            "",
            curve_wide_table(scenario, summary),
            "",
            curve_table(scenario, summary),
            "",
            f"![{scenario}]({png.name})",
        ]
    md = json_path.with_suffix(".md")
    md.write_text("\n".join(lines) + "\n")
    written.append(md)
    return written


def parent_main(args: argparse.Namespace) -> int:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings and up only
    requested = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(requested) - set(VARIANTS) - set(CURVE_SCENARIOS))
    if unknown:
        print(f"unknown scenario(s) {unknown}; choose from {', '.join((*VARIANTS, *CURVE_SCENARIOS))}", file=sys.stderr)
        return 2
    scenarios = [s for s in requested if s in VARIANTS]
    curves = [s for s in requested if s in CURVE_SCENARIOS]
    only = [c.strip() for c in args.clients.split(",") if c.strip()] if args.clients else None
    every = {v for names in (*VARIANTS.values(), *CURVE_VARIANTS.values()) for v in names}
    if only is not None and set(only) - every:
        print(f"unknown client(s) {sorted(set(only) - every)}; choose from {', '.join(sorted(every))}", file=sys.stderr)
        return 2
    if only is not None and args.broker != "kafka" and set(only) & KAFKA_ONLY:
        print(
            f"{sorted(set(only) & KAFKA_ONLY)} need --broker kafka (Tansu has no KIP-848 coordinator)", file=sys.stderr
        )
        return 2
    if args.settle_members is None:
        args.settle_members = SETTLE_MEMBERS[args.broker]
    if args.settle_members < 1 or args.settle_members >= PARTITIONS["settle"]:
        print(f"--settle-members must be 1-{PARTITIONS['settle'] - 1}", file=sys.stderr)
        return 2

    started = time.perf_counter()
    broker = start_broker(args.broker)
    bootstrap = broker.bootstrap_servers
    info = machine(("aiokafka", "confluent_kafka"))
    info["code"] = code_version()
    info["broker"] = broker.description
    info["broker_kind"] = broker.kind
    if broker.settings:
        info["broker_settings"] = broker.settings
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(
        f"# broker: {bootstrap} ({info['broker']}); asyncconsumer code at {info['code']}, aiokafka {info['aiokafka']}, "
        f"confluent-kafka {info['confluent_kafka']} (librdkafka {info.get('librdkafka', '?')})"
    )
    print(
        f"# classic: session_timeout_ms={SESSION_TIMEOUT_MS} heartbeat_interval_ms={HEARTBEAT_INTERVAL_MS} "
        f"max_poll_interval_ms={MAX_POLL_INTERVAL_MS}"
    )
    if broker.kind == "kafka":
        print(
            "# broker settings: "
            + " ".join(f"{k}={v}" for k, v in broker.settings.items() if k.startswith("group."))
            + "; consumer protocol (KIP-848): the broker's session and heartbeat timing, max_poll_interval_ms="
            + str(MAX_POLL_INTERVAL_MS)
        )
    report: Result = {"machine": info, "args": vars(args), "scenarios": {}}
    failures: list[str] = []
    try:
        if args.warmup is None:
            args.warmup = WARMUP[broker.kind]
        if args.warmup:
            report["warmup"] = warm_up(broker, args.warmup, args.timeout)
        if curves:
            curve_report, curve_failures = run_curves(curves, broker, args, only, info)
            failures += curve_failures
            path = Path(args.curves_json or default_results_path("groups-curves", info["code"], broker=broker.kind))
            for written in write_curves(curve_report, path):
                print(f"# wrote {written}")
        for scenario in scenarios:
            clients = variants(scenario, broker.kind, only)
            if not clients:
                print(f"\n## {scenario}: no variant to run (--clients)")
                continue
            topic = f"bench-groups-{scenario}-{uuid.uuid4().hex[:8]}"
            broker.create_topic(topic, PARTITIONS[scenario])
            produce(bootstrap, topic, PARTITIONS[scenario], RECORDS[scenario])
            newcomer = f"; {args.settle_members} members, then one more" if scenario == "settle" else ""
            print(
                f"\n## {scenario}: topic {topic}, {PARTITIONS[scenario]} partitions, {RECORDS[scenario]} records"
                + newcomer
            )
            runs: dict[str, list[Result]] = {c: [] for c in clients}
            failed = dict.fromkeys(clients, 0)
            for rep in range(1, args.reps + 1):
                for client in clients:
                    try:
                        result = spawn(scenario, client, bootstrap, topic, args.timeout, args.settle_members)
                        verify(result)
                    except ChildFailed as exc:
                        if not note_failure(f"FAILED [{scenario} rep {rep}] {exc}", failures, args.keep_going):
                            raise
                        failed[client] += 1
                        continue
                    runs[client].append(result)
                    print(_progress(scenario, rep, result), flush=True)
            summary = summarise(scenario, runs, failed)
            report["scenarios"][scenario] = {
                "failed": failed,
                "topic": topic,
                "partitions": PARTITIONS[scenario],
                "records": RECORDS[scenario],
                **({"members_before": args.settle_members} if scenario == "settle" else {}),
                "runs": runs,
                "summary": summary,
            }
            what = "" if scenario == "blocked" else " (ratio to aiokafka)"
            print(f"\n### {scenario} — {args.reps} reps, medians{what}\n")
            print(table(scenario, summary), flush=True)
    except ChildFailed:
        return 1
    finally:
        broker.stop()
        info["code_at_end"] = code_version()
        info["total_s"] = time.perf_counter() - started
        if info["code_at_end"] != info["code"]:
            print(f"\nWARNING: asyncconsumer's code changed during the run ({info['code']} -> {info['code_at_end']})")
        if args.json:
            report["failures"] = failures
            Path(args.json).write_text(json.dumps(report, indent=2))
    print(f"\n# total {info['total_s']:.0f} s")
    return report_failures(failures)


def report_main(path: str) -> int:
    """Prints the tables of a saved ``--json`` file again."""
    saved = json.loads(Path(path).read_text())
    info = saved["machine"]
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(f"# broker: {info.get('broker', '?')}; asyncconsumer code at {info.get('code', '?')}")
    for scenario, data in saved["scenarios"].items():
        if scenario in CURVE_SCENARIOS:
            summary = {
                c: {int(p): e for p, e in pts.items()} for c, pts in summarise_curve(scenario, data["runs"]).items()
            }
            print(f"\n### {scenario}\n")
            print(curve_wide_table(scenario, summary) + "\n\n" + curve_table(scenario, summary))
            continue
        print(f"\n### {scenario} (ratio to aiokafka)\n")
        print(table(scenario, summarise(scenario, data["runs"], data.get("failed"))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--scenarios",
        default=",".join(VARIANTS),
        help=f"comma-separated: {', '.join(VARIANTS)} (the default), and the curves {', '.join(CURVE_SCENARIOS)}",
    )
    parser.add_argument(
        "--size-members",
        type=lambda text: [int(n) for n in text.split(",")],
        default=list(SIZE_MEMBERS),
        help=f"size: the group sizes, comma-separated (default {','.join(map(str, SIZE_MEMBERS))})",
    )
    parser.add_argument(
        "--regex-topics",
        type=lambda text: [int(n) for n in text.split(",")],
        default=list(REGEX_TOPICS),
        help=f"regex: the topic counts, comma-separated (default {','.join(map(str, REGEX_TOPICS))})",
    )
    parser.add_argument(
        "--kip848-group-config",
        type=parse_group_config,
        help="size, regex: group configs set on each KIP-848 group before it forms, e.g. "
        "consumer.heartbeat.interval.ms=500,consumer.assignment.interval.ms=0 (Kafka; default: the broker's)",
    )
    parser.add_argument(
        "--curves-json",
        help="size, regex: write the report here (default results/groups-curves-<commit>[-kafka].json), the tables "
        "(.md) and one PNG per curve beside it",
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--broker",
        choices=BROKERS,
        default="tansu",
        help="tansu (embedded Tansu, the default) or kafka (one-node Apache Kafka from tests/support/kafka_broker.py; "
        "adds the consumer-protocol variants)",
    )
    every = sorted({v for names in (*VARIANTS.values(), *CURVE_VARIANTS.values()) for v in names})
    parser.add_argument(
        "--clients",
        help=f"comma-separated variants to run: {', '.join(every)} (default: every one the broker can run)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        help="unmeasured 'first' runs per group protocol before the scenarios (default 1 with kafka, 0 with tansu)",
    )
    parser.add_argument(
        "--settle-members",
        type=int,
        help="settle: members stable before one more joins (default 4 with tansu, 3 with kafka)",
    )
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds per child run")
    parser.add_argument("--keep-going", action="store_true", help="record a failed run and go on (exit 1 at end)")
    parser.add_argument("--json", help="write every run and the summary here")
    parser.add_argument("--report", metavar="JSON", help="print the tables of a saved --json file and exit")
    parser.add_argument("--child", choices=(*VARIANTS, *CURVE_SCENARIOS), help=argparse.SUPPRESS)
    parser.add_argument("--group", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--partitions", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args)
    if args.report:
        return report_main(args.report)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
