"""Publishes what the caller may know of the background: one immutable snapshot per loop iteration.

The caller's ``metrics()``, ``group_metadata()`` and ``poll`` read ``Published.current`` and nothing the background
owns. Building a snapshot costs a few attribute reads; the one mapping that grows with the assignment
(``fetched_from``) is copied only when it changed.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from asyncconsumer._state.snapshot import NO_PARTITIONS, BackgroundSnapshot, Published, PublishedShare, ShareSnapshot
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.share_consume import ShareConsumeManager
from asyncconsumer.managers.share_membership import ShareMembershipManager
from asyncconsumer.network.delegate import NetworkClientDelegate

if TYPE_CHECKING:
    from asyncconsumer._background.group import ConsumerGroup  # loaded only by consumers with a group


class SnapshotPublisher:
    """Background thread only: ``publish`` replaces ``published.current`` with what the parts hold now."""

    def __init__(
        self,
        published: Published,
        fetch: FetchManager,
        delegate: NetworkClientDelegate,
        group: ConsumerGroup | None,
        metadata: MetadataManager,
    ) -> None:
        self._published = published
        self._fetch = fetch
        self._metadata = metadata
        self._delegate = delegate
        self._group = group
        self._fetched_from = NO_PARTITIONS
        self._fetched_from_seen = 0

    def publish(self, now_ms: int) -> None:
        fetch = self._fetch
        replicas = fetch.read_replicas
        if replicas.fetched_from_changes != self._fetched_from_seen:
            self._fetched_from_seen = replicas.fetched_from_changes
            self._fetched_from = MappingProxyType(dict(replicas.fetched_from))
        latency_avg, latency_max = fetch.latency.summary()
        sessions = fetch.sessions
        last_error = self._delegate.last_connection_error()
        group = self._group
        coordinator_id: int | None = None
        last_heartbeat_ms: int | None = None
        rebalances = 0
        generation_id, member_id, instance_id = -1, "", None
        rejoin_on_poll = False
        commit_avg: float | None = None
        commit_max: int | None = None
        commits = 0
        if group is not None:
            commit_avg, commit_max = group.commit.commit_latency.summary()
            commits = group.commit.commits
            coordinator = group.coordinator.coordinator
            coordinator_id = None if coordinator is None else coordinator.broker_node_id
            last_heartbeat_ms = group.heartbeat.last_heartbeat_ms
            membership = group.membership
            rebalances = membership.rebalances
            rejoin_on_poll = membership.rejoin_on_poll
            generation = membership.generation()
            generation_id, member_id, instance_id = (
                generation.generation_id,
                generation.member_id,
                generation.group_instance_id,
            )
        self._published.current = BackgroundSnapshot(
            fetch_latency_avg_ms=latency_avg,
            fetch_latency_max_ms=latency_max,
            fetch_requests_in_flight=fetch.nodes_in_flight,
            fetch_requests_full=sessions.full_fetches,
            fetch_requests_incremental=sessions.incremental_fetches,
            fetch_session_errors=sessions.session_errors,
            read_replicas=MappingProxyType(active) if (active := replicas.active(now_ms)) else NO_PARTITIONS,
            fetched_from=self._fetched_from,
            connection_count=self._delegate.connection_count,
            last_connection_error=None if last_error is None else str(last_error),
            connections_created=self._delegate.connections_created,
            connection_errors=self._delegate.connection_errors,
            unreachable_nodes=self._delegate.unreachable_nodes(),
            commit_latency_avg_ms=commit_avg,
            commit_latency_max_ms=commit_max,
            commits=commits,
            rebootstraps=self._metadata.rebootstraps,
            rebootstrapping=self._metadata.rebootstrapping,
            coordinator_id=coordinator_id,
            last_heartbeat_ms=last_heartbeat_ms,
            rebalances=rebalances,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=instance_id,
            rejoin_on_poll=rejoin_on_poll,
        )


class ShareSnapshotPublisher:
    """Background thread only: a share consumer's ``publish`` (``ShareSnapshot``), as ``SnapshotPublisher``'s."""

    def __init__(
        self,
        published: PublishedShare,
        coordinator: CoordinatorManager,
        membership: ShareMembershipManager,
        consume: ShareConsumeManager,
        delegate: NetworkClientDelegate,
    ) -> None:
        self._published = published
        self._coordinator = coordinator
        self._membership = membership
        self._consume = consume
        self._delegate = delegate

    def publish(self, now_ms: int) -> None:
        found = self._coordinator.coordinator
        last_error = self._delegate.last_connection_error()
        membership, consume, delegate = self._membership, self._consume, self._delegate
        self._published.current = ShareSnapshot(
            member_id=membership.member_id,
            member_epoch=membership.member_epoch,
            member_state=membership.state.value,
            assignment=membership.assignment,
            coordinator_id=None if found is None else found.broker_node_id,
            last_heartbeat_ms=membership.last_heartbeat_ms,
            acquisition_lock_timeout_ms=consume.acquisition_lock_timeout_ms,
            share_fetches=consume.fetches,
            records_acquired=consume.records_acquired,
            acknowledgements_sent=consume.acknowledgements_sent,
            acknowledgement_errors=consume.acknowledgement_errors,
            connection_count=delegate.connection_count,
            connections_created=delegate.connections_created,
            last_connection_error=None if last_error is None else str(last_error),
            unreachable_nodes=delegate.unreachable_nodes(),
        )
