"""The classic group protocol as a kind of membership: its managers, and what the member does for the group as leader.

On the classic protocol the members choose the assignment: each JoinGroup offers the configured assignors with the
member's subscription, the leader runs the chosen assignor over every member's subscription, and a leader whose
assignment no longer fits the metadata rejoins (Java's ``assignmentSnapshot``). Pattern subscriptions are matched
by the member on every metadata refresh (``coordinator_matches_patterns`` is False).
"""

from __future__ import annotations

from collections.abc import Sequence

from asyncconsumer._logs import get_logger
from asyncconsumer.assignors import (
    GroupMember,
    NoCommonAssignorError,
    RebalanceProtocol,
    perform_assignment,
    rebalance_protocol,
    to_wire,
)
from asyncconsumer.managers.heartbeat_classic import ClassicHeartbeatManager, HeartbeatSettings
from asyncconsumer.managers.membership import Membership, MembershipContext
from asyncconsumer.managers.membership_classic import ClassicMembershipManager, GroupSettings
from asyncconsumer.protocol.consumer_protocol import (
    ConsumerProtocolSubscription,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from asyncconsumer.protocol.messages.join_group import JoinGroupRequestProtocol, JoinGroupResponseMember

log = get_logger("asyncconsumer.group")


def build(context: MembershipContext) -> Membership:
    """A classic member and its heartbeat manager, with the leader's side wired in."""
    config = context.config
    leader = ClassicLeader(context)
    membership: ClassicMembershipManager
    membership = ClassicMembershipManager(
        GroupSettings(
            context.group_id,
            config.session_timeout_ms,
            config.max_poll_interval_ms,
            config.request_timeout_ms,
            config.group_instance_id,
        ),
        context.coordinator,
        lambda: leader.protocols(membership),
        leader.assign,
        context.host.apply_assignment,
        context.host.call_listener,
        context.backoff,
        context.host.report,
        cooperative=leader.protocol is RebalanceProtocol.COOPERATIVE,
        stale_assignment=lambda: leader.stale_assignment(membership),
        ready_to_join=leader.subscription_known,
    )
    heartbeat = ClassicHeartbeatManager(
        HeartbeatSettings(config.heartbeat_interval_ms, config.session_timeout_ms, config.max_poll_interval_ms),
        context.coordinator,
        membership,
        context.host.last_poll_ms,
        context.backoff,
        context.host.report,
    )
    return Membership(
        manager=membership,
        heartbeat=heartbeat,
        coordinator_matches_patterns=False,
        member_epoch_in_offset_fetch=False,
    )


class ClassicLeader:
    """What a classic member offers in JoinGroup, and what it does when the coordinator makes it the leader."""

    def __init__(self, context: MembershipContext) -> None:
        self._context = context
        self.assignors = list(context.assignors)
        """Resolved where the consumer is built, in ``partition_assignment_strategy`` order."""
        self.protocol = rebalance_protocol(self.assignors)
        """Eager, or cooperative when every configured assignor supports it."""
        self._assignment_snapshot: dict[str, int] | None = None
        """Partitions per subscribed topic when this member last assigned as leader: metadata that disagrees (a topic
        created, deleted or grown since) makes the leader rejoin, so the group assigns what exists now."""

    def protocols(self, membership: ClassicMembershipManager) -> list[JoinGroupRequestProtocol]:
        """One JoinGroup protocol per assignor: the subscription, and what the member owns when cooperative."""
        topics = frozenset(self._context.subscriptions.subscription or ())
        owned = to_wire(membership.owned) if membership.cooperative else ()
        generation = membership.generation_id if membership.cooperative else -1
        return [
            JoinGroupRequestProtocol(
                name=a.name,
                metadata=encode_subscription(
                    ConsumerProtocolSubscription(
                        topics=tuple(sorted(topics)),
                        user_data=a.subscription_user_data(topics),
                        owned_partitions=owned,
                        generation_id=generation,
                    )
                ),
            )
            for a in self.assignors
        ]

    def assign(self, protocol: str, members: Sequence[JoinGroupResponseMember]) -> dict[str, bytes]:
        """The leader's assignment: member id -> Assignment bytes, by the assignor the coordinator chose."""
        assignor = next((a for a in self.assignors if a.name == protocol), None)
        if assignor is None:
            raise NoCommonAssignorError([[a.name for a in self.assignors], [protocol]], ["this member", "the group"])
        group_members = [
            GroupMember(m.member_id, m.group_instance_id, decode_subscription(m.metadata)) for m in members
        ]
        wanted = {t for m in group_members for t in m.subscription.topics}
        metadata, subscriptions = self._context.metadata, self._context.subscriptions
        cluster = metadata.cluster
        partitions_per_topic = {t: len(cluster.topics[t].partitions) for t in wanted if t in cluster.topics}
        missing = wanted - partitions_per_topic.keys()
        if missing:
            log.info("group.leader_missing_metadata", topics=sorted(missing))
            metadata.set_topics(subscriptions.topics() | wanted)
        self._assignment_snapshot = {t: partitions_per_topic.get(t, 0) for t in wanted}
        result = perform_assignment(assignor, partitions_per_topic, group_members, self.protocol)
        log.info(
            "group.assigned_as_leader", group=self._context.group_id, members=len(group_members), protocol=protocol
        )
        return {member_id: encode_assignment(assignment) for member_id, assignment in result.to_assignments().items()}

    def stale_assignment(self, membership: ClassicMembershipManager) -> str | None:
        """Why the leader must rejoin: its subscribed topics' partitions differ from what it assigned (Java's
        ``assignmentSnapshot``). Asked by the membership manager on every poll while stable, so metadata that
        arrived while the group was still syncing (a leader that assigned before it knew a topic) counts too."""
        snapshot = self._assignment_snapshot
        if snapshot is None:
            return None
        if membership.leader_id != membership.member_id:
            self._assignment_snapshot = None  # another member assigns now
            return None
        cluster = self._context.metadata.cluster
        current = {t: len(cluster.topics[t].partitions) if t in cluster.topics else 0 for t in snapshot}
        if current == snapshot:
            return None
        changed = sorted(t for t in snapshot if current[t] != snapshot[t])
        log.info("group.partitions_changed", group=self._context.group_id, topics=changed)
        self._assignment_snapshot = None
        return f"the partitions of subscribed topics changed since the assignment: {changed}"

    def subscription_known(self) -> bool:
        """The metadata answered for every subscribed topic (it exists, or the broker said it does not): a JoinGroup
        waits for it, so a member elected leader assigns what exists rather than nothing and a rebalance later."""
        cluster = self._context.metadata.cluster
        subscription = self._context.subscriptions.subscription or ()
        return all(t in cluster.topics or t in cluster.unknown_topics for t in subscription)
