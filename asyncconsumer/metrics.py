"""``consumer.metrics()``: a snapshot of what the consumer is doing, read without stopping it.

Counters are written by one thread and read by the caller's; a snapshot is consistent per field, not across
fields (as Java's metrics are). Rates are over the last ``RATE_WINDOW_S`` seconds of polls.
"""

from __future__ import annotations

import collections

import attrs

from asyncconsumer.records import TopicPartition

RATE_WINDOW_S = 30.0


@attrs.define(frozen=True, slots=True)
class PartitionMetrics:
    """One assigned partition: the next offset to return, the high watermark last fetched, and the difference."""

    position: int | None
    high_watermark: int | None
    lag: int | None


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
    """Fetched bytes waiting for the caller (bounded by ``fetch_buffer_bytes``)."""
    partitions: dict[TopicPartition, PartitionMetrics]
    rebalances: int
    last_heartbeat_age_ms: int | None
    coordinator_id: int | None
    """The group coordinator's broker node id (None without a group or while it is looked up)."""
    connection_count: int


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
        """(records/s, bytes/s) from the oldest sample in the window to ``now_ms`` with these totals."""
        oldest = next((s for s in self._samples if s[0] >= now_ms - self._window_ms), None)
        if oldest is None or now_ms <= oldest[0]:
            return 0.0, 0.0
        seconds = (now_ms - oldest[0]) / 1000
        return (records - oldest[1]) / seconds, (size - oldest[2]) / seconds


class LatencyWindow:
    """The last ``size`` latencies, for an average and a maximum."""

    __slots__ = ("_values",)

    def __init__(self, size: int = 100) -> None:
        self._values: collections.deque[int] = collections.deque(maxlen=size)

    def add(self, latency_ms: int) -> None:
        self._values.append(latency_ms)

    def summary(self) -> tuple[float | None, int | None]:
        values = list(self._values)
        if not values:
            return None, None
        return sum(values) / len(values), max(values)
