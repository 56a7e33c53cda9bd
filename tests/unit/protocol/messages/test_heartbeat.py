"""Heartbeat (API key 12), v1-4: aiokafka's independent encoders agree for v1, the flexible v4 is pinned with bytes
computed by hand from Kafka's JSON definitions, every version round-trips, framed too, and fuzzed or cut answers
fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import group as ak_group
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_request_matches_aiokafka,
    check_response_matches_aiokafka,
    check_round_trip,
    h,
    int16,
    int32,
    nullable_text,
    since,
    text,
    versions,
)

VERSIONS = versions(HeartbeatRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[HeartbeatRequest]:
    return st.builds(
        HeartbeatRequest,
        group_id=text,
        generation_id=int32,
        member_id=text,
        group_instance_id=since(v, 3, nullable_text, None),
    )


responses = st.builds(HeartbeatResponse, error_code=int16, throttle_time_ms=int32)


def test_the_request_class_declares_the_contract() -> None:
    request = HeartbeatRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (12, 1, 4, 4)
    assert request.RESPONSE is HeartbeatResponse


def ak_request(req: HeartbeatRequest, v: int) -> Any:
    return getattr(ak_group, f"HeartbeatRequest_v{v}")(req.group_id, req.generation_id, req.member_id)


def ak_response(resp: HeartbeatResponse, v: int) -> Any:
    return getattr(ak_group, f"HeartbeatResponse_v{v}")(resp.throttle_time_ms, resp.error_code)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(data: st.DataObject) -> None:
    request = data.draw(requests(1))
    check_request_matches_aiokafka(HeartbeatRequest, 1, request, ak_request(request, 1))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(data: st.DataObject) -> None:
    response = data.draw(responses)
    check_response_matches_aiokafka(HeartbeatRequest, 1, response, ak_response(response, 1))


def test_v4_golden() -> None:
    request = h("02 67  00 00 00 03  03 6d 31  02 69  00")  # "g", generation 3, "m1", instance "i", tags
    value = HeartbeatRequest(group_id="g", generation_id=3, member_id="m1", group_instance_id="i")
    assert encode(value, 4) == request
    assert decode(HeartbeatRequest, request, 4) == value
    response = h("00 00 00 05  00 1b  00")  # throttle 5, REBALANCE_IN_PROGRESS (27), tags
    assert encode(HeartbeatResponse(error_code=27, throttle_time_ms=5), 4) == response
    assert decode(HeartbeatResponse, response, 4) == HeartbeatResponse(error_code=27, throttle_time_ms=5)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(HeartbeatRequest, version, data.draw(requests(version)), data.draw(responses))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(HeartbeatRequest, version, data, data.draw(responses, label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    check_every_truncation_is_corrupt(HeartbeatRequest, version, HeartbeatResponse(error_code=0))
