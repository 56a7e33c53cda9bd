"""``PluginContext``: everything a plugin's request manager may see and do, and nothing more.

The views read the consumer's live state (safe from the background thread, where managers run); none of them can
change an assignment, a position or a commit. What a plugin may do is publish metrics, log, ask for fresher
metadata, run a function on the caller's side, and report an error to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from asyncconsumer._clock import Clock
from asyncconsumer._logs import Logger, get_logger
from asyncconsumer._state.cluster import Cluster
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaError
from asyncconsumer.events.background import BackgroundEvent, CallbackEvent, ErrorEvent
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.metrics import PluginMetricsStore
from asyncconsumer.records import TopicPartition


class PluginContext:
    """Handed to a plugin's factory; its manager keeps it. Read-only views plus a few ways to speak up."""

    __slots__ = ("_emit", "_metadata", "_metrics", "_subs", "clock", "config", "log", "name", "options")

    def __init__(
        self,
        name: str,
        options: Mapping[str, Any],
        config: ConsumerConfig,
        clock: Clock,
        metadata: MetadataManager,
        subscriptions: SubscriptionState,
        emit: Callable[[BackgroundEvent], None],
        metrics: PluginMetricsStore,
    ) -> None:
        self.name = name
        """The plugin's name (its entry-point name, or ``Plugin.name``)."""
        self.options: Mapping[str, Any] = MappingProxyType(dict(options))
        """This plugin's ``plugin_options[name]`` (empty when none were given)."""
        self.config = config
        """The consumer's configuration (frozen)."""
        self.clock = clock
        """The consumer's clock (monotonic milliseconds); a manager is given ``now_ms`` in ``poll`` anyway."""
        self.log: Logger = get_logger("asyncconsumer.plugins").bind(plugin=name)
        """A structlog-style logger whose events carry ``plugin=name``; use fixed event names."""
        self._metadata = metadata
        self._subs = subscriptions
        self._emit = emit
        self._metrics = metrics

    # --- cluster ---------------------------------------------------------------------------------------------
    @property
    def cluster(self) -> Cluster:
        """The latest metadata snapshot (immutable; replaced whole by each metadata response)."""
        return self._metadata.cluster

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The node id of the partition's leader, or None while unknown (then ``request_metadata_update``)."""
        return self._metadata.cluster.leader_for(tp)

    def request_metadata_update(self) -> None:
        """Ask for a metadata refresh (e.g. after NOT_LEADER_OR_FOLLOWER); cheap, coalesced with others."""
        self._metadata.request_update()

    # --- assignment and positions ------------------------------------------------------------------------------
    @property
    def assignment_version(self) -> int:
        """Changes whenever the assignment does: compare it to drop per-partition state cheaply."""
        return self._subs.assignment_version

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self._subs.assigned())

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset ``poll`` returns for ``tp`` (None: not assigned, or not known yet)."""
        if not self._subs.is_assigned(tp):
            return None
        return self._subs.position(tp)

    def positions(self) -> dict[TopicPartition, int]:
        """Every assigned partition's position, where known."""
        return self._subs.consumed_positions()

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """The high watermark the last fetch of ``tp`` saw (None before any, or when not assigned)."""
        if not self._subs.is_assigned(tp):
            return None
        return self._subs.high_watermark(tp)

    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(self._subs.paused())

    # --- speaking up -------------------------------------------------------------------------------------------
    def set_metric(self, name: str, value: float) -> None:
        """Publish ``value`` as ``consumer.metrics().plugins[plugin].values[name]``."""
        self._metrics.set(name, value)

    def set_partition_metrics(self, name: str, values: Mapping[TopicPartition, float]) -> None:
        """Publish metric ``name`` per partition (``...plugins[plugin].partitions[tp][name]``), replacing the last
        set: a partition left out no longer has it."""
        self._metrics.set_partitions(name, values)

    def call_on_caller(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the caller's side inside its next ``poll`` (never on the background thread)."""
        self._emit(CallbackEvent(fn))

    def report_error(self, error: KafkaError) -> None:
        """Raise ``error`` from the caller's next ``poll``, once; the consumer keeps running."""
        self._emit(ErrorEvent(error))
