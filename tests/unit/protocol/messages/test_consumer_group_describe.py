"""ConsumerGroupDescribe (API key 69, KIP-848), v0-1, flexible: bytes by hand from Kafka's JSON definitions, the
ignorable MemberType of v1, round trips at both versions, and fuzzed or cut answers that fail only with
``CorruptResponseError``."""

from __future__ import annotations

import functools
import uuid

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.consumer_group_describe import (
    Assignment,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    Member,
    TopicPartitions,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
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

VERSIONS = versions(ConsumerGroupDescribeRequest)
assignments = st.builds(
    Assignment,
    topic_partitions=tuples(
        st.builds(TopicPartitions, topic_id=st.uuids(), topic_name=text, partitions=tuples(int32)), 2
    ),
)
requests = st.builds(ConsumerGroupDescribeRequest, group_ids=tuples(text), include_authorized_operations=st.booleans())


@functools.cache
def responses(v: int) -> st.SearchStrategy[ConsumerGroupDescribeResponse]:
    member = st.builds(
        Member,
        member_id=text,
        instance_id=nullable_text,
        rack_id=nullable_text,
        member_epoch=int32,
        client_id=text,
        client_host=text,
        subscribed_topic_names=tuples(text),
        subscribed_topic_regex=nullable_text,
        assignment=assignments,
        target_assignment=assignments,
        member_type=since(v, 1, int8, -1),
    )
    group = st.builds(
        DescribedGroup,
        error_code=int16,
        error_message=nullable_text,
        group_id=text,
        group_state=text,
        group_epoch=int32,
        assignment_epoch=int32,
        assignor_name=text,
        members=tuples(member, 2),
        authorized_operations=int32,
    )
    return st.builds(ConsumerGroupDescribeResponse, throttle_time_ms=int32, groups=tuples(group, 2))


def test_the_request_class_declares_the_contract() -> None:
    request = ConsumerGroupDescribeRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (69, 0, 1, 0)
    assert request.RESPONSE is ConsumerGroupDescribeResponse


def test_v1_member_golden_and_its_v0_without_the_member_type() -> None:
    member = Member(
        member_id="m",
        member_epoch=2,
        client_id="c",
        client_host="h",
        subscribed_topic_names=("t",),
        assignment=Assignment(
            topic_partitions=(TopicPartitions(topic_id=uuid.UUID(int=3), topic_name="t", partitions=(0,)),)
        ),
        member_type=1,
    )
    v1 = h(
        """
        02 6d  00  00               # MemberId "m", InstanceId: null, RackId: null
        00 00 00 02                 # MemberEpoch 2
        02 63  02 68                # ClientId "c", ClientHost "h"
        02 02 74                    # SubscribedTopicNames ["t"]
        00                          # SubscribedTopicRegex: null
        02                          # Assignment: TopicPartitions: 1
          00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 03  # TopicId
          02 74  02 00 00 00 00  00 #   TopicName "t", Partitions [0], tagged fields
          00                        #   Assignment's tagged fields
        01 00                       # TargetAssignment: no partitions, tagged fields
        01                          # MemberType 1 (v1+)
        00                          # tagged fields
        """
    )
    assert encode(member, 1) == v1
    assert decode(Member, v1, 1) == member
    v0 = v1[:-2] + v1[-1:]  # MemberType is ignorable: v0 leaves it out
    assert encode(member, 0) == v0
    assert decode(Member, v0, 0) == attrs.evolve(member, member_type=-1)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(ConsumerGroupDescribeRequest, version, data.draw(requests), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(ConsumerGroupDescribeRequest, version, data, data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(ConsumerGroupDescribeRequest, version, data.draw(responses(version)))
