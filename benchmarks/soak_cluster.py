"""Soak on a 3-node Apache Kafka cluster, as operations see it: a classic group, a KIP-848 group and a share group
read one topic for minutes while brokers crash, shut down, move and lose their connections; every record accounted.

    python benchmarks/soak_cluster.py                          # 30 minutes, a fault every ~20 s
    python benchmarks/soak_cluster.py --minutes 2 --seed 7 --json /tmp/soak-cluster.json

A benchmark, not a CI test (Java 17 and Kafka's jars, as the tests fetch them). Three KRaft nodes, each broker and
controller, each behind a front (``tests/support/faultproxy.py``: the node advertises its front's port, so every
client connection after bootstrap goes through it). The members bootstrap through three more proxies, one per node,
so that the cluster can move behind its bootstrap list. The parent produces ``--rate`` records/s with aiokafka
(acks=all, each record stamped with its creation time) on the nodes' internal listener, which no fault touches.
Three groups read the topic, each with ``--members`` processes: ``group_member.py`` under the classic protocol and
under KIP-848 (commit after every batch), ``share_member.py`` in its soak mode (implicit acknowledgement).

Every ``--fault-every-s`` on average (0.5x to 1.5x), one fault, drawn with ``--seed``:

- ``broker kill``: SIGKILL one node, start it again (same ports, same data) once the others have fenced it;
- ``controlled shutdown``: SIGTERM one node (its leaderships move first), start it again;
- ``leader election``: a preferred-leader election over the topic's partitions (leadership moves back);
- ``member restart``: SIGKILL one member of one group and start a new process in its place;
- ``cut all``: close every client connection at every front and bootstrap proxy;
- ``rebootstrap``: the whole cluster crashes (SIGKILL all three) and comes back behind new fronts on new ports:
  every broker the members knew is gone, and only their bootstrap list leads to the cluster (KIP-899).

``--faults`` draws from some kinds only. Then production and faults stop, the members get ``--drain-s`` to catch up,
and are stopped with SIGTERM. Per group the report gives records acknowledged, never processed (must be 0: exit 1
otherwise, or when a member died on its own), duplicate processings (redelivery: at-least-once allows them after a
kill, a fence or a lost lock), distinct generations or member epochs seen, and the end-to-end latency of first
processing (p50, p99, max); and any line where a broker's group coordinator failed to load its state (its groups
get NOT_COORDINATOR until it does, whatever a client does). Results go to
``benchmarks/results/soak-cluster-<commit>.json`` (``--json`` to change).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from benchcommon import code_version, default_results_path, machine, write_json
from soak import Member, Producer, analyse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.faultproxy import FaultProxy  # noqa: E402
from tests.support.kafka_broker import HOST, KafkaCluster  # noqa: E402

GROUP_MEMBER = ROOT / "tests" / "support" / "group_member.py"
SHARE_MEMBER = ROOT / "tests" / "support" / "share_member.py"
GROUPS = ("classic", "consumer", "share")
FAULTS = {  # kind: weight (a whole-cluster move takes a minute on two cores: rarer than the rest)
    "broker kill": 3,
    "controlled shutdown": 3,
    "leader election": 3,
    "member restart": 3,
    "cut all": 3,
    "rebootstrap": 1,
}
CLUSTER_SETTINGS = {
    "broker.session.timeout.ms": "3000",  # a killed broker is fenced (its leaderships move) after 3 s, not 9
    "broker.heartbeat.interval.ms": "500",
    "auto.leader.rebalance.enable": "false",  # leadership moves back only by the election fault
    "min.insync.replicas": "2",
}


class Cluster:
    """Three Kafka nodes, each behind a front, and a bootstrap proxy per node; can move every front at once."""

    def __init__(self) -> None:
        self.fronts = [FaultProxy(HOST, 0).start() for _ in range(3)]
        self.bootstraps = [FaultProxy(HOST, 0).start() for _ in range(3)]
        self.kafka: KafkaCluster | None = None

    def start(self) -> None:
        self.kafka = KafkaCluster.start(3, advertised_ports=[f.port for f in self.fronts], settings=CLUSTER_SETTINGS)
        for proxies in (self.fronts, self.bootstraps):
            for node, proxy in zip(self.kafka.nodes, proxies, strict=True):
                proxy.set_target(HOST, node.port)

    @property
    def bootstrap(self) -> str:
        return ",".join(p.address for p in self.bootstraps)

    @property
    def internal(self) -> str:
        assert self.kafka is not None
        return ",".join(f"{HOST}:{n.internal_port}" for n in self.kafka.nodes)

    def cut_all(self) -> int:
        return sum(p.drop_connections() for p in (*self.fronts, *self.bootstraps))

    def move(self) -> None:
        """Every node crashes and comes back advertising a new front; the old fronts are gone for good."""
        assert self.kafka is not None
        moved = [FaultProxy(HOST, 0).start() for _ in self.kafka.nodes]
        for node in self.kafka.nodes:
            self.kafka.kill(node.node_id)
        for node, front in zip(self.kafka.nodes, moved, strict=True):
            front.set_target(HOST, node.port)
            self.kafka.readvertise(node.node_id, front.port)
        for old in self.fronts:
            old.stop()
        self.fronts = moved
        self.kafka.restart_nodes([n.node_id for n in self.kafka.nodes], startup_timeout_s=180)

    def coordinator_failures(self) -> list[str]:
        """The nodes' log lines where a coordinator could not load its state: its groups get NOT_COORDINATOR until
        it does, whatever the clients do (read before ``stop``, which removes the logs)."""
        if self.kafka is None:
            return []
        return [
            f"node {node.node_id}: {line.strip()[:400]}"
            for node in self.kafka.nodes
            if node.log_path.exists()
            for line in node.log_path.read_text(errors="replace").splitlines()
            if "Failed to load metadata from" in line
        ]

    def stop(self) -> None:
        if self.kafka is not None:
            self.kafka.stop()
        for proxy in (*self.fronts, *self.bootstraps):
            proxy.stop()


class Faults:
    """One fault at a time; broker faults run in a worker thread (a restart waits for the node to rejoin)."""

    def __init__(
        self, cluster: Cluster, groups: dict[str, list[Member]], topic: str, partitions: int, rng: random.Random
    ) -> None:
        self.cluster = cluster
        self.groups = groups
        self.topic = topic
        self.partitions = partitions
        self.rng = rng
        self.injected: Counter[str] = Counter()
        self.timeline: list[tuple[float, str, float]] = []
        self.failures: list[str] = []
        self._stopping = False

    async def run(self, every_s: float, kinds: list[str]) -> None:
        weights = [FAULTS[kind] for kind in kinds]
        while not self._stopping:
            await asyncio.sleep(self.rng.uniform(0.5, 1.5) * every_s)
            if self._stopping:
                return
            kind = self.rng.choices(kinds, weights)[0]
            started = time.monotonic()
            try:
                what = await self._inject(kind)
            except Exception as exc:  # a fault that could not be made is reported, and the soak goes on
                self.failures.append(f"{kind}: {exc!r}")
                what = f"{kind} FAILED: {exc!r}"
            took = time.monotonic() - started
            self.injected[kind] += 1
            self.timeline.append((round(time.time(), 3), what, round(took, 1)))
            print(f"  fault: {what} ({took:.1f} s)", flush=True)

    async def _inject(self, kind: str) -> str:
        kafka = self.cluster.kafka
        assert kafka is not None
        node = self.rng.choice(kafka.nodes).node_id
        if kind == "broker kill":
            kafka.kill(node)
            await asyncio.sleep(4)  # past broker.session.timeout.ms: the node is fenced and its leaderships move
            await asyncio.to_thread(kafka.restart, node)
            return f"broker kill: node {node} SIGKILLed and restarted"
        if kind == "controlled shutdown":
            await asyncio.to_thread(kafka.shut_down, node)
            await asyncio.to_thread(kafka.restart, node)
            return f"controlled shutdown: node {node} stopped and restarted"
        if kind == "leader election":
            partitions = [(self.topic, p) for p in range(self.partitions)]
            await asyncio.to_thread(kafka.elect_leaders, partitions)
            return "leader election: preferred leaders for the topic's partitions"
        if kind == "member restart":
            group = self.rng.choice(list(self.groups))
            member = self.rng.choice(self.groups[group])
            member.kill()
            member.spawn()
            return f"member restart: {group} member {member.slot} SIGKILLed, a new process in its place"
        if kind == "cut all":
            return f"cut all: {self.cluster.cut_all()} connection(s) closed"
        await asyncio.to_thread(self.cluster.move)
        return "rebootstrap: all three nodes crashed and came back behind new fronts"

    def stop(self) -> None:
        self._stopping = True


def member_slots(group: str, members: int, bootstrap: str, group_id: str, topic: str, directory: Path) -> list[Member]:
    folder = directory / group
    folder.mkdir()
    if group == "share":
        argv = [sys.executable, str(SHARE_MEMBER), bootstrap, group_id, topic]
        return [Member(i, argv, folder, tail=["soak"]) for i in range(members)]
    argv = [sys.executable, str(GROUP_MEMBER), bootstrap, group_id, topic, "--timestamps", "--tolerate-errors"]
    argv += ["--group-protocol", group]
    return [Member(i, argv, folder) for i in range(members)]


def processed(members: list[Member]) -> set[tuple[int, int]]:
    return {(p, o) for m in members for line in m.lines() if line["kind"] == "records" for p, o, _ in line["records"]}


async def soak(args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    cluster = Cluster()
    groups: dict[str, list[Member]] = {}
    crashes: dict[str, list[str]] = {group: [] for group in args.groups}
    try:
        await asyncio.to_thread(cluster.start)
        assert cluster.kafka is not None
        topic = f"soak-{uuid.uuid4().hex[:8]}"
        await asyncio.to_thread(cluster.kafka.create_topic, topic, args.partitions)
        for group in args.groups:
            group_id = f"soak-{group}-{uuid.uuid4().hex[:8]}"
            if group == "share":
                cluster.kafka.set_group_config(group_id, {"share.auto.offset.reset": "earliest"})
            groups[group] = member_slots(group, args.members, cluster.bootstrap, group_id, topic, directory)
            for member in groups[group]:
                member.spawn()
        producer = Producer(cluster.internal, topic, args.partitions, args.rate)
        faults = Faults(cluster, groups, topic, args.partitions, rng)
        duration_s = args.minutes * 60
        started = time.monotonic()
        print(
            f"soak on 3 Kafka nodes: groups {', '.join(args.groups)} x {args.members} members, "
            f"{args.partitions} partitions, {args.rate} records/s for {duration_s:.0f} s",
            flush=True,
        )
        producing = asyncio.create_task(producer.run(duration_s))
        faulting = asyncio.create_task(faults.run(args.fault_every_s, args.faults))

        def watch_members() -> None:
            for group, members in groups.items():
                for member in members:
                    if (crash := member.respawn_if_crashed()) is not None:
                        crashes[group].append(crash)
                        print(f"  {group} {crash.splitlines()[0]}; respawned", flush=True)

        last_report = started
        while not producing.done():
            watch_members()
            if time.monotonic() - last_report >= 30:
                last_report = time.monotonic()
                done = ", ".join(f"{group} {len(processed(members))}" for group, members in groups.items())
                elapsed = time.monotonic() - started
                print(f"  {elapsed:.0f} s: {len(producer.acked)} acked; processed {done}", flush=True)
            await asyncio.sleep(0.5)
        await producing
        faults.stop()
        await faulting  # a fault under way (a restart) finishes: the drain starts on a whole cluster
        acked = {(p, o) for p, o, _ in producer.acked}
        drain_started = time.monotonic()
        while time.monotonic() - drain_started < args.drain_s:
            watch_members()
            if all(acked <= processed(members) for members in groups.values()):
                break
            await asyncio.sleep(0.5)
        drain_s = time.monotonic() - drain_started
        results: dict[str, Any] = {}
        for group, members in groups.items():
            exits = {member.slot: member.stop(30) for member in members}
            result = analyse(members, producer)
            if group == "share":  # no offsets to commit: a gap below the highest offset processed is no skip
                result.pop("offset_gaps")
                result.pop("offset_gaps_sample")
            result.update(
                {
                    "member_processes": sum(len(m.outputs) for m in members),
                    "member_exit_codes": exits,
                    "crashes": crashes[group],
                }
            )
            results[group] = result
        return {
            "coordinator_failures": cluster.coordinator_failures(),
            "wall_s": round(time.monotonic() - started, 1),
            "drain_s": round(drain_s, 1),
            "produced_acked": len(acked),
            "produce_failures": producer.failed,
            "faults": dict(faults.injected),
            "fault_failures": faults.failures,
            "fault_timeline": faults.timeline,
            "groups": results,
        }
    finally:
        for members in groups.values():
            for member in members:
                member.kill()
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to produce under faults (30)")
    parser.add_argument("--groups", default=",".join(GROUPS), help="of classic, consumer, share (all three)")
    parser.add_argument("--members", type=int, default=2, help="member processes per group (2)")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=int, default=100, help="records produced per second (100)")
    parser.add_argument("--fault-every-s", type=float, default=20.0, help="mean seconds between faults (20)")
    parser.add_argument("--drain-s", type=float, default=180.0, help="how long the members get to catch up (180)")
    parser.add_argument("--seed", type=int, default=None, help="the faults' random seed (default: random)")
    parser.add_argument("--faults", default=",".join(FAULTS), help="the kinds to draw from (all)")
    parser.add_argument("--json", type=Path, default=None, help="results file (results/soak-cluster-<commit>.json)")
    parser.add_argument("--keep", action="store_true", help="keep the members' output and logs, and say where")
    args = parser.parse_args(argv)
    args.groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    unknown = sorted(set(args.groups) - set(GROUPS))
    if unknown:
        parser.error(f"--groups: unknown {', '.join(unknown)} (of {', '.join(GROUPS)})")
    args.faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = sorted(set(args.faults) - set(FAULTS))
    if unknown:
        parser.error(f"--faults: unknown {', '.join(unknown)} (of {', '.join(FAULTS)})")
    if args.seed is None:
        args.seed = random.randrange(2**32)
    code = code_version()
    directory = Path(tempfile.mkdtemp(prefix="soak-cluster-"))
    try:
        result = asyncio.run(soak(args, directory))
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    ok = all(g["missing"] == 0 and not g["crashes"] for g in result["groups"].values())
    report = {
        "ok": ok,
        "code": code,
        "broker": "Apache Kafka, 3 KRaft nodes",
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": machine(),
        **result,
    }
    path = args.json or default_results_path("soak-cluster", code)
    write_json(path, report, end="\n")
    print(f"\n{'OK' if ok else 'FAILED'}: {result['produced_acked']} records acknowledged")
    print(f"faults {result['faults']}; {len(result['fault_failures'])} could not be made")
    if result["coordinator_failures"]:
        print(f"the brokers' coordinators failed to load {len(result['coordinator_failures'])} time(s), first:")
        print(f"  {result['coordinator_failures'][0]}")
    for group, g in result["groups"].items():
        latency = g["latency_ms"]
        timing = (
            f"latency p50 {latency['p50']:.0f} ms, p99 {latency['p99']:.0f} ms, max {latency['max']:.0f} ms"
            if latency["p99"] is not None
            else "no latency"
        )
        print(
            f"{group}: {g['missing']} never processed, {g['duplicates']} duplicate processings "
            f"({g['duplicated_records']} records), {len(g['generations'])} generations/epochs, "
            f"{g['member_processes']} member processes, {len(g['crashes'])} crashes; {timing}; "
            f"errors {g['member_errors']}"
        )
    if args.keep:
        print(f"member output and logs in {directory}")
    print(f"results: {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
