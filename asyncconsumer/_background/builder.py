"""Builds one consumer's parts and wires them together; nothing runs until the network thread starts.

``build`` runs once, on the thread that constructs the consumer, and returns the parts by name (like Kafka's
``RequestManagers``): what the two threads share, the thread's handle, and under ``owned`` what only the background
thread may touch once it runs. Configured names (assignors, plugins, the group protocol) are resolved here, so a
bad one is a ``ConfigError`` from the consumer's constructor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

from asyncconsumer._background import owned as ownership
from asyncconsumer._background.network_thread import ConsumerNetworkThread
from asyncconsumer._background.processor import ApplicationEventProcessor
from asyncconsumer._background.publisher import SnapshotPublisher
from asyncconsumer._clock import Clock
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.snapshot import CallerActivity, MetricsReader, Published
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.assignors import PartitionAssignor, assignor_for
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaError, ResponseTooLargeError
from asyncconsumer.events.application import CloseEvent
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import RequestManager
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.managers.membership import Membership, MembershipBuilder, MembershipContext
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import OffsetsManager
from asyncconsumer.managers.offsets_validation import OffsetValidationManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.managers.telemetry import TelemetryManager
from asyncconsumer.managers.telemetry_metrics import Sample, samples
from asyncconsumer.metrics import ConsumerMetrics
from asyncconsumer.network.connection import CLIENT_VERSION
from asyncconsumer.network.delegate import NetworkClientDelegate
from asyncconsumer.network.security import ConnectionSecurity

if TYPE_CHECKING:
    from asyncconsumer._background.group import ConsumerGroup
    from asyncconsumer.metrics import PluginMetricsStore
    from asyncconsumer.plugins.guard import GuardedManager


class _Coordinator(Protocol):
    def address(self, node_id: int) -> tuple[str, int] | None: ...


class NodeDirectory:
    """The delegate's node directory: the group coordinator's own connection first, then the cluster's nodes."""

    def __init__(self, metadata: MetadataManager, group: _Coordinator | None) -> None:
        self._metadata = metadata
        self._group = group

    def address(self, node_id: int) -> tuple[str, int] | None:
        if self._group is not None:
            found = self._group.address(node_id)
            if found is not None:
                return found
        return self._metadata.address(node_id)

    def candidate_nodes(self) -> list[int]:
        return self._metadata.candidate_nodes()

    def rebootstrap(self, reason: str) -> None:
        self._metadata.rebootstrap(reason)


@attrs.define(frozen=True, slots=True, kw_only=True)
class BackgroundParts:
    """What the background thread owns: once it runs, no other thread touches these (``owned.py`` checks it in
    its debug mode). Kept here for the thread, and for tests that drive a consumer's internals."""

    metadata: MetadataManager
    offsets: OffsetsManager
    validation: OffsetValidationManager
    fetch: FetchManager
    group: ConsumerGroup | None
    """Coordinator, commit, membership and heartbeat managers; only with a ``group_id``."""
    plugins: dict[str, GuardedManager]
    delegate: NetworkClientDelegate
    processor: ApplicationEventProcessor
    telemetry: TelemetryManager | None = None
    """KIP-714 pushes; None with ``enable_metrics_push=False``."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class Components:
    """One consumer's parts by name. The caller's side uses only the shared ones and the thread's handle."""

    signal: CallerSignal
    subscriptions: SubscriptionState
    buffer: FetchBuffer
    app_events: ApplicationEventQueue
    background_events: BackgroundEventQueue
    published: Published
    """The background's snapshot, republished every loop iteration."""
    activity: CallerActivity
    plugin_metrics: dict[str, PluginMetricsStore]
    """Each plugin's metrics: written by its manager, read whole under the store's lock."""
    metrics_reader: MetricsReader[ConsumerMetrics]
    """Where the caller's side puts its ``metrics()`` for the background's telemetry pushes."""
    thread: ConsumerNetworkThread
    """The handle: start, wakeup, alive, join (any thread); its loop runs the owned parts."""
    owned: BackgroundParts


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


def _guard_owned(owned: BackgroundParts, managers: Sequence[RequestManager], owner: ownership.Owner) -> None:
    """The thread-ownership debug mode: every owned part and every manager the loop polls checks its thread."""
    parts: dict[int, tuple[str, object]] = {}
    for name, part in attrs.asdict(owned, recurse=False).items():
        if part is not None and not isinstance(part, dict):
            parts[id(part)] = (name, part)
    for manager in managers:
        parts.setdefault(id(manager), (type(manager).__name__, manager))
    for name, part in parts.values():
        ownership.guard(part, owner, name)


def build_telemetry(
    settings: ConsumerConfig,
    clock: Clock,
    read_samples: Callable[[], list[Sample] | None],
    api_supported: Callable[[int], bool | None],
    *,
    group_id: str | None,
    member_id: Callable[[], str],
) -> TelemetryManager | None:
    """The KIP-714 manager of a consumer or a share consumer (``read_samples`` tells which metrics it pushes); None
    when pushes are turned off."""
    if not settings.enable_metrics_push:
        return None

    def resource() -> Mapping[str, str]:
        # KIP-714's client resource attributes; the broker adds the connection's own (client_id, software, address)
        attributes = {"client_id": settings.client_id}
        if settings.client_rack:
            attributes["client_rack"] = settings.client_rack
        if group_id is not None:
            attributes["group_id"] = group_id
            member = member_id()
            if member:
                attributes["group_member_id"] = member
            if settings.group_instance_id is not None:
                attributes["group_instance_id"] = settings.group_instance_id
        return attributes

    return TelemetryManager(
        read_samples,
        resource,
        api_supported,
        ExponentialBackoff(settings.retry_backoff_ms, settings.retry_backoff_max_ms),
        unix_offset_ms=time.time_ns() // 1_000_000 - clock.now_ms(),
        client_version=CLIENT_VERSION,
    )


def build(config: ConsumerConfig, clock: Clock) -> Components:
    """Every part of one consumer, wired; the network thread is built but not started."""
    signal = CallerSignal()
    subscriptions = SubscriptionState(config.auto_offset_reset)
    buffer = FetchBuffer(config.fetch_buffer_bytes, signal, config.fetch_buffer_bytes // 2)
    app_events = ApplicationEventQueue()
    background_events = BackgroundEventQueue(signal)
    published = Published()
    activity = CallerActivity()
    retry = ExponentialBackoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
    metadata = MetadataManager(
        config.bootstrap_servers, config.metadata_max_age_ms, retry, config.rebootstrap_trigger_ms
    )
    offsets = OffsetsManager(subscriptions, metadata, config.isolation_level, retry, background_events.stage)
    validation = OffsetValidationManager(
        subscriptions, metadata, config.auto_offset_reset, retry, background_events.stage
    )
    fetch = FetchManager(config, subscriptions, metadata, buffer, retry, background_events.stage)
    assignors = resolve_assignors(config)
    delegate: NetworkClientDelegate | None = None

    def api_supported(key: int) -> bool | None:
        return delegate.supports_api(key) if delegate is not None else None

    def last_network_error() -> KafkaError | None:
        return delegate.last_connection_error() if delegate is not None else None

    thread: ConsumerNetworkThread | None = None

    def poll_again() -> None:
        assert thread is not None  # built below, before the loop runs
        thread.poll_again()

    group: ConsumerGroup | None = None
    if config.group_id is not None:
        from asyncconsumer._background.group import ConsumerGroup  # late: a consumer without a group never loads it

        group = ConsumerGroup(
            config,
            assignors,
            clock,
            subscriptions,
            metadata,
            background_events.stage,
            background_events.stage,
            membership=MEMBERSHIPS[config.group_protocol],
            activity=activity,
            api_supported=api_supported,
            last_network_error=last_network_error,
            poll_again=poll_again,
        )
    delegate = NetworkClientDelegate(
        clock,
        NodeDirectory(metadata, group),
        client_id=config.client_id,
        request_timeout_ms=config.request_timeout_ms,
        connection_setup_timeout_ms=config.socket_connection_setup_timeout_ms,
        max_in_flight=config.max_in_flight_requests_per_connection,
        reconnect_backoff=ExponentialBackoff(config.reconnect_backoff_ms, config.reconnect_backoff_max_ms),
        security=ConnectionSecurity.from_config(config),
        max_response_bytes=config.receive_message_max_bytes,
    )
    network = delegate
    network.add_fatal_listener(lambda error: background_events.stage(ErrorEvent(error)))
    network.add_disconnect_listener(lambda node, error: metadata.request_update())
    network.add_disconnect_listener(lambda node, error: fetch.read_replicas.disconnected(node))

    def report_oversized(node: int, error: KafkaError) -> None:
        # Retried like any connection loss, but raised once by poll: a limit below what the broker sends would
        # otherwise stall consumption with nothing but log lines to say why.
        if isinstance(error, ResponseTooLargeError):
            background_events.stage(ErrorEvent(error))

    network.add_disconnect_listener(report_oversized)
    if group is not None:
        on_group_disconnect = group.on_disconnect
        network.add_disconnect_listener(lambda node, error: on_group_disconnect(node))

    def request_close(event: CloseEvent) -> None:
        assert thread is not None  # built below, before any event can be processed
        thread.request_close(event)

    processor = ApplicationEventProcessor(
        subscriptions,
        metadata,
        offsets,
        on_close=request_close,
        last_error=lambda: network.last_connection_error() or metadata.last_error,
        fatal_error=lambda: network.fatal_error,
        group=group,
    )
    loaded: dict[str, tuple[GuardedManager, PluginMetricsStore]] = {}
    if config.plugins:
        from asyncconsumer.plugins.loader import load_plugins  # late: only consumers with plugins load them

        loaded = load_plugins(config, clock, metadata, subscriptions, background_events.stage)
    plugins = {name: guarded for name, (guarded, _) in loaded.items()}
    metrics_reader: MetricsReader[ConsumerMetrics] = MetricsReader()
    in_group = config.group_id is not None

    def read_samples() -> list[Sample] | None:
        read = metrics_reader.read
        return samples(read(), in_group=in_group) if read is not None else None

    telemetry = build_telemetry(
        config,
        clock,
        read_samples,
        api_supported,
        group_id=config.group_id,
        member_id=lambda: published.current.member_id,
    )
    owned = BackgroundParts(
        metadata=metadata,
        offsets=offsets,
        validation=validation,
        fetch=fetch,
        group=group,
        plugins=plugins,
        delegate=network,
        processor=processor,
        telemetry=telemetry,
    )
    publisher = SnapshotPublisher(published, fetch, network, group, metadata)

    def publish(now_ms: int) -> None:
        """The end of a loop iteration: the snapshot first, then what the caller may now see goes with it."""
        publisher.publish(now_ms)
        buffer.deliver()
        background_events.deliver()

    managers: list[RequestManager] = [
        *(group.managers if group is not None else ()),
        metadata,
        offsets,
        validation,
        fetch,
        *plugins.values(),
        *((telemetry,) if telemetry is not None else ()),
    ]
    owner = ownership.Owner()
    if ownership.enabled():
        _guard_owned(owned, managers, owner)
    thread = ConsumerNetworkThread(
        clock,
        app_events,
        background_events,
        processor,
        managers,
        network,
        publish=publish,
        owner=owner,
    )
    buffer.set_space_waiter(thread.wakeup)
    return Components(
        signal=signal,
        subscriptions=subscriptions,
        buffer=buffer,
        app_events=app_events,
        background_events=background_events,
        published=published,
        activity=activity,
        plugin_metrics={name: store for name, (_, store) in loaded.items()},
        metrics_reader=metrics_reader,
        thread=thread,
        owned=owned,
    )
