"""Java's KafkaShareConsumer and librdkafka's ShareConsumer in one share group (KIP-932) on Apache Kafka: with both
members in the group before a record is written, 2,000 records are accepted exactly once between them, each at its
first delivery, in either client's acknowledgement mode: on 4 partitions (Kafka 4.4's simple assignor gives each
member 2 of its own) and on 1 partition, which both members are assigned and read from at once. The peers and the
checks are the ones later tests mix our share consumer with (``tests/support/share_peers.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
        members = wait_for_share_members(kafka, group, 2, peers)
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
