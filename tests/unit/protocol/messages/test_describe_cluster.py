"""DescribeCluster (API key 60, KIP-700), v0-2, flexible from v0: bytes by hand from Kafka's JSON definitions (v1's
endpoint type, v2's fenced brokers, a broker with and without a rack), round trips, and fuzzed or cut answers that
fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    NO_AUTH_OPS,
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_round_trip,
    h,
    int8,
    int16,
    int32,
    nullable_text,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(DescribeClusterRequest)
BROKERS, CONTROLLERS = 1, 2


@functools.cache
def requests(v: int) -> st.SearchStrategy[DescribeClusterRequest]:
    return st.builds(
        DescribeClusterRequest,
        include_cluster_authorized_operations=st.booleans(),
        endpoint_type=since(v, 1, int8, BROKERS),
        include_fenced_brokers=since(v, 2, st.booleans(), False),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[DescribeClusterResponse]:
    broker = st.builds(
        DescribeClusterBroker,
        broker_id=int32,
        host=text,
        port=int32,
        rack=nullable_text,
        is_fenced=since(v, 2, st.booleans(), False),
    )
    return st.builds(
        DescribeClusterResponse,
        throttle_time_ms=int32,
        error_code=int16,
        error_message=nullable_text,
        endpoint_type=since(v, 1, int8, BROKERS),
        cluster_id=text,
        controller_id=int32,
        brokers=tuples(broker),
        cluster_authorized_operations=int32,
    )


def test_the_request_class_declares_the_contract() -> None:
    request = DescribeClusterRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (60, 0, 2, 0)
    assert request.RESPONSE is DescribeClusterResponse


@pytest.mark.parametrize(
    ("version", "value", "body"),
    [
        (0, DescribeClusterRequest(include_cluster_authorized_operations=True), "01  00"),
        (1, DescribeClusterRequest(endpoint_type=CONTROLLERS), "00  02  00"),
        (2, DescribeClusterRequest(True, CONTROLLERS, include_fenced_brokers=True), "01  02  01  00"),
    ],
)
def test_request_golden(version: int, value: DescribeClusterRequest, body: str) -> None:
    # IncludeClusterAuthorizedOperations, from v1 EndpointType (int8), from v2 IncludeFencedBrokers; tagged fields.
    assert encode(value, version) == h(body)
    assert decode(DescribeClusterRequest, h(body), version) == value


@pytest.mark.parametrize(
    ("version", "value"),
    [
        (0, DescribeClusterRequest(endpoint_type=CONTROLLERS)),
        (1, DescribeClusterRequest(include_fenced_brokers=True)),
    ],
)
def test_a_field_the_version_lacks_is_refused(version: int, value: DescribeClusterRequest) -> None:
    with pytest.raises(ValueError, match="needs v"):
        encode(value, version)


def test_response_golden_v0() -> None:
    body = h(
        """
        00 00 00 00              # ThrottleTimeMs
        00 00                    # ErrorCode
        00                       # ErrorMessage: null (no EndpointType before v1)
        04 61 62 63              # ClusterId "abc"
        00 00 00 01              # ControllerId 1
        02                       # Brokers: compact array of 1
          00 00 00 01            #   BrokerId 1
          02 68                  #   Host "h"
          00 00 23 84            #   Port 9092
          00                     #   Rack: null (no IsFenced before v2)
          00                     #   tagged fields
        80 00 00 00              # ClusterAuthorizedOperations: not asked for
        00                       # tagged fields
        """
    )
    response = DescribeClusterResponse(
        cluster_id="abc",
        controller_id=1,
        brokers=(DescribeClusterBroker(broker_id=1, host="h", port=9092),),
    )
    assert response.cluster_authorized_operations == NO_AUTH_OPS
    assert encode(response, 0) == body
    assert decode(DescribeClusterResponse, body, 0) == response


def test_response_golden_v2() -> None:
    body = h(
        """
        00 00 00 03              # ThrottleTimeMs 3
        00 00                    # ErrorCode
        00                       # ErrorMessage: null
        02                       # EndpointType controllers
        04 61 62 63              # ClusterId "abc"
        00 00 00 01              # ControllerId 1
        03                       # Brokers: compact array of 2
          00 00 00 01  02 68  00 00 23 84  00     00  00  # 1, "h", 9092, Rack null, not fenced, tagged fields
          00 00 00 02  02 6b  00 00 23 85  02 72  01  00  # 2, "k", 9093, Rack "r", fenced, tagged fields
        00 00 0f ff              # ClusterAuthorizedOperations
        00                       # tagged fields
        """
    )
    response = DescribeClusterResponse(
        throttle_time_ms=3,
        endpoint_type=CONTROLLERS,
        cluster_id="abc",
        controller_id=1,
        brokers=(
            DescribeClusterBroker(broker_id=1, host="h", port=9092),
            DescribeClusterBroker(broker_id=2, host="k", port=9093, rack="r", is_fenced=True),
        ),
        cluster_authorized_operations=0xFFF,
    )
    assert encode(response, 2) == body
    assert decode(DescribeClusterResponse, body, 2) == response


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(DescribeClusterRequest, version, data.draw(requests(version)), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(DescribeClusterRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(DescribeClusterRequest, version, data.draw(responses(version), label="response"))
