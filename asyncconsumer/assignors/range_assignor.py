"""The range assignor (Kafka's ``"range"``, Java's ``RangeAssignor``): contiguous ranges per topic.

For each topic, the members subscribed to it are ordered (``member_sort_key``: static members by instance id,
then by member id) and each takes a contiguous block of partitions; the first ``partitions % members`` members
take one extra. Members subscribed to the same topics therefore get the same partition numbers of each topic,
which is what joins over co-partitioned topics need; the price is imbalance across topics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from asyncconsumer.assignors.base import GroupMember, PartitionAssignor, RebalanceProtocol, member_sort_key
from asyncconsumer.records import TopicPartition

__all__ = ["RangeAssignor", "range_assign"]


def range_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
) -> dict[str, list[TopicPartition]]:
    """Every member's partitions (sorted); topics missing from ``partitions_per_topic`` are skipped."""
    ordered = sorted(members, key=member_sort_key)
    result: dict[str, list[TopicPartition]] = {member.member_id: [] for member in ordered}
    topics = sorted({topic for member in ordered for topic in member.subscription.topics})
    for topic in topics:
        count = partitions_per_topic.get(topic)
        if count is None:
            continue
        consumers = [member.member_id for member in ordered if topic in member.subscription.topics]
        per_member, extra = divmod(count, len(consumers))
        start = 0
        for index, member_id in enumerate(consumers):
            length = per_member + (1 if index < extra else 0)
            result[member_id].extend(TopicPartition(topic, p) for p in range(start, start + length))
            start += length
    return result


class RangeAssignor(PartitionAssignor):
    """Contiguous per-topic ranges; eager only, like Java's (it ignores owned partitions)."""

    name = "range"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        return range_assign(partitions_per_topic, members)

    def __repr__(self) -> str:
        return "RangeAssignor()"
