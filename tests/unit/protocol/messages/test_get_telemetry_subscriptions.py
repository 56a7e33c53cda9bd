"""GetTelemetrySubscriptions (API key 71, KIP-714), v0, flexible: bytes by hand from Kafka's JSON definitions (an
array of int8 among them), round trips, and fuzzed or cut answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.get_telemetry_subscriptions import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_round_trip,
    h,
    int8,
    int16,
    int32,
    text,
    tuples,
)

responses = st.builds(
    GetTelemetrySubscriptionsResponse,
    throttle_time_ms=int32,
    error_code=int16,
    client_instance_id=st.uuids(),
    subscription_id=int32,
    accepted_compression_types=tuples(int8),
    push_interval_ms=int32,
    telemetry_max_bytes=int32,
    delta_temporality=st.booleans(),
    requested_metrics=tuples(text),
)

RESPONSE = GetTelemetrySubscriptionsResponse(
    client_instance_id=uuid.UUID(int=2),
    subscription_id=3,
    accepted_compression_types=(0, 4),
    push_interval_ms=60_000,
    telemetry_max_bytes=1024,
    delta_temporality=True,
    requested_metrics=("m",),
)


def test_the_request_class_declares_the_contract() -> None:
    request = GetTelemetrySubscriptionsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (71, 0, 0, 0)
    assert request.RESPONSE is GetTelemetrySubscriptionsResponse


def test_v0_golden() -> None:
    assert encode(GetTelemetrySubscriptionsRequest(), 0) == bytes(16) + b"\x00"  # the zero uuid: a new client
    body = h(
        """
        00 00 00 00                                       # ThrottleTimeMs
        00 00                                             # ErrorCode
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 02   # ClientInstanceId
        00 00 00 03                                       # SubscriptionId 3
        03 00 04                                          # AcceptedCompressionTypes: compact array [0, 4]
        00 00 ea 60                                       # PushIntervalMs 60000
        00 00 04 00                                       # TelemetryMaxBytes 1024
        01                                                # DeltaTemporality
        02 02 6d                                          # RequestedMetrics ["m"]
        00                                                # tagged fields
        """
    )
    assert encode(RESPONSE, 0) == body
    assert decode(GetTelemetrySubscriptionsResponse, body, 0) == RESPONSE


@settings(max_examples=30, deadline=None)
@given(client=st.uuids(), response=responses)
def test_round_trip(client: uuid.UUID, response: GetTelemetrySubscriptionsResponse) -> None:
    check_round_trip(
        GetTelemetrySubscriptionsRequest, 0, GetTelemetrySubscriptionsRequest(client_instance_id=client), response
    )


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(data: st.DataObject) -> None:
    check_fuzzed_responses(GetTelemetrySubscriptionsRequest, 0, data, data.draw(responses, label="response"))


def test_every_truncation_of_a_response_is_corrupt() -> None:
    check_every_truncation_is_corrupt(GetTelemetrySubscriptionsRequest, 0, RESPONSE)
