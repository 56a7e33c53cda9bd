"""Soak: a consumer group of member processes kept busy for minutes under random faults, every record accounted for.

    python benchmarks/soak.py                      # 10 minutes, 3 members, 6 partitions, 200 records/s
    python benchmarks/soak.py --minutes 1 --seed 7 --json /tmp/soak.json

A benchmark, not a CI test. One embedded Tansu broker behind the tests' fault proxy
(``tests/support/faultproxy.py``: the broker advertises the proxy's port, so every connection after bootstrap goes
through it). ``--members`` copies of ``tests/support/group_member.py`` (range assignor, commit after every batch or
every ``--commit-interval-ms``, retriable poll errors tolerated) consume one topic as a group, while the parent
produces ``--rate`` records/s with aiokafka (acks=all, each record stamped with its creation time) for
``--minutes``. Every ``--fault-every-s`` on average (uniformly 0.5x to 1.5x), one fault, drawn with ``--seed``:

- ``drop``: close every connection with a Fetch in flight, or every connection (the producer's too), or cut the next
  answer of one group API (Heartbeat, OffsetCommit, JoinGroup or SyncGroup: the broker did the work, the answer is
  not forwarded and the connection is closed; ``answers_cut`` counts the cuts that happened);
- ``delay``: hold every frame 20-200 ms for 2-6 s;
- ``restart``: SIGKILL one member and start a new process in its place at once (a new member id: the group waits out
  the dead member's session, then rebalances).

Then production stops, faults stop, and the members get until ``--drain-s`` to process what is left; they are
stopped with SIGTERM (a clean close). The run checks that every acknowledged record was processed at least once
(exit 1 otherwise, or if a member died on its own) and reports duplicates (processed more than once: redelivery
after a kill), offsets missing from what was processed (a gap below a partition's highest processed offset),
rebalances (distinct generations the members reported), end-to-end latency (record timestamp to the member writing
it down, first processing of each record: p50, p99, max), faults by kind and member errors. Results go to
``benchmarks/results/soak-<commit>.json`` (``--json`` to change). Member output and logs are kept in a temporary
directory (``--keep`` prints where) for a failed run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from aiokafka import AIOKafkaProducer
from benchcommon import code_version, default_results_path, machine, write_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from asyncconsumer.tools.embedded_broker import EmbeddedBroker  # noqa: E402
from tests.support.faultproxy import (  # noqa: E402
    API_FETCH,
    API_HEARTBEAT,
    API_JOIN_GROUP,
    API_OFFSET_COMMIT,
    API_SYNC_GROUP,
    CLOSE,
    FaultProxy,
    FrameAction,
)

MEMBER_SCRIPT = ROOT / "tests" / "support" / "group_member.py"
DROPPABLE = {
    "fetch": API_FETCH,
    "heartbeat": API_HEARTBEAT,
    "offset_commit": API_OFFSET_COMMIT,
    "join_group": API_JOIN_GROUP,
    "sync_group": API_SYNC_GROUP,
}


@dataclass
class Member:
    """One member slot: the process in it now, and every output file a process in it wrote."""

    slot: int
    argv: list[str]
    directory: Path
    tail: list[str] = field(default_factory=list)
    """Arguments after the output file's path (``share_member.py``'s mode)."""
    proc: subprocess.Popen[bytes] | None = None
    outputs: list[Path] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    _log: IO[bytes] | None = None

    def spawn(self) -> None:
        n = len(self.outputs)
        out = self.directory / f"member-{self.slot}-{n}.jsonl"
        log = self.directory / f"member-{self.slot}-{n}.log"
        self.outputs.append(out)
        self.logs.append(log)
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [*self.argv, str(out), *self.tail], stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def respawn_if_crashed(self) -> str | None:
        """A process that exited on its own (not SIGKILLed by a fault) is replaced; returns why it ended, with the
        tail of its log (None when it is running or was killed on purpose)."""
        code = self.exited()
        if code is None or code == -signal.SIGKILL:
            return None
        tail = self.logs[-1].read_text(errors="replace").splitlines()[-15:]
        self.kill()
        self.spawn()
        return f"member {self.slot} exited with {code}: " + "\n".join(tail)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(10)
        if self._log is not None:
            self._log.close()

    def stop(self, timeout_s: float) -> int | None:
        """SIGTERM, then the exit code (SIGKILL and None if it does not exit in time)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        finally:
            if self._log is not None:
                self._log.close()

    def lines(self) -> list[dict[str, Any]]:
        """Every complete line of every process that ran in this slot (a line cut by a SIGKILL is left out)."""
        found: list[dict[str, Any]] = []
        for path in self.outputs:
            if path.exists():
                text = path.read_text(encoding="utf-8")
                found += [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]
        return found


class Producer:
    """Produces ``rate`` records/s round-robin over the partitions; keeps (partition, offset, timestamp_ms) of every
    acknowledged record, and counts sends that failed (their records may or may not be in the log)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.acked: list[tuple[int, int, int]] = []
        self.failed = 0
        self._stopping = False

    async def run(self, duration_s: float) -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            linger_ms=5,
            enable_idempotence=False,
            request_timeout_ms=10_000,
        )
        await producer.start()
        try:
            tick_s = 0.05
            per_tick = max(1, round(self.rate * tick_s))
            started = time.monotonic()
            sent = 0
            pending: set[asyncio.Future[Any]] = set()
            while not self._stopping and time.monotonic() - started < duration_s:
                for _ in range(per_tick):
                    now_ms = int(time.time() * 1000)
                    value = f"soak-{sent}".encode()
                    future = await producer.send(
                        self.topic, value, partition=sent % self.partitions, timestamp_ms=now_ms
                    )
                    future.add_done_callback(self._acked)
                    pending.add(future)
                    future.add_done_callback(pending.discard)
                    sent += 1
                next_tick = started + (sent / per_tick) * tick_s
                await asyncio.sleep(max(0.0, next_tick - time.monotonic()))
            if pending:
                await asyncio.wait(pending, timeout=30)
        finally:
            await producer.stop()

    def _acked(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            self.failed += 1
            return
        meta = future.result()
        self.acked.append((meta.partition, meta.offset, meta.timestamp))

    def stop(self) -> None:
        self._stopping = True


class ArmedCuts:
    """A response mutator: once an API is armed, the next answer to one of its requests is not forwarded and its
    connection is closed (the broker did the work; the member never hears of it). Counts the cuts made."""

    def __init__(self) -> None:
        self.armed: set[int] = set()
        self.fired: Counter[str] = Counter()
        self._names = {key: name for name, key in DROPPABLE.items()}

    def arm(self, api_key: int) -> None:
        self.armed.add(api_key)

    def __call__(self, api_key: int, payload: bytes) -> FrameAction | None:
        if api_key not in self.armed:
            return None
        self.armed.discard(api_key)
        self.fired[self._names[api_key]] += 1
        return CLOSE


class Faults:
    """Injects one random fault at a time through the proxy, or by killing and respawning a member."""

    def __init__(self, proxy: FaultProxy, members: list[Member], rng: random.Random, every_s: float) -> None:
        self.proxy = proxy
        self.members = members
        self.rng = rng
        self.every_s = every_s
        self.injected: Counter[str] = Counter()
        self.timeline: list[tuple[float, str]] = []
        self.cuts = ArmedCuts()
        proxy.set_response_mutator(self.cuts)
        self._stopping = False

    def _note(self, what: str, kind: str) -> None:
        self.injected[kind] += 1
        self.timeline.append((round(time.time(), 3), what))
        print(f"  fault: {what}", flush=True)

    async def run(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.rng.uniform(0.5, 1.5) * self.every_s)
            if self._stopping:
                return
            kind = self.rng.choice(["drop", "drop", "delay", "restart"])
            if kind == "drop":
                api = self.rng.choice([*DROPPABLE, "all"])
                if api == "all":
                    self._note(f"drop all: {self.proxy.drop_connections()} connection(s)", "drop all")
                elif api == "fetch":  # a member nearly always has one waiting at the broker
                    dropped = self.proxy.drop_connections_awaiting(API_FETCH)
                    self._note(f"drop fetch: {dropped} connection(s) with a fetch in flight", "drop fetch")
                else:  # the next answer is cut, whenever it comes (a SyncGroup only in a rebalance)
                    self.cuts.arm(DROPPABLE[api])
                    self._note(f"cut the next {api} answer", f"cut {api}")
            elif kind == "delay":
                ms, seconds = self.rng.randint(20, 200), self.rng.uniform(2, 6)
                self._note(f"delay every frame {ms} ms for {seconds:.1f} s", "delay")
                self.proxy.set_delay_ms(ms)
                try:
                    await asyncio.sleep(seconds)
                finally:
                    self.proxy.set_delay_ms(0)
            else:
                member = self.rng.choice(self.members)
                member.kill()
                member.spawn()
                self._note(f"restart member {member.slot} (SIGKILL, new process)", "restart")

    def stop(self) -> None:
        self._stopping = True


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def analyse(members: list[Member], producer: Producer) -> dict[str, Any]:
    processings: dict[tuple[int, int], list[float]] = defaultdict(list)
    record_ts: dict[tuple[int, int], int] = {}
    generations: set[int] = set()
    errors: Counter[str] = Counter()
    commit_failures = 0
    for member in members:
        for line in member.lines():
            if line["kind"] == "records":
                for p, o, ts in line["records"]:
                    processings[(p, o)].append(line["t"])
                    record_ts[(p, o)] = ts
            elif line["kind"] == "assignment" and line["generation"] >= 0:
                generations.add(line["generation"])
            elif line["kind"] == "error":
                errors[line["error"].split("(", 1)[0]] += 1
            elif line["kind"] == "commit_failed":
                commit_failures += 1
    acked = {(p, o) for p, o, _ in producer.acked}
    missing = sorted(acked - processings.keys())
    gaps: list[tuple[int, int]] = []
    by_partition: dict[int, set[int]] = defaultdict(set)
    for p, o in processings:
        by_partition[p].add(o)
    for p, offsets in sorted(by_partition.items()):
        gaps += [(p, o) for o in range(max(offsets) + 1) if o not in offsets]
    latencies_ms = [min(times) * 1000 - record_ts[key] for key, times in processings.items() if key in acked]
    duplicates = sum(len(times) - 1 for times in processings.values())
    return {
        "produced_acked": len(acked),
        "produce_failures": producer.failed,
        "processed_distinct": len(processings),
        "processings": sum(len(times) for times in processings.values()),
        "unacked_processed": len(processings.keys() - acked),
        "missing": len(missing),
        "missing_sample": missing[:20],
        "offset_gaps": len(gaps),
        "offset_gaps_sample": gaps[:20],
        "duplicates": duplicates,
        "duplicated_records": sum(1 for times in processings.values() if len(times) > 1),
        "generations": sorted(generations),
        "rebalances": max(0, len(generations) - 1),
        "latency_ms": {
            "p50": percentile(latencies_ms, 50),
            "p99": percentile(latencies_ms, 99),
            "max": max(latencies_ms) if latencies_ms else None,
            "mean": statistics.fmean(latencies_ms) if latencies_ms else None,
        },
        "member_errors": dict(errors),
        "commit_failures": commit_failures,
    }


async def soak(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    proxy = FaultProxy("127.0.0.1", 0).start()
    broker: EmbeddedBroker | None = None
    members: list[Member] = []
    crashes: list[str] = []
    try:
        broker = EmbeddedBroker.start(advertised_port=proxy.port)
        proxy.set_target("127.0.0.1", broker.port)
        topic = f"soak-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, args.partitions)
        group_id = f"soak-{uuid.uuid4().hex[:8]}"
        argv = [sys.executable, str(MEMBER_SCRIPT), proxy.address, group_id, topic]
        options = ["--timestamps", "--tolerate-errors", "--session-timeout-ms", str(args.session_timeout_ms)]
        options += ["--commit-interval-ms", str(args.commit_interval_ms)]
        members = [Member(i, [*argv, *options], directory) for i in range(args.members)]
        for member in members:
            member.spawn()
        producer = Producer(proxy.address, topic, args.partitions, args.rate)
        faults = Faults(proxy, members, rng, args.fault_every_s)
        duration_s = args.minutes * 60
        started = time.monotonic()
        print(
            f"soak: {args.members} members, {args.partitions} partitions, {args.rate} records/s for {duration_s:.0f} s"
        )
        producing = asyncio.create_task(producer.run(duration_s))
        faulting = asyncio.create_task(faults.run())

        def watch_members() -> None:
            for member in members:
                if (crash := member.respawn_if_crashed()) is not None:
                    crashes.append(crash)
                    print(f"  {crash.splitlines()[0]}; respawned", flush=True)

        last_report = started
        while not producing.done():
            watch_members()
            if time.monotonic() - last_report >= 15:
                last_report = time.monotonic()
                done = len(
                    {
                        (p, o)
                        for m in members
                        for ln in m.lines()
                        if ln["kind"] == "records"
                        for p, o, _ in ln["records"]
                    }
                )
                print(
                    f"  {time.monotonic() - started:.0f} s: {len(producer.acked)} acked, {done} processed", flush=True
                )
            await asyncio.sleep(0.5)
        await producing
        faults.stop()
        faulting.cancel()
        await asyncio.gather(faulting, return_exceptions=True)
        proxy.set_delay_ms(0)
        acked = {(p, o) for p, o, _ in producer.acked}
        drain_started = time.monotonic()
        while time.monotonic() - drain_started < args.drain_s:
            watch_members()
            seen = {(p, o) for m in members for ln in m.lines() if ln["kind"] == "records" for p, o, _ in ln["records"]}
            if acked <= seen:
                break
            await asyncio.sleep(0.5)
        drain_s = time.monotonic() - drain_started
        exits = {member.slot: member.stop(30) for member in members}
        result = analyse(members, producer)
        result.update(
            {
                "wall_s": round(time.monotonic() - started, 1),
                "drain_s": round(drain_s, 1),
                "faults": dict(faults.injected),
                "answers_cut": dict(faults.cuts.fired),
                "fault_timeline": faults.timeline,
                "member_processes": sum(len(m.outputs) for m in members),
                "member_exit_codes": exits,
                "crashes": crashes,
            }
        )
        return result
    finally:
        for member in members:
            member.kill()
        proxy.stop()
        if broker is not None:
            broker.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to produce under faults (10)")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=int, default=200, help="records produced per second (200)")
    parser.add_argument("--fault-every-s", type=float, default=10.0, help="mean seconds between faults (10)")
    parser.add_argument("--session-timeout-ms", type=int, default=6_000)
    parser.add_argument("--commit-interval-ms", type=int, default=0, help="0: members commit every batch")
    parser.add_argument("--drain-s", type=float, default=120.0, help="how long the members get to catch up (120)")
    parser.add_argument("--seed", type=int, default=None, help="the faults' random seed (default: random)")
    parser.add_argument("--json", type=Path, default=None, help="results file (benchmarks/results/soak-<commit>.json)")
    parser.add_argument("--keep", action="store_true", help="keep the members' output and logs, and say where")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.randrange(2**32)
    code = code_version()
    directory = Path(tempfile.mkdtemp(prefix="soak-"))
    try:
        result = asyncio.run(soak(args, directory))
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    ok = result["missing"] == 0 and not result["crashes"]
    report = {
        "ok": ok,
        "code": code,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": machine(),
        **result,
    }
    path = args.json or default_results_path("soak", code)
    write_json(path, report, end="\n")
    latency = result["latency_ms"]
    verdict = "OK" if ok else "FAILED"
    print(
        f"\n{verdict}: {result['produced_acked']} records acknowledged, {result['missing']} never processed, "
        f"{result['offset_gaps']} offset gaps; {result['duplicates']} duplicate processings "
        f"({result['duplicated_records']} records); {result['rebalances']} rebalances"
    )
    if latency["p99"] is not None:
        print(f"latency p50 {latency['p50']:.0f} ms, p99 {latency['p99']:.0f} ms, max {latency['max']:.0f} ms")
    print(f"faults {result['faults']}; answers cut {result['answers_cut']}")
    print(f"member errors {result['member_errors']}; {len(result['crashes'])} crashes")
    if args.keep:
        print(f"member output and logs in {directory}")
    print(f"results: {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
