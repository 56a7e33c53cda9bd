"""The admin client on the chassis: the chassis's metadata and delegate, and one manager that sends each admin
request where it goes (``managers/admin_requests.py``). No group, no fetch buffer, no telemetry."""

from __future__ import annotations

import attrs

from asyncconsumer._background.admin_processor import AdminEventProcessor
from asyncconsumer._background.chassis import POLLED, BackgroundContext
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.snapshot import AdminMetrics, PublishedAdmin
from asyncconsumer.managers.admin_requests import AdminRequestsManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.network.delegate import NetworkClientDelegate


@attrs.define(frozen=True, slots=True, kw_only=True)
class AdminShared:
    """What crosses between an admin client's threads besides its events and their futures: the published
    metrics, replaced whole by the background."""

    published: PublishedAdmin
    buffer: FetchBuffer | None = None


@attrs.define(frozen=True, slots=True, kw_only=True)
class AdminBackgroundParts:
    """What the background thread owns; the ``POLLED`` fields are the managers, in loop order."""

    metadata: MetadataManager = attrs.field(metadata=POLLED)
    """Keeps the brokers' addresses (and rebootstraps when none answers)."""
    requests: AdminRequestsManager = attrs.field(metadata=POLLED)
    delegate: NetworkClientDelegate
    processor: AdminEventProcessor
    published: PublishedAdmin

    def publish_snapshot(self, now_ms: int) -> None:
        """The connections' counts and latest failure (every answer goes back through its event's future)."""
        delegate = self.delegate
        last_error = delegate.last_connection_error() or self.metadata.last_error
        self.published.current = AdminMetrics(
            connection_count=delegate.connection_count,
            connections_created=delegate.connections_created,
            connection_errors=delegate.connection_errors,
            last_connection_error=None if last_error is None else str(last_error),
            rebootstraps=self.metadata.rebootstraps,
        )


class AdminKind:
    """``KafkaAdminClient``'s parts."""

    thread_name = "asyncconsumer-admin-network"

    def build(self, context: BackgroundContext) -> tuple[AdminShared, AdminBackgroundParts]:
        metadata, delegate = context.metadata, context.delegate
        requests = AdminRequestsManager(context.retry)
        context.directory.use_coordinator(requests)
        delegate.add_disconnect_listener(lambda node, error: requests.disconnected(node))
        published = PublishedAdmin()
        owned = AdminBackgroundParts(
            published=published,
            metadata=metadata,
            requests=requests,
            delegate=delegate,
            processor=AdminEventProcessor(
                requests,
                on_close=context.control.request_close,
                last_error=lambda: delegate.last_connection_error() or metadata.last_error,
                fatal_error=lambda: delegate.fatal_error,
            ),
        )
        return AdminShared(published=published), owned
