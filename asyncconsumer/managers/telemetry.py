"""KIP-714 client telemetry: get a subscription from the brokers, push the metrics it asks for, push once more on
close.

The client's state machine is the KIP's, as a table (``TRANSITIONS``): every change of state goes through
``_enter``, which refuses one the table lacks. A broker that does not offer GetTelemetrySubscriptions (Kafka with no
client-telemetry receiver configured, Tansu) leaves the manager idle: nothing is sent and nothing is logged above
debug. Sans-I/O like every manager: the metrics are read through a callable, times come from ``poll``'s ``now``.
"""

from __future__ import annotations

import enum
import random
import uuid
from collections.abc import Callable, Mapping, Sequence

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ErrorCode, IllegalStateError, KafkaError, UnsupportedVersionError
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.managers.telemetry_metrics import Sample
from asyncconsumer.protocol.codecs import COMPRESSIBLE, compress
from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.messages.get_telemetry_subscriptions import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from asyncconsumer.protocol.messages.push_telemetry import PushTelemetryRequest, PushTelemetryResponse
from asyncconsumer.protocol.otlp import CUMULATIVE, DELTA, Metric, Point, encode_metrics_data
from asyncconsumer.protocol.wire import ZERO_UUID

log = get_logger("asyncconsumer.telemetry")

UNSUPPORTED_RECHECK_MS = 300_000
"""How often a manager whose brokers lack telemetry looks again (a check, not a request: a rolling upgrade may add
a receiver)."""
DEFAULT_PUSH_INTERVAL_MS = 300_000
"""Java's wait after an error that names no interval of its own (as ``ClientTelemetryReporter`` does)."""
SCOPE_NAME = "org.apache.kafka"
"""The instrumentation scope Java's clients name in their pushes."""


SeriesKey = tuple[str, tuple[tuple[str, str], ...]]
"""A metric's name and attributes: one series."""
Baseline = tuple[dict[SeriesKey, int | float], int]
"""Each sum's value at a push, and the push's time: where the next delta starts."""


class TelemetryState(enum.Enum):
    SUBSCRIPTION_NEEDED = "subscription_needed"
    SUBSCRIPTION_IN_PROGRESS = "subscription_in_progress"
    PUSH_NEEDED = "push_needed"
    PUSH_IN_PROGRESS = "push_in_progress"
    TERMINATING_PUSH_NEEDED = "terminating_push_needed"
    TERMINATING_PUSH_IN_PROGRESS = "terminating_push_in_progress"
    TERMINATED = "terminated"


S = TelemetryState
TRANSITIONS: Mapping[TelemetryState, frozenset[TelemetryState]] = {
    S.SUBSCRIPTION_NEEDED: frozenset({S.SUBSCRIPTION_IN_PROGRESS, S.TERMINATED}),
    S.SUBSCRIPTION_IN_PROGRESS: frozenset({S.PUSH_NEEDED, S.SUBSCRIPTION_NEEDED, S.TERMINATED}),
    S.PUSH_NEEDED: frozenset({S.PUSH_IN_PROGRESS, S.SUBSCRIPTION_NEEDED, S.TERMINATING_PUSH_NEEDED, S.TERMINATED}),
    S.PUSH_IN_PROGRESS: frozenset({S.PUSH_NEEDED, S.SUBSCRIPTION_NEEDED, S.TERMINATING_PUSH_NEEDED, S.TERMINATED}),
    S.TERMINATING_PUSH_NEEDED: frozenset({S.TERMINATING_PUSH_IN_PROGRESS, S.TERMINATED}),
    S.TERMINATING_PUSH_IN_PROGRESS: frozenset({S.TERMINATED}),
    S.TERMINATED: frozenset(),
}
"""KIP-714's client states and the moves between them. A push answered with an error goes back to needing a
subscription (KIP: a refused push re-fetches it); close moves a client with a subscription to its terminating push
and one without straight to terminated."""


def _code_name(code: int) -> str:
    return ErrorCode(code).name if code in ErrorCode._value2member_map_ else f"error code {code}"


class IllegalTelemetryTransition(RuntimeError):
    """A move ``TRANSITIONS`` does not allow: a bug in this manager, never a broker's doing."""


@attrs.define(frozen=True, slots=True)
class Subscription:
    """What GetTelemetrySubscriptions answered: which metrics to push, how often, how big and how compressed."""

    client_instance_id: uuid.UUID
    subscription_id: int
    accepted_compression_types: tuple[int, ...]
    push_interval_ms: int
    telemetry_max_bytes: int
    delta_temporality: bool
    requested_metrics: tuple[str, ...]

    def wants(self, name: str) -> bool:
        """KIP-714's prefix match: no prefixes asks for nothing, an empty prefix for everything, and so does the
        single ``*`` Kafka's brokers send for a subscription of ``metrics=*`` (Java's client reads it so too)."""
        if self.requested_metrics == ("*",):
            return True
        return any(name.startswith(prefix) for prefix in self.requested_metrics)

    @property
    def compression(self) -> int:
        """The first accepted codec this client writes, else 0 (none)."""
        return next((c for c in self.accepted_compression_types if c in COMPRESSIBLE), 0)


class TelemetryManager:
    """Sends GetTelemetrySubscriptions and PushTelemetry to the least-loaded node, on KIP-714's schedule."""

    def __init__(
        self,
        read_samples: Callable[[], Sequence[Sample] | None],
        resource: Callable[[], Mapping[str, str]],
        api_supported: Callable[[int], bool | None],
        backoff: ExponentialBackoff,
        *,
        unix_offset_ms: int,
        client_version: str = "",
        rng: random.Random | None = None,
    ) -> None:
        self._read_samples = read_samples
        """The consumer's metrics as standard samples (None while the consumer cannot say yet)."""
        self._resource = resource
        """The resource attributes of the next push (the group member id changes as the member joins)."""
        self._api_supported = api_supported
        self._backoff = backoff
        self._unix_offset_ms = unix_offset_ms
        """Wall-clock ms minus ``now_ms``: OTLP times are Unix nanoseconds, the loop's clock is monotonic."""
        self._client_version = client_version
        self._rng = rng or random.Random()
        self.state = TelemetryState.SUBSCRIPTION_NEEDED
        self.subscription: Subscription | None = None
        self.client_instance_id = ZERO_UUID
        """Zero until a broker assigns one (KIP-714: asked for with zero, then kept for the client's life)."""
        self._id_waiters: list[tuple[Callable[[uuid.UUID], None], Callable[[KafkaError], None]]] = []
        """``await_instance_id`` callers waiting for the first id."""
        self._unoffered = False
        """The brokers last said they offer no telemetry (until a subscription succeeds)."""
        self._next_ms = 0
        """When the state's next request is due."""
        self._failures = 0
        self._unsupported_logged = False
        self._start_ms: int | None = None
        """The first sample's time: the start of every cumulative sum."""
        self._baseline: dict[SeriesKey, int | float] = {}
        self._baseline_ms: int | None = None
        """Each sum's value and the time at the last accepted push: the start of the next delta."""
        self._in_flight: Baseline | None = None
        """The baseline the push in flight would set once accepted."""
        self._max_bytes: int | None = None
        """A push the broker refused as too large halves what the next may weigh (KIP: reduce the payload)."""
        self.pushes = 0
        """Pushes the broker accepted (the terminating one included)."""
        self._too_large_warned = False
        self.pushes_sent = 0
        """PushTelemetry requests made."""

    # --- state ----------------------------------------------------------------------------------------------
    def _enter(self, state: TelemetryState, next_ms: int | None = None) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTelemetryTransition(f"telemetry: {self.state.value} -> {state.value}")
        log.debug("telemetry.state", previous=self.state.value, state=state.value)
        self.state = state
        if next_ms is not None:
            self._next_ms = next_ms

    # --- the manager contract -------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        if self._start_ms is None:
            self._start_ms = now_ms
        state = self.state
        if state not in (TelemetryState.SUBSCRIPTION_NEEDED, TelemetryState.PUSH_NEEDED):
            return PollResult(MAX_POLL_WAIT_MS)
        if now_ms < self._next_ms:
            return PollResult(min(MAX_POLL_WAIT_MS, self._next_ms - now_ms))
        if state is TelemetryState.SUBSCRIPTION_NEEDED:
            supported = self._api_supported(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
            if supported is None:  # no broker connected yet: telemetry never opens the first connection
                return PollResult(MAX_POLL_WAIT_MS)
            if not supported:
                self._unsupported(now_ms, "the brokers do not offer GetTelemetrySubscriptions")
                return PollResult(MAX_POLL_WAIT_MS)
            self._enter(TelemetryState.SUBSCRIPTION_IN_PROGRESS)
            request = GetTelemetrySubscriptionsRequest(client_instance_id=self.client_instance_id)
            return PollResult(MAX_POLL_WAIT_MS, (UnsentRequest(request, None, self._on_subscription),))
        unsent = self._push(now_ms, terminating=False)
        return PollResult(MAX_POLL_WAIT_MS, unsent)

    def poll_on_close(self, now_ms: int) -> PollResult:
        """One terminating push of the metrics as they are now, when there is a subscription to push under."""
        if self.state in (TelemetryState.PUSH_NEEDED, TelemetryState.PUSH_IN_PROGRESS):
            if self.state is TelemetryState.PUSH_IN_PROGRESS and self._in_flight is not None:
                # the push in flight will most likely be accepted: the last delta starts where it ends, so the
                # broker never counts a change twice (should it be refused, its change is lost, not doubled)
                self._baseline, self._baseline_ms = self._in_flight
            self._enter(TelemetryState.TERMINATING_PUSH_NEEDED)
            return PollResult(MAX_POLL_WAIT_MS, self._push(now_ms, terminating=True))
        if self.state is not TelemetryState.TERMINATED and TelemetryState.TERMINATED in TRANSITIONS[self.state]:
            self._enter(TelemetryState.TERMINATED)
        return PollResult()

    # --- the client instance id -----------------------------------------------------------------------------
    def await_instance_id(self, on_done: Callable[[uuid.UUID], None], on_fail: Callable[[KafkaError], None]) -> None:
        """``on_done`` with the id once a broker has given one (at once if it has); ``on_fail`` with an
        ``IllegalStateError`` when the brokers offer no telemetry, so none will (Java's ``clientInstanceId``)."""
        if self.client_instance_id != ZERO_UUID:
            on_done(self.client_instance_id)
        elif self._unoffered:
            on_fail(_no_telemetry())
        else:
            self._id_waiters.append((on_done, on_fail))

    def _settle_id_waiters(self, error: KafkaError | None) -> None:
        waiters, self._id_waiters = self._id_waiters, []
        for on_done, on_fail in waiters:
            if error is None:
                on_done(self.client_instance_id)
            else:
                on_fail(error)

    # --- GetTelemetrySubscriptions --------------------------------------------------------------------------
    def _on_subscription(self, result: object, now_ms: int) -> None:
        if self.state is not TelemetryState.SUBSCRIPTION_IN_PROGRESS:
            return  # closed meanwhile
        if isinstance(result, UnsupportedVersionError):
            self._enter(TelemetryState.SUBSCRIPTION_NEEDED)
            self._unsupported(now_ms, str(result))
            return
        if isinstance(result, KafkaError):
            self._retry_subscription(now_ms, str(result))
            return
        assert isinstance(result, GetTelemetrySubscriptionsResponse)
        if result.error_code:
            self._retry_subscription(now_ms, _code_name(result.error_code))
            return
        self._failures = 0
        self._unoffered = False
        if result.client_instance_id != ZERO_UUID:
            self.client_instance_id = result.client_instance_id
            self._settle_id_waiters(None)
        previous = self.subscription
        subscription = Subscription(
            self.client_instance_id,
            result.subscription_id,
            tuple(result.accepted_compression_types),
            result.push_interval_ms if result.push_interval_ms > 0 else DEFAULT_PUSH_INTERVAL_MS,
            result.telemetry_max_bytes,
            result.delta_temporality,
            tuple(result.requested_metrics),
        )
        self.subscription = subscription
        if previous is None or previous.delta_temporality != subscription.delta_temporality:
            self._baseline.clear()
            self._baseline_ms = None
        # info only for a subscription that asks for something new: a broker that subscribes nobody (Tansu, a
        # Kafka with no subscription for this client) is asked again every interval, and that is not news
        new = previous is None or previous.subscription_id != subscription.subscription_id
        (log.info if new and subscription.requested_metrics else log.debug)(
            "telemetry.subscribed",
            client_instance_id=str(self.client_instance_id),
            subscription_id=subscription.subscription_id,
            push_interval_ms=subscription.push_interval_ms,
            metrics=list(subscription.requested_metrics),
            delta=subscription.delta_temporality,
            compression=subscription.compression,
        )
        interval = subscription.push_interval_ms
        if not subscription.requested_metrics:
            # KIP-714: nothing subscribed, nothing pushed; ask again after the interval
            self._enter(TelemetryState.SUBSCRIPTION_NEEDED, now_ms + interval)
            return
        # KIP-714: the first push at a random point of [0.5, 1.5] intervals, so clients started together spread out
        first = interval if previous is not None else int(interval * self._rng.uniform(0.5, 1.5))
        self._enter(TelemetryState.PUSH_NEEDED, now_ms + first)

    def _retry_subscription(self, now_ms: int, reason: str) -> None:
        self._failures += 1
        wait = self._backoff.backoff_ms(self._failures)
        log.debug("telemetry.subscription_failed", error=reason, failures=self._failures, retry_in_ms=wait)
        self._enter(TelemetryState.SUBSCRIPTION_NEEDED, now_ms + wait)

    def _unsupported(self, now_ms: int, reason: str) -> None:
        """Brokers without telemetry: idle, quietly (debug, once), and look again now and then."""
        if not self._unsupported_logged:
            log.debug("telemetry.unsupported", reason=reason)
            self._unsupported_logged = True
        self._next_ms = now_ms + UNSUPPORTED_RECHECK_MS
        self._unoffered = True
        self._settle_id_waiters(_no_telemetry())

    # --- PushTelemetry --------------------------------------------------------------------------------------
    def _push(self, now_ms: int, *, terminating: bool) -> tuple[UnsentRequest, ...]:
        subscription = self.subscription
        assert subscription is not None  # a push state is entered only with one
        payload, baseline = self._payload(subscription, now_ms)
        codec = subscription.compression
        if codec and payload:
            payload = compress(codec, payload)
        limit = min(subscription.telemetry_max_bytes or len(payload), self._max_bytes or len(payload))
        if len(payload) > limit:
            # once a warning, then debug: the same metrics are likely too large at every interval
            (log.debug if self._too_large_warned else log.warning)(
                "telemetry.too_large", size=len(payload), limit=limit
            )
            self._too_large_warned = True
            payload, baseline = b"", None
        request = PushTelemetryRequest(
            client_instance_id=self.client_instance_id,
            subscription_id=subscription.subscription_id,
            terminating=terminating,
            compression_type=codec if payload else 0,
            metrics=payload,
        )
        self._enter(TelemetryState.TERMINATING_PUSH_IN_PROGRESS if terminating else TelemetryState.PUSH_IN_PROGRESS)
        self.pushes_sent += 1
        self._in_flight = baseline

        def on_response(result: object, at_ms: int) -> None:
            self._on_push(result, at_ms, baseline, len(payload), terminating)

        return (UnsentRequest(request, None, on_response),)

    def _payload(self, subscription: Subscription, now_ms: int) -> tuple[bytes, Baseline | None]:
        """The OTLP bytes of the subscribed metrics (empty when none), and the sums' values to take as the next
        delta's start once the broker accepts them."""
        samples = [s for s in (self._read_samples() or ()) if subscription.wants(s.name)]
        if not samples:
            return b"", None
        time_ns = (now_ms + self._unix_offset_ms) * 1_000_000
        start_ms = self._start_ms if self._start_ms is not None else now_ms
        delta = subscription.delta_temporality
        since_ms = self._baseline_ms if delta and self._baseline_ms is not None else start_ms
        since_ns = (since_ms + self._unix_offset_ms) * 1_000_000
        values: dict[SeriesKey, int | float] = {}
        by_name: dict[str, list[Point]] = {}
        monotonic: set[str] = set()
        for sample in samples:
            value = sample.value
            if sample.monotonic:
                monotonic.add(sample.name)
                key = (sample.name, sample.attributes)
                values[key] = value
                if delta:
                    value = value - self._baseline.get(key, 0)
                by_name.setdefault(sample.name, []).append(Point(value, time_ns, since_ns, sample.attributes))
            else:
                by_name.setdefault(sample.name, []).append(Point(value, time_ns, 0, sample.attributes))
        temporality = DELTA if delta else CUMULATIVE
        metrics = [
            Metric(name, tuple(points), name in monotonic, temporality if name in monotonic else CUMULATIVE)
            for name, points in by_name.items()
        ]
        payload = encode_metrics_data(self._resource(), SCOPE_NAME, self._client_version, metrics)
        return payload, (values, now_ms)

    def _on_push(
        self,
        result: object,
        now_ms: int,
        baseline: Baseline | None,
        size: int,
        terminating: bool,
    ) -> None:
        if terminating:
            accepted = isinstance(result, PushTelemetryResponse) and not result.error_code
            if accepted:
                self.pushes += 1
            log.debug("telemetry.terminating_push_done", accepted=accepted)
            if self.state is TelemetryState.TERMINATING_PUSH_IN_PROGRESS:
                self._enter(TelemetryState.TERMINATED)
            return
        if self.state is not TelemetryState.PUSH_IN_PROGRESS:
            return  # closing: the terminating push has taken over
        subscription = self.subscription
        assert subscription is not None
        interval = subscription.push_interval_ms
        if isinstance(result, KafkaError):
            # the connection failed or timed out: the subscription may be another broker's now; fetch it again
            log.debug("telemetry.push_failed", error=str(result))
            self._enter(TelemetryState.SUBSCRIPTION_NEEDED, now_ms + self._backoff.backoff_ms(1))
            return
        assert isinstance(result, PushTelemetryResponse)
        code = result.error_code
        if not code:
            self.pushes += 1
            if baseline is not None:
                self._baseline, self._baseline_ms = baseline
            self._enter(TelemetryState.PUSH_NEEDED, now_ms + max(interval, result.throttle_time_ms))
            return
        name = _code_name(code)
        if code in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
            # KIP-714: the subscription changed, or the codec is no longer accepted: ask again at once
            log.debug("telemetry.resubscribe", error=name)
            self._enter(TelemetryState.SUBSCRIPTION_NEEDED, now_ms)
        elif code == ErrorCode.THROTTLING_QUOTA_EXCEEDED:
            log.debug("telemetry.throttled", throttle_time_ms=result.throttle_time_ms)
            self._enter(TelemetryState.PUSH_NEEDED, now_ms + max(interval, result.throttle_time_ms))
        elif code == ErrorCode.TELEMETRY_TOO_LARGE:
            # KIP-714: reduce the payload below TelemetryMaxBytes: the next push may weigh half of this one
            self._max_bytes = max(1, size // 2)
            log.warning("telemetry.too_large", size=size, limit=self._max_bytes)
            self._enter(TelemetryState.PUSH_NEEDED, now_ms + interval)
        elif code in (ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_RECORD):
            # KIP-714: a fault in what this client sends, which retrying will not mend: stop pushing
            log.error("telemetry.stopped", error=name)
            self._enter(TelemetryState.TERMINATED)
        else:
            log.warning("telemetry.push_refused", error=name)
            self._enter(TelemetryState.SUBSCRIPTION_NEEDED, now_ms + interval)


def _no_telemetry() -> IllegalStateError:
    return IllegalStateError("client_instance_id(): the brokers offer no client telemetry (KIP-714): none gives an id")
