"""FindCoordinator (API key 10), v1-4: aiokafka's independent encoders agree for v1, the flexible v3 and the
batched v4 are pinned with bytes computed by hand from Kafka's JSON definitions, every version round-trips, framed
too, fuzzed or cut answers fail only with ``CorruptResponseError``, and one request goes out at every version
(``for_version``). Reading either layout of the answer one way is ``layouts``' (``test_layouts.py``)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import coordination as ak_coordination
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
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
    int8,
    int16,
    int32,
    nullable_text,
    text,
    tuples,
    versions,
)

VERSIONS = versions(FindCoordinatorRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[FindCoordinatorRequest]:
    if v < 4:
        return st.builds(FindCoordinatorRequest, key=text, key_type=int8)
    # v4 decodes to the batched form.
    return st.builds(FindCoordinatorRequest, key=st.just(""), key_type=int8, coordinator_keys=tuples(text, min_size=1))


@functools.cache
def responses(v: int) -> st.SearchStrategy[FindCoordinatorResponse]:
    if v < 4:
        return st.builds(
            FindCoordinatorResponse,
            error_code=int16,
            node_id=int32,
            host=text,
            port=int32,
            error_message=nullable_text,
            coordinators=st.just(()),
            throttle_time_ms=int32,
        )
    coordinator = st.builds(
        Coordinator, key=text, node_id=int32, host=text, port=int32, error_code=int16, error_message=nullable_text
    )
    return st.builds(FindCoordinatorResponse, coordinators=tuples(coordinator), throttle_time_ms=int32)


def test_the_request_class_declares_the_contract() -> None:
    request = FindCoordinatorRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (10, 1, 4, 3)
    assert request.RESPONSE is FindCoordinatorResponse


# --- aiokafka's independent encoders (v1) -----------------------------------------------------------------------


def ak_request(req: FindCoordinatorRequest, v: int) -> Any:
    return getattr(ak_coordination, f"FindCoordinatorRequest_v{v}")(req.key, req.key_type)


def ak_response(resp: FindCoordinatorResponse, v: int) -> Any:
    return getattr(ak_coordination, f"FindCoordinatorResponse_v{v}")(
        resp.throttle_time_ms, resp.error_code, resp.error_message, resp.node_id, resp.host, resp.port
    )


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(data: st.DataObject) -> None:
    request = data.draw(requests(1))
    check_request_matches_aiokafka(FindCoordinatorRequest, 1, request, ak_request(request, 1))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(data: st.DataObject) -> None:
    response = data.draw(responses(1))
    check_response_matches_aiokafka(FindCoordinatorRequest, 1, response, ak_response(response, 1))


# --- flexible versions: bytes computed by hand from the JSON definitions -----------------------------------------


def test_v3_golden() -> None:
    request = h("02 67  00  00")  # Key "g", KeyType 0 (group), tagged fields
    assert encode(FindCoordinatorRequest(key="g"), 3) == request
    assert decode(FindCoordinatorRequest, request, 3) == FindCoordinatorRequest(key="g")
    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        00                          # ErrorMessage: null
        00 00 00 01                 # NodeId 1
        02 68                       # Host "h"
        00 00 23 84                 # Port 9092
        00                          # tagged fields
        """
    )
    value = FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None)
    assert encode(value, 3) == response
    assert decode(FindCoordinatorResponse, response, 3) == value


def test_v4_golden() -> None:
    request = h(
        """
        00                          # KeyType 0: declared before CoordinatorKeys, so written first
        02 02 67                    # CoordinatorKeys: compact array of 1, "g"
        00                          # tagged fields
        """
    )
    assert encode(FindCoordinatorRequest(key="", key_type=0, coordinator_keys=("g",)), 4) == request
    assert decode(FindCoordinatorRequest, request, 4) == FindCoordinatorRequest(
        key="", key_type=0, coordinator_keys=("g",)
    )
    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        02                          # Coordinators: compact array of 1
          02 67                     #   Key "g"
          00 00 00 01               #   NodeId 1
          02 68                     #   Host "h"
          00 00 23 84               #   Port 9092
          00 00                     #   ErrorCode
          00                        #   ErrorMessage: null
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value = FindCoordinatorResponse(
        coordinators=(Coordinator(key="g", node_id=1, host="h", port=9092, error_message=None),)
    )
    assert encode(value, 4) == response
    assert decode(FindCoordinatorResponse, response, 4) == value


def test_a_request_in_the_other_layout_is_refused() -> None:
    """Key (v0-3) and CoordinatorKeys (v4+) are not ignorable; ``for_version`` moves one to the other."""
    with pytest.raises(ValueError, match="key needs v0-3"):
        encode(FindCoordinatorRequest(key="g"), 4)
    with pytest.raises(ValueError, match="coordinator_keys needs v4"):
        encode(FindCoordinatorRequest(coordinator_keys=("g",)), 3)


# --- one request, the version's layout (the generated for_version) ----------------------------------------------


def test_a_single_key_is_framed_at_every_version() -> None:
    single, batched = FindCoordinatorRequest(key="g"), FindCoordinatorRequest(coordinator_keys=("g",))
    for version in range(1, 5):
        assert framed(single, version) == framed(batched, version)
    assert framed(single, 4) == h("00  02 02 67  00")  # KeyType, CoordinatorKeys ["g"], tags
    assert framed(batched, 3) == h("02 67  00  00")  # Key "g", KeyType, tags
    assert single.for_version(4) == FindCoordinatorRequest(coordinator_keys=("g",))
    assert batched.for_version(3) == FindCoordinatorRequest(key="g")
    assert single.for_version(3) is single and batched.for_version(4) is batched


def test_keys_an_older_version_cannot_carry_are_refused() -> None:
    one = FindCoordinatorRequest(key="", key_type=1, coordinator_keys=("t",))
    assert encode(one.for_version(2), 2) == encode(FindCoordinatorRequest(key="t", key_type=1), 2)
    with pytest.raises(ValueError, match="FindCoordinatorRequest v3 takes one of coordinator_keys, not 2"):
        FindCoordinatorRequest(key="", key_type=0, coordinator_keys=("a", "b")).for_version(3)
    both = FindCoordinatorRequest(key="x", coordinator_keys=("a", "b"))  # the batch wins
    assert both.for_version(4) == FindCoordinatorRequest(coordinator_keys=("a", "b"))


# --- every version ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version), label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(FindCoordinatorRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(FindCoordinatorRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    response = FindCoordinatorResponse(
        error_code=0,
        node_id=1,
        host="h",
        port=9092,
        error_message="e",
        coordinators=(Coordinator(key="g", node_id=1, host="h", port=9092, error_code=0, error_message="e"),)
        if version >= 4
        else (),
    )
    check_every_truncation_is_corrupt(FindCoordinatorRequest, version, response)
