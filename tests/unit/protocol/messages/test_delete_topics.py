"""DeleteTopics (API key 20), v1-5 of Kafka's v1-6 (topics by name only), flexible from v4: bytes by hand from Kafka's
JSON definitions (two topic names; answers with and without v5's error message), round trips, and fuzzed or cut
answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
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

VERSIONS = versions(DeleteTopicsRequest)
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_DELETION_DISABLED = 73

requests = st.builds(DeleteTopicsRequest, topic_names=tuples(text), timeout_ms=int32)


@functools.cache
def responses(v: int) -> st.SearchStrategy[DeleteTopicsResponse]:
    result = st.builds(
        DeletableTopicResult, name=text, error_code=int16, error_message=since(v, 5, nullable_text, None)
    )
    return st.builds(DeleteTopicsResponse, throttle_time_ms=int32, responses=tuples(result))


def test_the_request_class_declares_the_contract() -> None:
    request = DeleteTopicsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (20, 1, 5, 4)
    assert request.RESPONSE is DeleteTopicsResponse


REQUEST = DeleteTopicsRequest(topic_names=("t", "u"), timeout_ms=1000)


def test_request_golden_v3() -> None:
    body = h(
        """
        00 00 00 02              # TopicNames: 2
          00 01 74               #   "t"
          00 01 75               #   "u"
        00 00 03 e8              # TimeoutMs 1000
        """
    )
    assert encode(REQUEST, 3) == body
    assert decode(DeleteTopicsRequest, body, 3) == REQUEST


def test_request_golden_v5() -> None:
    body = h(
        """
        03                       # TopicNames: compact array of 2
          02 74                  #   "t"
          02 75                  #   "u"
        00 00 03 e8              # TimeoutMs 1000
        00                       # tagged fields
        """
    )
    assert encode(REQUEST, 5) == body
    assert decode(DeleteTopicsRequest, body, 5) == REQUEST


def test_response_golden_v3() -> None:
    body = h(
        """
        00 00 00 02              # ThrottleTimeMs 2
        00 00 00 02              # Responses: 2
          00 01 74  00 00        #   Name "t", ErrorCode 0
          00 01 75  00 03        #   Name "u", ErrorCode UNKNOWN_TOPIC_OR_PARTITION (3)
        """
    )
    response = DeleteTopicsResponse(
        throttle_time_ms=2,
        responses=(DeletableTopicResult("t"), DeletableTopicResult("u", UNKNOWN_TOPIC_OR_PARTITION)),
    )
    assert encode(response, 3) == body
    assert decode(DeleteTopicsResponse, body, 3) == response


def test_response_golden_v5() -> None:
    body = h(
        """
        00 00 00 02              # ThrottleTimeMs 2
        03                       # Responses: compact array of 2
          02 74  00 00  00  00   #   Name "t", ErrorCode 0, ErrorMessage null, tagged fields
          02 75                  #   Name "u"
          00 49                  #   ErrorCode TOPIC_DELETION_DISABLED (73)
          04 6f 66 66            #   ErrorMessage "off"
          00                     #   tagged fields
        00                       # tagged fields
        """
    )
    response = DeleteTopicsResponse(
        throttle_time_ms=2,
        responses=(DeletableTopicResult("t"), DeletableTopicResult("u", TOPIC_DELETION_DISABLED, "off")),
    )
    assert encode(response, 5) == body
    assert decode(DeleteTopicsResponse, body, 5) == response


def test_the_error_message_is_dropped_before_v5() -> None:
    result = DeletableTopicResult("u", TOPIC_DELETION_DISABLED, "off")
    assert encode(result, 4) == h("02 75  00 49  00")  # Name, ErrorCode, tagged fields


def test_a_null_name_is_corrupt() -> None:
    # Name is nullable only from v6, which we do not speak.
    with pytest.raises(CorruptResponseError, match="null where a non-nullable string"):
        decode(DeleteTopicsResponse, h("00 00 00 00  02  00  00 00  00  00  00"), 5)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(DeleteTopicsRequest, version, data.draw(requests), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(DeleteTopicsRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(DeleteTopicsRequest, version, data.draw(responses(version), label="response"))
