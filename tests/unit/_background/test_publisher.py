"""The snapshot the background publishes once per loop iteration (``_background/publisher.py``): what the caller's
``metrics()`` and ``group_metadata()`` may know, taken from the fetch manager, the network and the group, replaced
whole, with the per-partition mapping copied only when it changed."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import pytest

from asyncconsumer._background.builder import build
from asyncconsumer._background.publisher import SnapshotPublisher
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.snapshot import NO_OUTAGES, BackgroundSnapshot, NodeOutage, Published
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaConnectionError, KafkaError
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.records import TopicPartition
from tests.support.group_context import WiredGroup

T0 = TopicPartition("t", 0)


class Network:
    """What the publisher reads of the network delegate."""

    def __init__(self) -> None:
        self.connection_count = 0
        self.connections_created = 0
        self.connection_errors = 0
        self.error: KafkaError | None = None
        self.outages: Mapping[int, NodeOutage] = NO_OUTAGES

    def last_connection_error(self) -> KafkaError | None:
        return self.error

    def unreachable_nodes(self) -> Mapping[int, NodeOutage]:
        return self.outages


def fetch_manager() -> FetchManager:
    """A consumer's fetch manager, built (never run)."""
    return build(ConsumerConfig.from_kwargs("h:1"), ManualClock()).owned.fetch


def test_without_a_group_the_snapshot_carries_the_fetch_and_network_facts_only() -> None:
    published, network, fetch = Published(), Network(), fetch_manager()
    metadata = fetch._metadata
    publisher = SnapshotPublisher(published, fetch, network, None, metadata)  # type: ignore[arg-type]
    publisher.publish(0)
    assert published.current == BackgroundSnapshot()
    network.connection_count = 2
    network.connections_created, network.connection_errors = 3, 1
    network.error = KafkaConnectionError("cannot connect to broker 1 at h:1: connection refused")
    fetch.latency.add(30)
    fetch.latency.add(10)
    before = published.current
    publisher.publish(1)
    now = published.current
    assert now is not before and before == BackgroundSnapshot()  # replaced whole, never changed in place
    assert (now.connection_count, now.last_connection_error) == (2, str(network.error))
    assert (now.connections_created, now.connection_errors) == (3, 1)
    assert (now.fetch_latency_avg_ms, now.fetch_latency_max_ms) == (20.0, 30)
    assert (now.coordinator_id, now.generation_id, now.member_id, now.rebalances) == (None, -1, "", 0)
    assert (now.rebootstraps, now.rebootstrapping) == (0, False)
    metadata.rebootstrap("every known broker failed")
    publisher.publish(2)
    assert (published.current.rebootstraps, published.current.rebootstrapping) == (1, True)
    assert published.current.unreachable_nodes == {}


def test_the_snapshot_carries_the_unreachable_nodes_while_the_outage_lasts() -> None:
    published, network, fetch = Published(), Network(), fetch_manager()
    publisher = SnapshotPublisher(published, fetch, network, None, fetch._metadata)  # type: ignore[arg-type]
    outage = NodeOutage(host="h", port=1, since_ms=5, failed_at_ms=9, failures=2, last_error="connection refused")
    network.outages = MappingProxyType({2: outage})
    publisher.publish(10)
    assert published.current.unreachable_nodes == {2: outage}
    network.outages = NO_OUTAGES  # it connected again
    publisher.publish(11)
    assert published.current.unreachable_nodes == {}


def test_where_partitions_were_fetched_from_is_copied_only_when_it_changed() -> None:
    published, fetch = Published(), fetch_manager()
    publisher = SnapshotPublisher(published, fetch, Network(), None, fetch._metadata)  # type: ignore[arg-type]
    publisher.publish(0)
    first = published.current.fetched_from
    publisher.publish(1)
    assert published.current.fetched_from is first
    fetch.read_replicas.answered(T0, 2, -1, True, 2)
    publisher.publish(2)
    changed = published.current.fetched_from
    assert changed == {T0: 2} and changed is not first
    assert isinstance(changed, MappingProxyType)
    with pytest.raises(TypeError):
        changed[T0] = 3  # type: ignore[index]
    fetch.read_replicas.answered(T0, 2, -1, True, 3)  # the same node again: no change
    publisher.publish(3)
    assert published.current.fetched_from is changed


def test_with_a_group_the_snapshot_names_the_coordinators_broker_and_the_members_generation() -> None:
    wired = WiredGroup(enable_auto_commit=False)
    published = Published()
    publisher = SnapshotPublisher(published, fetch_manager(), Network(), wired.group, wired.metadata)  # type: ignore[arg-type]
    publisher.publish(0)
    assert (published.current.coordinator_id, published.current.generation_id) == (None, -1)
    wired.join_as_leader(listener=False)
    wired.group.membership.poll(3)  # stable
    publisher.publish(3)
    snapshot = published.current
    assert snapshot.coordinator_id == 1  # the broker's node id, not the coordinator connection's
    assert (snapshot.generation_id, snapshot.member_id, snapshot.group_instance_id) == (5, "m-1", None)
    assert snapshot.rebalances == wired.group.membership.rebalances >= 1
    assert snapshot.rejoin_on_poll is False
    assert (snapshot.commits, snapshot.commit_latency_avg_ms) == (0, None)
    wired.group.commit.commits = 2
    wired.group.commit.commit_latency.add(8)
    publisher.publish(4)
    assert (published.current.commits, published.current.commit_latency_avg_ms) == (2, 8.0)
    assert published.current.commit_latency_max_ms == 8
