"""JoinGroup (API key 11), v2-9: aiokafka's independent encoders agree for v2 and v5, the flexible v9 is pinned with
bytes computed by hand from Kafka's JSON definitions, every version round-trips, framed too, and fuzzed or cut
answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import group as ak_group
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
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

VERSIONS = versions(JoinGroupRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[JoinGroupRequest]:
    return st.builds(
        JoinGroupRequest,
        group_id=text,
        session_timeout_ms=int32,
        rebalance_timeout_ms=int32,
        member_id=text,
        protocol_type=text,
        protocols=tuples(st.builds(JoinGroupRequestProtocol, name=text, metadata=blob)),
        group_instance_id=since(v, 5, nullable_text, None),
        reason=since(v, 8, nullable_text, None),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[JoinGroupResponse]:
    member = st.builds(
        JoinGroupResponseMember, member_id=text, group_instance_id=since(v, 5, nullable_text, None), metadata=blob
    )
    return st.builds(
        JoinGroupResponse,
        error_code=int16,
        generation_id=int32,
        protocol_type=since(v, 7, nullable_text, None),
        protocol_name=nullable_text if v >= 7 else text,
        leader=text,
        member_id=text,
        members=tuples(member),
        throttle_time_ms=int32,
        skip_assignment=since(v, 9, st.booleans(), False),
    )


def test_the_request_class_declares_the_contract() -> None:
    request = JoinGroupRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (11, 2, 9, 6)
    assert request.RESPONSE is JoinGroupResponse


# --- aiokafka's independent encoders (v2, v5) ---------------------------------------------------------------------


def ak_request(req: JoinGroupRequest, v: int) -> Any:
    fields: list[Any] = [req.group_id, req.session_timeout_ms, req.rebalance_timeout_ms, req.member_id]
    if v >= 5:
        fields.append(req.group_instance_id)
    fields += [req.protocol_type, [(p.name, p.metadata) for p in req.protocols]]
    return getattr(ak_group, f"JoinGroupRequest_v{v}")(*fields)


def ak_response(resp: JoinGroupResponse, v: int) -> Any:
    members = [
        (m.member_id, m.group_instance_id, m.metadata) if v >= 5 else (m.member_id, m.metadata) for m in resp.members
    ]
    return getattr(ak_group, f"JoinGroupResponse_v{v}")(
        resp.throttle_time_ms,
        resp.error_code,
        resp.generation_id,
        resp.protocol_name,
        resp.leader,
        resp.member_id,
        members,
    )


@pytest.mark.parametrize("version", [2, 5])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    check_request_matches_aiokafka(JoinGroupRequest, version, request, ak_request(request, version))


@pytest.mark.parametrize("version", [2, 5])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(JoinGroupRequest, version, response, ak_response(response, version))


# --- flexible versions: bytes computed by hand from the JSON definitions -----------------------------------------


def test_v9_golden() -> None:
    request = h(
        """
        02 67                       # GroupId "g"
        00 00 af c8                 # SessionTimeoutMs 45000
        00 04 93 e0                 # RebalanceTimeoutMs 300000
        01                          # MemberId ""
        00                          # GroupInstanceId: null
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        02                          # Protocols: compact array of 1
          06 72 61 6e 67 65         #   Name "range"
          03 00 01                  #   Metadata: compact bytes, 2 + 1
          00                        #   tagged fields
        02 72                       # Reason "r"
        00                          # tagged fields
        """
    )
    value = JoinGroupRequest(
        group_id="g",
        session_timeout_ms=45000,
        rebalance_timeout_ms=300000,
        member_id="",
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01"),),
        group_instance_id=None,
        reason="r",
    )
    assert encode(value, 9) == request
    assert decode(JoinGroupRequest, request, 9) == value

    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        00 00 00 03                 # GenerationId 3
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        06 72 61 6e 67 65           # ProtocolName "range"
        03 6d 31                    # Leader "m1"
        01                          # SkipAssignment true (sits between Leader and MemberId)
        03 6d 31                    # MemberId "m1"
        02                          # Members: compact array of 1
          03 6d 31                  #   MemberId "m1"
          02 69                     #   GroupInstanceId "i"
          02 ab                     #   Metadata: 1 byte
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value_r = JoinGroupResponse(
        error_code=0,
        generation_id=3,
        protocol_type="consumer",
        protocol_name="range",
        leader="m1",
        member_id="m1",
        members=(JoinGroupResponseMember(member_id="m1", group_instance_id="i", metadata=b"\xab"),),
        skip_assignment=True,
    )
    assert encode(value_r, 9) == response
    assert decode(JoinGroupResponse, response, 9) == value_r


def test_a_static_member_needs_v5() -> None:
    """GroupInstanceId (v5+) is not ignorable in the request: an older one cannot join as a static member."""
    request = JoinGroupRequest(group_id="g", member_id="m", protocol_type="consumer", group_instance_id="i")
    assert decode(JoinGroupRequest, encode(request, 5), 5) == request
    with pytest.raises(ValueError, match="group_instance_id needs v5"):
        encode(request, 4)
    assert encode(JoinGroupRequest(reason="r"), 7) == encode(JoinGroupRequest(), 7)  # Reason is ignorable


# --- every version ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version), label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(JoinGroupRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(JoinGroupRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    response = JoinGroupResponse(
        error_code=0,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader="m",
        member_id="m",
        members=(JoinGroupResponseMember(member_id="m", group_instance_id="i", metadata=b"x"),),
        throttle_time_ms=0,
        skip_assignment=True,
    )
    check_every_truncation_is_corrupt(JoinGroupRequest, version, response)
