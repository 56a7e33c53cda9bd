"""The round-robin assignor (Kafka's ``"roundrobin"``, Java's ``RoundRobinAssignor``).

All partitions of all subscribed topics, sorted by topic then partition, are dealt one at a time to the members
in a circle (``member_sort_key`` order); a member not subscribed to a partition's topic is skipped and the
partition goes to the next member that is. With identical subscriptions counts differ by at most one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from asyncconsumer.assignors.base import GroupMember, PartitionAssignor, RebalanceProtocol, member_sort_key
from asyncconsumer.records import TopicPartition

__all__ = ["RoundRobinAssignor", "round_robin_assign"]


def round_robin_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
) -> dict[str, list[TopicPartition]]:
    """Every member's partitions (sorted); topics missing from ``partitions_per_topic`` are skipped."""
    ordered = sorted(members, key=member_sort_key)
    result: dict[str, list[TopicPartition]] = {member.member_id: [] for member in ordered}
    if not ordered:
        return result
    subscriptions = [frozenset(member.subscription.topics) for member in ordered]
    topics = sorted(set().union(*subscriptions) & partitions_per_topic.keys())
    position = 0  # the member the next partition is offered to first
    for topic in topics:
        for partition in range(partitions_per_topic[topic]):
            while topic not in subscriptions[position]:  # some member subscribes to it, so this stops
                position = (position + 1) % len(ordered)
            result[ordered[position].member_id].append(TopicPartition(topic, partition))
            position = (position + 1) % len(ordered)
    return result


class RoundRobinAssignor(PartitionAssignor):
    """Partitions dealt in a circle over the members; eager only, like Java's."""

    name = "roundrobin"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        return round_robin_assign(partitions_per_topic, members)

    def __repr__(self) -> str:
        return "RoundRobinAssignor()"
