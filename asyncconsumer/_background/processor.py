"""Turns each application event into work for the managers or the subscription state (background thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from asyncconsumer._logs import get_logger
from asyncconsumer._state.cluster import Cluster
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import ClientClosedError, IllegalStateError, KafkaError, KafkaTimeoutError
from asyncconsumer.events.application import (
    ApplicationEvent,
    AssignEvent,
    ClientInstanceIdEvent,
    CloseEvent,
    CommitEvent,
    CommittedEvent,
    EnforceRebalanceEvent,
    ListOffsetsEvent,
    PauseEvent,
    PolledEvent,
    ResetPositionsEvent,
    SeekEvent,
    SetAutoCommitEvent,
    SetRebalanceHookEvent,
    SubscribeEvent,
    TopicMetadataEvent,
    UnsubscribeEvent,
    UpdatePositionsEvent,
)
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import OffsetsManager
from asyncconsumer.records import OffsetAndMetadata, PartitionInfo

if TYPE_CHECKING:
    from asyncconsumer._background.group import ConsumerGroup
    from asyncconsumer.managers.telemetry import TelemetryManager

log = get_logger("asyncconsumer.events")


class EventProcessor:
    """Processes events and fails the ones still pending at their deadline: what every kind of client's processor
    does; ``_dispatch`` is each kind's own."""

    def __init__(
        self,
        last_error: Callable[[], KafkaError | None],
        fatal_error: Callable[[], KafkaError | None],
        telemetry: TelemetryManager | None = None,
    ) -> None:
        self._last_error = last_error
        self._fatal_error = fatal_error
        self._telemetry = telemetry
        """None with ``enable_metrics_push=False``: no client instance id to give."""
        self._pending: list[ApplicationEvent] = []

    def process(self, event: ApplicationEvent) -> None:
        try:
            if isinstance(event, ClientInstanceIdEvent):
                self._client_instance_id(event)
            else:
                self._dispatch(event)
        except KafkaError as exc:
            event.fail(exc)

    def _client_instance_id(self, event: ClientInstanceIdEvent) -> None:
        """Every kind of client has one (KIP-714), from its telemetry manager."""
        if self._telemetry is None:
            raise IllegalStateError("client_instance_id() needs client telemetry: enable_metrics_push is False")
        self._track(event)
        self._telemetry.await_instance_id(event.complete, event.fail)

    def _dispatch(self, event: ApplicationEvent) -> None:
        raise NotImplementedError

    def _track(self, event: ApplicationEvent) -> None:
        self._pending.append(event)

    def reap(self, now_ms: int) -> None:
        """Fails events past their deadline, naming the last connection error if there was one; all of them at once
        after a fatal network error (no answer will come)."""
        fatal = self._fatal_error()
        if fatal is not None and self._pending:
            self.fail_all(fatal)
            return
        keep: list[ApplicationEvent] = []
        for event in self._pending:
            if event.future.done():
                continue
            if now_ms >= event.deadline_ms:
                last = self._last_error()
                detail = f"; last error: {last}" if last is not None else ""
                event.fail(KafkaTimeoutError(f"{event.describe()} timed out{detail}"))
                log.info("event.expired", kind=type(event).__name__, what=event.describe())
            else:
                keep.append(event)
        self._pending = keep

    def next_deadline_ms(self) -> int | None:
        live = [e.deadline_ms for e in self._pending if not e.future.done()]
        return min(live) if live else None

    def fail_all(self, error: KafkaError | None = None) -> None:
        error = error or ClientClosedError("the consumer is closed")
        for event in self._pending:
            event.fail(error)
        self._pending.clear()


class ApplicationEventProcessor(EventProcessor):
    """A consumer's processor: assignment, positions, offsets, metadata and the group."""

    def __init__(
        self,
        subscriptions: SubscriptionState,
        metadata: MetadataManager,
        offsets: OffsetsManager,
        on_close: Callable[[CloseEvent], None],
        last_error: Callable[[], KafkaError | None],
        group: ConsumerGroup | None = None,
        fatal_error: Callable[[], KafkaError | None] = lambda: None,
        telemetry: TelemetryManager | None = None,
    ) -> None:
        super().__init__(last_error, fatal_error, telemetry)
        self._group = group
        self._subs = subscriptions
        self._metadata = metadata
        self._offsets = offsets
        self._on_close = on_close

    def _dispatch(self, event: ApplicationEvent) -> None:
        match event:
            case AssignEvent(partitions=partitions):
                self._subs.assign(partitions)
                self._metadata.set_topics(self._subs.topics())
                event.complete(None)
            case SeekEvent(tp=tp, offset=offset):
                self._subs.seek(tp, offset)
                event.complete(None)
            case ResetPositionsEvent(partitions=partitions, strategy=strategy):
                self._subs.request_reset(partitions, strategy)
                event.complete(None)
            case PauseEvent(partitions=partitions, paused=paused):
                # What was fetched ahead is kept for the resume (the caller's collector holds it, within a budget).
                self._subs.set_paused(partitions, paused)
                event.complete(None)
            case UpdatePositionsEvent(partitions=partitions):
                self._subs.require_assigned(partitions)
                self._track(event)
                self._offsets.await_positions(partitions, lambda: event.complete(None), event.fail)
            case ListOffsetsEvent(timestamps=timestamps):
                self._track(event)
                self._offsets.list_offsets(timestamps, event.complete, event.fail)
            case TopicMetadataEvent(topic=topic):
                self._track(event)
                self._metadata.await_topic(
                    topic, lambda cluster: event.complete(_partitions(cluster, topic)), event.fail
                )
            case SubscribeEvent(topics=topics, pattern=pattern, has_listener=has_listener):
                group = self._require_group("subscribe")
                group.has_listener = has_listener
                group.set_pattern(pattern)
                self._subs.subscribe(topics)
                self._metadata.set_topics(self._subs.topics() | topics)
                if pattern is None:
                    group.membership.subscribe()
                self._track(event)
                group.subscribed(event.complete, event.fail)
            case UnsubscribeEvent():
                if self._group is not None:
                    self._group.set_pattern(None)
                    self._group.membership.leave(notify=False)
                self._subs.unsubscribe()
                self._metadata.set_topics(())
                event.complete(None)
            case CommitEvent(offsets=offsets):
                group = self._require_group("commit")
                chosen = offsets
                if chosen is None:
                    chosen = {tp: OffsetAndMetadata(o) for tp, o in self._subs.consumed_positions().items()}
                if not chosen:
                    event.complete(None)
                    return
                self._track(event)
                group.commit.commit(chosen, event.deadline_ms, event.complete, event.fail)
            case CommittedEvent(partitions=partitions):
                group = self._require_group("committed")
                self._track(event)
                group.commit.fetch_committed(tuple(partitions), event.deadline_ms, event.complete, event.fail)
            case SetAutoCommitEvent(enabled=enabled):
                if self._group is None:  # no group, nothing is auto-committed
                    event.complete(None)
                    return
                self._track(event)
                self._group.set_auto_commit(enabled, on_quiet=lambda: event.complete(None))
            case SetRebalanceHookEvent(installed=installed):
                if self._group is not None:  # no group, no rebalances
                    self._group.rebalance_hook = installed
                event.complete(None)
            case EnforceRebalanceEvent(reason=reason):
                self._require_group("enforce_rebalance").membership.request_rejoin(reason)
                event.complete(None)
            case PolledEvent():
                if self._group is not None:
                    self._group.membership.caller_polled()
                event.complete(None)
            case CloseEvent(group_membership=membership):
                if self._group is not None:  # before the loop's close work, which polls the membership on close
                    self._group.membership.closing(membership)
                self._on_close(event)
            case _:
                event.fail(TypeError(f"unknown application event {type(event).__name__}"))

    def _require_group(self, what: str) -> ConsumerGroup:
        if self._group is None:
            raise IllegalStateError(f"{what}() needs a consumer group: set group_id")
        return self._group


def _partitions(cluster: Cluster, topic: str | None) -> dict[str, list[PartitionInfo]]:
    topics = cluster.topics if topic is None else {k: v for k, v in cluster.topics.items() if k == topic}
    return {name: sorted(info.partitions.values(), key=lambda p: p.partition) for name, info in topics.items()}
