"""Other clients' share consumers (KIP-932) as members of a share group beside ours: Java's KafkaShareConsumer
(``benchmarks/java/JavaShareConsume.java``) and librdkafka's (confluent-kafka's ``ShareConsumer``), each in a child
process that prints one line per record once the broker has answered its acknowledgement, read back as it comes.

    with java_peer(kafka, topic, group) as java, confluent_peer(kafka, topic, group) as confluent:
        wait_for_share_members(kafka, group, 2)
        ...  # produce; wait until len(java.accepted()) + len(confluent.accepted()) covers it
    runs = [java.stop(), confluent.stop()]
    assert exactly_once(runs, produced) == []

A peer stops when its standard input closes (``stop()``, or the test process dying). Both print what
``JavaShareConsume``'s Javadoc says: ``A|L|J|F|U partition offset delivery_count`` and a ``SHARE_RESULT {json}`` line;
``python -m tests.support.share_peers confluent ...`` is the confluent child.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import IO, Any, Self

from tests.support.kafka_broker import HOST, KafkaCluster, cache_root, fetch_jars

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
RESULT_MARKER = "SHARE_RESULT "
LINE_KINDS = {"A": "accepted", "L": "released", "J": "rejected", "F": "failed", "U": "unconfirmed"}
"""The first letter of a record line and what the broker said of that record's acknowledgement (as javashare.py)."""

Delivery = tuple[int, int, int]
"""(partition, offset, delivery count) of one record."""


def _benchmark_module(name: str) -> ModuleType:
    """A module of ``benchmarks/`` (the scripts import their siblings by plain name, so the directory goes on the
    path, after everything else so it shadows nothing)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.append(str(BENCHMARKS))
    return __import__(name)


@dataclass
class PeerRun:
    """What one peer printed: its records by what became of their acknowledgement, and its result line."""

    name: str
    accepted: list[Delivery] = field(default_factory=list)
    released: list[Delivery] = field(default_factory=list)
    rejected: list[Delivery] = field(default_factory=list)
    failed: list[Delivery] = field(default_factory=list)
    unconfirmed: list[Delivery] = field(default_factory=list)
    result: dict[str, Any] | None = None
    returncode: int | None = None

    def add_line(self, line: str) -> None:
        line = line.rstrip("\n")
        if line.startswith(RESULT_MARKER):
            self.result = json.loads(line[len(RESULT_MARKER) :])
            return
        kind, _, rest = line.partition(" ")
        if kind in LINE_KINDS:
            partition, offset, deliveries = (int(x) for x in rest.split())
            getattr(self, LINE_KINDS[kind]).append((partition, offset, deliveries))


class SharePeer:
    """A share consumer in a child process: its output read into a ``PeerRun`` by a thread as it comes; stopped by
    closing its standard input."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("wb")
        self._run = PeerRun(name)
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1
        )
        self._reader = threading.Thread(target=self._read, name=f"{name}-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self._run.add_line(line)

    def accepted(self) -> list[Delivery]:
        """The records the broker confirmed as accepted from this peer so far."""
        with self._lock:
            return list(self._run.accepted)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 60.0) -> PeerRun:
        """Closes its standard input (it commits what it holds, leaves the group and prints its result), waits for
        it, and returns everything it printed. Kills it at ``timeout_s``; fails if it did not end cleanly."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"{self.name} did not stop within {timeout_s} s:\n{self.log_tail()}") from None
        finally:
            self._release()
        with self._lock:
            self._run.returncode = self.proc.returncode
            run = self._run
        if run.returncode != 0 or run.result is None:
            raise AssertionError(f"{self.name} ended with {run.returncode}, result {run.result}:\n{self.log_tail()}")
        return run

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._release()

    def _release(self) -> None:
        """After the child ended: its output read to the end, its pipes and log closed."""
        self._reader.join(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc.poll() is None:
            self.kill()  # stop() was not called or failed: leave nothing running


def java_peer(
    kafka: KafkaCluster,
    topic: str,
    group: str,
    directory: Path,
    *,
    name: str = "java",
    **options: Any,
) -> SharePeer:
    """``JavaShareConsume`` (compiled on first use) in ``group`` on ``topic``, stopping when its standard input
    closes. ``options`` go to ``javashare.command`` (``ack_mode``, ``ack_type``, ``commit``, ``properties``...)."""
    javapeer = _benchmark_module("javapeer")
    javashare = _benchmark_module("javashare")
    libs = fetch_jars(kafka.version)
    classes = javashare.build(libs, cache_root())
    argv = javashare.command(
        classes,
        javapeer.runtime_jars(libs),
        bootstrap=kafka.bootstrap_servers,
        topic=topic,
        group=group,
        stdin_eof=True,
        client_id=name,
        **options,
    )
    return SharePeer(name, argv, directory / f"{name}.log")


def confluent_peer(
    kafka: KafkaCluster,
    topic: str,
    group: str,
    directory: Path,
    *,
    name: str = "confluent",
    ack_mode: str = "explicit",
    commit: str = "sync",
    config: Mapping[str, str] | None = None,
) -> SharePeer:
    """confluent-kafka's ``ShareConsumer`` in a child Python (``python -m tests.support.share_peers confluent``), in
    ``group`` on ``topic``, stopping when its standard input closes. ``ack_mode`` is ``share.acknowledgement.mode``;
    ``commit`` is ``sync`` (commit_sync after each poll), ``async`` or ``poll`` (on the next poll)."""
    argv = [
        sys.executable,
        "-m",
        "tests.support.share_peers",
        "confluent",
        "--bootstrap",
        kafka.bootstrap_servers,
        "--topic",
        topic,
        "--group",
        group,
        "--ack-mode",
        ack_mode,
        "--commit",
        commit,
        "--client-id",
        name,
    ]
    for key, value in (config or {}).items():
        argv += ["--property", f"{key}={value}"]
    return SharePeer(name, argv, directory / f"{name}.log")


def share_group_members(kafka: KafkaCluster, group: str) -> list[tuple[str, int]]:
    """(client id, partitions assigned) of each member of share group ``group`` as its coordinator describes it
    (ShareGroupDescribe, which confluent's admin client lacks); [] while the group does not exist."""
    from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
    from asyncconsumer.protocol.messages.share_group_describe import (
        ShareGroupDescribeRequest,
        ShareGroupDescribeResponse,
    )
    from tests.support.raw_client import RawClient

    bootstrap = RawClient(f"{HOST}:{kafka.nodes[0].internal_port}", "share-peers")
    try:
        found = bootstrap.call(FindCoordinatorRequest(key=group, key_type=0), 3)
    finally:
        bootstrap.close()
    assert isinstance(found, FindCoordinatorResponse)
    if found.error_code != 0:
        return []  # COORDINATOR_NOT_AVAILABLE while the coordinator loads
    coordinator = RawClient(f"{found.host}:{found.port}", "share-peers")
    try:
        described = coordinator.call(ShareGroupDescribeRequest(group_ids=(group,)), 1)
    finally:
        coordinator.close()
    assert isinstance(described, ShareGroupDescribeResponse)
    (info,) = described.groups
    if info.error_code != 0:
        return []  # GROUP_ID_NOT_FOUND before the first member joins
    return [(m.client_id, sum(len(t.partitions) for t in m.assignment.topic_partitions)) for m in info.members]


def exactly_once(runs: Iterable[PeerRun], expected: Collection[tuple[int, int]]) -> list[str]:
    """What is wrong with ``runs`` together having read ``expected`` (partition, offset) exactly once: a record
    accepted twice, one never accepted, one accepted that was not expected, and a record accepted at a delivery count
    above 1 with no earlier delivery that was not accepted (released, rejected, failed, or unconfirmed when its
    peer ended) to explain it. [] when all is well. (A record whose lock ran out while a peer held it comes again
    without any of those lines: a test that lets locks expire must allow for it.)"""
    runs = list(runs)
    accepted = Counter((p, o) for run in runs for p, o, _ in run.accepted)
    problems = [f"{key} accepted {n} times" for key, n in sorted(accepted.items()) if n > 1]
    problems += [f"{key} never accepted" for key in sorted(set(expected) - set(accepted))]
    problems += [f"{key} accepted but not expected" for key in sorted(set(accepted) - set(expected))]
    earlier = {
        (p, o)
        for run in runs
        for deliveries in (run.released, run.rejected, run.failed, run.unconfirmed)
        for p, o, _ in deliveries
    }
    problems += [
        f"{(p, o)} accepted at delivery {n} with no earlier delivery seen"
        for run in runs
        for p, o, n in run.accepted
        if n > 1 and (p, o) not in earlier
    ]
    return problems


def wait_for_share_members(
    kafka: KafkaCluster,
    group: str,
    count: int,
    peers: Sequence[SharePeer] = (),
    timeout_s: float = 60.0,
    *,
    per_member: int | None = None,
) -> list[tuple[str, int]]:
    """Until share group ``group`` has ``count`` members, each with partitions assigned (exactly ``per_member`` of
    them when given: the coordinator moves partitions as members join, so a first look may catch it midway); fails
    early if one of ``peers`` exits."""
    deadline = time.monotonic() + timeout_s
    members: list[tuple[str, int]] = []
    while time.monotonic() < deadline:
        for peer in peers:
            peer.check_alive()
        members = share_group_members(kafka, group)
        if len(members) == count and all(n > 0 if per_member is None else n == per_member for _, n in members):
            return members
        time.sleep(0.1)
    raise AssertionError(f"share group {group} has members {members} after {timeout_s} s, wanted {count}")


# --- the confluent child ------------------------------------------------------------------------------------------
def _confluent_main(args: argparse.Namespace) -> int:
    from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer, TopicPartition

    out = sys.stdout
    pending: dict[tuple[int, int], int] = {}
    confirmed: Counter[str] = Counter()
    stop = threading.Event()

    def watch_stdin() -> None:
        while sys.stdin.buffer.read(256):
            pass  # only the end of the stream matters
        stop.set()

    def on_complete(offsets: dict[TopicPartition, set[int]], exception: KafkaException | None) -> None:
        for tp, tp_offsets in offsets.items():
            for offset in sorted(tp_offsets):
                deliveries = pending.pop((tp.partition, offset), -1)
                kind = "F" if exception is not None else "A"
                confirmed[kind] += 1
                out.write(f"{kind} {tp.partition} {offset} {deliveries}\n")
        if exception is not None:
            sys.stderr.write(f"acknowledgement failed: {exception}\n")

    config: dict[str, str] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.client_id,
        "share.acknowledgement.mode": args.ack_mode,
    }
    for item in args.property:
        key, _, value = item.partition("=")
        config[key] = value
    threading.Thread(target=watch_stdin, name="stdin-eof", daemon=True).start()
    polled = redelivered = 0
    t0 = time.monotonic()
    first = last = None
    consumer = ShareConsumer(config)
    consumer.set_acknowledgement_commit_callback(on_complete)
    consumer.subscribe([args.topic])
    try:
        while not stop.is_set():
            batch = list(consumer.poll(0.2))
            for message in batch:
                error = message.error()
                if error is not None:
                    sys.stderr.write(f"poll error: {error}\n")
                    continue
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                deliveries = message.delivery_count() or -1
                redelivered += deliveries > 1
                pending[(partition, offset)] = deliveries
                polled += 1
                if args.ack_mode == "explicit":
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if batch:
                last = time.monotonic()
                first = first or last
                if args.commit == "sync":
                    consumer.commit_sync(30)
                elif args.commit == "async":
                    consumer.commit_async()
            out.flush()
        consumer.commit_sync(30)  # implicit mode: the last poll's records; explicit: anything not yet sent
    finally:
        consumer.close()
    for (partition, offset), deliveries in sorted(pending.items()):
        out.write(f"U {partition} {offset} {deliveries}\n")
    wall = (last - t0) if last is not None else 0.0
    result = {
        "ack_mode": args.ack_mode,
        "commit": args.commit,
        "polled": polled,
        "redelivered": redelivered,
        "accepted": confirmed["A"],
        "failed": confirmed["F"],
        "unconfirmed": len(pending),
        "wall_s": wall,
        "first_record_s": None if first is None else first - t0,
        "records_per_s": polled / wall if wall else 0.0,
    }
    out.write(RESULT_MARKER + json.dumps(result) + "\n")
    out.flush()
    return 0


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.share_peers")
    sub = parser.add_subparsers(dest="command", required=True)
    confluent = sub.add_parser("confluent", help="run confluent-kafka's ShareConsumer until standard input closes")
    confluent.add_argument("--bootstrap", required=True)
    confluent.add_argument("--topic", required=True)
    confluent.add_argument("--group", required=True)
    confluent.add_argument("--ack-mode", choices=("explicit", "implicit"), default="explicit")
    confluent.add_argument("--commit", choices=("sync", "async", "poll"), default="sync")
    confluent.add_argument("--client-id", default="confluent-share")
    confluent.add_argument("--property", action="append", default=[], help="key=value, any ShareConsumer config")
    args = parser.parse_args(argv)
    return _confluent_main(args)


if __name__ == "__main__":
    sys.exit(_main())
