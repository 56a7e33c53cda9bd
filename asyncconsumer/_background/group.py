"""The consumer-group managers of one consumer, wired together (background side; exists only with a group_id).

Holds what the managers ask of the rest of the consumer: the JoinGroup protocols, the leader's assignment, how an
assignment is applied (positions from committed offsets), and the rebalance-listener round trip to the caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from asyncconsumer._clock import Clock
from asyncconsumer._logs import get_logger
from asyncconsumer._state.cluster import Cluster
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.assignors import (
    GroupMember,
    NoCommonAssignorError,
    PartitionAssignor,
    RebalanceProtocol,
    perform_assignment,
    rebalance_protocol,
    to_wire,
)
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaError
from asyncconsumer.events.background import ErrorEvent, RebalanceEvent
from asyncconsumer.managers.base import RequestManager
from asyncconsumer.managers.commit import CommitManager
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.heartbeat_classic import ClassicHeartbeatManager, HeartbeatSettings
from asyncconsumer.managers.membership_classic import ClassicMembershipManager, GroupSettings
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.base import ApiKey
from asyncconsumer.protocol.consumer_protocol import Subscription
from asyncconsumer.protocol.group import JoinGroupMember, JoinGroupProtocol
from asyncconsumer.records import TopicPartition

if TYPE_CHECKING:
    from asyncconsumer.managers.heartbeat_consumer import ConsumerHeartbeatManager
    from asyncconsumer.managers.membership_consumer import ConsumerMembershipManager

log = get_logger("asyncconsumer.group")

class ConsumerGroup:
    """Coordinator, commit, membership and heartbeat managers for ``config.group_id``."""

    def __init__(
        self,
        config: ConsumerConfig,
        assignors: Sequence[PartitionAssignor],
        clock: Clock,
        subscriptions: SubscriptionState,
        metadata: MetadataManager,
        emit_error: Callable[[ErrorEvent], None],
        ask_caller: Callable[[RebalanceEvent], None],
        *,
        api_supported: Callable[[int], bool | None] = lambda key: None,
        last_network_error: Callable[[], KafkaError | None] = lambda: None,
    ) -> None:
        assert config.group_id is not None
        self._api_supported = api_supported
        self.group_id = config.group_id
        self._config = config
        self._clock = clock
        self._subs = subscriptions
        self._metadata = metadata
        self._ask_caller = ask_caller
        backoff = ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
        self.coordinator = CoordinatorManager(self.group_id, backoff, emit_error)
        self.last_poll_ms: int | None = None
        """Written by the caller's ``poll``, read by the heartbeat managers (an int reference: no lock needed)."""
        self.assignors: list[PartitionAssignor] = list(assignors)
        """Resolved where the consumer is built, in ``partition_assignment_strategy`` order (classic protocol)."""
        self.membership: ClassicMembershipManager | ConsumerMembershipManager
        self.heartbeat: ClassicHeartbeatManager | ConsumerHeartbeatManager
        if config.group_protocol == "consumer":
            self.membership, self.heartbeat = self._consumer_protocol(backoff, emit_error)
        else:
            self.membership, self.heartbeat = self._classic_protocol(backoff, emit_error)
        self.commit = CommitManager(
            self.coordinator,
            self.membership.generation,
            backoff,
            subscriptions=subscriptions,
            auto_commit_interval_ms=config.auto_commit_interval_ms if config.enable_auto_commit else None,
            request_timeout_ms=config.request_timeout_ms,
            member_epoch_in_fetch=config.group_protocol == "consumer",
            last_network_error=last_network_error,
        )
        self.has_listener = False
        """Written by the caller's ``subscribe``, read by the background when a rebalance needs the listener."""
        self._pattern: re.Pattern[str] | None = None
        self._assignment_snapshot: dict[str, int] | None = None
        """Partitions per subscribed topic when this member last assigned as leader (Java's assignmentSnapshot):
        metadata that disagrees (a topic created, deleted or grown since) makes the leader rejoin, so the group
        assigns what exists now."""
        metadata.add_listener(self._on_metadata)

    def _classic_protocol(
        self, backoff: ExponentialBackoff, emit_error: Callable[[ErrorEvent], None]
    ) -> tuple[ClassicMembershipManager, ClassicHeartbeatManager]:
        config = self._config
        self.protocol = rebalance_protocol(self.assignors)
        membership = ClassicMembershipManager(
            GroupSettings(
                self.group_id,
                config.session_timeout_ms,
                config.max_poll_interval_ms,
                config.request_timeout_ms,
                config.group_instance_id,
            ),
            self.coordinator,
            self._protocols,
            self._leader_assign,
            self._apply_assignment,
            self._listener_call,
            backoff,
            emit_error,
            cooperative=self.protocol is RebalanceProtocol.COOPERATIVE,
            stale_assignment=self._stale_assignment,
            ready_to_join=self._subscription_known,
        )
        heartbeat = ClassicHeartbeatManager(
            HeartbeatSettings(config.heartbeat_interval_ms, config.session_timeout_ms, config.max_poll_interval_ms),
            self.coordinator,
            membership,
            lambda: self.last_poll_ms,
            backoff,
            emit_error,
        )
        return membership, heartbeat

    def _consumer_protocol(
        self, backoff: ExponentialBackoff, emit_error: Callable[[ErrorEvent], None]
    ) -> tuple[ConsumerMembershipManager, ConsumerHeartbeatManager]:
        # Late: the KIP-848 managers load only for group_protocol="consumer".
        from asyncconsumer.managers.heartbeat_consumer import ConsumerHeartbeatManager, ConsumerHeartbeatSettings
        from asyncconsumer.managers.membership_consumer import ConsumerGroupSettings, ConsumerMembershipManager

        config = self._config
        self.protocol = RebalanceProtocol.COOPERATIVE  # only what moves is revoked
        membership = ConsumerMembershipManager(
            ConsumerGroupSettings(self.group_id, config.group_instance_id),
            lambda: self._metadata.cluster,
            self._metadata.request_update,
            self._apply_assignment,
            self._listener_call,
            emit_error,
        )
        heartbeat = ConsumerHeartbeatManager(
            ConsumerHeartbeatSettings(
                self.group_id,
                rebalance_timeout_ms=config.max_poll_interval_ms,
                max_poll_interval_ms=config.max_poll_interval_ms,
                group_instance_id=config.group_instance_id,
                rack_id=config.client_rack or None,
                server_assignor=config.group_remote_assignor,
            ),
            self.coordinator,
            membership,
            lambda: sorted(self._subs.subscription or ()),
            lambda: self.server_side_pattern,
            lambda: self.last_poll_ms,
            backoff,
            emit_error,
            lambda: self._api_supported(int(ApiKey.CONSUMER_GROUP_HEARTBEAT)),
        )
        return membership, heartbeat

    def subscribed(self, on_ok: Callable[[None], None], on_error: Callable[[KafkaError], None]) -> None:
        """What ``subscribe`` waits for: nothing on the classic protocol; on the consumer protocol, brokers seen to
        offer ConsumerGroupHeartbeat (``on_error`` names the API and suggests the classic protocol otherwise)."""
        if isinstance(self.heartbeat, ClassicHeartbeatManager):
            on_ok(None)
        else:
            self.heartbeat.check_support(on_ok, on_error)

    def set_pattern(self, pattern: re.Pattern[str] | None) -> None:
        """Subscribe to every topic whose whole name matches ``pattern`` (None: explicit topics).

        On the classic protocol the member matches the pattern against every metadata refresh, as Java's
        ``subscribe(Pattern)``. On the consumer protocol the coordinator does (ConsumerGroupHeartbeat v1
        SubscribedTopicRegex, RE2/J, as Java's ``subscribe(SubscriptionPattern)``): topics created later join
        without the member noticing, and the member joins at once. Either way metadata covers every topic, so the
        assigned topics' ids resolve to names.
        """
        self._pattern = pattern
        self._metadata.all_topics_always = pattern is not None
        if pattern is not None:
            self._metadata.request_update()
            if self.server_side_pattern is not None:
                self.membership.subscribe()

    @property
    def server_side_pattern(self) -> str | None:
        """The regular expression the coordinator matches (consumer protocol only), as the heartbeat sends it."""
        if self._pattern is None or isinstance(self.heartbeat, ClassicHeartbeatManager):
            return None
        from asyncconsumer.managers.heartbeat_consumer import server_side_regex  # loaded with the KIP-848 managers

        return server_side_regex(self._pattern)

    def _on_metadata(self, cluster: Cluster, named: frozenset[str]) -> None:
        pattern = self._pattern
        if pattern is None or self.server_side_pattern is not None:
            return
        matched = frozenset(t for t, info in cluster.topics.items() if not info.is_internal and pattern.fullmatch(t))
        if matched != self._subs.subscription:
            log.info("group.pattern_matched", pattern=pattern.pattern, topics=sorted(matched))
            self._subs.subscribe(matched)
            self._metadata.set_topics(self._subs.topics() | matched)
            if matched:
                self.membership.subscribe()

    def _subscription_known(self) -> bool:
        """The metadata answered for every subscribed topic: it exists, or the broker said it does not."""
        cluster = self._metadata.cluster
        return all(t in cluster.topics or t in cluster.unknown_topics for t in self._subs.subscription or ())

    def _stale_assignment(self) -> str | None:
        """Why the leader must rejoin: its subscribed topics' partitions differ from what it assigned (Java's
        ``assignmentSnapshot``). Asked by the membership manager on every poll while stable, so metadata that
        arrived while the group was still syncing (a leader that assigned before it knew a topic) counts too."""
        snapshot = self._assignment_snapshot
        membership = self.membership
        if snapshot is None or not isinstance(membership, ClassicMembershipManager):
            return None
        if membership.leader_id != membership.member_id:
            self._assignment_snapshot = None  # another member assigns now
            return None
        cluster = self._metadata.cluster
        current = {t: len(cluster.topics[t].partitions) if t in cluster.topics else 0 for t in snapshot}
        if current == snapshot:
            return None
        changed = sorted(t for t in snapshot if current[t] != snapshot[t])
        log.info("group.partitions_changed", group=self.group_id, topics=changed)
        self._assignment_snapshot = None
        return f"the partitions of subscribed topics changed since the assignment: {changed}"

    @property
    def managers(self) -> Sequence[RequestManager]:
        """In loop order: find the coordinator, commit (before a LeaveGroup on close), join, heartbeat."""
        return (self.coordinator, self.commit, self.membership, self.heartbeat)

    def address(self, node_id: int) -> tuple[str, int] | None:
        return self.coordinator.address(node_id)

    def on_disconnect(self, node_id: int) -> None:
        coordinator = self.coordinator.coordinator
        if coordinator is not None and coordinator.node_id == node_id:
            self.coordinator.mark_unknown("its connection closed")

    # --- what the membership manager asks ----------------------------------------------------------------------
    def _protocols(self) -> list[JoinGroupProtocol]:
        topics = frozenset(self._subs.subscription or ())
        membership = self.membership
        assert isinstance(membership, ClassicMembershipManager)
        owned = to_wire(membership.owned) if membership.cooperative else ()
        generation = membership.generation_id if membership.cooperative else -1
        return [
            JoinGroupProtocol(
                a.name,
                Subscription(tuple(sorted(topics)), a.subscription_user_data(topics), owned, generation).encode(),
            )
            for a in self.assignors
        ]

    def _leader_assign(self, protocol: str, members: Sequence[JoinGroupMember]) -> dict[str, bytes]:
        assignor = next((a for a in self.assignors if a.name == protocol), None)
        if assignor is None:
            raise NoCommonAssignorError([[a.name for a in self.assignors], [protocol]], ["this member", "the group"])
        group_members = [
            GroupMember(m.member_id, m.group_instance_id, Subscription.decode(m.metadata)) for m in members
        ]
        wanted = {t for m in group_members for t in m.subscription.topics}
        cluster = self._metadata.cluster
        partitions_per_topic = {t: len(cluster.topics[t].partitions) for t in wanted if t in cluster.topics}
        missing = wanted - partitions_per_topic.keys()
        if missing:
            log.info("group.leader_missing_metadata", topics=sorted(missing))
            self._metadata.set_topics(self._subs.topics() | wanted)
        self._assignment_snapshot = {t: partitions_per_topic.get(t, 0) for t in wanted}
        result = perform_assignment(assignor, partitions_per_topic, group_members, self.protocol)
        log.info("group.assigned_as_leader", group=self.group_id, members=len(group_members), protocol=protocol)
        return {member_id: assignment.encode() for member_id, assignment in result.to_assignments().items()}

    def _apply_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        self._subs.assign_from_group(partitions)
        self._metadata.set_topics(self._subs.topics() | (self._subs.subscription or frozenset()))

    def _listener_call(self, kind: str, partitions: frozenset[TopicPartition]) -> Future[None]:
        done: Future[None] = Future()

        def ask(_: object = None) -> None:
            if self.has_listener:
                self._ask_caller(RebalanceEvent(kind, partitions, done))
            elif not done.done():
                done.set_result(None)

        if kind == "revoked":
            # Nothing more from these partitions reaches the caller; their positions stay for commits.
            self._subs.set_paused([tp for tp in partitions if self._subs.is_assigned(tp)], True)
            # Commit what was consumed before the partitions go (Java's commit-before-revoke).
            if self._config.enable_auto_commit and self.commit.commit_positions(self._clock.now_ms(), on_done=ask):
                return done
        ask()
        return done
