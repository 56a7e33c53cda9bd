"""``consumer.metrics()``: a snapshot of what the consumer is doing, read without stopping it.

Counters are written by one thread and read by the caller's; a snapshot is consistent per field, not across
fields (as Java's metrics are). Rates are over the last ``RATE_WINDOW_S`` seconds of polls.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping

import attrs

from asyncconsumer.records import TopicPartition

RATE_WINDOW_S = 30.0


@attrs.define(frozen=True, slots=True)
class PartitionMetrics:
    """One assigned partition: the next offset to return, the high watermark last fetched, and the difference."""

    position: int | None
    high_watermark: int | None
    lag: int | None
    preferred_read_replica: int | None = None
    """The replica (node id) the partition is read from instead of its leader, as the leader named it for
    ``client_rack`` (KIP-392; Java's ``preferred-read-replica``); None while it is read from its leader."""
    fetched_from: int | None = None
    """The node whose fetch last brought the partition records (None before any)."""


@attrs.define(frozen=True, slots=True)
class UnreachableNode:
    """A broker (or bootstrap server) the consumer cannot reach now: its connection attempts fail (refused, reset,
    timed out), or its connection was lost with requests unanswered, and it has not connected since."""

    host: str
    port: int
    unreachable_since_ms: int
    """When it first failed (Unix epoch milliseconds): its first failed connection attempt, or the loss of a
    connection with requests in flight (a black-holed request shows once it times out)."""
    unreachable_for_ms: int
    """How long before this snapshot that was."""
    failures: int
    """Connection attempts and connections that failed since."""
    last_error: str
    """Why the latest of them failed."""


@attrs.define(frozen=True, slots=True)
class PluginMetrics:
    """What one plugin published: plain values, values per partition, and why it stopped (None while it runs)."""

    values: dict[str, float]
    partitions: dict[TopicPartition, dict[str, float]]
    failed: str | None = None


@attrs.define(frozen=True, slots=True)
class ConsumerMetrics:
    records_consumed_total: int
    bytes_consumed_total: int
    """Record-set bytes the caller has consumed (compressed size, as fetched)."""
    records_consumed_rate: float
    """Records per second returned by ``poll`` over the last 30 s."""
    bytes_consumed_rate: float
    fetch_latency_avg_ms: float | None
    """Fetch request to response, over the last 100 fetches (None before any)."""
    fetch_latency_max_ms: int | None
    fetch_requests_in_flight: int
    buffered_bytes: int
    """Fetched bytes waiting for the caller (bounded by ``fetch_buffer_limit_bytes``)."""
    fetch_buffer_limit_bytes: int
    """What buffered plus in-flight bytes may reach now: half of the bound at first, grown to it when the caller
    keeps running the buffer dry; the bound is ``fetch_buffer_bytes``, or by default follows the partitions
    assigned (see docs/how-it-works.md)."""
    partitions: dict[TopicPartition, PartitionMetrics]
    rebalances: int
    last_heartbeat_age_ms: int | None
    coordinator_id: int | None
    """The group coordinator's broker node id (None without a group or while it is looked up)."""
    connection_count: int
    last_connection_error: str | None = None
    """Why the most recent connection attempt or connection failed, while that broker stays unreachable (None when
    every broker the consumer needs answers): what to show a person waiting for a consumer to connect."""
    connections_created: int = 0
    """Broker connections opened and authenticated since the consumer started (Java's connection-creation-total)."""
    connection_errors: int = 0
    """Connection attempts that failed and open connections lost, the consumer's own closes not counted."""
    commit_latency_avg_ms: float | None = None
    """OffsetCommit request to successful response, over the last 100 commits (None before any; Java's
    commit-latency-avg)."""
    commit_latency_max_ms: int | None = None
    commits: int = 0
    """Commits the group coordinator accepted, auto-commits included (Java's commit-total)."""
    rebootstraps: int = 0
    """Times the consumer asked its bootstrap servers for metadata again (KIP-899): every broker it knew failed,
    wanted metadata did not come for ``metadata_recovery_rebootstrap_trigger_ms``, or a broker asked for it."""
    rebootstrapping: bool = False
    """A rebootstrap is under way: no metadata has answered since it began."""
    fetch_requests_full: int = 0
    """Fetch requests sent naming every partition they fetch: the first of each fetch session (KIP-227), every
    fetch when a broker gives no session or ``fetch_sessions`` is off, and the one after a session error."""
    fetch_requests_incremental: int = 0
    """Fetch requests sent within a fetch session, naming only the partitions that changed."""
    fetch_session_errors: int = 0
    """Fetch sessions a broker had lost (FETCH_SESSION_ID_NOT_FOUND) or found out of step
    (INVALID_FETCH_SESSION_EPOCH); each was followed by a full fetch."""
    plugins: dict[str, PluginMetrics] = attrs.field(factory=dict)
    """Per enabled plugin, by name (see ``asyncconsumer.plugins``)."""
    unreachable_nodes: dict[int, UnreachableNode] = attrs.field(factory=dict)
    """The brokers the consumer cannot reach now, by node id, while that lasts (a bootstrap server by a negative id,
    as Java names ``node--1``; a group coordinator's connection counts for its broker). Empty while every broker the
    consumer talks to answers."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareConsumerMetrics:
    """A share consumer's counters (caller side) and its background's latest published state."""

    records_consumed_total: int
    bytes_consumed_total: int
    records_consumed_rate: float
    """Records per second returned by ``poll`` over the last few seconds."""
    bytes_consumed_rate: float
    acknowledgements: Mapping[str, int]
    """Acknowledgements made, by type name (accept, release, reject, renew), implicit ones included."""
    acknowledgement_errors: int
    """Partitions' acknowledgements the broker refused (an expired lock, say), as reported to the callback."""
    records_in_flight: int
    """Records the last ``poll`` returned that are not acknowledged yet."""
    records_held: int
    """Records acquired and decoded, waiting for the next ``poll``."""
    member_id: str
    member_epoch: int
    member_state: str
    assignment: frozenset[TopicPartition]
    coordinator_id: int | None
    last_heartbeat_age_ms: int | None
    acquisition_lock_timeout_ms: int | None
    share_fetches: int
    records_acquired: int
    connection_count: int
    last_connection_error: str | None
    acknowledgements_sent: int = 0
    """Records whose acknowledgement went to the broker (with a ShareFetch or a ShareAcknowledge)."""
    connections_created: int = 0
    """Connections made to brokers, as for a consumer."""
    buffered_bytes: int = 0
    """Fetched bytes waiting for the caller: with what fetches in flight may bring, within
    ``fetch_buffer_limit_bytes``, as for a consumer."""
    fetch_buffer_limit_bytes: int = 0
    """What buffered plus in-flight bytes may reach now: half of ``fetch_buffer_bytes`` at first, grown to it when the
    caller keeps running the buffer dry."""
    unreachable_nodes: dict[int, UnreachableNode] = attrs.field(factory=dict)
    """The brokers the share consumer cannot reach now, by node id, while that lasts (as for a consumer)."""


class RateMeter:
    """Totals sampled at each poll; the rate is the change over the samples of the last window."""

    __slots__ = ("_samples", "_window_ms")

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self._window_ms = int(window_s * 1000)
        self._samples: collections.deque[tuple[int, int, int]] = collections.deque()

    def sample(self, now_ms: int, records: int, size: int) -> None:
        samples = self._samples
        if samples and samples[-1][0] == now_ms:
            samples[-1] = (now_ms, records, size)
        else:
            samples.append((now_ms, records, size))
        while len(samples) > 2 and samples[0][0] < now_ms - self._window_ms:
            samples.popleft()

    def rates(self, now_ms: int, records: int, size: int) -> tuple[float, float]:
        """(records/s, bytes/s) from the oldest sample in the window to ``now_ms`` with these totals. Safe while
        another thread samples: it reads a copy of the samples (``processing_metrics()`` is read from any thread)."""
        oldest = next((s for s in list(self._samples) if s[0] >= now_ms - self._window_ms), None)
        if oldest is None or now_ms <= oldest[0]:
            return 0.0, 0.0
        seconds = (now_ms - oldest[0]) / 1000
        return (records - oldest[1]) / seconds, (size - oldest[2]) / seconds


class LatencyWindow:
    """The last ``size`` latencies, for an average and a maximum (computed once per change: the background asks
    for them every loop iteration)."""

    __slots__ = ("_summary", "_values")

    def __init__(self, size: int = 100) -> None:
        self._values: collections.deque[int] = collections.deque(maxlen=size)
        self._summary: tuple[float | None, int | None] | None = (None, None)

    def add(self, latency_ms: int) -> None:
        self._values.append(latency_ms)
        self._summary = None

    def summary(self) -> tuple[float | None, int | None]:
        if self._summary is None:
            values = self._values
            self._summary = (sum(values) / len(values), max(values))
        return self._summary


class PluginMetricsStore:
    """Written by one plugin on the background thread, read by the caller's; the lock makes each snapshot whole."""

    __slots__ = ("_failed", "_lock", "_partitions", "_values")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, float] = {}
        self._partitions: dict[str, dict[TopicPartition, float]] = {}
        self._failed: str | None = None

    def set(self, name: str, value: float) -> None:
        with self._lock:
            self._values[name] = value

    def set_partitions(self, name: str, values: Mapping[TopicPartition, float]) -> None:
        """Replaces metric ``name`` for every partition: partitions not in ``values`` no longer have it."""
        with self._lock:
            self._partitions[name] = dict(values)

    def fail(self, reason: str) -> None:
        with self._lock:
            self._failed = reason

    def snapshot(self) -> PluginMetrics:
        with self._lock:
            partitions: dict[TopicPartition, dict[str, float]] = {}
            for name, values in self._partitions.items():
                for tp, value in values.items():
                    partitions.setdefault(tp, {})[name] = value
            return PluginMetrics(dict(self._values), dict(sorted(partitions.items())), self._failed)
