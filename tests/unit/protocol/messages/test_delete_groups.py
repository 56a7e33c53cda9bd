"""DeleteGroups (API key 42), v0-3, flexible from v2: bytes by hand from Kafka's JSON definitions (a deleted group
and a non-empty one, whose message only v3 carries), round trips, and fuzzed or cut answers that fail only with
``CorruptResponseError``."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
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

VERSIONS = versions(DeleteGroupsRequest)
NON_EMPTY_GROUP = 68

requests = st.builds(DeleteGroupsRequest, groups_names=tuples(text))


@functools.cache
def responses(v: int) -> st.SearchStrategy[DeleteGroupsResponse]:
    result = st.builds(
        DeletableGroupResult, group_id=text, error_code=int16, error_message=since(v, 3, nullable_text, None)
    )
    return st.builds(DeleteGroupsResponse, throttle_time_ms=int32, results=tuples(result))


def test_the_request_class_declares_the_contract() -> None:
    request = DeleteGroupsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (42, 0, 3, 2)
    assert request.RESPONSE is DeleteGroupsResponse


REQUEST = DeleteGroupsRequest(groups_names=("g1", "g2"))


def test_request_golden_v1() -> None:
    body = h(
        """
        00 00 00 02        # GroupsNames: 2
          00 02 67 31      #   "g1"
          00 02 67 32      #   "g2"
        """
    )
    assert encode(REQUEST, 1) == body
    assert decode(DeleteGroupsRequest, body, 1) == REQUEST


def test_request_golden_v3() -> None:
    body = h(
        """
        03                 # GroupsNames: compact array of 2
          03 67 31         #   "g1"
          03 67 32         #   "g2"
        00                 # tagged fields
        """
    )
    assert encode(REQUEST, 3) == body
    assert decode(DeleteGroupsRequest, body, 3) == REQUEST


def test_response_golden_v1() -> None:
    body = h(
        """
        00 00 00 05        # ThrottleTimeMs 5
        00 00 00 02        # Results: 2
          00 01 67         #   GroupId "g"
          00 00            #   ErrorCode
          00 01 68         #   GroupId "h"
          00 44            #   ErrorCode NON_EMPTY_GROUP (68)
        """
    )
    response = DeleteGroupsResponse(
        throttle_time_ms=5,
        results=(DeletableGroupResult("g", 0), DeletableGroupResult("h", NON_EMPTY_GROUP)),
    )
    assert encode(response, 1) == body
    assert decode(DeleteGroupsResponse, body, 1) == response


def test_response_golden_v3() -> None:
    body = h(
        """
        00 00 00 05        # ThrottleTimeMs 5
        03                 # Results: compact array of 2
          02 67            #   GroupId "g"
          00 00            #   ErrorCode
          00               #   ErrorMessage: null
          00               #   tagged fields
          02 68            #   GroupId "h"
          00 44            #   ErrorCode NON_EMPTY_GROUP (68)
          06 62 75 73 79 21  # ErrorMessage "busy!"
          00               #   tagged fields
        00                 # tagged fields
        """
    )
    response = DeleteGroupsResponse(
        throttle_time_ms=5,
        results=(DeletableGroupResult("g", 0), DeletableGroupResult("h", NON_EMPTY_GROUP, "busy!")),
    )
    assert encode(response, 3) == body
    assert decode(DeleteGroupsResponse, body, 3) == response


def test_the_error_message_is_dropped_before_v3() -> None:
    result = DeletableGroupResult("h", NON_EMPTY_GROUP, "busy!")
    assert encode(result, 2) == h("02 68  00 44  00")  # GroupId, ErrorCode, tagged fields
    assert decode(DeletableGroupResult, encode(result, 2), 2) == DeletableGroupResult("h", NON_EMPTY_GROUP)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(DeleteGroupsRequest, version, data.draw(requests), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(DeleteGroupsRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(DeleteGroupsRequest, version, data.draw(responses(version), label="response"))
