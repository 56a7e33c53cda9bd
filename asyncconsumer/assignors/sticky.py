"""The cooperative sticky assignor (Kafka's ``"cooperative-sticky"``, Java's ``CooperativeStickyAssignor``).

Sticky: members keep the partitions they own (``subscription.owned_partitions``) as long as the assignment
stays balanced, so a rebalance moves as few partitions as it can. Cooperative: a partition that must move to
another member is first only taken away from its owner; nobody gets it in that rebalance. The owner revokes it
and rejoins, and in the follow-up rebalance it is unowned and is given out. A partition never has two
consumers at once, and members keep consuming everything that does not move while the group rebalances.

How the leader computes it (``sticky_assign``, then ``cooperative_sticky_assign``):

1. Ownership. Each member's claims count only for existing partitions. When several members claim one
   partition, the claim with the highest generation wins (the others are stale: those members missed a
   rebalance); claims tied at the highest generation cancel, and the partition counts as unowned. A winning
   claim on a topic its member no longer subscribes to is dropped. The generation is
   ``subscription.generation_id`` or, from members on subscription versions before 2, the int32 in the user
   data (Java's format, which ``subscription_user_data`` writes too).
2. Every member keeps its valid owned partitions; the unowned ones go, those with the fewest eligible members
   first, each to the eligible member with the fewest partitions.
3. Balance: while some member A has at least two partitions more than a member B it can pass work to through
   a chain of members (A gives a partition of topic t to a member subscribed to t, which gives one of another
   topic on, and so on to B), shift one partition along the shortest such chain. Each hop prefers a partition
   its giver did not own before this rebalance, so shifting costs as few revocations as possible. At the end
   no such chain exists; when every member subscribes to the same topics, counts differ by at most one.
4. Cooperative adjustment (Java's ``adjustAssignment``): a partition given to a member that did not claim it,
   while another member did, is removed from the result.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

from asyncconsumer.assignors.base import (
    GroupMember,
    PartitionAssignor,
    RebalanceProtocol,
    from_wire,
    member_sort_key,
)
from asyncconsumer.protocol.messages.consumer_protocol import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from asyncconsumer.records import TopicPartition

__all__ = [
    "DEFAULT_GENERATION",
    "CooperativeStickyAssignor",
    "cooperative_sticky_assign",
    "member_generation",
    "resolve_owners",
    "sticky_assign",
]

DEFAULT_GENERATION = -1
"""The generation of a member that has none (it never got an assignment, or did not say)."""

_GENERATION = struct.Struct(">i")


def member_generation(subscription: ConsumerProtocolSubscription) -> int:
    """The generation a member's owned partitions belong to: the v2+ field, else Java's int32 user data."""
    if subscription.generation_id >= 0:
        return subscription.generation_id
    data = subscription.user_data
    if data is not None and len(data) >= _GENERATION.size:
        (generation,) = _GENERATION.unpack_from(data)
        return int(generation)
    return DEFAULT_GENERATION


def resolve_owners(
    partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
) -> dict[TopicPartition, str]:
    """The valid owner of each owned partition (step 1 of the module docstring); unowned partitions are absent."""
    best: dict[TopicPartition, tuple[int, list[str]]] = {}
    for member in sorted(members, key=member_sort_key):
        generation = member_generation(member.subscription)
        for tp in dict.fromkeys(from_wire(member.subscription.owned_partitions)):
            count = partitions_per_topic.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                continue
            current = best.get(tp)
            if current is None or generation > current[0]:
                best[tp] = (generation, [member.member_id])
            elif generation == current[0]:
                current[1].append(member.member_id)
    topics = {member.member_id: frozenset(member.subscription.topics) for member in members}
    return {tp: ids[0] for tp, (_, ids) in best.items() if len(ids) == 1 and tp.topic in topics[ids[0]]}


class _Balancer:
    """The mutable state of one ``sticky_assign`` run: who holds what, and the moves that balance it."""

    def __init__(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember], owners: dict[TopicPartition, str]
    ) -> None:
        ordered = sorted(members, key=member_sort_key)
        self.ids = [member.member_id for member in ordered]
        self.rank = {member_id: index for index, member_id in enumerate(self.ids)}
        self.owners = owners
        self.members_of: dict[str, list[str]] = {}
        for member in ordered:
            for topic in sorted(set(member.subscription.topics) & partitions_per_topic.keys()):
                self.members_of.setdefault(topic, []).append(member.member_id)
        self.held: dict[str, dict[str, set[int]]] = {member_id: {} for member_id in self.ids}
        self.count = dict.fromkeys(self.ids, 0)
        for tp, owner in sorted(owners.items()):
            self._give(owner, tp)
        unowned = [
            TopicPartition(topic, partition)
            for topic in sorted(self.members_of)
            for partition in range(partitions_per_topic[topic])
            if TopicPartition(topic, partition) not in owners
        ]
        unowned.sort(key=lambda tp: (len(self.members_of[tp.topic]), tp))
        for tp in unowned:
            self._give(min(self.members_of[tp.topic], key=lambda m: (self.count[m], self.rank[m])), tp)

    def _give(self, member_id: str, tp: TopicPartition) -> None:
        self.held[member_id].setdefault(tp.topic, set()).add(tp.partition)
        self.count[member_id] += 1

    def _take(self, giver: str, topic: str, receiver: str) -> None:
        """Move one of ``giver``'s partitions of ``topic`` to ``receiver``.

        Prefers one the receiver owned, then one the giver did not own (neither needs a revocation), then the
        highest-numbered, so a shrinking member keeps its lowest partitions.
        """

        def cost(partition: int) -> tuple[bool, bool, int]:
            owner = self.owners.get(TopicPartition(topic, partition))
            return (owner != receiver, owner == giver, -partition)

        partitions = self.held[giver][topic]
        partition = min(partitions, key=cost)
        partitions.remove(partition)
        if not partitions:
            del self.held[giver][topic]
        self.count[giver] -= 1
        self._give(receiver, TopicPartition(topic, partition))

    def _improving_chain(self, start: str) -> list[tuple[str, str, str]] | None:
        """The shortest chain of (giver, topic, receiver) hops from ``start`` to a member with 2+ fewer."""
        limit = self.count[start] - 2
        parent: dict[str, tuple[str, str]] = {}
        visited = {start}
        frontier = [start]
        while frontier:
            reached: list[str] = []
            for giver in frontier:
                for topic in sorted(self.held[giver]):
                    for receiver in self.members_of[topic]:
                        if receiver not in visited:
                            visited.add(receiver)
                            parent[receiver] = (giver, topic)
                            reached.append(receiver)
            candidates = [member_id for member_id in reached if self.count[member_id] <= limit]
            if candidates:
                node = min(candidates, key=lambda m: (self.count[m], self.rank[m]))
                chain: list[tuple[str, str, str]] = []
                while node != start:
                    giver, topic = parent[node]
                    chain.append((giver, topic, node))
                    node = giver
                return chain  # from the receiving end back to ``start``
            frontier = reached
        return None

    def balance(self) -> None:
        """Shift partitions along improving chains until there are none."""
        while True:
            low = min(self.count.values(), default=0)
            for member_id in sorted(self.ids, key=lambda m: (-self.count[m], self.rank[m])):
                if self.count[member_id] - low < 2:
                    return
                chain = self._improving_chain(member_id)
                if chain is not None:
                    for giver, topic, receiver in chain:  # receiving end first: nobody passes on what it just got
                        self._take(giver, topic, receiver)
                    break
            else:
                return

    def result(self) -> dict[str, list[TopicPartition]]:
        return {
            member_id: [
                TopicPartition(topic, partition)
                for topic in sorted(self.held[member_id])
                for partition in sorted(self.held[member_id][topic])
            ]
            for member_id in self.ids
        }


def sticky_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
) -> dict[str, list[TopicPartition]]:
    """The balanced, sticky target assignment (steps 1-3), before the cooperative adjustment.

    Every partition of a subscribed, existing topic goes to exactly one member subscribed to it.
    """
    balancer = _Balancer(partitions_per_topic, members, resolve_owners(partitions_per_topic, members))
    balancer.balance()
    return balancer.result()


def cooperative_sticky_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
) -> dict[str, list[TopicPartition]]:
    """``sticky_assign`` without the partitions that must be revoked by another member first (step 4)."""
    target = sticky_assign(partitions_per_topic, members)
    claimants: dict[TopicPartition, set[str]] = {}
    for member in members:
        for tp in from_wire(member.subscription.owned_partitions):
            claimants.setdefault(tp, set()).add(member.member_id)
    return {
        member_id: [tp for tp in partitions if member_id in claimants.get(tp, {member_id})]
        for member_id, partitions in target.items()
    }


class CooperativeStickyAssignor(PartitionAssignor):
    """Sticky and cooperative; also correct under EAGER, where members own nothing when they join.

    Remembers the generation of its last assignment and sends it as subscription user data, like Java, so that
    leaders reading subscription versions before 2 (no generation field) can still rank conflicting claims.
    """

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    @property
    def generation(self) -> int:
        """The generation of the last assignment this member received."""
        return self._generation

    def subscription_user_data(self, topics: frozenset[str]) -> bytes | None:
        return _GENERATION.pack(self._generation)

    def on_assignment(self, assignment: ConsumerProtocolAssignment, generation: int) -> None:
        self._generation = generation

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        return cooperative_sticky_assign(partitions_per_topic, members)

    def __repr__(self) -> str:
        return f"CooperativeStickyAssignor(generation={self._generation})"
