"""Rack-aware fetching (KIP-392): which replica each partition is read from, when its leader named a closer one.

With ``client_rack`` set, fetches name the consumer's rack; a leader running a rack-aware replica selector answers a
partition's fetch with no records and the replica to read from instead (``preferred_read_replica``). The partition
is then fetched from that replica under a lease of ``metadata_max_age_ms`` (as Java's ``SubscriptionState`` keeps
it), after which the leader is asked again. A lease is dropped when it runs out, when the partition's leader or
leader epoch changes, when the replica answers the partition with an error (a lagging follower answers
OFFSET_OUT_OF_RANGE: the fetch goes to the leader, no reset), when a fetch to the replica fails, and when the
partition leaves the assignment. A seek keeps it, as in Java.

While a lease stands but its replica is not usable (missing or offline in the metadata, or its connection or last
fetch failed), the partition is fetched from the leader *without* the rack: a leader asked with the rack would keep
naming the replica (until the controller drops it from the ISR, seconds after it died) and answer no records. A
replica whose connection or fetch failed is not read from again until it answers a fetch (as some partition's
leader) or a lease's time has passed; a lost connection counts even with no fetch in flight (a caller that stopped
polling), because a fetch queued for a node that cannot be reached would wait out ``request_timeout_ms``.

Sans-I/O like every manager: the fetch manager asks it where to send each partition and tells it what came back;
it reads only the metadata snapshot it is handed.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer._state.cluster import Cluster
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.records import TopicPartition

log = get_logger("asyncconsumer.fetch")


@attrs.define(frozen=True, slots=True)
class ReadLease:
    """A leader's word that ``replica`` serves the partition, valid until ``expires_ms`` while the leader holds."""

    replica: int
    expires_ms: int
    leader: int
    """The node that named the replica: a lease ends when leadership moves."""
    leader_epoch: int | None
    metadata_asked: bool = False
    """A metadata refresh was asked for because the replica was not online in ours (once per lease)."""


class ReadReplicas:
    """Per partition, the replica its fetches go to instead of the leader (see the module docstring).

    Background thread only; ``metrics()`` sees ``active`` and ``fetched_from`` through the published snapshot.
    """

    def __init__(self, client_rack: str, lease_ms: int, metadata: MetadataManager) -> None:
        self._rack = client_rack
        self._lease_ms = lease_ms
        self._metadata = metadata
        self._leases: dict[TopicPartition, ReadLease] = {}
        self._unreachable: dict[int, int] = {}
        """Node -> until when it is not read from as a replica, after a fetch to it failed."""
        self._lost: set[int] = set()
        """Nodes whose connection closed since the last ``select`` (which moves them to ``_unreachable``)."""
        self.fetched_from: dict[TopicPartition, int] = {}
        """Partition -> the node whose fetch last brought it records."""
        self.fetched_from_changes = 0
        """Counts changes to ``fetched_from``, so a snapshot copies it only when it changed."""

    def read_replica(self, tp: TopicPartition, now_ms: int) -> int | None:
        """The replica ``tp`` is fetched from instead of its leader now; None: from its leader."""
        lease = self._leases.get(tp)
        cluster = self._metadata.cluster
        if lease is None or not self._current(lease, tp, cluster.leader_for(tp), cluster, now_ms):
            return None
        return lease.replica if self._usable(lease, tp, cluster, now_ms) else None

    def active(self, now_ms: int) -> dict[TopicPartition, int]:
        """Every partition read from a replica now, and the replica (empty unless a leader named one)."""
        found = {tp: self.read_replica(tp, now_ms) for tp in self._leases}
        return {tp: replica for tp, replica in found.items() if replica is not None}

    def any_leases(self, now_ms: int) -> bool:
        """Once per fetch round: False when no partition is read from a replica, so every one is fetched from its
        leader and ``select`` need not be asked (1,024 partitions make 1,024 calls a round)."""
        self._note_lost(now_ms)
        return bool(self._leases)

    def _note_lost(self, now_ms: int) -> None:
        if self._lost:
            for node in self._lost:
                self._unreachable[node] = now_ms + self._lease_ms
            self._lost.clear()

    def select(self, tp: TopicPartition, leader: int, cluster: Cluster, now_ms: int) -> int:
        """The node to fetch ``tp`` from now: its usable read replica, else ``leader``."""
        self._note_lost(now_ms)
        lease = self._leases.get(tp)
        if lease is None:
            return leader
        if not self._current(lease, tp, leader, cluster, now_ms):
            self._drop(tp, "expired" if now_ms > lease.expires_ms else "leader_changed")
            return leader
        if not self._usable(lease, tp, cluster, now_ms):
            if not lease.metadata_asked and not _online(cluster, tp, lease.replica):
                self._metadata.request_update()  # the metadata may be older than the leader's word
                self._leases[tp] = attrs.evolve(lease, metadata_asked=True)
            return leader
        return lease.replica

    def rack_id(self, partitions: Iterable[TopicPartition], now_ms: int) -> str:
        """The rack to name in a fetch of ``partitions``: none when one of them is fetched from its leader only
        because its read replica is not usable, so the leader serves it instead of naming that replica again."""
        if not self._leases:
            return self._rack
        cluster = self._metadata.cluster
        for tp in partitions:
            lease = self._leases.get(tp)
            if lease is not None and not self._usable(lease, tp, cluster, now_ms):
                return ""
        return self._rack

    def answered(self, tp: TopicPartition, node: int, preferred_read_replica: int, records: bool, now_ms: int) -> None:
        """A fetch of ``tp`` from ``node`` succeeded (with records or not) and named this read replica (-1: none)."""
        self._unreachable.pop(node, None)
        self._lost.discard(node)
        if records and self.fetched_from.get(tp) != node:
            self.fetched_from[tp] = node
            self.fetched_from_changes += 1
        if preferred_read_replica < 0 or preferred_read_replica == node:
            return
        lease = self._leases.get(tp)
        if lease is not None and lease.replica == preferred_read_replica and lease.leader == node:
            return  # the same word again keeps the lease's end, as Java's does
        expires = now_ms + self._lease_ms
        self._leases[tp] = ReadLease(preferred_read_replica, expires, node, self._metadata.cluster.leader_epoch(tp))
        log.debug("fetch.read_replica", partition=str(tp), replica=preferred_read_replica, leader=node, until=expires)

    def partition_failed(self, tp: TopicPartition, node: int) -> bool:
        """``node`` answered ``tp`` with an error: drops the lease; True when ``node`` was its read replica."""
        lease = self._leases.get(tp)
        if lease is None:
            return False
        self._drop(tp, "partition_error")
        return lease.replica == node

    def node_failed(self, node: int, partitions: Iterable[TopicPartition], now_ms: int) -> None:
        """A fetch to ``node`` failed (connection lost, timeout): it is not read from as a replica for a while, and
        the leases of the partitions it was fetching end."""
        self._unreachable[node] = now_ms + self._lease_ms
        for tp in partitions:
            lease = self._leases.get(tp)
            if lease is not None and lease.replica == node:
                self._drop(tp, "fetch_failed")

    def disconnected(self, node: int) -> None:
        """The network closed its connection to ``node``, or could not make one (called between polls)."""
        self._lost.add(node)

    def retain(self, assigned: Iterable[TopicPartition]) -> None:
        """Forgets partitions no longer assigned."""
        keep = set(assigned)
        self._leases = {tp: lease for tp, lease in self._leases.items() if tp in keep}
        kept = {tp: node for tp, node in self.fetched_from.items() if tp in keep}
        if len(kept) != len(self.fetched_from):
            self.fetched_from = kept
            self.fetched_from_changes += 1

    @staticmethod
    def _current(lease: ReadLease, tp: TopicPartition, leader: int | None, cluster: Cluster, now_ms: int) -> bool:
        """The lease has not run out and the leader that granted it still leads, in the same epoch."""
        return now_ms <= lease.expires_ms and lease.leader == leader and lease.leader_epoch == cluster.leader_epoch(tp)

    def _usable(self, lease: ReadLease, tp: TopicPartition, cluster: Cluster, now_ms: int) -> bool:
        """The replica is online in the metadata and its connection or a fetch to it has not failed lately."""
        replica = lease.replica
        return (
            replica not in self._lost and self._unreachable.get(replica, -1) <= now_ms and _online(cluster, tp, replica)
        )

    def _drop(self, tp: TopicPartition, reason: str) -> None:
        lease = self._leases.pop(tp)
        log.debug("fetch.read_replica_cleared", partition=str(tp), replica=lease.replica, reason=reason)


def _online(cluster: Cluster, tp: TopicPartition, node: int) -> bool:
    """The node is in the metadata, a replica of ``tp`` and not offline (Java's ``Cluster.nodeIfOnline``)."""
    topic = cluster.topics.get(tp.topic)
    part = topic.partitions.get(tp.partition) if topic is not None else None
    return part is not None and node in cluster.brokers and node in part.replicas and node not in part.offline_replicas
