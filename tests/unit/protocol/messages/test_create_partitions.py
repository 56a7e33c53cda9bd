"""CreatePartitions (API key 37, KIP-195), v0-3, flexible from v2: bytes by hand from Kafka's JSON definitions (one
topic with manual assignments, one with null ones; a refused topic with its message), round trips, and fuzzed or cut
answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
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
    text,
    tuples,
    versions,
)

VERSIONS = versions(CreatePartitionsRequest)
INVALID_PARTITIONS = 37

requests = st.builds(
    CreatePartitionsRequest,
    topics=tuples(
        st.builds(
            CreatePartitionsTopic,
            name=text,
            count=int32,
            assignments=st.none() | tuples(st.builds(CreatePartitionsAssignment, broker_ids=tuples(int32))),
        ),
        2,
    ),
    timeout_ms=int32,
    validate_only=st.booleans(),
)

responses = st.builds(
    CreatePartitionsResponse,
    throttle_time_ms=int32,
    results=tuples(st.builds(CreatePartitionsTopicResult, name=text, error_code=int16, error_message=nullable_text)),
)


def test_the_request_class_declares_the_contract() -> None:
    request = CreatePartitionsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (37, 0, 3, 2)
    assert request.RESPONSE is CreatePartitionsResponse


REQUEST = CreatePartitionsRequest(
    topics=(
        CreatePartitionsTopic(
            name="t",
            count=3,
            assignments=(CreatePartitionsAssignment(broker_ids=(1, 2)), CreatePartitionsAssignment(broker_ids=(2, 3))),
        ),
        CreatePartitionsTopic(name="u", count=4, assignments=None),
    ),
    timeout_ms=5000,
    validate_only=False,
)


def test_request_golden_v1() -> None:
    body = h(
        """
        00 00 00 02              # Topics: 2
          00 01 74               #   Name "t"
          00 00 00 03            #   Count 3
          00 00 00 02            #   Assignments: 2
            00 00 00 02  00 00 00 01  00 00 00 02  # BrokerIds: 2, [1, 2]
            00 00 00 02  00 00 00 02  00 00 00 03  # BrokerIds: 2, [2, 3]
          00 01 75               #   Name "u"
          00 00 00 04            #   Count 4
          ff ff ff ff            #   Assignments: null
        00 00 13 88              # TimeoutMs 5000
        00                       # ValidateOnly false
        """
    )
    assert encode(REQUEST, 1) == body
    assert decode(CreatePartitionsRequest, body, 1) == REQUEST


def test_request_golden_v3() -> None:
    body = h(
        """
        03                       # Topics: compact array of 2
          02 74                  #   Name "t"
          00 00 00 03            #   Count 3
          03                     #   Assignments: compact array of 2
            03  00 00 00 01  00 00 00 02  00  # BrokerIds [1, 2], tagged fields
            03  00 00 00 02  00 00 00 03  00  # BrokerIds [2, 3], tagged fields
          00                     #   tagged fields
          02 75                  #   Name "u"
          00 00 00 04            #   Count 4
          00                     #   Assignments: null
          00                     #   tagged fields
        00 00 13 88              # TimeoutMs 5000
        00                       # ValidateOnly false
        00                       # tagged fields
        """
    )
    assert encode(REQUEST, 3) == body
    assert decode(CreatePartitionsRequest, body, 3) == REQUEST


RESPONSE = CreatePartitionsResponse(
    throttle_time_ms=9,
    results=(
        CreatePartitionsTopicResult(name="t"),
        CreatePartitionsTopicResult(name="u", error_code=INVALID_PARTITIONS, error_message="fewer"),
    ),
)


def test_response_golden_v1() -> None:
    body = h(
        """
        00 00 00 09              # ThrottleTimeMs 9
        00 00 00 02              # Results: 2
          00 01 74  00 00  ff ff #   Name "t", ErrorCode 0, ErrorMessage null
          00 01 75  00 25        #   Name "u", ErrorCode INVALID_PARTITIONS (37)
          00 05 66 65 77 65 72   #   ErrorMessage "fewer"
        """
    )
    assert encode(RESPONSE, 1) == body
    assert decode(CreatePartitionsResponse, body, 1) == RESPONSE


def test_response_golden_v3() -> None:
    body = h(
        """
        00 00 00 09              # ThrottleTimeMs 9
        03                       # Results: compact array of 2
          02 74  00 00  00  00   #   Name "t", ErrorCode 0, ErrorMessage null, tagged fields
          02 75  00 25           #   Name "u", ErrorCode INVALID_PARTITIONS (37)
          06 66 65 77 65 72      #   ErrorMessage "fewer"
          00                     #   tagged fields
        00                       # tagged fields
        """
    )
    assert encode(RESPONSE, 3) == body
    assert decode(CreatePartitionsResponse, body, 3) == RESPONSE


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(request=requests, response=responses)
def test_round_trip(version: int, request: CreatePartitionsRequest, response: CreatePartitionsResponse) -> None:
    check_round_trip(CreatePartitionsRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(CreatePartitionsRequest, version, data, data.draw(responses, label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(response=responses)
def test_every_truncation_of_a_response_is_corrupt(version: int, response: CreatePartitionsResponse) -> None:
    check_every_truncation_is_corrupt(CreatePartitionsRequest, version, response)
