"""SyncGroup (API key 14), v1-5: aiokafka's independent encoders agree for v1 and v3, the flexible v5 is pinned with
bytes computed by hand from Kafka's JSON definitions, every version round-trips, framed too, and fuzzed or cut
answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import group as ak_group
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse
from tests.support.codec import decode, encode
from tests.support.protocol import (
    blob,
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
    tuples,
    versions,
)

VERSIONS = versions(SyncGroupRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[SyncGroupRequest]:
    return st.builds(
        SyncGroupRequest,
        group_id=text,
        generation_id=int32,
        member_id=text,
        assignments=tuples(st.builds(SyncGroupRequestAssignment, member_id=text, assignment=blob)),
        group_instance_id=since(v, 3, nullable_text, None),
        protocol_type=since(v, 5, nullable_text, None),
        protocol_name=since(v, 5, nullable_text, None),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[SyncGroupResponse]:
    return st.builds(
        SyncGroupResponse,
        error_code=int16,
        assignment=blob,
        throttle_time_ms=int32,
        protocol_type=since(v, 5, nullable_text, None),
        protocol_name=since(v, 5, nullable_text, None),
    )


def test_the_request_class_declares_the_contract() -> None:
    request = SyncGroupRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (14, 1, 5, 4)
    assert request.RESPONSE is SyncGroupResponse


# --- aiokafka's independent encoders (v1, v3) ---------------------------------------------------------------------


def ak_request(req: SyncGroupRequest, v: int) -> Any:
    fields: list[Any] = [req.group_id, req.generation_id, req.member_id]
    if v >= 3:
        fields.append(req.group_instance_id)
    fields.append([(a.member_id, a.assignment) for a in req.assignments])
    return getattr(ak_group, f"SyncGroupRequest_v{v}")(*fields)


def ak_response(resp: SyncGroupResponse, v: int) -> Any:
    return getattr(ak_group, f"SyncGroupResponse_v{v}")(resp.throttle_time_ms, resp.error_code, resp.assignment)


@pytest.mark.parametrize("version", [1, 3])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    check_request_matches_aiokafka(SyncGroupRequest, version, request, ak_request(request, version))


@pytest.mark.parametrize("version", [1, 3])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(SyncGroupRequest, version, response, ak_response(response, version))


# --- flexible versions: bytes computed by hand from the JSON definitions -----------------------------------------


def test_v5_golden() -> None:
    request = h(
        """
        02 67                       # GroupId "g"
        00 00 00 03                 # GenerationId 3
        03 6d 31                    # MemberId "m1"
        00                          # GroupInstanceId: null
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        06 72 61 6e 67 65           # ProtocolName "range"
        02                          # Assignments: compact array of 1
          03 6d 31                  #   MemberId "m1"
          02 01                     #   Assignment: 1 byte
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value = SyncGroupRequest(
        group_id="g",
        generation_id=3,
        member_id="m1",
        assignments=(SyncGroupRequestAssignment(member_id="m1", assignment=b"\x01"),),
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
    )
    assert encode(value, 5) == request
    assert decode(SyncGroupRequest, request, 5) == value

    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        06 72 61 6e 67 65           # ProtocolName "range"
        03 01 02                    # Assignment: 2 bytes
        00                          # tagged fields
        """
    )
    value_r = SyncGroupResponse(
        error_code=0, assignment=b"\x01\x02", throttle_time_ms=0, protocol_type="consumer", protocol_name="range"
    )
    assert encode(value_r, 5) == response
    assert decode(SyncGroupResponse, response, 5) == value_r


def test_bytes_show_their_size_only_in_a_repr() -> None:
    assert "<2 bytes>" in repr(SyncGroupRequestAssignment(member_id="m", assignment=b"\x01\x02"))


# --- every version ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version), label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(SyncGroupRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(SyncGroupRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    response = SyncGroupResponse(
        error_code=0, assignment=b"x", throttle_time_ms=0, protocol_type="consumer", protocol_name="range"
    )
    check_every_truncation_is_corrupt(SyncGroupRequest, version, response)
