"""The assignor interface and the leader's step, with no assignor in it: ``PartitionAssignor`` (Java's
``ConsumerPartitionAssignor``), the wire helpers, the choice of strategy and rebalance protocol, and
``perform_assignment``, which runs an assignor and checks its output. Pure: no I/O, no clocks, no randomness.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from asyncconsumer.errors import ConfigError, IllegalStateError, KafkaError
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from asyncconsumer.protocol.messages.consumer_protocol import TopicPartition as WireTopicPartition
from asyncconsumer.records import TopicPartition


class RebalanceProtocol(enum.Enum):
    """How members give up partitions in a rebalance (Java's ``RebalanceProtocol``).

    EAGER: every member revokes all its partitions before joining, so the leader sees no owned partitions.
    COOPERATIVE: members keep their partitions while rejoining and only revoke what the new assignment takes
    away; a partition never moves directly between two members in one rebalance.
    """

    EAGER = 0
    COOPERATIVE = 1


@attrs.define(frozen=True, slots=True)
class GroupMember:
    """One member of the group as the leader sees it: ids and the subscription it sent in JoinGroup."""

    member_id: str
    group_instance_id: str | None
    subscription: ConsumerProtocolSubscription


@attrs.define(frozen=True, slots=True)
class GroupAssignment:
    """The leader's result: the partitions of every member (sorted) and the assignor user data for each."""

    partitions: Mapping[str, tuple[TopicPartition, ...]]
    user_data: Mapping[str, bytes | None] = attrs.field(factory=dict)

    def assignment_for(self, member_id: str) -> ConsumerProtocolAssignment:
        """The wire assignment for one member; a member the result does not name gets nothing."""
        return ConsumerProtocolAssignment(
            assigned_partitions=to_wire(self.partitions.get(member_id, ())), user_data=self.user_data.get(member_id)
        )

    def to_assignments(self) -> dict[str, ConsumerProtocolAssignment]:
        """Every member's wire assignment, ready to encode into SyncGroup."""
        return {member_id: self.assignment_for(member_id) for member_id in self.partitions}


class NoCommonAssignorError(KafkaError):
    """The group's members share no partition assignment strategy, so no assignor can be chosen."""

    def __init__(self, members_protocols: Sequence[Sequence[str]], member_ids: Sequence[str] | None = None) -> None:
        ids = list(member_ids) if member_ids is not None else [f"member {i}" for i, _ in enumerate(members_protocols)]
        described = "; ".join(
            f"{member_id}: [{', '.join(protocols)}]"
            for member_id, protocols in zip(ids, members_protocols, strict=True)
        )
        super().__init__(f"the group members share no partition assignment strategy ({described})")
        self.members_protocols = tuple(tuple(protocols) for protocols in members_protocols)
        self.member_ids = tuple(ids)


@runtime_checkable
class PartitionAssignor(Protocol):
    """What a partition assignor implements; built-in and user-defined assignors alike.

    Subclass this protocol to inherit the defaults of ``supported_protocols``, ``subscription_user_data`` and
    ``on_assignment``; an object that merely has the same members works too. Contract:

    - ``name`` goes on the wire in JoinGroup: every member of the group must use the same name for the same
      algorithm, including members written in other languages (Java's ``RangeAssignor`` is ``"range"``).
    - ``assign`` runs only on the leader. It must be deterministic and must not do I/O; it gets every member's
      subscription and returns ``member_id -> partitions``. A partition may go to at most one member, only to a
      member that is in ``members`` and only if it exists in ``partitions_per_topic``; ``perform_assignment``
      enforces this. Members left out get nothing.
    - Under COOPERATIVE, a partition that a member lists in ``subscription.owned_partitions`` must not be given
      to another member in the same rebalance: leave it out, so its owner revokes it and rejoins, and give it
      out in the follow-up rebalance.
    - ``subscription_user_data`` and ``on_assignment`` run on every member: the first fills
      ``subscription.user_data`` before each JoinGroup, the second receives the member's new assignment and the
      generation after each SyncGroup (use it to remember what ``subscription_user_data`` should say next).
    """

    name: str
    """The strategy name sent in JoinGroup; the group agrees on an assignor by this name."""

    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)
    """The rebalance protocols this assignor is correct under; the consumer uses the newest one all its
    configured assignors support."""

    def subscription_user_data(self, topics: frozenset[str]) -> bytes | None:
        """Opaque bytes for ``subscription.user_data``, which the leader's ``assign`` reads; default none."""
        return None

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        """The partitions of each member, given the partition count of every subscribed topic that exists.

        Topics a member subscribes to that are missing from ``partitions_per_topic`` do not exist (yet); their
        partitions cannot be assigned.
        """
        ...

    def on_assignment(self, assignment: ConsumerProtocolAssignment, generation: int) -> None:
        """Called on every member with its new assignment and the group generation; default does nothing."""
        return None


def member_sort_key(member: GroupMember) -> tuple[int, str, str]:
    """Java's member order: static members (with a group instance id) first, by instance id; then by member id.

    Ordering by instance id keeps a static member's partitions across restarts, which change its member id.
    """
    if member.group_instance_id is not None:
        return (0, member.group_instance_id, member.member_id)
    return (1, member.member_id, "")


def to_wire(partitions: Iterable[TopicPartition]) -> tuple[WireTopicPartition, ...]:
    """Topic-partitions grouped per topic in the wire shape, topics and partitions sorted, duplicates dropped."""
    by_topic: dict[str, set[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, set()).add(tp.partition)
    return tuple(
        WireTopicPartition(topic=topic, partitions=tuple(sorted(by_topic[topic]))) for topic in sorted(by_topic)
    )


def from_wire(wire: Iterable[WireTopicPartition]) -> list[TopicPartition]:
    """The topic-partitions of the wire's per-topic groups, in wire order."""
    return [TopicPartition(group.topic, partition) for group in wire for partition in group.partitions]


def subscribed_topics(members: Iterable[GroupMember]) -> set[str]:
    """Every topic some member subscribes to."""
    return {topic for member in members for topic in member.subscription.topics}


# --- choosing the assignor and the rebalance protocol --------------------------------------------------------


def choose_protocol(members_protocols: Sequence[Sequence[str]], member_ids: Sequence[str] | None = None) -> str:
    """The strategy the group uses, chosen the way Kafka's group coordinator chooses it.

    Only strategies every member supports are candidates; each member votes for its most preferred candidate
    and the most votes win, ties going to the first member's (the leader's) preference order. When all members
    list the same strategies in the same order, that is simply the first one. ``member_ids`` (one per entry)
    only names the members in the error.

    Raises ``NoCommonAssignorError`` when the members share no strategy, ``ValueError`` when there are none.
    """
    if not members_protocols:
        raise ValueError("choose_protocol needs at least one member's strategies")
    if member_ids is not None and len(member_ids) != len(members_protocols):
        raise ValueError(f"{len(member_ids)} member ids for {len(members_protocols)} members")
    common = set(members_protocols[0])
    for protocols in members_protocols[1:]:
        common &= set(protocols)
    if not common:
        raise NoCommonAssignorError(members_protocols, member_ids)
    votes = Counter(next(p for p in protocols if p in common) for protocols in members_protocols)
    leader_order = [p for p in dict.fromkeys(members_protocols[0]) if p in common]
    return max(leader_order, key=lambda p: (votes[p], -leader_order.index(p)))


def rebalance_protocol(assignors: Sequence[PartitionAssignor]) -> RebalanceProtocol:
    """The newest rebalance protocol every configured assignor supports (Java's rule).

    Raises ``ConfigError`` when there are no assignors or they have no protocol in common (mixing ``range``,
    eager only, with an assignor that is cooperative only).
    """
    if not assignors:
        raise ConfigError("partition_assignment_strategy", "at least one assignor is required")
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(assignor.supported_protocols)
    if not common:
        described = ", ".join(
            f"{a.name} ({'/'.join(p.name for p in a.supported_protocols) or 'none'})" for a in assignors
        )
        raise ConfigError("partition_assignment_strategy", f"the assignors share no rebalance protocol: {described}")
    return max(common, key=lambda p: p.value)


# --- running an assignor as the leader --------------------------------------------------------------------


def perform_assignment(
    assignor: PartitionAssignor,
    partitions_per_topic: Mapping[str, int],
    members: Sequence[GroupMember],
    protocol: RebalanceProtocol = RebalanceProtocol.EAGER,
) -> GroupAssignment:
    """Run ``assignor`` as the leader and check its output, so a buggy assignor fails here, not in the group.

    Every member gets an entry (possibly empty), partitions sorted. Raises ``IllegalStateError`` when the
    assignor names an unknown member, a partition that does not exist, or one partition twice, and (under
    COOPERATIVE) when it gives a member a partition that member did not own but another member did, like Java's
    ``validateCooperativeAssignment``: that partition has to be revoked first.
    """
    ids = [member.member_id for member in members]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate member ids in {ids}")
    raw = assignor.assign(partitions_per_topic, members)
    known = set(ids)
    owner: dict[TopicPartition, str] = {}
    for member_id, partitions in raw.items():
        if member_id not in known:
            raise IllegalStateError(f"assignor {assignor.name!r} assigned partitions to unknown member {member_id!r}")
        for tp in partitions:
            count = partitions_per_topic.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                raise IllegalStateError(f"assignor {assignor.name!r} assigned {tp}, which does not exist")
            if tp in owner:
                raise IllegalStateError(f"assignor {assignor.name!r} assigned {tp} more than once")
            owner[tp] = member_id
    if protocol is RebalanceProtocol.COOPERATIVE:
        owned = {member.member_id: set(from_wire(member.subscription.owned_partitions)) for member in members}
        for member in members:
            for tp in owned[member.member_id]:
                new_owner = owner.get(tp)
                if new_owner is not None and new_owner != member.member_id and tp not in owned[new_owner]:
                    raise IllegalStateError(
                        f"assignor {assignor.name!r} moved {tp} from {member.member_id!r} to {new_owner!r} in one "
                        "cooperative rebalance; it must be revoked first"
                    )
    result = {member_id: tuple(sorted(raw.get(member_id, ()))) for member_id in ids}
    return GroupAssignment(result, dict.fromkeys(ids))
