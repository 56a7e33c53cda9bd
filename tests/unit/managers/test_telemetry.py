"""The KIP-714 telemetry manager with literal timestamps and hand-built GetTelemetrySubscriptions and PushTelemetry
answers; pushed payloads are read back with the OTLP test's wire reader."""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Sequence

import pytest

from asyncconsumer.errors import ErrorCode, IllegalStateError, KafkaConnectionError, UnsupportedVersionError
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.managers.telemetry import (
    TRANSITIONS,
    UNSUPPORTED_RECHECK_MS,
    IllegalTelemetryTransition,
    TelemetryManager,
    TelemetryState,
)
from asyncconsumer.managers.telemetry_metrics import Sample
from asyncconsumer.protocol.codecs import GZIP, LZ4, ZSTD, decompress
from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.messages.get_telemetry_subscriptions import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from asyncconsumer.protocol.messages.push_telemetry import PushTelemetryRequest, PushTelemetryResponse
from asyncconsumer.protocol.wire import ZERO_UUID
from tests.unit.protocol.test_otlp import fields, key_values, many, one

S = TelemetryState
INSTANCE = uuid.UUID("12345678-1234-5678-1234-567812345678")
OFFSET_MS = 1_700_000_000_000
TOTAL = "org.apache.kafka.consumer.fetch.manager.records.consumed.total"
LATENCY = "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg"
ASSIGNED = "org.apache.kafka.consumer.coordinator.assigned.partitions"


class Harness:
    def __init__(self, supported: bool | None = True) -> None:
        self.supported = supported
        self.values: dict[str, float] = {TOTAL: 10, LATENCY: 4.5, ASSIGNED: 3.0}
        self.asked: list[int] = []
        self.manager = TelemetryManager(
            self.samples,
            lambda: {"client_id": "c1", "group_id": "g"},
            self.api_supported,
            ExponentialBackoff(100, 1000, jitter=0),
            unix_offset_ms=OFFSET_MS,
            client_version="9.9",
            rng=random.Random(1),
        )

    def samples(self) -> Sequence[Sample]:
        return [Sample(name, value) for name, value in self.values.items()]

    def api_supported(self, key: int) -> bool | None:
        self.asked.append(key)
        return self.supported

    def poll(self, now: int) -> tuple[UnsentRequest, ...]:
        return self.manager.poll(now).unsent_requests

    def subscribe(self, now: int = 0, **answer: object) -> None:
        (unsent,) = self.poll(now)
        assert isinstance(unsent.request, GetTelemetrySubscriptionsRequest) and unsent.node_id is None
        fields_: dict[str, object] = {
            "client_instance_id": INSTANCE,
            "subscription_id": 7,
            "accepted_compression_types": (),
            "push_interval_ms": 1_000,
            "telemetry_max_bytes": 1 << 20,
            "delta_temporality": False,
            "requested_metrics": ("",),
            **answer,
        }
        unsent.on_response(GetTelemetrySubscriptionsResponse(**fields_), now)  # type: ignore[arg-type]

    def push_due(self) -> int:
        """The time the scheduled push is due."""
        assert self.manager.state is S.PUSH_NEEDED
        return self.manager._next_ms


def pushed_metrics(request: PushTelemetryRequest) -> dict[str, list[tuple[float, int, int, dict[str, str]]]]:
    """Metric name -> [(value, start ns, time ns, attributes)] of a push's (uncompressed) payload."""
    data = request.metrics
    if request.compression_type:
        data = bytes(decompress(request.compression_type, memoryview(data), 1 << 20))
    out: dict[str, list[tuple[float, int, int, dict[str, str]]]] = {}
    scope_metrics = one(one(data, 1), 2)
    for metric in many(scope_metrics, 2):
        name = one(metric, 1).decode()
        body = dict(fields(metric))
        container = body.get(7, body.get(5))
        for point in many(container, 1):
            p = dict(fields(point))
            value = struct.unpack("<q", p[6])[0] if 6 in p else struct.unpack("<d", p[4])[0]
            start = struct.unpack("<Q", p[2])[0] if 2 in p else 0
            out.setdefault(name, []).append((value, start, struct.unpack("<Q", p[3])[0], key_values(many(point, 7))))
    return out


def push_at(h: Harness, now: int) -> tuple[UnsentRequest, PushTelemetryRequest]:
    (unsent,) = h.poll(now)
    assert isinstance(unsent.request, PushTelemetryRequest)
    return unsent, unsent.request


def test_the_transition_table_is_kips() -> None:
    assert set(TRANSITIONS) == set(S)
    assert TRANSITIONS[S.TERMINATED] == frozenset()
    assert TRANSITIONS[S.TERMINATING_PUSH_IN_PROGRESS] == {S.TERMINATED}
    assert S.PUSH_NEEDED not in TRANSITIONS[S.SUBSCRIPTION_NEEDED]  # a push always follows a subscription
    h = Harness()
    with pytest.raises(IllegalTelemetryTransition):
        h.manager._enter(S.PUSH_IN_PROGRESS)


def test_subscribe_then_push_everything_on_schedule_with_a_jittered_first_push() -> None:
    h = Harness()
    assert h.manager.state is S.SUBSCRIPTION_NEEDED
    (unsent,) = h.poll(0)
    assert unsent.request == GetTelemetrySubscriptionsRequest(client_instance_id=ZERO_UUID)
    assert h.manager.state is S.SUBSCRIPTION_IN_PROGRESS
    assert h.poll(1) == ()  # one at a time
    unsent.on_response(
        GetTelemetrySubscriptionsResponse(
            client_instance_id=INSTANCE,
            subscription_id=7,
            push_interval_ms=1_000,
            telemetry_max_bytes=1 << 20,
            requested_metrics=("",),
        ),
        10,
    )
    assert h.manager.client_instance_id == INSTANCE
    first = h.push_due()
    assert 10 + 500 <= first <= 10 + 1_500 and first != 10 + 1_000  # the seeded jitter
    assert h.poll(first - 1) == ()
    assert h.manager.poll(first - 1).time_until_next_poll_ms == 1
    unsent, request = push_at(h, first)
    assert h.manager.state is S.PUSH_IN_PROGRESS
    assert (request.client_instance_id, request.subscription_id, request.terminating) == (INSTANCE, 7, False)
    assert request.compression_type == 0
    metrics = pushed_metrics(request)
    assert set(metrics) == {TOTAL, LATENCY, ASSIGNED}
    (total,) = metrics[TOTAL]
    assert total[0] == 10 and total[2] == (first + OFFSET_MS) * 1_000_000
    assert total[1] == OFFSET_MS * 1_000_000  # cumulative: since the manager's first poll
    assert metrics[LATENCY][0][0] == 4.5
    unsent.on_response(PushTelemetryResponse(), first + 5)
    assert h.manager.pushes == 1
    assert h.push_due() == first + 5 + 1_000  # then every interval, no jitter
    h.values[TOTAL] = 25
    _, request = push_at(h, first + 1_005)
    assert pushed_metrics(request)[TOTAL][0][0] == 25


def test_only_the_requested_prefixes_are_pushed() -> None:
    h = Harness()
    h.subscribe(requested_metrics=("org.apache.kafka.consumer.fetch.manager.",))
    _, request = push_at(h, h.push_due())
    assert set(pushed_metrics(request)) == {TOTAL, LATENCY}


def test_a_star_subscription_is_every_metric() -> None:
    h = Harness()
    h.subscribe(requested_metrics=("*",))
    _, request = push_at(h, h.push_due())
    assert set(pushed_metrics(request)) == {TOTAL, LATENCY, ASSIGNED}


def test_an_empty_subscription_pushes_nothing_and_asks_again_after_the_interval() -> None:
    h = Harness()
    h.subscribe(now=0, requested_metrics=())
    assert h.manager.state is S.SUBSCRIPTION_NEEDED
    assert h.poll(999) == ()
    (unsent,) = h.poll(1_000)
    assert isinstance(unsent.request, GetTelemetrySubscriptionsRequest)
    assert unsent.request.client_instance_id == INSTANCE  # the id once given is kept


def test_delta_temporality_pushes_the_change_since_the_last_accepted_push() -> None:
    h = Harness()
    h.subscribe(delta_temporality=True)
    first = h.push_due()
    unsent, request = push_at(h, first)
    assert pushed_metrics(request)[TOTAL][0][:2] == (10, OFFSET_MS * 1_000_000)
    unsent.on_response(PushTelemetryResponse(), first)
    h.values[TOTAL] = 17
    h.values[LATENCY] = 9.0
    second = h.push_due()
    unsent, request = push_at(h, second)
    metrics = pushed_metrics(request)
    assert metrics[TOTAL][0][:2] == (7, (first + OFFSET_MS) * 1_000_000)
    assert metrics[LATENCY][0][0] == 9.0  # gauges are values, never deltas
    unsent.on_response(PushTelemetryResponse(error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED), second)
    h.values[TOTAL] = 20
    _, request = push_at(h, h.push_due())
    assert pushed_metrics(request)[TOTAL][0][0] == 10  # the refused push's change is not lost


@pytest.mark.parametrize(
    ("accepted", "chosen"), [((LZ4, ZSTD, GZIP), ZSTD), ((GZIP, ZSTD), GZIP), ((LZ4,), 0), ((), 0)]
)
def test_the_first_accepted_codec_we_write_compresses_the_push(accepted: tuple[int, ...], chosen: int) -> None:
    h = Harness()
    h.subscribe(accepted_compression_types=accepted)
    _, request = push_at(h, h.push_due())
    assert request.compression_type == chosen
    assert set(pushed_metrics(request)) == {TOTAL, LATENCY, ASSIGNED}


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE])
def test_a_stale_subscription_or_codec_is_fetched_again_at_once(code: ErrorCode) -> None:
    h = Harness()
    h.subscribe()
    due = h.push_due()
    unsent, _ = push_at(h, due)
    unsent.on_response(PushTelemetryResponse(error_code=code), due + 1)
    assert h.manager.state is S.SUBSCRIPTION_NEEDED
    (again,) = h.poll(due + 1)
    assert isinstance(again.request, GetTelemetrySubscriptionsRequest)
    again.on_response(
        GetTelemetrySubscriptionsResponse(subscription_id=8, push_interval_ms=2_000, requested_metrics=("",)),
        due + 2,
    )
    assert h.push_due() == due + 2 + 2_000  # a known client is not jittered again
    _, request = push_at(h, due + 2_002)
    assert request.subscription_id == 8 and request.client_instance_id == INSTANCE


def test_throttling_backs_off_for_the_longer_of_interval_and_throttle_time() -> None:
    h = Harness()
    h.subscribe()
    due = h.push_due()
    unsent, _ = push_at(h, due)
    unsent.on_response(
        PushTelemetryResponse(throttle_time_ms=5_000, error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED), due
    )
    assert h.push_due() == due + 5_000


@pytest.mark.parametrize("code", [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_RECORD])
def test_a_request_the_broker_cannot_use_stops_telemetry(code: ErrorCode) -> None:
    h = Harness()
    h.subscribe()
    due = h.push_due()
    unsent, _ = push_at(h, due)
    unsent.on_response(PushTelemetryResponse(error_code=code), due)
    assert h.manager.state is S.TERMINATED
    assert h.poll(due + 10_000_000) == ()
    assert h.manager.poll_on_close(due + 10_000_001).unsent_requests == ()


def test_too_large_halves_the_next_payload_and_an_oversized_one_goes_empty() -> None:
    h = Harness()
    h.subscribe()
    due = h.push_due()
    unsent, request = push_at(h, due)
    size = len(request.metrics)
    unsent.on_response(PushTelemetryResponse(error_code=ErrorCode.TELEMETRY_TOO_LARGE), due)
    assert h.manager.state is S.PUSH_NEEDED
    _, request = push_at(h, h.push_due())
    assert request.metrics == b""  # the same metrics no longer fit: nothing rather than too much
    assert size > 0


def test_the_broker_limit_is_kept() -> None:
    h = Harness()
    h.subscribe(telemetry_max_bytes=10)
    _, request = push_at(h, h.push_due())
    assert request.metrics == b""


def test_brokers_without_telemetry_get_nothing_and_are_looked_at_again_later() -> None:
    h = Harness(supported=False)
    assert h.poll(0) == ()
    assert h.asked == [ApiKey.GET_TELEMETRY_SUBSCRIPTIONS]
    assert h.poll(UNSUPPORTED_RECHECK_MS - 1) == ()
    assert h.asked == [ApiKey.GET_TELEMETRY_SUBSCRIPTIONS]  # not even asked until the recheck
    h.supported = True
    (unsent,) = h.poll(UNSUPPORTED_RECHECK_MS)
    assert isinstance(unsent.request, GetTelemetrySubscriptionsRequest)
    assert h.manager.poll_on_close(UNSUPPORTED_RECHECK_MS).unsent_requests == ()


def test_nothing_is_asked_before_a_broker_is_connected() -> None:
    h = Harness(supported=None)
    assert h.poll(0) == () and h.poll(100) == ()
    assert h.manager.state is S.SUBSCRIPTION_NEEDED


def test_an_unsupported_version_answer_idles_quietly() -> None:
    h = Harness()
    (unsent,) = h.poll(0)
    unsent.on_response(UnsupportedVersionError("node 1 does not support GET_TELEMETRY_SUBSCRIPTIONS"), 1)
    assert h.manager.state is S.SUBSCRIPTION_NEEDED
    assert h.poll(2) == ()
    assert len(h.poll(1 + UNSUPPORTED_RECHECK_MS)) == 1


def test_failed_subscriptions_back_off() -> None:
    h = Harness()
    (unsent,) = h.poll(0)
    unsent.on_response(KafkaConnectionError("down"), 10)
    assert h.poll(109) == ()
    (unsent,) = h.poll(110)
    unsent.on_response(GetTelemetrySubscriptionsResponse(error_code=ErrorCode.UNKNOWN_SERVER_ERROR), 120)
    assert h.poll(319) == ()
    assert len(h.poll(320)) == 1


def test_close_sends_one_terminating_push_of_the_latest_values() -> None:
    h = Harness()
    h.subscribe()
    h.values[TOTAL] = 99
    result = h.manager.poll_on_close(50)  # well before the next push is due
    (unsent,) = result.unsent_requests
    assert isinstance(unsent.request, PushTelemetryRequest) and unsent.request.terminating
    assert pushed_metrics(unsent.request)[TOTAL][0][0] == 99
    assert h.manager.state is S.TERMINATING_PUSH_IN_PROGRESS
    unsent.on_response(PushTelemetryResponse(), 60)
    assert h.manager.state is S.TERMINATED and h.manager.pushes == 1 and h.manager.pushes_sent == 1


def test_close_during_a_push_still_terminates_with_a_push() -> None:
    h = Harness()
    h.subscribe()
    due = h.push_due()
    regular, _ = push_at(h, due)
    (terminating,) = h.manager.poll_on_close(due + 1).unsent_requests
    regular.on_response(PushTelemetryResponse(), due + 2)  # the regular push's answer changes nothing now
    assert h.manager.state is S.TERMINATING_PUSH_IN_PROGRESS
    terminating.on_response(KafkaConnectionError("closing"), due + 3)
    assert h.manager.state is S.TERMINATED


def test_a_terminating_push_during_a_push_counts_no_change_twice() -> None:
    h = Harness()
    h.subscribe(delta_temporality=True)
    due = h.push_due()
    _, request = push_at(h, due)
    assert pushed_metrics(request)[TOTAL][0][0] == 10
    h.values[TOTAL] = 12
    (terminating,) = h.manager.poll_on_close(due + 1).unsent_requests
    assert pushed_metrics(terminating.request)[TOTAL][0][:2] == (2, (due + OFFSET_MS) * 1_000_000)


def test_close_without_a_subscription_sends_nothing() -> None:
    h = Harness()
    (unsent,) = h.poll(0)
    assert h.manager.poll_on_close(1).unsent_requests == ()
    assert h.manager.state is S.TERMINATED
    unsent.on_response(GetTelemetrySubscriptionsResponse(requested_metrics=("",)), 2)  # too late: ignored
    assert h.manager.state is S.TERMINATED


def test_the_client_instance_id_is_given_once_a_broker_assigns_it_and_at_once_after() -> None:
    h = Harness()
    got: list[object] = []
    h.manager.await_instance_id(got.append, got.append)
    assert got == []  # asked before any broker answered: it waits
    h.subscribe(0)
    assert got == [INSTANCE]
    h.manager.await_instance_id(got.append, got.append)
    assert got == [INSTANCE, INSTANCE]


def test_brokers_without_telemetry_give_no_client_instance_id_a_typed_error_until_one_does() -> None:
    h = Harness(supported=False)
    waiting: list[object] = []
    h.manager.await_instance_id(waiting.append, waiting.append)
    assert h.poll(0) == ()
    (error,) = waiting
    assert isinstance(error, IllegalStateError) and "offer no client telemetry" in str(error)
    later: list[object] = []
    h.manager.await_instance_id(later.append, later.append)
    assert isinstance(later[0], IllegalStateError)  # at once, while they still offer none
    h.supported = True
    h.subscribe(UNSUPPORTED_RECHECK_MS)
    h.manager.await_instance_id(later.append, later.append)
    assert later[1] == INSTANCE
