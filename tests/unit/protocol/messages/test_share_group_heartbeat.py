"""ShareGroupHeartbeat (API key 76, KIP-932), v1 (Kafka 4.4 dropped v0), flexible: bytes by hand from Kafka's JSON
definitions, a nullable assignment struct, round trips, and fuzzed or cut answers that fail only with
``CorruptResponseError``."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.share_group_heartbeat import (
    Assignment,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
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
)

TOPIC_ID = uuid.UUID(int=5)
topic_partitions = st.builds(TopicPartitions, topic_id=st.uuids(), partitions=tuples(int32))
requests = st.builds(
    ShareGroupHeartbeatRequest,
    group_id=text,
    member_id=text,
    member_epoch=int32,
    rack_id=nullable_text,
    subscribed_topic_names=st.none() | tuples(text),
)
responses = st.builds(
    ShareGroupHeartbeatResponse,
    throttle_time_ms=int32,
    error_code=int16,
    error_message=nullable_text,
    member_id=nullable_text,
    member_epoch=int32,
    heartbeat_interval_ms=int32,
    assignment=st.none() | st.builds(Assignment, topic_partitions=tuples(topic_partitions)),
)


def test_the_request_class_declares_the_contract() -> None:
    request = ShareGroupHeartbeatRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (76, 1, 1, 0)
    assert request.RESPONSE is ShareGroupHeartbeatResponse


def test_v1_golden() -> None:
    request = ShareGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, subscribed_topic_names=("t",))
    assert encode(request, 1) == h("02 67  02 6d  00 00 00 00  00  02 02 74  00")  # rack null, topics ["t"], tags
    response = ShareGroupHeartbeatResponse(
        member_id="m",
        member_epoch=1,
        heartbeat_interval_ms=5000,
        assignment=Assignment(topic_partitions=(TopicPartitions(topic_id=TOPIC_ID, partitions=(0,)),)),
    )
    body = h(
        """
        00 00 00 00  00 00  00      # ThrottleTimeMs, ErrorCode, ErrorMessage: null
        02 6d                       # MemberId "m"
        00 00 00 01  00 00 13 88    # MemberEpoch 1, HeartbeatIntervalMs 5000
        01                          # Assignment: present (int8 1)
          02                        #   TopicPartitions: 1
            00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05  # TopicId
            02 00 00 00 00          #   Partitions [0]
            00                      #   tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    assert encode(response, 1) == body
    assert decode(ShareGroupHeartbeatResponse, body, 1) == response
    null = encode(ShareGroupHeartbeatResponse(), 1)
    assert null.endswith(h("ff 00"))  # a null assignment is an int8 -1, then the tags
    assert decode(ShareGroupHeartbeatResponse, null, 1).assignment is None


@settings(max_examples=30, deadline=None)
@given(request=requests, response=responses)
def test_round_trip(request: ShareGroupHeartbeatRequest, response: ShareGroupHeartbeatResponse) -> None:
    check_round_trip(ShareGroupHeartbeatRequest, 1, request, response)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(data: st.DataObject) -> None:
    check_fuzzed_responses(ShareGroupHeartbeatRequest, 1, data, data.draw(responses, label="response"))


@settings(max_examples=20, deadline=None)
@given(response=responses)
def test_every_truncation_of_a_response_is_corrupt(response: ShareGroupHeartbeatResponse) -> None:
    check_every_truncation_is_corrupt(ShareGroupHeartbeatRequest, 1, response)
