"""PushTelemetry (API key 72, KIP-714), v0, flexible: bytes by hand from Kafka's JSON definitions, round trips, and
fuzzed or cut answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.push_telemetry import PushTelemetryRequest, PushTelemetryResponse
from tests.support.codec import decode, encode
from tests.support.protocol import (
    blob,
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_round_trip,
    h,
    int8,
    int16,
    int32,
)

requests = st.builds(
    PushTelemetryRequest,
    client_instance_id=st.uuids(),
    subscription_id=int32,
    terminating=st.booleans(),
    compression_type=int8,
    metrics=blob,
)
responses = st.builds(PushTelemetryResponse, throttle_time_ms=int32, error_code=int16)


def test_the_request_class_declares_the_contract() -> None:
    request = PushTelemetryRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (72, 0, 0, 0)
    assert request.RESPONSE is PushTelemetryResponse


def test_v0_golden() -> None:
    request = PushTelemetryRequest(
        client_instance_id=uuid.UUID(int=1), subscription_id=7, terminating=True, compression_type=4, metrics=b"ab"
    )
    body = h(
        """
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01   # ClientInstanceId
        00 00 00 07                                       # SubscriptionId 7
        01                                                # Terminating
        04                                                # CompressionType 4 (zstd)
        03 61 62                                          # Metrics: compact bytes, 2 + 1
        00                                                # tagged fields
        """
    )
    assert encode(request, 0) == body
    assert decode(PushTelemetryRequest, body, 0) == request
    response = h("00 00 00 05  00 48  00")  # ThrottleTimeMs 5, ErrorCode 72, tags
    assert decode(PushTelemetryResponse, response, 0) == PushTelemetryResponse(throttle_time_ms=5, error_code=72)


@settings(max_examples=30, deadline=None)
@given(request=requests, response=responses)
def test_round_trip(request: PushTelemetryRequest, response: PushTelemetryResponse) -> None:
    check_round_trip(PushTelemetryRequest, 0, request, response)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(data: st.DataObject) -> None:
    check_fuzzed_responses(PushTelemetryRequest, 0, data, data.draw(responses, label="response"))


def test_every_truncation_of_a_response_is_corrupt() -> None:
    check_every_truncation_is_corrupt(PushTelemetryRequest, 0, PushTelemetryResponse(throttle_time_ms=1))
