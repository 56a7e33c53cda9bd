"""LeaveGroup (API key 13), v1-5: aiokafka's independent encoders agree for v1, the batched v4-5 are pinned with bytes
computed by hand from Kafka's JSON definitions, every version round-trips, framed too, and fuzzed or cut answers
fail only with ``CorruptResponseError``, and one request goes out at every version (``for_version``)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import group as ak_group
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    MemberResponse,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_request_matches_aiokafka,
    check_response_matches_aiokafka,
    check_round_trip,
    framed,
    h,
    int16,
    int32,
    nullable_text,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(LeaveGroupRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[LeaveGroupRequest]:
    if v < 3:
        return st.builds(LeaveGroupRequest, group_id=text, member_id=text)
    member = st.builds(
        MemberIdentity, member_id=text, group_instance_id=nullable_text, reason=since(v, 5, nullable_text, None)
    )
    # v3+ decodes batched
    return st.builds(LeaveGroupRequest, group_id=text, member_id=st.just(""), members=tuples(member, min_size=1))


@functools.cache
def responses(v: int) -> st.SearchStrategy[LeaveGroupResponse]:
    member = st.builds(MemberResponse, member_id=text, group_instance_id=nullable_text, error_code=int16)
    return st.builds(
        LeaveGroupResponse, error_code=int16, members=since(v, 3, tuples(member), ()), throttle_time_ms=int32
    )


def test_the_request_class_declares_the_contract() -> None:
    request = LeaveGroupRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (13, 1, 5, 4)
    assert request.RESPONSE is LeaveGroupResponse


def ak_request(req: LeaveGroupRequest, v: int) -> Any:
    return getattr(ak_group, f"LeaveGroupRequest_v{v}")(req.group_id, req.member_id)


def ak_response(resp: LeaveGroupResponse, v: int) -> Any:
    return getattr(ak_group, f"LeaveGroupResponse_v{v}")(resp.throttle_time_ms, resp.error_code)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(data: st.DataObject) -> None:
    request = data.draw(requests(1))
    check_request_matches_aiokafka(LeaveGroupRequest, 1, request, ak_request(request, 1))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(data: st.DataObject) -> None:
    response = data.draw(responses(1))
    check_response_matches_aiokafka(LeaveGroupRequest, 1, response, ak_response(response, 1))


def test_v4_v5_golden() -> None:
    v5 = h(
        """
        02 67                       # GroupId "g"
        02                          # Members: compact array of 1
          03 6d 31                  #   MemberId "m1"
          02 69                     #   GroupInstanceId "i"
          04 62 79 65               #   Reason "bye" (v5+)
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value = LeaveGroupRequest(
        group_id="g", members=(MemberIdentity(member_id="m1", group_instance_id="i", reason="bye"),)
    )
    assert encode(value, 5) == v5
    assert decode(LeaveGroupRequest, v5, 5) == value
    v4 = h("02 67  02 03 6d 31 00 00  00")  # "g", [{"m1", null instance, tags}], tags
    assert encode(LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id="m1"),)), 4) == v4
    assert decode(LeaveGroupRequest, v4, 4) == LeaveGroupRequest(
        group_id="g", member_id="", members=(MemberIdentity(member_id="m1"),)
    )

    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        02                          # Members: compact array of 1
          03 6d 31                  #   MemberId "m1"
          00                        #   GroupInstanceId: null
          00 19                     #   ErrorCode 25 (UNKNOWN_MEMBER_ID)
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value_r = LeaveGroupResponse(
        error_code=0, members=(MemberResponse(member_id="m1", group_instance_id=None, error_code=25),)
    )
    for version in (4, 5):
        assert encode(value_r, version) == response
        assert decode(LeaveGroupResponse, response, version) == value_r


def test_one_member_is_framed_at_every_version() -> None:
    """The generated ``for_version``: a single member goes out as a one-member batch from v3, and back."""
    single = LeaveGroupRequest(group_id="g", member_id="m1")
    batched = LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id="m1"),))
    assert framed(single, 4) == h("02 67  02 03 6d 31 00 00  00")  # "g", [{"m1", null instance, tags}], tags
    for version in range(1, 6):
        assert framed(single, version) == framed(batched, version)
    one = LeaveGroupRequest(group_id="g", member_id="", members=(MemberIdentity(member_id="m"),))
    assert encode(one.for_version(2), 2) == encode(LeaveGroupRequest(group_id="g", member_id="m"), 2)
    two = LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id="a"), MemberIdentity(member_id="b")))
    with pytest.raises(ValueError, match="LeaveGroupRequest v2 takes one of members, not 2"):
        two.for_version(2)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(LeaveGroupRequest, version, data.draw(requests(version)), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(LeaveGroupRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    response = LeaveGroupResponse(
        error_code=0, members=(MemberResponse(member_id="m", group_instance_id="i", error_code=0),)
    )
    check_every_truncation_is_corrupt(LeaveGroupRequest, version, response)
