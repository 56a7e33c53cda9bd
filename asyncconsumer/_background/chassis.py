"""One chassis for every kind of client: what a consumer and a share consumer share, built once and in one order.

``assemble`` makes the loop's handle first (``LoopControl``), then the queues, the metadata, the node directory and
the delegate, and hands them to the kind as one ``BackgroundContext``. The kind (``consumer_kind.py``,
``share_kind.py``, ``admin_kind.py``) builds its shared state and the parts the background owns; the chassis then
guards those parts and makes the thread. A kind's owned parts declare their managers, as ``POLLED`` fields, in the
order the loop polls them: a new manager is one field and its construction, in the kind's module, and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

import attrs

from asyncconsumer._background import owned as ownership
from asyncconsumer._background.control import LoopControl
from asyncconsumer._background.network_thread import ConsumerNetworkThread
from asyncconsumer._background.processor import EventProcessor
from asyncconsumer._clock import Clock, unix_offset_ms
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import RequestManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.managers.telemetry import TelemetryManager
from asyncconsumer.managers.telemetry_metrics import Sample
from asyncconsumer.network.connection import CLIENT_VERSION
from asyncconsumer.network.delegate import NetworkClientDelegate
from asyncconsumer.network.security import ConnectionSecurity


class _Coordinator(Protocol):
    def address(self, node_id: int) -> tuple[str, int] | None: ...


class NodeDirectory:
    """The delegate's node directory: a group coordinator's own connection first (once a kind registers one), then
    the cluster's nodes."""

    def __init__(self, metadata: MetadataManager) -> None:
        self._metadata = metadata
        self._coordinator: _Coordinator | None = None

    def use_coordinator(self, coordinator: _Coordinator) -> None:
        """A kind with a group: its coordinator's address is looked up there first."""
        self._coordinator = coordinator

    def address(self, node_id: int) -> tuple[str, int] | None:
        if self._coordinator is not None:
            found = self._coordinator.address(node_id)
            if found is not None:
                return found
        return self._metadata.address(node_id)

    def candidate_nodes(self) -> list[int]:
        return self._metadata.candidate_nodes()

    def rebootstrap(self, reason: str) -> None:
        self._metadata.rebootstrap(reason)


@attrs.define(frozen=True, slots=True, kw_only=True)
class BackgroundContext:
    """What the chassis hands a kind: the settings, the clock, the loop's handle and the parts every kind shares."""

    settings: ConsumerConfig
    clock: Clock
    control: LoopControl
    signal: CallerSignal
    """Wakes the caller (what the buffer and the background events deliver)."""
    app_events: ApplicationEventQueue
    background_events: BackgroundEventQueue
    retry: ExponentialBackoff
    metadata: MetadataManager
    directory: NodeDirectory
    delegate: NetworkClientDelegate


POLLED = {"asyncconsumer.polled": True}
"""``attrs.field(metadata=POLLED)``: a field of a kind's owned parts that the loop polls, in field order: a manager, a
``ConsumerGroup``-like part with ``managers``, a dict of managers, or None (not built)."""


def polled_managers(owned: attrs.AttrsInstance) -> list[RequestManager]:
    """The managers the loop polls, in the order ``owned``'s class declares them."""
    managers: list[RequestManager] = []
    for field in attrs.fields(type(owned)):
        if field.metadata != POLLED:
            continue
        part = getattr(owned, field.name)
        if part is None:
            continue
        if isinstance(part, dict):
            managers.extend(part.values())
        elif hasattr(part, "managers"):
            managers.extend(part.managers)
        else:
            managers.append(part)
    return managers


class Owned(attrs.AttrsInstance, Protocol):
    """What the chassis asks of a kind's owned parts (an attrs class: its ``POLLED`` fields are read)."""

    @property
    def processor(self) -> EventProcessor: ...

    def publish_snapshot(self, now_ms: int) -> None:
        """Replaces the kind's published snapshot with what its parts hold now (background, once per iteration)."""
        ...


class Shared(Protocol):
    """What the chassis asks of a kind's state shared with the caller."""

    @property
    def buffer(self) -> FetchBuffer | None:
        """Where records reach the caller; None for a kind that fetches none (the admin client)."""
        ...


SharedT = TypeVar("SharedT", bound=Shared)
OwnedT = TypeVar("OwnedT", bound=Owned)
_SharedT_co = TypeVar("_SharedT_co", bound=Shared, covariant=True)
_OwnedT_co = TypeVar("_OwnedT_co", bound=Owned, covariant=True)


class Kind(Protocol[_SharedT_co, _OwnedT_co]):
    """A kind of client: how its own parts are built on the chassis."""

    @property
    def thread_name(self) -> str: ...

    def build(self, context: BackgroundContext) -> tuple[_SharedT_co, _OwnedT_co]: ...


@attrs.define(frozen=True, slots=True, kw_only=True)
class Assembled(Generic[SharedT, OwnedT]):
    """One client's parts: the chassis's (``context``), the kind's, and the thread (built, not started)."""

    context: BackgroundContext
    shared: SharedT
    owned: OwnedT
    thread: ConsumerNetworkThread


def assemble(kind: Kind[SharedT, OwnedT], settings: ConsumerConfig, clock: Clock) -> Assembled[SharedT, OwnedT]:
    """Every part of one client of ``kind``, wired; the network thread is built but not started."""
    signal = CallerSignal()
    background_events = BackgroundEventQueue(signal)
    retry = ExponentialBackoff(settings.retry_backoff_ms, settings.retry_backoff_max_ms)
    metadata = MetadataManager(
        settings.bootstrap_servers, settings.metadata_max_age_ms, retry, settings.rebootstrap_trigger_ms
    )
    directory = NodeDirectory(metadata)
    delegate = NetworkClientDelegate(
        clock,
        directory,
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
    context = BackgroundContext(
        settings=settings,
        clock=clock,
        control=LoopControl(),
        signal=signal,
        app_events=ApplicationEventQueue(),
        background_events=background_events,
        retry=retry,
        metadata=metadata,
        directory=directory,
        delegate=delegate,
    )
    shared, owned = kind.build(context)
    managers = polled_managers(owned)
    owner = ownership.Owner()
    if ownership.enabled():
        _guard_owned(owned, managers, owner)
    buffer = shared.buffer

    def publish(now_ms: int) -> None:
        """The end of a loop iteration: the snapshot first, then what the caller may now see goes with it."""
        owned.publish_snapshot(now_ms)
        if buffer is not None:
            buffer.deliver()
        background_events.deliver()

    thread = ConsumerNetworkThread(
        clock, context.control, context.app_events, background_events, owned.processor, managers, delegate,
        kind.thread_name, publish=publish, owner=owner,
    )  # fmt: skip
    if buffer is not None:
        buffer.set_space_waiter(context.control.wakeup)
    return Assembled(context=context, shared=shared, owned=owned, thread=thread)


def _guard_owned(owned: attrs.AttrsInstance, managers: Sequence[RequestManager], owner: ownership.Owner) -> None:
    """The thread-ownership debug mode: every owned part and every manager the loop polls checks its thread."""
    parts: dict[int, tuple[str, object]] = {}
    for field in attrs.fields(type(owned)):
        part = getattr(owned, field.name)
        if part is not None and not isinstance(part, dict):
            parts[id(part)] = (field.name, part)
    for manager in managers:
        parts.setdefault(id(manager), (type(manager).__name__, manager))
    for name, part in parts.values():
        ownership.guard(part, owner, name)


def build_telemetry(
    context: BackgroundContext,
    read_samples: Callable[[], list[Sample] | None],
    *,
    group_id: str | None,
    member_id: Callable[[], str],
) -> TelemetryManager | None:
    """The KIP-714 manager of any kind (``read_samples`` tells which metrics it pushes); None when pushes are off."""
    settings = context.settings
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
        context.delegate.supports_api,
        context.retry,
        unix_offset_ms=unix_offset_ms(context.clock),
        client_version=CLIENT_VERSION,
    )
