"""What the two threads tell each other without an event: the background's published snapshot, the caller's polls.

The background thread owns its managers and connections; the caller's thread never reads them. Instead the loop
publishes, once per iteration, an immutable ``BackgroundSnapshot`` that ``metrics()``, ``group_metadata()`` and
``poll`` read. The other way, the caller's ``poll`` stamps ``CallerActivity.last_poll_ms`` for the heartbeats'
``max_poll_interval_ms``. Each is a single reference written by one thread and read by the other: no lock needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

import attrs

from asyncconsumer.metrics import UnreachableNode
from asyncconsumer.records import TopicPartition

M = TypeVar("M")
"""What a consumer's ``metrics()`` returns (``ConsumerMetrics``, ``ShareConsumerMetrics``)."""

NO_PARTITIONS: Mapping[TopicPartition, int] = MappingProxyType({})


@attrs.define(frozen=True, slots=True, kw_only=True)
class NodeOutage:
    """A node the delegate cannot reach, on the consumer's own (monotonic) clock; ``metrics()`` turns it into an
    ``UnreachableNode`` when it is read."""

    host: str
    port: int
    since_ms: int
    failed_at_ms: int
    """Its latest failure."""
    failures: int
    last_error: str

    def seen_at(self, now_ms: int, wall_ms: int) -> UnreachableNode:
        """As ``metrics()`` shows it at ``now_ms`` (this clock), when the wall clock says ``wall_ms``."""
        age = max(0, now_ms - self.since_ms)
        return UnreachableNode(self.host, self.port, wall_ms - age, age, self.failures, self.last_error)


NO_OUTAGES: Mapping[int, NodeOutage] = MappingProxyType({})


def unreachable_nodes(outages: Mapping[int, NodeOutage], now_ms: int, wall_ms: int) -> dict[int, UnreachableNode]:
    return {node: outage.seen_at(now_ms, wall_ms) for node, outage in sorted(outages.items())}


@attrs.define(frozen=True, slots=True, kw_only=True)
class BackgroundSnapshot:
    """The background's state as the caller may see it; replaced whole, never changed in place."""

    fetch_latency_avg_ms: float | None = None
    fetch_latency_max_ms: int | None = None
    fetch_requests_in_flight: int = 0
    fetch_requests_full: int = 0
    fetch_requests_incremental: int = 0
    fetch_session_errors: int = 0
    read_replicas: Mapping[TopicPartition, int] = NO_PARTITIONS
    """Partitions read from a replica other than their leader now (KIP-392), and from which."""
    fetched_from: Mapping[TopicPartition, int] = NO_PARTITIONS
    """Partition -> the node whose fetch last brought it records."""
    connection_count: int = 0
    last_connection_error: str | None = None
    connections_created: int = 0
    connection_errors: int = 0
    unreachable_nodes: Mapping[int, NodeOutage] = NO_OUTAGES
    """Nodes the delegate cannot reach now, by broker node id (``NetworkClientDelegate.unreachable_nodes``)."""
    commit_latency_avg_ms: float | None = None
    commit_latency_max_ms: int | None = None
    commits: int = 0
    rebootstraps: int = 0
    rebootstrapping: bool = False
    coordinator_id: int | None = None
    last_heartbeat_ms: int | None = None
    rebalances: int = 0
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    rejoin_on_poll: bool = False
    """The member left because the caller stopped polling: the caller's next ``poll`` tells the background."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class AdminMetrics:
    """What an admin client's background thread knows of its connections, published after every loop iteration:
    safe to read from any thread (``AsyncAdmin.metrics()``)."""

    connection_count: int = 0
    """Connections open now."""
    connections_created: int = 0
    connection_errors: int = 0
    """Connections that failed or were lost, since the client started."""
    last_connection_error: str | None = None
    """The latest connection failure (None once a connection succeeds again), as a command shows while it waits."""
    rebootstraps: int = 0


class PublishedAdmin:
    """The latest ``AdminMetrics``: the background thread replaces ``current``, any thread reads it."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current = AdminMetrics()


class Published:
    """The latest ``BackgroundSnapshot``: the background thread replaces ``current``, the caller's thread reads it."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current = BackgroundSnapshot()


class MetricsReader(Generic[M]):
    """How the background reads ``metrics()`` for KIP-714 telemetry: the caller's side sets ``read`` once, when it is
    built and before the thread starts; the background calls it (``metrics()`` is safe from any thread)."""

    __slots__ = ("read",)

    def __init__(self) -> None:
        self.read: Callable[[], M] | None = None


class CallerActivity:
    """When the caller last polled: written by the caller's ``poll`` only, read by the background's heartbeats."""

    __slots__ = ("last_poll_ms",)

    def __init__(self) -> None:
        self.last_poll_ms: int | None = None


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareSnapshot:
    """A share consumer's background state as its caller may see it; replaced whole, never changed in place."""

    member_id: str = ""
    member_epoch: int = 0
    member_state: str = "unsubscribed"
    assignment: frozenset[TopicPartition] = frozenset()
    coordinator_id: int | None = None
    last_heartbeat_ms: int | None = None
    acquisition_lock_timeout_ms: int | None = None
    share_fetches: int = 0
    records_acquired: int = 0
    acknowledgements_sent: int = 0
    acknowledgement_errors: int = 0
    connection_count: int = 0
    connections_created: int = 0
    last_connection_error: str | None = None
    unreachable_nodes: Mapping[int, NodeOutage] = NO_OUTAGES


class PublishedShare:
    """The latest ``ShareSnapshot``: the background thread replaces ``current``, the caller's thread reads it."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current = ShareSnapshot()


class ShareDemand:
    """What a share consumer's caller wants: written by its ``poll`` only, read by the background's fetches.

    A share consumer fetches for a caller that polls, never for one that stopped: acquired records are locked for
    this member, and records it fetched but nobody takes would only wait for their locks to expire. Each ``poll``
    allows one fetch per broker (``polls``), and more while the caller waits in it (``waiting_until_ms``).
    """

    __slots__ = ("acks_poll", "held", "leaving", "polls", "waiting_until_ms")

    def __init__(self) -> None:
        self.polls = 0
        self.acks_poll = 0
        """The last ``poll`` that sent acknowledgements before counting itself (``ShareAcknowledgeEvent.poll``):
        until the background has them, that poll's fetch waits, so it never goes without them."""
        self.waiting_until_ms = 0
        self.held = 0
        """Records fetched and decoded that no ``poll`` has returned yet: while there are some, a fetch goes only
        ahead of them (batch_optimized) and without long-polling (a fetch waiting for records the broker cannot
        lock would hold up the acknowledgements that free them); with record_limit none goes."""
        self.leaving = False
        """Set before ``close`` or ``unsubscribe`` settles what was delivered: nothing more is fetched, so records
        just released are not taken again by the member that is leaving."""
