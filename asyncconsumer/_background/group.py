"""The consumer-group managers of one consumer, wired together (background side; exists only with a group_id).

Holds what every kind of membership asks of the rest of the consumer: how an assignment is applied (positions from
committed offsets), the rebalance-listener round trip to the caller, pattern subscriptions matched on the client, and
the warning that a topic subscribed by name does not exist.
Which kind of membership it drives is decided by the builder (``managers/membership.py``); nothing here asks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol

import attrs

from asyncconsumer._background.control import LoopControl
from asyncconsumer._clock import Clock
from asyncconsumer._logs import get_logger
from asyncconsumer._state.cluster import Cluster
from asyncconsumer._state.queues import BackgroundEventQueue
from asyncconsumer._state.snapshot import CallerActivity
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.assignors import PartitionAssignor
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaError
from asyncconsumer.events.background import ErrorEvent, RebalanceEvent
from asyncconsumer.managers.base import RequestManager
from asyncconsumer.managers.commit import CommitManager
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.membership import MembershipBuilder, MembershipContext
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.records import TopicPartition

log = get_logger("asyncconsumer.group")


class Brokers(Protocol):
    """What the group asks of the network (the delegate answers)."""

    def supports_api(self, key: int) -> bool | None: ...

    def last_connection_error(self) -> KafkaError | None: ...


@attrs.define(frozen=True, slots=True, kw_only=True)
class GroupContext:
    """What the group wiring is built from: the consumer's settings and shared state, and the loop's parts."""

    config: ConsumerConfig
    clock: Clock
    subscriptions: SubscriptionState
    activity: CallerActivity
    metadata: MetadataManager
    assignors: Sequence[PartitionAssignor]
    membership: MembershipBuilder
    """How the kind of membership ``group_protocol`` names is built."""
    events: BackgroundEventQueue
    """Where errors and rebalance-listener calls for the caller are staged."""
    brokers: Brokers
    control: LoopControl


class ConsumerGroup:
    """Coordinator, commit, membership and heartbeat managers for ``config.group_id``; the membership's host."""

    def __init__(self, context: GroupContext) -> None:
        config = context.config
        assert config.group_id is not None
        self.group_id = config.group_id
        self._config = config
        self._clock = context.clock
        self._control = context.control
        """The loop's: what a membership hands over below (an assignment to apply, a listener call) is work for
        managers the loop may have polled already in this pass."""
        self._subs = context.subscriptions
        self._metadata = context.metadata
        self._events = context.events
        self._activity = context.activity
        self._brokers = context.brokers
        backoff = ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
        self.coordinator = CoordinatorManager(self.group_id, backoff, self._events.stage)
        self._pattern: re.Pattern[str] | None = None
        self._reported_unknown: set[str] = set()
        """Subscribed topics warned of as unknown, until metadata shows them or they are no longer subscribed."""
        built = context.membership(
            MembershipContext(
                config=config,
                group_id=self.group_id,
                subscriptions=self._subs,
                metadata=self._metadata,
                coordinator=self.coordinator,
                assignors=context.assignors,
                backoff=backoff,
                host=self,
            )
        )
        self.membership = built.manager
        self.heartbeat = built.heartbeat
        self._membership_managers = built.managers
        self._coordinator_matches_patterns = built.coordinator_matches_patterns
        self.commit = CommitManager(
            self.coordinator,
            self.membership.generation,
            backoff,
            subscriptions=self._subs,
            auto_commit_interval_ms=config.auto_commit_interval_ms if config.enable_auto_commit else None,
            request_timeout_ms=config.request_timeout_ms,
            member_epoch_in_fetch=built.member_epoch_in_offset_fetch,
            last_network_error=self._brokers.last_connection_error,
            on_fenced=self.membership.fenced,
        )
        self.has_listener = False
        """Whether the caller's subscription has a rebalance listener (set from the ``SubscribeEvent``)."""
        self.rebalance_hook = False
        """Whether the caller's side has an internal rebalance hook (``SetRebalanceHookEvent``): every assignment and
        revocation then goes to the caller, listener or not. Independent of ``subscribe``, which leaves it as it is."""
        self._metadata.add_listener(self._on_metadata)

    def set_auto_commit(self, enabled: bool, on_quiet: Callable[[], None] | None = None) -> None:
        """Auto-commit on (every ``auto_commit_interval_ms``, before a revocation, on close) or off, whatever the
        config said; ``on_quiet`` once no auto-commit is in flight (``CommitManager.set_auto_commit``)."""
        self.commit.set_auto_commit(self._config.auto_commit_interval_ms if enabled else None, on_quiet)

    @property
    def asks_caller(self) -> bool:
        """Whether rebalances go to the caller's side (a listener, or the rebalance hook, is there to run)."""
        return self.has_listener or self.rebalance_hook

    def subscribed(self, on_ok: Callable[[None], None], on_error: Callable[[KafkaError], None]) -> None:
        """What ``subscribe`` waits for: brokers seen to offer the membership's API (``on_error`` names it if not)."""
        self.heartbeat.check_support(on_ok, on_error)

    def set_pattern(self, pattern: re.Pattern[str] | None) -> None:
        """Subscribe to every topic whose whole name matches ``pattern`` (None: explicit topics).

        A member on the classic protocol matches the pattern against every metadata refresh, as Java's
        ``subscribe(Pattern)``. On the consumer protocol the coordinator does (ConsumerGroupHeartbeat v1
        SubscribedTopicRegex, RE2/J, as Java's ``subscribe(SubscriptionPattern)``): topics created later join
        without the member noticing, and the member joins at once. Either way metadata covers every topic, so the
        assigned topics' ids resolve to names.
        """
        self._pattern = pattern
        self._metadata.all_topics_always = pattern is not None
        if pattern is not None:
            self._metadata.request_update()
            if self._coordinator_matches_patterns:
                self.membership.subscribe()

    def _on_metadata(self, cluster: Cluster, named: frozenset[str]) -> None:
        pattern = self._pattern
        if pattern is None:
            self._warn_unknown_topics(cluster)
        if pattern is None or self._coordinator_matches_patterns:
            return
        matched = frozenset(t for t, info in cluster.topics.items() if not info.is_internal and pattern.fullmatch(t))
        if matched != self._subs.subscription:
            log.info("group.pattern_matched", pattern=pattern.pattern, topics=sorted(matched))
            self._subs.subscribe(matched)
            self._metadata.set_topics(self._subs.topics() | matched)
            if matched:
                self.membership.subscribe()

    def _warn_unknown_topics(self, cluster: Cluster) -> None:
        """A topic subscribed by name that metadata says does not exist (UNKNOWN_TOPIC_OR_PARTITION) gets nothing
        assigned and polls empty, so it is worth a warning, as in Java's consumer; here once, and again only if
        the topic existed in between. The consumer never asks brokers to create topics."""
        subscribed = self._subs.subscription or frozenset()
        self._reported_unknown &= subscribed
        self._reported_unknown -= cluster.topics.keys()
        missing = (subscribed & cluster.unknown_topics) - self._reported_unknown
        if missing:
            log.warning("subscription.topic_unknown", group=self.group_id, topics=sorted(missing))
            self._reported_unknown |= missing

    @property
    def managers(self) -> Sequence[RequestManager]:
        """In loop order: find the coordinator, commit (before a LeaveGroup on close), the membership's managers."""
        return (self.coordinator, self.commit, *self._membership_managers)

    def address(self, node_id: int) -> tuple[str, int] | None:
        return self.coordinator.address(node_id)

    def on_disconnect(self, node_id: int) -> None:
        self.coordinator.disconnected(node_id)

    # --- what every membership asks (``MembershipHost``) --------------------------------------------------------
    @property
    def pattern(self) -> re.Pattern[str] | None:
        return self._pattern

    def report(self, event: ErrorEvent) -> None:
        self._events.stage(event)

    def last_poll_ms(self) -> int | None:
        return self._activity.last_poll_ms

    def supports_api(self, key: int) -> bool | None:
        return self._brokers.supports_api(key)

    def apply_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        self._control.poll_again()  # the commit manager looks up the new partitions' committed offsets
        self._subs.assign_from_group(partitions)
        self._metadata.set_topics(self._subs.topics() | (self._subs.subscription or frozenset()))

    def call_listener(self, kind: str, partitions: frozenset[TopicPartition]) -> Future[None]:
        # Work for the loop either way: a commit before revoking, a callback staged for the caller, or a future
        # already done that the membership goes on from.
        self._control.poll_again()
        done: Future[None] = Future()

        def ask(_: object = None) -> None:
            if self.asks_caller or kind == "lost":
                if kind == "assigned":
                    # Not fetched before the listener ran: one that seeks (to offsets of its own) wastes no fetch.
                    self._subs.set_awaiting_listener(partitions, True)
                    done.add_done_callback(lambda _: self._subs.set_awaiting_listener(partitions, False))
                self._events.stage(RebalanceEvent(kind, partitions, done))
            elif not done.done():
                done.set_result(None)

        if kind == "lost":
            # Lost partitions go only through the caller's poll, listener or not (Java's classic consumer changes
            # the assignment only in poll): until then nothing of them is handed out, and a commit of what was
            # handed out fails (the member holds no generation) instead of finding nothing to commit.
            self._subs.mark_pending_revocation(partitions)
        elif kind == "revoked":
            # Nothing more from these partitions reaches the caller, whatever it resumes; their positions stay for
            # commits.
            self._subs.mark_pending_revocation(partitions)
            # Commit what was consumed before the partitions go (Java's commit-before-revoke), unless auto-commit is
            # off now: then nothing is committed for the caller, whose callbacks may commit what they choose.
            if self.commit.auto_commit_enabled and self.commit.commit_positions(self._clock.now_ms(), on_done=ask):
                return done
        ask()
        return done
