"""ShareGroupDescribe (API key 77, KIP-932), v1, flexible: bytes by hand from Kafka's JSON definitions (members'
assignments are non-nullable structs: no presence marker), round trips, and fuzzed or cut answers that fail only
with ``CorruptResponseError``."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.share_group_describe import (
    Assignment,
    DescribedGroup,
    Member,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
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

assignments = st.builds(
    Assignment,
    topic_partitions=tuples(
        st.builds(TopicPartitions, topic_id=st.uuids(), topic_name=text, partitions=tuples(int32)), 2
    ),
)
members = st.builds(
    Member,
    member_id=text,
    rack_id=nullable_text,
    member_epoch=int32,
    client_id=text,
    client_host=text,
    subscribed_topic_names=tuples(text),
    assignment=assignments,
)
groups = st.builds(
    DescribedGroup,
    error_code=int16,
    error_message=nullable_text,
    group_id=text,
    group_state=text,
    group_epoch=int32,
    assignment_epoch=int32,
    assignor_name=text,
    members=tuples(members, 2),
    authorized_operations=int32,
)
requests = st.builds(ShareGroupDescribeRequest, group_ids=tuples(text), include_authorized_operations=st.booleans())
responses = st.builds(ShareGroupDescribeResponse, throttle_time_ms=int32, groups=tuples(groups, 2))


def test_the_request_class_declares_the_contract() -> None:
    request = ShareGroupDescribeRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (77, 1, 1, 0)
    assert request.RESPONSE is ShareGroupDescribeResponse


def test_v1_golden() -> None:
    assert encode(ShareGroupDescribeRequest(group_ids=("g",), include_authorized_operations=True), 1) == h(
        "02 02 67  01  00"
    )
    member = Member(
        member_id="m",
        client_id="c",
        client_host="h",
        assignment=Assignment(
            topic_partitions=(TopicPartitions(topic_id=uuid.UUID(int=9), topic_name="t", partitions=(1,)),)
        ),
    )
    response = ShareGroupDescribeResponse(
        groups=(DescribedGroup(group_id="g", group_state="Stable", members=(member,)),)
    )
    body = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        02                          # Groups: 1
          00 00  00                 #   ErrorCode, ErrorMessage: null
          02 67                     #   GroupId "g"
          07 53 74 61 62 6c 65      #   GroupState "Stable"
          00 00 00 00  00 00 00 00  #   GroupEpoch, AssignmentEpoch
          01                        #   AssignorName ""
          02                        #   Members: 1
            02 6d  00               #     MemberId "m", RackId: null
            00 00 00 00             #     MemberEpoch
            02 63  02 68            #     ClientId "c", ClientHost "h"
            01                      #     SubscribedTopicNames []
            02                      #     Assignment (no marker): TopicPartitions: 1
              00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 09  # TopicId
              02 74                 #       TopicName "t"
              02 00 00 00 01        #       Partitions [1]
              00                    #       tagged fields
              00                    #     Assignment's tagged fields
            00                      #     member's tagged fields
          80 00 00 00               #   AuthorizedOperations INT32_MIN
          00                        #   group's tagged fields
        00                          # tagged fields
        """
    )
    assert encode(response, 1) == body
    assert decode(ShareGroupDescribeResponse, body, 1) == response


@settings(max_examples=30, deadline=None)
@given(request=requests, response=responses)
def test_round_trip(request: ShareGroupDescribeRequest, response: ShareGroupDescribeResponse) -> None:
    check_round_trip(ShareGroupDescribeRequest, 1, request, response)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(data: st.DataObject) -> None:
    check_fuzzed_responses(ShareGroupDescribeRequest, 1, data, data.draw(responses, label="response"))


@settings(max_examples=10, deadline=None)
@given(response=responses)
def test_every_truncation_of_a_response_is_corrupt(response: ShareGroupDescribeResponse) -> None:
    check_every_truncation_is_corrupt(ShareGroupDescribeRequest, 1, response)
