"""Java's KafkaShareConsumer and librdkafka's ShareConsumer in one share group (KIP-932) on Apache Kafka: with both
members in the group before a record is written, 2,000 records are accepted exactly once between them, each at its
first delivery, in either client's acknowledgement mode: on 4 partitions (Kafka 4.4's simple assignor gives each
member 2 of its own) and on 1 partition, which both members are assigned and read from at once. The peers and the
checks are the ones later tests mix our share consumer with (``tests/support/share_peers.py``).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from asyncconsumer import ShareConsumer, TopicPartition
from tests.conftest import Broker, TopicFactory
from tests.support.groups import new_group_id
from tests.support.kafka_broker import KafkaCluster
from tests.support.produce import ProduceHelper
from tests.support.share_peers import (
    PeerRun,
    SharePeer,
    confluent_peer,
    exactly_once,
    java_peer,
    wait_for_share_members,
)
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka_only("Tansu has no share groups (KIP-932)")

RECORDS = 2_000
DEADLINE_S = 90.0


def accepted_between(peers: list[SharePeer]) -> int:
    for peer in peers:
        peer.check_alive()
    return len({(p, o) for peer in peers for p, o, _ in peer.accepted()})


@pytest.mark.parametrize(
    ("java_mode", "confluent_mode"),
    [(("explicit", "sync"), ("implicit", "poll")), (("implicit", "poll"), ("explicit", "sync"))],
    ids=["java-explicit-confluent-implicit", "java-implicit-confluent-explicit"],
)
@pytest.mark.parametrize("partitions", [4, 1], ids=["4-partitions", "1-partition"])
def test_java_and_confluent_share_a_group_and_accept_every_record_once(
    broker: Broker,
    topic: TopicFactory,
    produce: ProduceHelper,
    tmp_path: Path,
    java_mode: tuple[str, str],
    confluent_mode: tuple[str, str],
    partitions: int,
) -> None:
    assert isinstance(broker, KafkaCluster)
    kafka = broker
    name = topic(partitions)
    group = new_group_id()
    kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})

    java = java_peer(kafka, name, group, tmp_path, ack_mode=java_mode[0], commit=java_mode[1])
    confluent = confluent_peer(kafka, name, group, tmp_path, ack_mode=confluent_mode[0], commit=confluent_mode[1])
    peers = [java, confluent]
    with java, confluent:
        members = wait_for_share_members(kafka, group, 2, peers, per_member=min(2, partitions))
        assert sorted(members) == [("confluent", min(2, partitions)), ("java", min(2, partitions))]

        produced = produce.values(name, RECORDS, partitions)
        wait_for(
            lambda: accepted_between(peers) >= RECORDS,
            DEADLINE_S,
            interval=0.1,
            message=lambda: f"java {len(java.accepted())}, confluent {len(confluent.accepted())} accepted",
        )
        runs = [java.stop(), confluent.stop()]

    expected = {(p, r.offset) for p, records in produced.items() for r in records}
    assert exactly_once(runs, expected) == []
    for run in runs:
        assert (run.failed, run.unconfirmed, run.released, run.rejected) == ([], [], [], []), run.name
        assert {n for _, _, n in run.accepted} <= {1}, f"{run.name} saw a redelivery in a run without failures"
        assert run.accepted, f"{run.name} accepted nothing: {[(r.name, r.result) for r in runs]}"


def test_exactly_once_names_repeats_gaps_strangers_and_unexplained_redeliveries() -> None:
    """The check itself, on made-up runs (no broker)."""
    first = PeerRun("a", accepted=[(0, 0, 1), (0, 1, 1), (0, 3, 2)], released=[(0, 3, 1)])
    second = PeerRun("b", accepted=[(0, 1, 1), (1, 9, 1), (0, 4, 2)])
    assert exactly_once([first, second], {(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)}) == [
        "(0, 1) accepted 2 times",
        "(0, 2) never accepted",
        "(1, 9) accepted but not expected",
        "(0, 4) accepted at delivery 2 with no earlier delivery seen",
    ]
    assert exactly_once([PeerRun("a", accepted=[(0, 0, 2)], failed=[(0, 0, 1)])], {(0, 0)}) == []


class _OurMember:
    """One of our share consumers in a thread of the test, recording what the broker confirmed it accepted (the
    acknowledgement commit callback's offsets without an error) at the delivery count it got each record with."""

    def __init__(self, name: str, kafka: KafkaCluster, topic: str, group: str, mode: str) -> None:
        self.name = name
        self._consumer = ShareConsumer(
            kafka.bootstrap_servers, group_id=group, client_id=name, share_acknowledgement_mode=mode
        )
        self._explicit = mode == "explicit"
        self._counts: dict[tuple[int, int], int] = {}
        self._run = PeerRun(name)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.errors: list[BaseException] = []
        self._consumer.set_acknowledgement_commit_callback(self._confirmed)
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _confirmed(self, offsets: dict[TopicPartition, set[int]], error: object) -> None:
        with self._lock:
            for tp, got in offsets.items():
                for offset in got:
                    count = self._counts.get((tp.partition, offset))
                    if count is not None:
                        target = self._run.accepted if error is None else self._run.failed
                        target.append((tp.partition, offset, count))

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                records = self._consumer.poll(200)
                with self._lock:
                    for record in records.records():
                        self._counts[(record.partition, record.offset)] = record.delivery_count
                if self._explicit:
                    for record in records.records():
                        self._consumer.acknowledge(record)
                    self._consumer.commit_sync()
            self._consumer.close()
        except BaseException as exc:
            self.errors.append(exc)

    def accepted(self) -> list[tuple[int, int, int]]:
        with self._lock:
            return list(self._run.accepted)

    def check_alive(self) -> None:
        assert not self.errors, self.errors

    def stop(self) -> PeerRun:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.name} did not stop"
        self.check_alive()
        return self._run


def test_our_consumers_java_and_confluent_share_one_group(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    """Four members of four clients (ours blocking in explicit mode and in implicit mode, Java's, librdkafka's), one
    partition each: every record accepted exactly once, each client accepting some."""
    assert isinstance(broker, KafkaCluster)
    kafka = broker
    name = topic(4)
    group = new_group_id()
    kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})
    java = java_peer(kafka, name, group, tmp_path, ack_mode="explicit", commit="sync")
    confluent = confluent_peer(kafka, name, group, tmp_path, ack_mode="implicit", commit="poll")
    ours = [
        _OurMember("ours-explicit", kafka, name, group, "explicit"),
        _OurMember("ours-implicit", kafka, name, group, "implicit"),
    ]
    members: list[SharePeer | _OurMember] = [java, confluent, *ours]
    with java, confluent:
        try:
            described = wait_for_share_members(kafka, group, 4, [java, confluent], per_member=1)
            assert sorted(n for _, n in described) == [1, 1, 1, 1], described
            produced = produce.values(name, RECORDS, 4)

            def accepted() -> int:
                for member in members:
                    member.check_alive()
                return len({(p, o) for member in members for p, o, _ in member.accepted()})

            wait_for(
                lambda: accepted() >= RECORDS,
                DEADLINE_S,
                interval=0.1,
                message=lambda: ", ".join(f"{m.name} {len(m.accepted())}" for m in members),
            )
        finally:
            runs = [member.stop() for member in ours]
        runs += [java.stop(), confluent.stop()]
    expected = {(p, r.offset) for p, records in produced.items() for r in records}
    assert exactly_once(runs, expected) == []
    for run in runs:
        assert run.accepted, f"{run.name} accepted nothing"
        assert {n for _, _, n in run.accepted} == {1}, f"{run.name} saw a redelivery in a run without failures"
