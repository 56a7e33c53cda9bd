"""Builds one share consumer's parts (KIP-932) and wires them; nothing runs until the network thread starts.

The same loop, delegate, metadata, coordinator lookup and KIP-714 telemetry manager as a consumer's (pushing the
share consumer's own metrics), with a share group's managers: the membership (ShareGroupHeartbeat) and the consume
manager (ShareFetch, ShareAcknowledge). ``owned`` is what only the background thread may touch once it runs.
"""

from __future__ import annotations

import attrs

from asyncconsumer._background import owned as ownership
from asyncconsumer._background.builder import NodeDirectory, build_telemetry
from asyncconsumer._background.network_thread import ConsumerNetworkThread
from asyncconsumer._background.share_processor import ShareEventProcessor
from asyncconsumer._clock import Clock
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.snapshot import MetricsReader, PublishedShare, ShareDemand, ShareSnapshot
from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.events.application import CloseEvent
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import RequestManager
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.managers.share_consume import ShareConsumeManager, ShareFetchSettings
from asyncconsumer.managers.share_membership import ShareMembershipManager
from asyncconsumer.managers.telemetry import TelemetryManager
from asyncconsumer.managers.telemetry_metrics import Sample, share_samples
from asyncconsumer.metrics import ShareConsumerMetrics
from asyncconsumer.network.delegate import NetworkClientDelegate
from asyncconsumer.network.security import ConnectionSecurity

_ACQUIRE_MODES = {"batch_optimized": 0, "record_limit": 1}


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareBackgroundParts:
    """What the background thread owns; kept here for the thread and for tests that look inside."""

    metadata: MetadataManager
    coordinator: CoordinatorManager
    membership: ShareMembershipManager
    consume: ShareConsumeManager
    delegate: NetworkClientDelegate
    processor: ShareEventProcessor
    telemetry: TelemetryManager | None = None
    """KIP-714 pushes; None with ``enable_metrics_push=False``."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareComponents:
    """One share consumer's parts by name. The caller's side uses the shared ones and the thread's handle."""

    signal: CallerSignal
    buffer: FetchBuffer
    demand: ShareDemand
    """Written by the caller's ``poll``: what the consume manager may fetch."""
    app_events: ApplicationEventQueue
    background_events: BackgroundEventQueue
    published: PublishedShare
    metrics_reader: MetricsReader[ShareConsumerMetrics]
    """Where the caller's side puts its ``metrics()`` for the background's telemetry pushes."""
    thread: ConsumerNetworkThread
    owned: ShareBackgroundParts


def build_share(config: ShareConsumerConfig, clock: Clock) -> ShareComponents:
    """Every part of one share consumer, wired; the network thread is built but not started."""
    settings = config.consumer
    signal = CallerSignal()
    buffer = FetchBuffer(settings.fetch_buffer_bytes, signal)
    app_events = ApplicationEventQueue()
    background_events = BackgroundEventQueue(signal)
    published = PublishedShare()
    demand = ShareDemand()
    retry = ExponentialBackoff(settings.retry_backoff_ms, settings.retry_backoff_max_ms)
    metadata = MetadataManager(
        settings.bootstrap_servers, settings.metadata_max_age_ms, retry, settings.rebootstrap_trigger_ms
    )
    coordinator = CoordinatorManager(config.group_id, retry, background_events.stage)
    membership = ShareMembershipManager(
        config.group_id,
        coordinator,
        retry,
        background_events.stage,
        rack_id=settings.client_rack,
        cluster=lambda: metadata.cluster,
        request_metadata=metadata.request_update,
    )
    consume = ShareConsumeManager(
        ShareFetchSettings(
            group_id=config.group_id,
            max_wait_ms=settings.fetch_max_wait_ms,
            min_bytes=settings.fetch_min_bytes,
            max_bytes=settings.fetch_max_bytes,
            max_records=settings.max_poll_records,
            acquire_mode=_ACQUIRE_MODES[config.share_acquire_mode],
            request_timeout_ms=settings.request_timeout_ms,
        ),
        membership,
        metadata,
        buffer,
        background_events.put,  # at once: a commit's caller reads its partitions' events when its future is done
        retry,
        demand,
    )
    delegate = NetworkClientDelegate(
        clock,
        NodeDirectory(metadata, coordinator),
        client_id=settings.client_id,
        request_timeout_ms=settings.request_timeout_ms,
        connection_setup_timeout_ms=settings.socket_connection_setup_timeout_ms,
        max_in_flight=settings.max_in_flight_requests_per_connection,
        reconnect_backoff=ExponentialBackoff(settings.reconnect_backoff_ms, settings.reconnect_backoff_max_ms),
        security=ConnectionSecurity.from_config(settings),
        max_response_bytes=settings.receive_message_max_bytes,
    )
    delegate.add_fatal_listener(lambda error: background_events.stage(ErrorEvent(error)))
    delegate.add_disconnect_listener(lambda node, error: metadata.request_update())
    delegate.add_disconnect_listener(lambda node, error: coordinator.disconnected(node))
    thread: ConsumerNetworkThread | None = None

    def request_close(event: CloseEvent) -> None:
        assert thread is not None  # built below, before any event can be processed
        thread.request_close(event)

    processor = ShareEventProcessor(
        metadata,
        membership,
        consume,
        on_close=request_close,
        last_error=lambda: delegate.last_connection_error() or coordinator.last_error or metadata.last_error,
        fatal_error=lambda: delegate.fatal_error,
    )
    metrics_reader: MetricsReader[ShareConsumerMetrics] = MetricsReader()

    def read_samples() -> list[Sample] | None:
        read = metrics_reader.read
        return share_samples(read()) if read is not None else None

    telemetry = build_telemetry(
        settings,
        clock,
        read_samples,
        delegate.supports_api,
        group_id=config.group_id,
        member_id=lambda: published.current.member_id,
    )
    owned = ShareBackgroundParts(
        metadata=metadata,
        coordinator=coordinator,
        membership=membership,
        consume=consume,
        delegate=delegate,
        processor=processor,
        telemetry=telemetry,
    )

    def publish(now_ms: int) -> None:
        """The end of a loop iteration: the snapshot first, then what the caller may now see goes with it."""
        found = coordinator.coordinator
        last_error = delegate.last_connection_error()
        published.current = ShareSnapshot(
            member_id=membership.member_id,
            member_epoch=membership.member_epoch,
            member_state=membership.state.value,
            assignment=membership.assignment,
            coordinator_id=None if found is None else found.broker_node_id,
            last_heartbeat_ms=membership.last_heartbeat_ms,
            acquisition_lock_timeout_ms=consume.acquisition_lock_timeout_ms,
            share_fetches=consume.fetches,
            records_acquired=consume.records_acquired,
            acknowledgements_sent=consume.acknowledgements_sent,
            acknowledgement_errors=consume.acknowledgement_errors,
            connection_count=delegate.connection_count,
            connections_created=delegate.connections_created,
            last_connection_error=None if last_error is None else str(last_error),
            unreachable_nodes=delegate.unreachable_nodes(),
        )
        buffer.deliver()
        background_events.deliver()

    managers: list[RequestManager] = [
        coordinator, membership, metadata, consume, *((telemetry,) if telemetry is not None else ())
    ]  # fmt: skip
    owner = ownership.Owner()
    if ownership.enabled():
        for name, part in attrs.asdict(owned, recurse=False).items():
            if part is not None:
                ownership.guard(part, owner, name)
    thread = ConsumerNetworkThread(
        clock, app_events, background_events, processor, managers, delegate, "asyncconsumer-share-network",
        publish=publish, owner=owner,
    )  # fmt: skip
    buffer.set_space_waiter(thread.wakeup)
    return ShareComponents(
        signal=signal,
        buffer=buffer,
        demand=demand,
        app_events=app_events,
        background_events=background_events,
        published=published,
        metrics_reader=metrics_reader,
        thread=thread,
        owned=owned,
    )
