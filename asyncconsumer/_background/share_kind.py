"""The share consumer (KIP-932) on the chassis: a share group's membership (ShareGroupHeartbeat) and its consume
manager (ShareFetch, ShareAcknowledge), with the chassis's metadata, delegate and KIP-714 telemetry."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from asyncconsumer._background.chassis import POLLED, BackgroundContext, build_telemetry
from asyncconsumer._background.publisher import ShareSnapshotPublisher
from asyncconsumer._background.share_processor import ShareEventProcessor
from asyncconsumer._state.share_fetch_buffer import ShareFetchBuffer
from asyncconsumer._state.snapshot import MetricsReader, PublishedShare, ShareDemand
from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.share_consume import ShareConsumeManager, ShareFetchSettings
from asyncconsumer.managers.share_membership import ShareMembershipManager
from asyncconsumer.managers.telemetry import TelemetryManager
from asyncconsumer.managers.telemetry_metrics import Sample, share_samples
from asyncconsumer.metrics import ShareConsumerMetrics
from asyncconsumer.network.delegate import NetworkClientDelegate

_ACQUIRE_MODES = {"batch_optimized": 0, "record_limit": 1}


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareShared:
    """What a share consumer's two threads share."""

    buffer: ShareFetchBuffer
    demand: ShareDemand
    """Written by the caller's ``poll``: what the consume manager may fetch."""
    published: PublishedShare
    metrics_reader: MetricsReader[ShareConsumerMetrics]
    """Where the caller's side puts its ``metrics()`` for the background's telemetry pushes."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareBackgroundParts:
    """What the background thread owns; the ``POLLED`` fields are the managers, in loop order."""

    coordinator: CoordinatorManager = attrs.field(metadata=POLLED)
    membership: ShareMembershipManager = attrs.field(metadata=POLLED)
    metadata: MetadataManager = attrs.field(metadata=POLLED)
    consume: ShareConsumeManager = attrs.field(metadata=POLLED)
    telemetry: TelemetryManager | None = attrs.field(metadata=POLLED)
    """KIP-714 pushes; None with ``enable_metrics_push=False``."""
    delegate: NetworkClientDelegate
    processor: ShareEventProcessor
    publisher: ShareSnapshotPublisher

    def publish_snapshot(self, now_ms: int) -> None:
        self.publisher.publish(now_ms)


class ShareKind:
    """``KafkaShareConsumer``'s parts."""

    thread_name = "asyncconsumer-share-network"

    def __init__(self, config: ShareConsumerConfig) -> None:
        self._config = config

    def build(self, context: BackgroundContext) -> tuple[ShareShared, ShareBackgroundParts]:
        config, settings = self._config, self._config.consumer
        events, metadata, delegate = context.background_events, context.metadata, context.delegate
        shared = ShareShared(
            buffer=ShareFetchBuffer.starting_at_half(settings.fetch_buffer_bytes, context.signal),
            demand=ShareDemand(),
            published=PublishedShare(),
            metrics_reader=MetricsReader(),
        )
        coordinator = CoordinatorManager(config.group_id, context.retry, events.stage)
        context.directory.use_coordinator(coordinator)
        delegate.add_disconnect_listener(lambda node, error: coordinator.disconnected(node))
        membership = ShareMembershipManager(
            config.group_id,
            coordinator,
            context.retry,
            events.stage,
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
                partition_max_bytes=settings.max_partition_fetch_bytes,
                max_records=settings.max_poll_records,
                acquire_mode=_ACQUIRE_MODES[config.share_acquire_mode],
                request_timeout_ms=settings.request_timeout_ms,
            ),
            membership,
            metadata,
            shared.buffer,
            events.put,  # at once: a commit's caller reads its partitions' events when its future is done
            context.retry,
            shared.demand,
        )
        telemetry = build_telemetry(
            context,
            _samples(shared.metrics_reader),
            group_id=config.group_id,
            member_id=lambda: shared.published.current.member_id,
        )
        owned = ShareBackgroundParts(
            coordinator=coordinator,
            membership=membership,
            metadata=metadata,
            consume=consume,
            telemetry=telemetry,
            delegate=delegate,
            processor=ShareEventProcessor(
                metadata,
                membership,
                consume,
                on_close=context.control.request_close,
                last_error=lambda: delegate.last_connection_error() or coordinator.last_error or metadata.last_error,
                fatal_error=lambda: delegate.fatal_error,
                telemetry=telemetry,
            ),
            publisher=ShareSnapshotPublisher(shared.published, coordinator, membership, consume, delegate),
        )
        return shared, owned


def _samples(reader: MetricsReader[ShareConsumerMetrics]) -> Callable[[], list[Sample] | None]:
    def read_samples() -> list[Sample] | None:
        read = reader.read
        return share_samples(read()) if read is not None else None

    return read_samples
