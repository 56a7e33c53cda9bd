"""ListGroups (API key 16), v0-5, flexible from v3: bytes by hand from Kafka's JSON definitions (the empty request of
v0-2, the states and types filters of v4-5; answers with and without throttle, state and type), round trips, and
fuzzed or cut answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_round_trip,
    h,
    int16,
    int32,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(ListGroupsRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[ListGroupsRequest]:
    return st.builds(
        ListGroupsRequest,
        states_filter=since(v, 4, tuples(text), ()),
        types_filter=since(v, 5, tuples(text), ()),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[ListGroupsResponse]:
    group = st.builds(
        ListedGroup,
        group_id=text,
        protocol_type=text,
        group_state=since(v, 4, text, ""),
        group_type=since(v, 5, text, ""),
    )
    return st.builds(ListGroupsResponse, throttle_time_ms=since(v, 1, int32, 0), error_code=int16, groups=tuples(group))


def test_the_request_class_declares_the_contract() -> None:
    request = ListGroupsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (16, 0, 5, 3)
    assert request.RESPONSE is ListGroupsResponse


@pytest.mark.parametrize(("version", "body"), [(0, ""), (2, ""), (3, "00"), (4, "01  00")])
def test_request_golden_without_filters(version: int, body: str) -> None:
    # v0-2 have no field at all; v3 only its tagged fields; v4 an empty compact StatesFilter, then them.
    assert encode(ListGroupsRequest(), version) == h(body)
    assert decode(ListGroupsRequest, h(body), version) == ListGroupsRequest()


def test_request_golden_v5() -> None:
    request = ListGroupsRequest(states_filter=("Stable", "Empty"), types_filter=("consumer",))
    body = h(
        """
        03                           # StatesFilter: compact array of 2
          07 53 74 61 62 6c 65       #   "Stable"
          06 45 6d 70 74 79          #   "Empty"
        02                           # TypesFilter: compact array of 1
          09 63 6f 6e 73 75 6d 65 72 #   "consumer"
        00                           # tagged fields
        """
    )
    assert encode(request, 5) == body
    assert decode(ListGroupsRequest, body, 5) == request


@pytest.mark.parametrize(
    ("version", "value"),
    [
        (3, ListGroupsRequest(states_filter=("Stable",))),
        (4, ListGroupsRequest(types_filter=("consumer",))),
    ],
)
def test_a_filter_the_version_lacks_is_refused(version: int, value: ListGroupsRequest) -> None:
    with pytest.raises(ValueError, match="needs v"):
        encode(value, version)


def test_response_golden_v0() -> None:
    body = h(
        """
        00 00                        # ErrorCode (no ThrottleTimeMs before v1)
        00 00 00 01                  # Groups: 1
          00 01 67                   #   GroupId "g"
          00 08 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        """
    )
    response = ListGroupsResponse(groups=(ListedGroup(group_id="g", protocol_type="consumer"),))
    assert encode(response, 0) == body
    assert decode(ListGroupsResponse, body, 0) == response


def test_response_golden_v2() -> None:
    body = h("00 00 00 07  00 00  00 00 00 01  00 01 67  00 00")  # ThrottleTimeMs 7, ErrorCode, Groups: "g", ""
    response = ListGroupsResponse(throttle_time_ms=7, groups=(ListedGroup(group_id="g"),))
    assert encode(response, 2) == body
    assert decode(ListGroupsResponse, body, 2) == response


def test_response_golden_v5() -> None:
    body = h(
        """
        00 00 00 07                  # ThrottleTimeMs 7
        00 00                        # ErrorCode
        03                           # Groups: compact array of 2
          02 67                      #   GroupId "g"
          09 63 6f 6e 73 75 6d 65 72 #   ProtocolType "consumer"
          07 53 74 61 62 6c 65       #   GroupState "Stable"
          09 63 6f 6e 73 75 6d 65 72 #   GroupType "consumer"
          00                         #   tagged fields
          02 73                      #   GroupId "s"
          01                         #   ProtocolType ""
          06 45 6d 70 74 79          #   GroupState "Empty"
          06 73 68 61 72 65          #   GroupType "share"
          00                         #   tagged fields
        00                           # tagged fields
        """
    )
    response = ListGroupsResponse(
        throttle_time_ms=7,
        groups=(
            ListedGroup(group_id="g", protocol_type="consumer", group_state="Stable", group_type="consumer"),
            ListedGroup(group_id="s", protocol_type="", group_state="Empty", group_type="share"),
        ),
    )
    assert encode(response, 5) == body
    assert decode(ListGroupsResponse, body, 5) == response


def test_a_state_and_type_are_dropped_where_the_version_lacks_them() -> None:
    group = ListedGroup(group_id="g", protocol_type="consumer", group_state="Stable", group_type="consumer")
    assert encode(group, 3) == h("02 67  09 636f6e73756d6572  00")
    assert encode(group, 4) == h("02 67  09 636f6e73756d6572  07 537461626c65  00")


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(ListGroupsRequest, version, data.draw(requests(version)), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(ListGroupsRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(ListGroupsRequest, version, data.draw(responses(version), label="response"))
