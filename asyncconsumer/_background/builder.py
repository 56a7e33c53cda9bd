"""The caller's one way into the background: builds a consumer's, a share consumer's or an admin client's parts on
the chassis.

``build``, ``build_share`` and ``build_admin`` run once, on the thread that constructs the client, and return its
parts by name (as Kafka's ``RequestManagers``): what the two threads share, the thread's handle, and under ``owned``
what only the background thread may touch once it runs. Nothing runs until the thread starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from asyncconsumer._background.admin_kind import AdminBackgroundParts, AdminKind
from asyncconsumer._background.chassis import assemble
from asyncconsumer._background.consumer_kind import BackgroundParts, ConsumerKind
from asyncconsumer._background.network_thread import ConsumerNetworkThread
from asyncconsumer._background.share_kind import ShareBackgroundParts, ShareKind
from asyncconsumer._clock import Clock
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.share_fetch_buffer import ShareFetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.snapshot import (
    CallerActivity,
    MetricsReader,
    Published,
    PublishedAdmin,
    PublishedShare,
    ShareDemand,
)
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import AdminConfig, ConsumerConfig, ShareConsumerConfig
from asyncconsumer.metrics import ConsumerMetrics, ShareConsumerMetrics

if TYPE_CHECKING:
    from asyncconsumer.metrics import PluginMetricsStore


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


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareComponents:
    """One share consumer's parts by name. The caller's side uses the shared ones and the thread's handle."""

    signal: CallerSignal
    buffer: ShareFetchBuffer
    demand: ShareDemand
    """Written by the caller's ``poll``: what the consume manager may fetch."""
    app_events: ApplicationEventQueue
    background_events: BackgroundEventQueue
    published: PublishedShare
    metrics_reader: MetricsReader[ShareConsumerMetrics]
    """Where the caller's side puts its ``metrics()`` for the background's telemetry pushes."""
    thread: ConsumerNetworkThread
    owned: ShareBackgroundParts


def build(config: ConsumerConfig, clock: Clock) -> Components:
    """Every part of one consumer, wired; the network thread is built but not started."""
    built = assemble(ConsumerKind(config), config, clock)
    shared = built.shared
    return Components(
        signal=built.context.signal,
        subscriptions=shared.subscriptions,
        buffer=shared.buffer,
        app_events=built.context.app_events,
        background_events=built.context.background_events,
        published=shared.published,
        activity=shared.activity,
        plugin_metrics=shared.plugin_metrics,
        metrics_reader=shared.metrics_reader,
        thread=built.thread,
        owned=built.owned,
    )


def build_share(config: ShareConsumerConfig, clock: Clock) -> ShareComponents:
    """Every part of one share consumer, wired; the network thread is built but not started."""
    built = assemble(ShareKind(config), config.consumer, clock)
    shared = built.shared
    return ShareComponents(
        signal=built.context.signal,
        buffer=shared.buffer,
        demand=shared.demand,
        app_events=built.context.app_events,
        background_events=built.context.background_events,
        published=shared.published,
        metrics_reader=shared.metrics_reader,
        thread=built.thread,
        owned=built.owned,
    )


@attrs.define(frozen=True, slots=True, kw_only=True)
class AdminComponents:
    """One admin client's parts by name: its events go out, their futures come back."""

    signal: CallerSignal
    app_events: ApplicationEventQueue
    background_events: BackgroundEventQueue
    thread: ConsumerNetworkThread
    owned: AdminBackgroundParts
    published: PublishedAdmin


def build_admin(config: AdminConfig, clock: Clock) -> AdminComponents:
    """Every part of one admin client, wired; the network thread is built but not started."""
    built = assemble(AdminKind(), config.client, clock)
    return AdminComponents(
        signal=built.context.signal,
        app_events=built.context.app_events,
        background_events=built.context.background_events,
        thread=built.thread,
        owned=built.owned,
        published=built.shared.published,
    )
