"""An immutable snapshot of cluster metadata; replaced whole on every metadata response.

The metadata manager (background) publishes a new snapshot by swapping one reference; any thread may read the
snapshot it got, which never changes under it.
"""

from __future__ import annotations

import uuid

import attrs

from asyncconsumer.records import PartitionInfo, TopicPartition


@attrs.define(frozen=True, slots=True)
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@attrs.define(frozen=True, slots=True)
class TopicInfo:
    """One topic as metadata described it; ``error_code`` non-zero means the broker reported a problem."""

    name: str
    error_code: int
    partitions: dict[int, PartitionInfo] = attrs.field(factory=dict, eq=False)
    topic_id: uuid.UUID | None = None
    is_internal: bool = False


@attrs.define(frozen=True, slots=True)
class Cluster:
    brokers: dict[int, Broker] = attrs.field(factory=dict)
    topics: dict[str, TopicInfo] = attrs.field(factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1
    unknown_topics: frozenset[str] = frozenset()
    """Topics the last metadata response said do not exist."""

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The leader's node id, or None when unknown or offline."""
        topic = self.topics.get(tp.topic)
        if topic is None:
            return None
        part = topic.partitions.get(tp.partition)
        if part is None or part.leader < 0 or part.leader not in self.brokers:
            return None
        return part.leader

    def leader_epoch(self, tp: TopicPartition) -> int | None:
        topic = self.topics.get(tp.topic)
        part = topic.partitions.get(tp.partition) if topic else None
        return None if part is None else part.leader_epoch
