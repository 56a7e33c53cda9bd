"""The consumer on the chassis: its shared state, its managers in loop order, its event processor and publisher.

Configured names (assignors, plugins, the group protocol) are resolved while it is built, so a bad one is a
``ConfigError`` from the consumer's constructor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from asyncconsumer._background.chassis import POLLED, BackgroundContext, build_telemetry
from asyncconsumer._background.processor import ApplicationEventProcessor
from asyncconsumer._background.publisher import SnapshotPublisher
from asyncconsumer._clock import unix_offset_ms
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.snapshot import CallerActivity, MetricsReader, Published
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.assignors import PartitionAssignor, assignor_for
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaError, ResponseTooLargeError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.managers.membership import Membership, MembershipBuilder, MembershipContext
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import OffsetsManager
from asyncconsumer.managers.offsets_validation import OffsetValidationManager
from asyncconsumer.managers.telemetry import TelemetryManager
from asyncconsumer.managers.telemetry_metrics import Sample, samples
from asyncconsumer.metrics import ConsumerMetrics
from asyncconsumer.network.delegate import NetworkClientDelegate

if TYPE_CHECKING:
    from asyncconsumer._background.group import ConsumerGroup
    from asyncconsumer.metrics import PluginMetricsStore
    from asyncconsumer.plugins.guard import GuardedManager


def resolve_assignors(config: ConsumerConfig) -> list[PartitionAssignor]:
    """The configured assignors, in preference order; an unknown name is a ``ConfigError`` (as Java's constructor
    instantiates them whether or not the consumer joins a group)."""
    return [assignor_for(strategy) for strategy in config.partition_assignment_strategy]


def _classic(context: MembershipContext) -> Membership:
    from asyncconsumer.managers.group_classic import build as build_classic  # late: loaded only when used

    return build_classic(context)


def _consumer(context: MembershipContext) -> Membership:
    from asyncconsumer.managers.group_consumer import build as build_consumer  # late: loaded only when used

    return build_consumer(context)


MEMBERSHIPS: dict[str, MembershipBuilder] = {"classic": _classic, "consumer": _consumer}
"""``group_protocol`` -> how that kind of membership is built (``managers/membership.py``)."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class ConsumerShared:
    """What a consumer's two threads share (``_state/``), and what only the caller reads."""

    subscriptions: SubscriptionState
    buffer: FetchBuffer
    published: Published
    """The background's snapshot, republished every loop iteration."""
    activity: CallerActivity
    plugin_metrics: dict[str, PluginMetricsStore]
    """Each plugin's metrics: written by its manager, read whole under the store's lock."""
    metrics_reader: MetricsReader[ConsumerMetrics]
    """Where the caller's side puts its ``metrics()`` for the background's telemetry pushes."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class BackgroundParts:
    """What the background thread owns: once it runs, no other thread touches these (``owned.py`` checks it in its
    debug mode). The ``POLLED`` fields are the managers, in the order the loop polls them."""

    group: ConsumerGroup | None = attrs.field(metadata=POLLED)
    """Coordinator, commit, membership and heartbeat managers; only with a ``group_id``."""
    metadata: MetadataManager = attrs.field(metadata=POLLED)
    offsets: OffsetsManager = attrs.field(metadata=POLLED)
    validation: OffsetValidationManager = attrs.field(metadata=POLLED)
    fetch: FetchManager = attrs.field(metadata=POLLED)
    plugins: dict[str, GuardedManager] = attrs.field(metadata=POLLED)
    telemetry: TelemetryManager | None = attrs.field(metadata=POLLED)
    """KIP-714 pushes; None with ``enable_metrics_push=False``."""
    delegate: NetworkClientDelegate
    processor: ApplicationEventProcessor
    publisher: SnapshotPublisher

    def publish_snapshot(self, now_ms: int) -> None:
        self.publisher.publish(now_ms)


class ConsumerKind:
    """``KafkaConsumer``'s parts: positions and a fetch manager, and a consumer group's managers with a group id."""

    thread_name = "asyncconsumer-network"

    def __init__(self, config: ConsumerConfig) -> None:
        self._config = config

    def build(self, context: BackgroundContext) -> tuple[ConsumerShared, BackgroundParts]:
        config = self._config
        events, metadata, retry = context.background_events, context.metadata, context.retry
        subscriptions = SubscriptionState(config.auto_offset_reset)
        buffer = FetchBuffer.starting_at_half(config.fetch_buffer_bytes, context.signal)
        shared = ConsumerShared(
            subscriptions=subscriptions,
            buffer=buffer,
            published=Published(),
            activity=CallerActivity(),
            plugin_metrics={},
            metrics_reader=MetricsReader(),
        )
        fetch = FetchManager(config, subscriptions, metadata, buffer, retry, events.stage)
        group = self._group(context, shared)
        plugins: dict[str, GuardedManager] = {}
        if config.plugins:
            from asyncconsumer.plugins.loader import load_plugins  # late: only consumers with plugins load them

            for name, (guarded, store) in load_plugins(
                config, context.clock, metadata, subscriptions, events.stage
            ).items():
                plugins[name] = guarded
                shared.plugin_metrics[name] = store
        delegate = context.delegate
        delegate.add_disconnect_listener(lambda node, error: fetch.read_replicas.disconnected(node))
        delegate.add_disconnect_listener(_report_oversized(events.stage))
        unix_offset = unix_offset_ms(context.clock)
        offsets = OffsetsManager(subscriptions, metadata, config.isolation_level, retry, events.stage, unix_offset)
        telemetry = build_telemetry(
            context,
            _samples(shared.metrics_reader, in_group=group is not None),
            group_id=config.group_id,
            member_id=lambda: shared.published.current.member_id,
        )
        owned = BackgroundParts(
            group=group,
            metadata=metadata,
            offsets=offsets,
            validation=OffsetValidationManager(subscriptions, metadata, config.auto_offset_reset, retry, events.stage),
            fetch=fetch,
            plugins=plugins,
            telemetry=telemetry,
            delegate=delegate,
            processor=ApplicationEventProcessor(
                subscriptions,
                metadata,
                offsets,
                on_close=context.control.request_close,
                last_error=lambda: delegate.last_connection_error() or metadata.last_error,
                fatal_error=lambda: delegate.fatal_error,
                group=group,
                telemetry=telemetry,
            ),
            publisher=SnapshotPublisher(shared.published, fetch, delegate, group, metadata),
        )
        return shared, owned

    def _group(self, context: BackgroundContext, shared: ConsumerShared) -> ConsumerGroup | None:
        """The group's managers, with a group id only; its coordinator answers the node directory first."""
        config = self._config
        if config.group_id is None:
            resolve_assignors(config)  # a bad name is still a ConfigError, as in Java
            return None
        from asyncconsumer._background.group import ConsumerGroup, GroupContext  # late: loaded only with a group

        group = ConsumerGroup(
            GroupContext(
                config=config,
                clock=context.clock,
                subscriptions=shared.subscriptions,
                activity=shared.activity,
                metadata=context.metadata,
                assignors=resolve_assignors(config),
                membership=MEMBERSHIPS[config.group_protocol],
                events=context.background_events,
                brokers=context.delegate,
                control=context.control,
            )
        )
        context.directory.use_coordinator(group)
        context.delegate.add_disconnect_listener(lambda node, error: group.on_disconnect(node))
        return group


def _report_oversized(stage: Callable[[ErrorEvent], None]) -> Callable[[int, KafkaError], None]:
    def report(node: int, error: KafkaError) -> None:
        # Retried like any connection loss, but raised once by poll: a limit below what the broker sends would
        # otherwise stall consumption with nothing but log lines to say why.
        if isinstance(error, ResponseTooLargeError):
            stage(ErrorEvent(error))

    return report


def _samples(reader: MetricsReader[ConsumerMetrics], *, in_group: bool) -> Callable[[], list[Sample] | None]:
    def read_samples() -> list[Sample] | None:
        read = reader.read
        return samples(read(), in_group=in_group) if read is not None else None

    return read_samples
