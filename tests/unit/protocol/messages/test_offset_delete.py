"""OffsetDelete (API key 47, KIP-496), v0 only and never flexible: bytes by hand from Kafka's JSON definitions (two
partitions of a topic, one still subscribed to), round trips, framed too, and fuzzed or cut answers that fail only
with ``CorruptResponseError``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol import base
from asyncconsumer.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_round_trip,
    framed,
    h,
    int16,
    int32,
    text,
    tuples,
)

GROUP_SUBSCRIBED_TO_TOPIC = 86

requests = st.builds(
    OffsetDeleteRequest,
    group_id=text,
    topics=tuples(
        st.builds(
            OffsetDeleteRequestTopic,
            name=text,
            partitions=tuples(st.builds(OffsetDeleteRequestPartition, partition_index=int32)),
        )
    ),
)

responses = st.builds(
    OffsetDeleteResponse,
    error_code=int16,
    throttle_time_ms=int32,
    topics=tuples(
        st.builds(
            OffsetDeleteResponseTopic,
            name=text,
            partitions=tuples(st.builds(OffsetDeleteResponsePartition, partition_index=int32, error_code=int16)),
        )
    ),
)


def test_the_request_class_declares_the_contract() -> None:
    request = OffsetDeleteRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION) == (47, 0, 0)
    assert request.FLEXIBLE_FROM > 2**14  # never flexible
    assert not base.is_flexible(request, 0)
    assert request.RESPONSE is OffsetDeleteResponse


REQUEST = OffsetDeleteRequest(
    group_id="g",
    topics=(
        OffsetDeleteRequestTopic(
            name="t", partitions=(OffsetDeleteRequestPartition(0), OffsetDeleteRequestPartition(1))
        ),
    ),
)
REQUEST_BYTES = h(
    """
    00 01 67               # GroupId "g"
    00 00 00 01            # Topics: 1
      00 01 74             #   Name "t"
      00 00 00 02          #   Partitions: 2
        00 00 00 00        #     PartitionIndex 0
        00 00 00 01        #     PartitionIndex 1
    """
)


def test_request_golden_v0() -> None:
    assert encode(REQUEST, 0) == REQUEST_BYTES
    assert decode(OffsetDeleteRequest, REQUEST_BYTES, 0) == REQUEST


def test_the_request_frame_has_no_tagged_fields() -> None:
    # Header v1 (no tag byte after the client id): the body right after it is the request's bytes.
    assert framed(REQUEST, 0) == REQUEST_BYTES


def test_response_golden_v0() -> None:
    body = h(
        """
        00 00                  # ErrorCode (before ThrottleTimeMs here)
        00 00 00 03            # ThrottleTimeMs 3
        00 00 00 01            # Topics: 1
          00 01 74             #   Name "t"
          00 00 00 02          #   Partitions: 2
            00 00 00 00  00 00 #     PartitionIndex 0, ErrorCode 0
            00 00 00 01  00 56 #     PartitionIndex 1, ErrorCode GROUP_SUBSCRIBED_TO_TOPIC (86)
        """
    )
    response = OffsetDeleteResponse(
        error_code=0,
        throttle_time_ms=3,
        topics=(
            OffsetDeleteResponseTopic(
                name="t",
                partitions=(
                    OffsetDeleteResponsePartition(0, 0),
                    OffsetDeleteResponsePartition(1, GROUP_SUBSCRIBED_TO_TOPIC),
                ),
            ),
        ),
    )
    assert encode(response, 0) == body
    assert decode(OffsetDeleteResponse, body, 0) == response


@settings(max_examples=60, deadline=None)
@given(request=requests, response=responses)
def test_round_trip(request: OffsetDeleteRequest, response: OffsetDeleteResponse) -> None:
    check_round_trip(OffsetDeleteRequest, 0, request, response)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(data: st.DataObject) -> None:
    check_fuzzed_responses(OffsetDeleteRequest, 0, data, data.draw(responses, label="response"))


@settings(max_examples=20, deadline=None)
@given(response=responses)
def test_every_truncation_of_a_response_is_corrupt(response: OffsetDeleteResponse) -> None:
    check_every_truncation_is_corrupt(OffsetDeleteRequest, 0, response)
