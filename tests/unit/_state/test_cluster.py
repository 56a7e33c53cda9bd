"""The metadata snapshot (``_state/cluster.py``): a partition's leader only when it is a known broker, and its
leader epoch."""

from __future__ import annotations

import uuid

import attrs
import pytest

from asyncconsumer._state.cluster import Broker, Cluster, TopicInfo
from asyncconsumer.records import PartitionInfo, TopicPartition


def cluster() -> Cluster:
    partitions = {
        0: PartitionInfo("t", 0, 1, (1, 2), (1, 2), leader_epoch=7),
        1: PartitionInfo("t", 1, -1, (1, 2), (2,)),  # offline: no leader
        2: PartitionInfo("t", 2, 3, (3,), (3,)),  # led by a broker the metadata did not list
    }
    return Cluster(
        brokers={1: Broker(1, "a", 9092, "rack-1"), 2: Broker(2, "b", 9092)},
        topics={"t": TopicInfo("t", 0, partitions, uuid.UUID(int=9))},
        cluster_id="c",
        controller_id=1,
    )


def test_the_leader_is_known_only_when_it_is_a_listed_broker() -> None:
    snapshot = cluster()
    assert snapshot.leader_for(TopicPartition("t", 0)) == 1
    assert snapshot.leader_for(TopicPartition("t", 1)) is None
    assert snapshot.leader_for(TopicPartition("t", 2)) is None
    assert snapshot.leader_for(TopicPartition("t", 9)) is None
    assert snapshot.leader_for(TopicPartition("other", 0)) is None


def test_the_leader_epoch_is_the_partitions_or_none() -> None:
    snapshot = cluster()
    assert snapshot.leader_epoch(TopicPartition("t", 0)) == 7
    assert snapshot.leader_epoch(TopicPartition("t", 2)) is None
    assert snapshot.leader_epoch(TopicPartition("t", 9)) is None
    assert snapshot.leader_epoch(TopicPartition("other", 0)) is None


def test_an_empty_snapshot_knows_nothing_and_no_snapshot_changes() -> None:
    empty = Cluster()
    assert (empty.brokers, empty.topics, empty.controller_id, empty.unknown_topics) == ({}, {}, -1, frozenset())
    assert empty.leader_for(TopicPartition("t", 0)) is None
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        cluster().cluster_id = "other"  # type: ignore[misc]


def test_topics_compare_by_name_error_and_id_not_by_their_partitions() -> None:
    one = TopicInfo("t", 0, {0: PartitionInfo("t", 0, 1, (1,), (1,))}, uuid.UUID(int=1))
    assert one == TopicInfo("t", 0, {}, uuid.UUID(int=1))
    assert one != TopicInfo("t", 0, {}, uuid.UUID(int=2))
