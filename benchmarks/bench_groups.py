"""Consumer-group timings of asyncconsumer against aiokafka, every run in its own process.

    python benchmarks/bench_groups.py                               # every scenario, 3 interleaved reps
    python benchmarks/bench_groups.py --scenarios settle --reps 5 --json out.json

Scenarios (one embedded Tansu broker, the same group settings for every client, see ``group_settings``):

- ``first``: one member subscribes to a pre-filled topic in a fresh group; time from ``subscribe`` to the
  first record.
- ``settle``: four members of one client (one process, one loop, each polled continuously) are stable on a
  16-partition topic; a fifth subscribes; time until all five hold non-empty, disjoint assignments that cover
  every partition, under one generation. asyncconsumer runs it with "range" and with "cooperative-sticky".
- ``blocked``: a member consumes, then the process's event loop is blocked by a busy loop for twice the
  session timeout; afterwards it is polled again and we report whether it kept its membership (same
  generation, same assignment, no rebalance callback). Measured twice per run: the member alone in its group,
  then with a second member of the same client (on its own thread and event loop) that keeps heartbeating.

The parent creates and fills the topics once, then runs every variant in a fresh subprocess per repetition,
interleaved (rep 1: a, b...; rep 2: a, b...), with a fresh group id each time. Each child prints one JSON
line; a child that does not reach its end state within its deadline fails, and so does the whole run
(exit 1; ``--keep-going`` records the failure and goes on). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener as AioListener
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from benchcommon import RESULT_MARKER, ChildFailed, child_argv, code_version, machine, report_failures, spawn_child

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
    "first": ("asyncconsumer", "aiokafka"),
    "settle": ("asyncconsumer", "asyncconsumer-coop", "aiokafka"),
    "blocked": ("asyncconsumer", "aiokafka"),
}
BASELINE = "aiokafka"  # ratios are variant / aiokafka


def group_settings() -> dict[str, Any]:
    """What both clients get (aiokafka's ``rebalance_timeout_ms`` is set to what asyncconsumer sends, like Java:
    the max poll interval; aiokafka would otherwise send the session timeout)."""
    return {
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        "max_poll_interval_ms": MAX_POLL_INTERVAL_MS,
    }


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
    async def poll(self) -> int: ...
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
    def __init__(self, bootstrap: str, group_id: str, strategy: str) -> None:
        self.events: list[Event] = []
        self._consumer = AsyncConsumer(
            bootstrap, group_id=group_id, partition_assignment_strategy=(strategy,), **group_settings()
        )

    async def start(self) -> None:
        await self._consumer.start()

    async def subscribe(self, topic: str) -> None:
        await self._consumer.subscribe([topic], listener=_AcListener(self.events))

    async def poll(self) -> int:
        return (await self._consumer.poll(timeout_ms=POLL_TIMEOUT_MS)).count()

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

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

    async def poll(self) -> int:
        batch = await self._consumer.getmany(timeout_ms=POLL_TIMEOUT_MS)
        return sum(len(records) for records in batch.values())

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def generation(self) -> int:
        coordinator = self._consumer._coordinator  # no public accessor; -1 outside a generation
        return -1 if coordinator is None else int(coordinator.generation)

    async def close(self) -> None:
        await self._consumer.stop()


def make_member(client: str, bootstrap: str, group_id: str) -> Member:
    if client == "asyncconsumer":
        return AcMember(bootstrap, group_id, "range")
    if client == "asyncconsumer-coop":
        return AcMember(bootstrap, group_id, "cooperative-sticky")
    if client == "aiokafka":
        return AioMember(bootstrap, group_id)
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


# --- settle: a fifth member joins four stable ones ----------------------------------------------------------


async def child_settle(client: str, bootstrap: str, topic: str, partitions: int) -> Result:
    group_id = new_group_id()
    members = [make_member(client, bootstrap, group_id) for _ in range(5)]
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
        t_four = time.perf_counter()
        for i in range(4):
            await members[i].subscribe(topic)
            tasks.append(asyncio.create_task(keep_polling(i)))
        four_s = await until_settled(4, t_four, "four members")
        await asyncio.sleep(STABLE_FOR_S)  # the four stay settled: no rebalance was still on its way
        if not settled(snapshots[:4], partitions):
            raise ScenarioTimeout(f"four members settled, then moved again: {describe(snapshots[:4])}")
        generation_before = snapshots[0].generation
        events_before = [len(m.events) for m in members]
        t0 = time.perf_counter()
        await members[4].subscribe(topic)
        tasks.append(asyncio.create_task(keep_polling(4)))
        settle_s = await until_settled(5, t0, "fifth member")
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
        "four_settle_s": four_s,
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
    runners: dict[str, Callable[[], Result]] = {
        "first": lambda: asyncio.run(child_first(client, args.bootstrap, args.topic)),
        "settle": lambda: asyncio.run(child_settle(client, args.bootstrap, args.topic, args.partitions)),
        "blocked": lambda: asyncio.run(child_blocked(client, args.bootstrap, args.topic, args.partitions, args.expect)),
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


def spawn(scenario: str, client: str, bootstrap: str, topic: str, timeout_s: float) -> Result:
    argv = child_argv(
        __file__,
        child=scenario,
        client=client,
        bootstrap=bootstrap,
        topic=topic,
        partitions=PARTITIONS[scenario],
        expect=RECORDS[scenario],
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
        if len(result["assignments"]) != 5 or not all(result["assignments"]):
            problems.append(f"not five non-empty assignments: {result['assignments']}")
        if sorted(owned) != list(range(PARTITIONS["settle"])):
            problems.append(f"assignments do not cover every partition exactly once: {result['assignments']}")
    if scenario == "first" and result["partitions"] != list(range(PARTITIONS["first"])):
        problems.append(f"the lone member owns {result['partitions']}")
    if problems:
        raise ChildFailed(f"{scenario}/{client}: " + "; ".join(problems))


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


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
        metrics = ("first_record_s", "assigned_s", "start_s") if scenario == "first" else ("settle_s", "four_settle_s")
        for client, results in runs.items():
            summary[client] = {
                "reps": len(results),
                "failed": failed.get(client, 0),
                "median": {m: _median([r[m] for r in results]) for m in metrics},
                "min": {m: min((r[m] for r in results), default=None) for m in metrics},
                "max": {m: max((r[m] for r in results), default=None) for m in metrics},
            }
            if scenario == "settle":
                summary[client]["rebalances"] = [r["rebalances"] for r in results]
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
                    "settled_again_s": _median([r["settled_again_s"] for r in phase_runs]),
                    "witness_rebalanced": sum(1 for r in phase_runs if r.get("witness_rebalanced")),
                }
    return summary


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
        lines = [
            "| client | strategy | 5th subscribe → settled s | min-max s | generations per join | 4 members settle s "
            "| reps |",
            "|---|---|---:|---:|---|---:|---:|",
        ]
        for client, e in summary.items():
            med = e["median"]
            strategy = "cooperative-sticky" if client.endswith("-coop") else "range"
            lines.append(
                f"| {client} | {strategy} | {med['settle_s']:.2f}{_ratio(med['settle_s'], base.get('settle_s'))} "
                f"| {e['min']['settle_s']:.2f}-{e['max']['settle_s']:.2f} "
                f"| {', '.join(str(n) for n in e['rebalances'])} | {med['four_settle_s']:.2f} | {_reps(e)} |"
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
            f"{result['generation_before']}→{result['generation_after']} (4 members: {result['four_settle_s']:.2f} s)"
        )
    parts = []
    for phase in ("alone", "with_witness"):
        r = result[phase]
        parts.append(
            f"{phase}: {'kept' if r['kept'] else 'LOST'} gen {'→'.join(map(str, r['generations_seen']))}"
            f" settled again {r['settled_again_s']:.2f} s"
        )
    return f"  rep {rep} {client:<19} " + "; ".join(parts)


def parent_main(args: argparse.Namespace) -> int:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings and up only
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(scenarios) - set(VARIANTS))
    if unknown:
        print(f"unknown scenario(s) {unknown}; choose from {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    from asyncconsumer.tools.embedded_broker import EmbeddedBroker

    started = time.perf_counter()
    broker = EmbeddedBroker.start()
    bootstrap = broker.bootstrap_servers
    info = machine()
    info["code"] = code_version()
    version = subprocess.run([broker.binary, "--version"], capture_output=True, text=True, check=False)
    info["broker"] = version.stdout.strip() or "tansu (version unknown)"
    print(f"# machine: {info['cpus']} CPUs ({info['cpu_model']}), Python {info['python']}, {info['platform']}")
    print(
        f"# broker: {bootstrap} ({info['broker']}); asyncconsumer code at {info['code']}, aiokafka {info['aiokafka']}"
    )
    print(
        f"# session_timeout_ms={SESSION_TIMEOUT_MS} heartbeat_interval_ms={HEARTBEAT_INTERVAL_MS} "
        f"max_poll_interval_ms={MAX_POLL_INTERVAL_MS}"
    )
    report: Result = {"machine": info, "args": vars(args), "scenarios": {}}
    failures: list[str] = []
    try:
        for scenario in scenarios:
            topic = f"bench-groups-{scenario}-{uuid.uuid4().hex[:8]}"
            broker.create_topic(topic, PARTITIONS[scenario])
            produce(bootstrap, topic, PARTITIONS[scenario], RECORDS[scenario])
            print(f"\n## {scenario}: topic {topic}, {PARTITIONS[scenario]} partitions, {RECORDS[scenario]} records")
            runs: dict[str, list[Result]] = {c: [] for c in VARIANTS[scenario]}
            failed = dict.fromkeys(VARIANTS[scenario], 0)
            for rep in range(1, args.reps + 1):
                for client in VARIANTS[scenario]:
                    try:
                        result = spawn(scenario, client, bootstrap, topic, args.timeout)
                        verify(result)
                    except ChildFailed as exc:
                        message = f"FAILED [{scenario} rep {rep}] {exc}"
                        print(message, file=sys.stderr, flush=True)
                        if not args.keep_going:
                            raise
                        failures.append(message)
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
    for scenario, data in saved["scenarios"].items():
        print(f"\n### {scenario} (ratio to aiokafka)\n")
        print(table(scenario, summarise(scenario, data["runs"], data.get("failed"))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default=",".join(VARIANTS), help=f"comma-separated: {', '.join(VARIANTS)}")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT_S, help="seconds per child run")
    parser.add_argument("--keep-going", action="store_true", help="record a failed run and go on (exit 1 at end)")
    parser.add_argument("--json", help="write every run and the summary here")
    parser.add_argument("--report", metavar="JSON", help="print the tables of a saved --json file and exit")
    parser.add_argument("--child", choices=tuple(VARIANTS), help=argparse.SUPPRESS)
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
