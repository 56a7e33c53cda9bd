"""Network faults between the consumers and one broker of a 3-node Apache Kafka cluster, through Toxiproxy (issue 50).

Every broker has a Toxiproxy proxy in front of its client listener (``toxi_cluster``); the producer and the checks go
past them. A topic of six partitions (two led by each node) is produced to continuously while consumers read it and
faults are applied to a chosen target's proxy and healed, one after another:

* on a partition's leader (``test_faults_on_a_leader``): latency with jitter (on every broker), bandwidth, slicer,
  limit_data cutting responses and requests mid-frame, reset_peer, black holes shorter and longer than
  ``request_timeout_ms``, requests dropped while responses would flow, and the broker refused; read by a consumer
  assigned every partition and by a classic and a KIP-848 group of two members each, whose coordinator is another
  broker;
* on the groups' coordinator (``test_faults_on_the_group_coordinator``): latency, reset_peer, limit_data, black holes
  shorter and longer than the session, refused, requests dropped; read by both groups and by ``process()``.

What must hold, each kept as a finding so one broken property does not hide another: nothing the producer
acknowledged is lost and order holds per partition; a record comes twice only if no commit reported successful
covered it; every commit reported successful is in ``__consumer_offsets``; partitions whose leaders answer keep
coming while one leader does not; a black hole shorter than the session costs no rebalance, a longer one expels the
members and they are back within ``REJOIN_S``; a black-holed request times out, and ``metrics().unreachable_nodes``
names the broker while it lasts and forgets it after; a frame cut short never reaches a decoder (nothing undecodable
is logged or raised, every record read is one that was produced). ``-s`` shows the timelines and the stalls.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any, Protocol, cast

import pytest

from asyncconsumer import AsyncConsumer, AsyncShareConsumer, KafkaError, TopicPartition
from asyncconsumer.managers import share_membership as share_membership_module
from asyncconsumer.network import connection as connection_module
from asyncconsumer.network import delegate as delegate_module
from tests.conftest import unique_topic_name
from tests.support.cluster_load import (
    AckedProducer,
    AsyncReader,
    GroupMember,
    Reader,
    Seen,
    check_acknowledged,
    check_exactly_once,
    create_placed_topic,
    value_of,
)
from tests.support.logs import captured_events
from tests.support.network_faults import (
    CLASSIC_SETTINGS,
    CONSUMER_SETTINGS,
    PARTITIONS,
    PLACEMENT,
    RATE,
    RECOVER_S,
    REQUEST_TIMEOUT_MS,
    SESSION_TIMEOUT_MS,
    Fault,
    Findings,
    Leg,
    ProcessReader,
    Timeline,
    Toxin,
    both,
    check_commits_landed,
    check_fenced_stops,
    check_never_back,
    check_no_success_while_expelled,
    check_order,
    check_redelivery_covered,
    fault_on,
    group_led_by,
    group_member,
    in_thread,
    landed_commits,
    lasting,
    led_by,
    not_led_by,
    releases,
    report,
    stall_after,
    unreachable_node,
    wait_progress,
)
from tests.support.produce import Record, produce
from tests.support.toxi_cluster import ProxiedCluster
from tests.support.toxiproxy import ToxiproxyServer
from tests.support.waiting import wait_for_async

# Every test takes the session's Spark fixture, though one uses it: pytest runs the tests of a session fixture's
# parameter together, and would pull the Spark test out of this module, and the module's cluster would start twice.
pytestmark = [pytest.mark.anyio, pytest.mark.cluster, pytest.mark.usefixtures("spark")]

OTHERS_S = 10.0
"""A fault lasts at least its scheduled time and, where the other leaders' partitions must keep coming, until they did
or this passed: they read in well under a second here; the bound is what a loaded 2-core CI also meets."""
DETECT_S = REQUEST_TIMEOUT_MS / 1000 + 4.0
"""A black-holed request times out after ``request_timeout_ms`` (a fetch after that plus its 500 ms wait): its broker
is named unreachable by then, with this much slack for a loaded machine."""
REJOIN_S = 20.0
"""A member expelled by a black hole longer than its session is back in its group (an assignment again) within this
of the heal: the attempt under way times out (3 s), the coordinator is found and the group rebalances (a few s)."""
STABLE_S = 60.0


@pytest.fixture
def cluster(toxi_cluster: ProxiedCluster) -> Iterator[ProxiedCluster]:
    """The module's cluster, healed before and after each test."""
    toxi_cluster.heal()
    yield toxi_cluster
    toxi_cluster.heal()


# --- Toxiproxy itself ----------------------------------------------------------------------------------------------
class Echo:
    """A TCP server that sends back what it receives, one thread per connection."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    @staticmethod
    def _serve(sock: socket.socket) -> None:
        with sock:
            while data := sock.recv(65536):
                sock.sendall(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.server.close()


def round_trip(port: int, timeout: float = 5.0) -> float:
    """Seconds for 5 bytes to go through the proxy to the echo server and back."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        began = time.monotonic()
        sock.sendall(b"hello")
        got = b""
        while len(got) < 5:
            chunk = sock.recv(5 - len(got))
            if not chunk:
                raise ConnectionError("closed")
            got += chunk
        assert got == b"hello"
        return time.monotonic() - began


def round_trip_on(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = sock.recv(len(data) - len(got))
        if not chunk:
            raise ConnectionError("closed")
        got += chunk
    return got


def test_toxiproxy_adds_latency_black_holes_refuses_and_resets_as_the_suite_needs(toxi_cluster: ProxiedCluster) -> None:
    """The API the suite drives does what it says, on a plain echo server (Toxiproxy's own server, not a model)."""
    server: ToxiproxyServer = toxi_cluster.toxiproxy
    echo = Echo()
    proxy = server.create_proxy(unique_topic_name("echo"), listen=("127.0.0.1", 0), upstream=("127.0.0.1", echo.port))
    proxy = server.client.proxy(proxy.name)
    try:
        assert round_trip(proxy.listen[1]) < 0.5
        with proxy.toxic("latency", stream="downstream", latency=400, jitter=0):
            assert round_trip(proxy.listen[1]) >= 0.38
        assert proxy.toxics() == []
        with proxy.toxic("timeout", stream="upstream", timeout=0), pytest.raises(TimeoutError):
            round_trip(proxy.listen[1], timeout=1.0)  # a black hole: connected, never answered
        # healed silently: the same connection carries data again; what the black hole took stays lost
        with socket.create_connection(("127.0.0.1", proxy.listen[1]), timeout=5) as sock:
            assert round_trip_on(sock, b"first") == b"first"
            hole = proxy.add_toxic("timeout", stream="upstream", timeout=0)
            sock.sendall(b"lost!")
            sock.settimeout(0.5)
            with pytest.raises(TimeoutError):
                sock.recv(5)
            proxy.update_toxic(hole.name, toxicity=0.0)
            sock.settimeout(5)
            assert round_trip_on(sock, b"again") == b"again"
            proxy.remove_toxic(hole.name)
        proxy.disable()
        with pytest.raises(ConnectionRefusedError):
            round_trip(proxy.listen[1])
        proxy.add_toxic("bandwidth", stream="downstream", rate=1)
        server.reset()  # enabled again, the toxic gone
        assert proxy.enabled() and proxy.toxics() == []
        assert round_trip(proxy.listen[1]) < 0.5
    finally:
        server.client.call("DELETE", proxy.path)
        echo.close()


class Running(Protocol):
    """A consumer under test that a run stops at its end (or abandons, when the test failed)."""

    name: str
    seen: list[Seen]
    consumer: Any

    async def stop(self) -> None: ...

    async def abandon(self) -> None: ...


# --- the runs ------------------------------------------------------------------------------------------------------
class Run:
    """One test's cluster, topic, producer, legs, timeline and findings, and the fault steps they go through."""

    def __init__(self, cluster: ProxiedCluster, topic: str, producer: AckedProducer) -> None:
        self.cluster = cluster
        self.topic = topic
        self.producer = producer
        self.legs: list[Leg] = []
        self.readers: list[Running] = []
        self.timeline = Timeline()
        self.findings = Findings(self.timeline)
        self.stalls: list[str] = []

    def add(self, leg: Leg) -> None:
        self.legs.append(leg)
        self.readers.extend(cast(Running, r) for r in leg.readers)

    async def progressed(self, mark: int, partitions: Iterable[int], timeout: float, what: str) -> None:
        await wait_progress(self.legs, self.producer, mark, partitions, timeout, what)

    async def recovered(self, name: str) -> None:
        """After a heal: every consumer reads every partition again; the stall (until the last partition's first
        record produced after the heal) is kept for the report."""
        healed, mark = time.monotonic(), self.producer.sent
        await self.findings.awaits(
            f"{name}: recovery", self.progressed(mark, range(PARTITIONS), RECOVER_S, f"after {name}")
        )
        shown = ", ".join(f"{leg.name} {stall_after(leg, mark, healed):.2f} s" for leg in self.legs)
        self.stalls.append(f"{name}: {shown}")

    async def toxics_removed(self, fault: Fault, target: int) -> None:
        """After a silent heal and the recovery from it: the toxics removed (Toxiproxy closes their connections, as
        at any heal), then the consumers back on every partition and naming no broker unreachable, before the next
        fault starts."""
        await in_thread(self.cluster.heal)
        await self.findings.awaits(
            f"{fault.name}: back after the toxics were removed",
            self.progressed(self.producer.sent, range(PARTITIONS), RECOVER_S, f"{fault.name}'s toxics removed"),
        )
        await self.findings.awaits(
            f"{fault.name}: no broker unreachable after the toxics were removed",
            wait_for_async(
                lambda: all(unreachable_node(r.consumer, target) is None for r in self.readers),
                RECOVER_S,
                interval=0.05,
                message=lambda: f"{[r.consumer.metrics().unreachable_nodes for r in self.readers]}",
            ),
        )

    async def others_flow(self, fault: Fault, target: int, mark: int) -> None:
        """While ``fault`` lasts on ``target``, the partitions other leaders lead keep coming."""
        await self.findings.awaits(
            f"{fault.name}: the other leaders' partitions keep coming",
            self.progressed(mark, not_led_by(target), OTHERS_S, fault.name),
        )

    async def finish(self) -> list[Any]:
        """Stops producing; waits until every leg read every acknowledged record, then a few more polls each."""
        acked = await in_thread(self.producer.stop)
        assert not self.producer.failed, f"the producer gave up on records: {self.producer.failed[:5]}"
        wanted = {a.index for a in acked}
        self.timeline.note(f"producer stopped: {len(acked)} records acknowledged")

        def read(leg: Leg) -> set[int]:
            return set().union(*(r.indices for r in leg.readers))

        def reached() -> bool:
            for leg in self.legs:
                leg.check()
            return all(wanted <= read(leg) for leg in self.legs)

        def missing() -> str:
            counts = {leg.name: len(wanted - read(leg)) for leg in self.legs}
            return f"records missing per consumer: {counts}\n{self.timeline.describe()}"

        await self.findings.awaits(
            "every record read", wait_for_async(reached, RECOVER_S, interval=0.05, message=missing)
        )
        pollers = [r for r in self.readers if isinstance(r, Reader) and not isinstance(r, ProcessReader)]  # no polls
        polled = [r.polls for r in pollers]

        def polled_more() -> bool:
            return all(r.polls >= n + 3 for r, n in zip(pollers, polled, strict=True))

        await wait_for_async(polled_more, RECOVER_S, interval=0.05)
        return acked

    async def stop(self) -> None:
        for reader in self.readers:
            await reader.stop()

    async def abandon(self) -> None:
        sys.stderr.write(f"\ntimeline:\n{self.timeline.describe()}\nlast log lines:\n{self.cluster.log_tail(20)}\n")
        for reader in self.readers:
            await reader.abandon()
        await in_thread(self.producer.stop)


def check_group_legs(run: Run, members: list[GroupMember], acked: list[Any], landed: Any) -> None:
    """For each group (members of one group id): nothing lost, a record twice only if no successful commit covered
    it; for each member: order per partition, and every commit it was told succeeded is in Kafka."""
    groups: dict[str, list[GroupMember]] = {}
    for m in members:
        group_id = m.consumer.config.group_id
        assert group_id is not None
        groups.setdefault(group_id, []).append(m)
        run.findings.check(f"{m.name}: order per partition", partial(check_order, m, m.events))
        run.findings.check(
            f"{m.name}: a commit rejected as fenced fences it at once",
            partial(check_fenced_stops, m, run.timeline.started),
        )
        succeeded = [(c.at, c.offsets) for c in m.commits]
        run.findings.check(
            f"{m.name}: every successful commit landed",
            partial(check_commits_landed, m.name, group_id, succeeded, landed, run.timeline.started),
        )
    for group_id, pair in groups.items():
        name = f"group {', '.join(m.name for m in pair)}"
        run.findings.check(f"{name}: committed offsets never move back", partial(check_never_back, group_id, landed))
        run.findings.check(
            f"{name}: nothing lost", partial(check_acknowledged, name, [s for m in pair for s in m.seen], acked)
        )
        reads = [(s.at, s.partition, s.offset) for m in pair for s in m.seen]
        commits = [(c.at, c.offsets) for m in pair for c in m.commits]
        run.findings.check(
            f"{name}: a record twice only if no commit covered it",
            partial(check_redelivery_covered, name, reads, commits),
        )


def frames_checked(run: Run, events: list[Any]) -> int:
    """A frame cut short never reaches a decoder: no response was undecodable, no record corrupt; returns how many
    connections were cut short."""
    undecodable = [e for e in events if "undecodable" in str(e.get("reason", "")) or "corrupt" in str(e).lower()]
    run.findings.holds("a frame cut short never reaches a decoder", not undecodable, f"{undecodable[:3]}")
    return sum(1 for e in events if e["event"] == "connection.closed" and "closed by the peer" in str(e.get("reason")))


def group_members(cluster: ProxiedCluster, classic_id: str, modern_id: str) -> list[GroupMember]:
    members = [group_member(cluster, f"classic-{i}", classic_id, "classic") for i in (1, 2)]
    return members + [group_member(cluster, f"consumer-{i}", modern_id, "consumer") for i in (1, 2)]


def stable(members: list[GroupMember]) -> bool:
    """Each group's members own every partition between them, each some, none twice."""
    groups: dict[str | None, list[GroupMember]] = {}
    for m in members:
        m.check()
        groups.setdefault(m.consumer.config.group_id, []).append(m)
    for pair in groups.values():
        owned = [m.owned() for m in pair]
        if not all(owned) or sum(map(len, owned)) != PARTITIONS or set().union(*owned) != set(range(PARTITIONS)):
            return False
    return True


async def new_run(cluster: ProxiedCluster, hint: str) -> Run:
    topic = unique_topic_name(hint)
    await in_thread(create_placed_topic, cluster.kafka, topic, PLACEMENT)
    return Run(cluster, topic, AckedProducer(cluster.direct_servers, topic, PARTITIONS, RATE).start())


# --- faults on a leader ----------------------------------------------------------------------------------------------
LEADER = 2
"""The node faulted in ``test_faults_on_a_leader`` (it leads partitions 1 and 4); the groups' coordinator is node 3."""
COORDINATOR = 3

LEADER_FAULTS: list[tuple[Fault, float]] = [
    # (fault, seconds at least); the other leaders' partitions must keep coming while each lasts
    (Fault("bandwidth", [Toxin("bandwidth", s, {"rate": 50}) for s in ("downstream", "upstream")]), 3),
    (Fault("slicer", both("slicer", average_size=64, size_variation=32, delay=100)), 3),
    (Fault("limit_data responses", [Toxin("limit_data", "downstream", {"bytes": 4096})]), 3),
    (Fault("limit_data requests", [Toxin("limit_data", "upstream", {"bytes": 1024})]), 2),
    (Fault("reset_peer", both("reset_peer", timeout=0)), 2),
    (Fault("short black hole", both("timeout", timeout=0), silent_heal=True), 2),
]
UNREACHABLE_FAULTS = [
    Fault("long black hole", [Toxin("timeout", "downstream", {"timeout": 0})], silent_heal=True),
    Fault("requests dropped", [Toxin("timeout", "upstream", {"timeout": 0})]),
    Fault("refused", refused=True),
]
"""Faults longer than ``request_timeout_ms`` (responses dropped; requests dropped while responses would flow; the
broker refused): the broker is named unreachable once a request times out (at once when refused), and forgotten after
the heal."""


async def unreachable_while_it_lasts(run: Run, fault: Fault, consumer: AsyncConsumer, began: float) -> None:
    """``metrics()`` names ``LEADER`` unreachable within the fault, dated within it; a black-holed request timed out."""
    limit = 3.0 if fault.refused else DETECT_S

    def named() -> Any:
        return unreachable_node(consumer, LEADER)

    await run.findings.awaits(
        f"{fault.name}: metrics() names the broker unreachable",
        wait_for_async(named, limit, interval=0.05, message=lambda: f"{consumer.metrics().unreachable_nodes}"),
    )
    outage = named()
    if outage is None:
        return
    ago = time.time() - outage.unreachable_since_ms / 1000
    into = time.monotonic() - began
    run.timeline.note(
        f"metrics: node {LEADER} unreachable for {outage.unreachable_for_ms} ms ({outage.failures} failure(s)): "
        f"{outage.last_error}"
    )
    run.findings.holds(
        f"{fault.name}: the outage is dated within the fault",
        -0.5 <= into - ago <= limit,
        f"dated {ago:.2f} s ago, {into:.2f} s into the fault",
    )
    if not fault.refused:
        run.findings.holds(
            f"{fault.name}: the black-holed request timed out", "timed out" in outage.last_error, outage.last_error
        )


async def test_faults_on_a_leader(cluster: ProxiedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    run = await new_run(cluster, "faults-leader")
    with captured_events(monkeypatch, connection_module, delegate_module) as events:
        assigned = AsyncReader("assigned", AsyncConsumer(cluster.bootstrap_servers, **CONSUMER_SETTINGS))
        classic_id = await group_led_by(cluster, COORDINATOR)
        members = group_members(cluster, classic_id, await group_led_by(cluster, COORDINATOR, avoid=[classic_id]))
        run.add(Leg("assigned", [assigned]))
        run.add(Leg("classic group", members[:2]))
        run.add(Leg("consumer group", members[2:]))
        finished = False
        try:
            await assigned.consumer.assign([TopicPartition(run.topic, p) for p in range(PARTITIONS)])
            assigned.start()
            for m in members:
                await m.consumer.subscribe([run.topic], listener=m.listener)
                m.start()
            await wait_for_async(
                lambda: stable(members), STABLE_S, interval=0.05, message=lambda: f"{[m.owned() for m in members]}"
            )
            await run.progressed(run.producer.sent, range(PARTITIONS), RECOVER_S, "the start")
            settled = time.monotonic()
            run.timeline.note("the groups are stable and every consumer reads every partition")

            latency = Fault("latency with jitter", both("latency", latency=300, jitter=150))
            async with fault_on(cluster, latency, [1, 2, 3], run.timeline) as began:
                await run.findings.awaits(
                    "latency on every broker: every partition keeps coming",
                    run.progressed(run.producer.sent, range(PARTITIONS), OTHERS_S, "latency"),
                )
                await lasting(3, began)
            await run.recovered(latency.name)

            for fault, seconds in LEADER_FAULTS:
                async with fault_on(cluster, fault, [LEADER], run.timeline) as began:
                    await run.others_flow(fault, LEADER, run.producer.sent)
                    await lasting(seconds, began)
                await run.recovered(fault.name)
                if fault.silent_heal:
                    await run.toxics_removed(fault, LEADER)

            for fault in UNREACHABLE_FAULTS:
                async with fault_on(cluster, fault, [LEADER], run.timeline) as began:
                    await run.others_flow(fault, LEADER, run.producer.sent)
                    await unreachable_while_it_lasts(run, fault, assigned.consumer, began)
                    await lasting(REQUEST_TIMEOUT_MS / 1000 + 2, began)
                    if not fault.refused:
                        cut = run.producer.sent
                        run.findings.holds(
                            f"{fault.name}: the fault held (no record of partitions {led_by(LEADER)} came meanwhile)",
                            all(assigned.newest.get(p, -1) < cut for p in led_by(LEADER)),
                        )
                await run.recovered(fault.name)
                await run.findings.awaits(
                    f"{fault.name}: metrics() forgets the outage after the heal",
                    wait_for_async(
                        lambda: all(unreachable_node(r.consumer, LEADER) is None for r in run.readers),
                        RECOVER_S,
                        interval=0.05,
                        message=lambda: f"{[r.consumer.metrics().unreachable_nodes for r in run.readers]}",
                    ),
                )
                if fault.silent_heal:
                    await run.toxics_removed(fault, LEADER)
            faults_ended = time.monotonic()
            acked = await run.finish()
            await run.stop()
            finished = True
        finally:
            if not finished:
                await run.abandon()
    cut_short = frames_checked(run, events)
    run.findings.holds("limit_data and reset_peer cut connections", cut_short > 0, "no connection was cut short")
    run.findings.check("assigned: every record once, in order", partial(check_exactly_once, assigned, acked))
    landed = await in_thread(landed_commits, cluster, {classic_id, members[2].consumer.config.group_id or ""})
    check_group_legs(run, members, acked, landed)
    for m in members:
        during = releases(m, settled, faults_ended)
        run.findings.holds(f"{m.name}: a fault on a leader costs no rebalance", not during, f"{during}")
    report(
        f"faults on leader {LEADER}: {len(acked)} records acknowledged; consumed: "
        + ", ".join(f"{r.name} {len(r.seen)}" for r in run.readers)
        + f"; {sum(len(m.commits) for m in members)} commits; {cut_short} connections cut short"
        + "\nstalls after each heal (until the last partition is back):\n"
        + "\n".join(run.stalls)
        + f"\n{run.timeline.describe()}"
    )
    run.findings.assert_none()


# --- faults on the group coordinator ------------------------------------------------------------------------------
TARGET = 1
"""The groups' coordinator in ``test_faults_on_the_group_coordinator`` (it also leads partitions 0 and 3)."""
QUIET_S = 6.0
"""After a fault that must cost no rebalance, how long the members are watched for one: an expelled member hears of
it at its next heartbeat after the heal (within a second) and its listener runs at its next poll."""

COORDINATOR_FAULTS: list[tuple[Fault, float, bool]] = [
    # (fault, seconds, must it cost no rebalance)
    (Fault("latency with jitter", both("latency", latency=300, jitter=150)), 3, True),
    (Fault("short black hole", both("timeout", timeout=0), silent_heal=True), 2, True),
    (Fault("reset_peer", both("reset_peer", timeout=0)), 2, False),
    (Fault("limit_data responses", [Toxin("limit_data", "downstream", {"bytes": 4096})]), 2, False),
    (Fault("requests dropped", [Toxin("timeout", "upstream", {"timeout": 0})]), 3, False),
    (Fault("refused", refused=True), 3, False),
]
LONG_BLACK_HOLE = Fault("long black hole", both("timeout", timeout=0))
LONG_BLACK_HOLE_S = SESSION_TIMEOUT_MS / 1000 + REQUEST_TIMEOUT_MS / 1000
"""Longer than the session by more than a request timeout: the coordinator expels every member for certain."""
PROCESS_GOES_ON_S = 3.0
"""Into the long black hole, past process()'s first commit into it (it commits every second)."""


def rebalanced(members: Iterable[GroupMember | ProcessReader], since: float, until: float) -> dict[str, list[Any]]:
    found = {m.name: [e for e in m.events if since <= e[0] <= until] for m in members}
    return {name: events for name, events in found.items() if events}


async def test_faults_on_the_group_coordinator(cluster: ProxiedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    run = await new_run(cluster, "faults-coordinator")
    with captured_events(monkeypatch, connection_module, delegate_module) as events:
        classic_id = await group_led_by(cluster, TARGET)
        modern_id = await group_led_by(cluster, TARGET, avoid=[classic_id])
        process_id = await group_led_by(cluster, TARGET, avoid=[classic_id, modern_id])
        members = group_members(cluster, classic_id, modern_id)
        settings = {**CONSUMER_SETTINGS, **CLASSIC_SETTINGS, "group_id": process_id, "enable_auto_commit": False}
        processing = ProcessReader("process()", AsyncConsumer(cluster.bootstrap_servers, **settings), run.topic)
        run.add(Leg("classic group", members[:2]))
        run.add(Leg("consumer group", members[2:]))
        run.add(Leg("process()", [processing]))
        everyone: list[GroupMember | ProcessReader] = [*members, processing]
        finished = False
        try:
            for m in members:
                await m.consumer.subscribe([run.topic], listener=m.listener)
                m.start()
            await processing.start()

            def all_stable() -> bool:
                processing.check()
                return stable(members) and processing.owned() == set(range(PARTITIONS))

            await wait_for_async(
                all_stable, STABLE_S, interval=0.05, message=lambda: f"{[m.owned() for m in everyone]}"
            )
            await run.progressed(run.producer.sent, range(PARTITIONS), RECOVER_S, "the start")
            run.timeline.note(f"the groups are stable; their coordinator is node {TARGET}")

            for fault, seconds, quiet in COORDINATOR_FAULTS:
                async with fault_on(cluster, fault, [TARGET], run.timeline) as began:
                    await lasting(seconds, began)
                healed = time.monotonic()
                await run.recovered(fault.name)
                if quiet:
                    await lasting(QUIET_S, healed)  # watching for a rebalance that must not come
                    found = rebalanced(everyone, began, time.monotonic())
                    run.findings.holds(
                        f"{fault.name} shorter than the session costs no rebalance", not found, f"{found}"
                    )
                else:
                    found = rebalanced(everyone, began, time.monotonic())
                    if found:
                        run.timeline.note(f"{fault.name}: rebalanced {sorted(found)}")
                if fault.silent_heal:
                    await run.toxics_removed(fault, TARGET)

            async with fault_on(cluster, LONG_BLACK_HOLE, [TARGET], run.timeline) as began:
                # process() commits every second: a commit waiting on the black-holed coordinator must not hold up
                # the records of the partitions other leaders lead (the member is not told it was expelled before
                # the heal, and goes on reading them)
                await lasting(PROCESS_GOES_ON_S, began)
                await run.findings.awaits(
                    "process(): the other leaders' partitions go on while the coordinator is black-holed",
                    wait_progress(
                        [Leg("process()", [processing])],
                        run.producer,
                        run.producer.sent,
                        not_led_by(TARGET),
                        LONG_BLACK_HOLE_S - PROCESS_GOES_ON_S - 1,
                        "the long black hole",
                    ),
                )
                await lasting(LONG_BLACK_HOLE_S, began)
            healed = time.monotonic()

            def back() -> bool:
                for m in everyone:
                    m.check()
                return all(any(e[0] > healed and e[1] == "assigned" and e[2] for e in m.events) for m in everyone)

            await run.findings.awaits(
                f"every member rejoins within {REJOIN_S:.0f} s of the heal",
                wait_for_async(back, REJOIN_S, interval=0.05, message=lambda: f"{rebalanced(everyone, began, 1e12)}"),
            )
            rejoined = {
                m.name: min(
                    (e[0] - healed for e in m.events if e[0] > healed and e[1] == "assigned" and e[2]), default=None
                )
                for m in everyone
            }
            run.timeline.note(
                f"rejoined after the heal (s): { {k: None if v is None else round(v, 2) for k, v in rejoined.items()} }"
            )
            for one in everyone:
                back_at = healed + (rejoined[one.name] or REJOIN_S)
                successes = (
                    [(c.at, c.offsets) for c in one.commits] if isinstance(one, GroupMember) else one.commits.succeeded
                )
                run.findings.check(
                    f"{one.name}: no commit succeeds while the member is out of the group",
                    partial(
                        check_no_success_while_expelled, one.name, successes, healed, back_at, run.timeline.started
                    ),
                )
            expelled = {m.name: [e for e in m.events if e[0] >= began and e[1] == "lost"] for m in everyone}
            run.findings.holds(
                "a black hole longer than the session expels every member (its partitions are lost)",
                all(expelled.values()),
                f"{expelled}",
            )
            await run.findings.awaits(
                "the groups are stable again", wait_for_async(all_stable, RECOVER_S, interval=0.05)
            )
            await run.recovered(LONG_BLACK_HOLE.name)
            acked = await run.finish()
            await run.stop()
            finished = True
        finally:
            if not finished:
                await run.abandon()
    cut_short = frames_checked(run, events)
    landed = await in_thread(landed_commits, cluster, {classic_id, modern_id, process_id})
    check_group_legs(run, members, acked, landed)
    run.findings.check("process(): nothing lost", partial(check_acknowledged, "process()", processing.seen, acked))
    run.findings.check(
        "process(): every successful commit landed",
        partial(
            check_commits_landed, "process()", process_id, processing.commits.succeeded, landed, run.timeline.started
        ),
    )
    reads = [(s.at, s.partition, s.offset) for s in processing.seen]
    run.findings.check(
        "process(): a record twice only if no commit covered it",
        partial(check_redelivery_covered, "process()", reads, processing.commits.succeeded),
    )
    run.findings.check("process(): order per partition", partial(check_order, processing, processing.events))
    run.findings.check("process(): committed offsets never move back", partial(check_never_back, process_id, landed))
    failed_commits = {m.name: len(m.commit_errors) for m in members} | {"process()": len(processing.commits.failed)}
    process_landed = {p: offsets[-6:] for (g, p), offsets in sorted(landed.items()) if g == process_id}
    run.timeline.note(f"process()'s last commits in __consumer_offsets, by partition: {process_landed}")
    report(
        f"faults on the coordinator, node {TARGET}: {len(acked)} records acknowledged; consumed: "
        + ", ".join(f"{r.name} {len(r.seen)}" for r in run.readers)
        + f"; failed commits {failed_commits}; {cut_short} connections cut short"
        + "\nstalls after each heal (until the last partition is back):\n"
        + "\n".join(run.stalls)
        + f"\n{run.timeline.describe()}"
    )
    run.findings.assert_none()


# --- a share group ---------------------------------------------------------------------------------------------------
SHARE_COORDINATOR = 2
"""The share group's coordinator (FindCoordinator's answer for it, which takes its ShareGroupHeartbeats); the share
state coordinator behind it is the brokers' own business, reached over their direct listener, so no client fault
reaches it. Faults on a leader go to ``SHARE_LEADER``."""
SHARE_LEADER = 3
SHARE_LOCK_MS = 6_000
"""The group's acquisition lock: records a black-holed member held come back to the group after this."""


class ShareReader(Reader):
    """An ``AsyncShareConsumer`` (implicit acknowledgement) polled by a task: every delivery with its count, and every
    acknowledgement the broker confirmed, with when the callback heard of it."""

    def __init__(self, name: str, consumer: AsyncShareConsumer) -> None:
        super().__init__(name)
        self.consumer = consumer
        self.deliveries: list[tuple[float, int, int, int]] = []
        """(when, partition, offset, delivery count)."""
        self.confirmed: list[tuple[float, int, int]] = []
        """(when, partition, offset) of each acceptance the broker confirmed."""
        self.refused: list[tuple[float, str]] = []
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        consumer.set_acknowledgement_commit_callback(self._acknowledged)

    def _acknowledged(self, offsets: dict[TopicPartition, set[int]], error: KafkaError | None) -> None:
        now = time.monotonic()
        if error is not None:
            self.refused.append((now, str(error)))
            return
        self.confirmed.extend((now, tp.partition, o) for tp, got in offsets.items() for o in got)

    async def start(self, topic: str) -> ShareReader:
        await self.consumer.subscribe([topic])
        self._task = asyncio.create_task(self._run(), name=self.name)
        return self

    async def _run(self) -> None:
        while not self._stopping:
            records = list((await self.consumer.poll(200)).records())
            now = time.monotonic()
            self.deliveries.extend((now, r.partition, r.offset, r.delivery_count or 1) for r in records)
            self.note(records)  # type: ignore[arg-type]  # a ShareRecord has what Reader reads of a record

    def check(self) -> None:
        assert self._task is not None
        if self._task.done():
            self._task.result()
            raise AssertionError(f"{self.name}: the polling task ended without being stopped")

    async def stop(self) -> None:
        self._stopping = True
        try:
            if self._task is not None:
                await asyncio.wait_for(self._task, 30)
        finally:
            await self.consumer.close()

    async def abandon(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.close(timeout_ms=5_000)


def metrics_of(consumer: Any) -> str:
    return str(consumer.metrics())


def check_share_redeliveries(members: list[ShareReader], emptied_at: float | None = None) -> int:
    """A record is delivered again only if no acceptance of it was confirmed before, and with a higher delivery
    count; returns the records delivered more than once.

    From ``emptied_at`` on (the group lost every member) a record's count may start again: Kafka's leaders then drop
    the group's share-partitions (``SharePartitionManager``'s ``onGroupEmpty``) and rebuild them from the persisted
    state, which holds no acquisitions, so a record acquired but never released or acknowledged comes back at
    count 1 (KIP-932 persists a delivery count only with a state change)."""
    confirmed: dict[tuple[int, int], float] = {}
    for m in members:
        for at, p, o in m.confirmed:
            confirmed[p, o] = min(at, confirmed.get((p, o), at))
    deliveries = sorted((at, p, o, n, m.name) for m in members for at, p, o, n in m.deliveries)
    counts: dict[tuple[int, int], int] = {}
    wrong: list[str] = []
    again = 0
    start = deliveries[0][0] if deliveries else 0.0
    for at, p, o, n, name in deliveries:
        if emptied_at is not None and at >= emptied_at:
            counts = dict.fromkeys(counts, 0)  # every later delivery counts from here
            emptied_at = None
        if (p, o) in counts:
            again += 1
            if confirmed.get((p, o), float("inf")) < at:
                wrong.append(f"{name} got {p}/{o} again after its acceptance was confirmed")
            if n <= counts[p, o]:
                wrong.append(
                    f"{name} got {p}/{o} again with delivery count {n} after {counts[p, o]}, "
                    f"{at - start:.1f} s after the first delivery"
                )
        counts[p, o] = max(n, counts.get((p, o), 0))
    assert not wrong, f"{len(wrong)} wrong redeliveries: {wrong[:5]}"
    return again


SHARE_FAULTS: list[tuple[Fault, int, float]] = [
    # (fault, target, seconds)
    (Fault("latency with jitter", both("latency", latency=300, jitter=150)), SHARE_LEADER, 3),
    (Fault("reset_peer", both("reset_peer", timeout=0)), SHARE_LEADER, 2),
    (Fault("limit_data responses", [Toxin("limit_data", "downstream", {"bytes": 4096})]), SHARE_LEADER, 2),
    (Fault("short black hole on the coordinator", both("timeout", timeout=0)), SHARE_COORDINATOR, 2),
    (Fault("requests dropped", [Toxin("timeout", "upstream", {"timeout": 0})]), SHARE_LEADER, 5),
]


async def test_faults_on_a_share_group(cluster: ProxiedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    run = await new_run(cluster, "faults-share")
    group = await group_led_by(cluster, SHARE_COORDINATOR)
    await in_thread(
        cluster.kafka.set_group_config,
        group,
        {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": SHARE_LOCK_MS},
    )
    settings = {k: v for k, v in CONSUMER_SETTINGS.items() if k != "auto_offset_reset"}
    members = [
        ShareReader(f"share-{i}", AsyncShareConsumer(cluster.bootstrap_servers, group_id=group, **settings))
        for i in (1, 2)
    ]
    run.add(Leg("share group", members))
    emptied_at: float | None = None
    with captured_events(monkeypatch, connection_module, delegate_module, share_membership_module) as events:
        finished = False
        try:
            for m in members:
                await m.start(run.topic)
            await run.progressed(run.producer.sent, range(PARTITIONS), RECOVER_S, "the start")
            run.timeline.note("the share group reads every partition")
            for fault, target, seconds in SHARE_FAULTS:
                async with fault_on(cluster, fault, [target], run.timeline) as began:
                    if target != SHARE_COORDINATOR:
                        await run.others_flow(fault, target, run.producer.sent)
                    await lasting(seconds, began)
                await run.recovered(fault.name)

            refused = Fault("refused", refused=True)
            async with fault_on(cluster, refused, [SHARE_LEADER], run.timeline) as began:
                await run.others_flow(refused, SHARE_LEADER, run.producer.sent)
                fetching = [  # a member sends ShareFetches to the leaders of the partitions assigned to it
                    m
                    for m in members
                    if {tp.partition for tp in m.consumer.metrics().assignment} & set(led_by(SHARE_LEADER))
                ]
                run.findings.holds(f"refused: a member reads from node {SHARE_LEADER}", bool(fetching))
                for m in fetching:
                    await run.findings.awaits(
                        f"refused: {m.name}'s metrics() name the broker unreachable",
                        wait_for_async(
                            partial(unreachable_node, m.consumer, SHARE_LEADER),
                            3.0,
                            interval=0.05,
                            message=partial(metrics_of, m.consumer),
                        ),
                    )
                await lasting(4, began)
            await run.recovered(refused.name)
            await run.findings.awaits(
                "refused: metrics() forget the outage after the heal",
                wait_for_async(
                    lambda: all(unreachable_node(m.consumer, SHARE_LEADER) is None for m in members),
                    RECOVER_S,
                    interval=0.05,
                ),
            )

            long_hole = Fault("long black hole on the coordinator", both("timeout", timeout=0))
            hole_at = len(events)
            async with fault_on(cluster, long_hole, [SHARE_COORDINATOR], run.timeline) as began:
                emptied_at = began  # a bound: the members are expelled within the hole (checked below)
                await lasting(LONG_BLACK_HOLE_S, began)
            healed_at = len(events)  # the events logged from the heal on
            ids = {m.consumer.metrics().member_id: m.name for m in members}

            def named(event: str, since: int) -> set[str]:
                found = [e for e in list(events)[since:] if e["event"] == event]
                return {ids[str(e.get("member"))] for e in found if str(e.get("member")) in ids}

            await run.findings.awaits(
                f"every share member rejoins within {REJOIN_S:.0f} s of the heal",
                wait_for_async(
                    lambda: named("share.joined", healed_at) == set(ids.values()),
                    REJOIN_S,
                    interval=0.05,
                    message=lambda: f"rejoined: {named('share.joined', healed_at)}",
                ),
            )
            expelled = named("share.fenced", hole_at)
            run.findings.holds(
                "a black hole longer than the share session expels every member",
                expelled == set(ids.values()),
                f"fenced: {expelled}",
            )
            await run.recovered(long_hole.name)
            acked = await run.finish()
            await run.stop()
            finished = True
        finally:
            if not finished:
                await run.abandon()
    cut_short = frames_checked(run, events)
    wanted = {a.index for a in acked}
    got = set().union(*(m.indices for m in members))
    run.findings.holds(
        "share group: nothing lost", wanted <= got, f"{len(wanted - got)} acknowledged records never delivered"
    )
    again = 0
    try:
        again = check_share_redeliveries(members, emptied_at)
    except AssertionError as exc:
        run.findings.add(f"share group: redeliveries: {exc}")
    report(
        f"share group ({group}) under faults: {len(acked)} records acknowledged; delivered "
        + ", ".join(f"{m.name} {len(m.deliveries)}" for m in members)
        + f"; {again} delivered again; acknowledgements refused {[len(m.refused) for m in members]}; "
        + f"{cut_short} connections cut short\nstalls after each heal:\n"
        + "\n".join(run.stalls)
        + f"\n{run.timeline.describe()}"
    )
    run.findings.assert_none()


# --- the Spark source ----------------------------------------------------------------------------------------------
def test_a_spark_batch_read_through_latency_slices_and_resets_reads_every_record_once(
    spark: Any, cluster: ProxiedCluster
) -> None:
    """One run of the PySpark source: every broker slow and jittery, one leader's responses sliced into small pieces
    and a third of its new connections reset: the read returns exactly what was produced."""
    topic = unique_topic_name("faults-spark")
    create_placed_topic(cluster.kafka, topic, PLACEMENT)
    records = [Record(value_of(i), partition=i % PARTITIONS) for i in range(3_000)]
    produced = produce(cluster.direct_servers, topic, records, max_batch_size=4096)
    expected = sorted((r.partition, r.offset, r.value) for r in produced)
    options = {
        "kafka.bootstrap.servers": cluster.bootstrap_servers,
        "kafka.request.timeout.ms": str(REQUEST_TIMEOUT_MS),
        "kafka.socket.connection.setup.timeout.ms": "3000",
        "subscribe": topic,
    }
    proxies = [cluster.proxy(n) for n in (1, 2, 3)]
    began = time.monotonic()
    try:
        for proxy in proxies:
            proxy.add("latency", "downstream", {"latency": 100, "jitter": 50})
        cluster.proxy(2).add("slicer", "downstream", {"average_size": 128, "size_variation": 64, "delay": 50})
        cluster.proxy(3).add("reset_peer", "downstream", {"timeout": 0}, toxicity=0.3)
        rows = (
            spark.read.format("asyncconsumer")
            .options(**options)
            .load()
            .select("partition", "offset", "value")
            .collect()
        )
    finally:
        cluster.heal()
    got = sorted((r.partition, r.offset, bytes(r.value)) for r in rows)
    took = time.monotonic() - began
    report(f"spark batch read of {len(expected)} records through latency, slicer and resets: {took:.1f} s")
    assert len(got) == len(expected), f"{len(got)} rows for {len(expected)} records"
    assert got == expected
