"""DescribeShareGroupOffsets (API key 90, KIP-932; v1 adds each partition's lag, KIP-1226), flexible from v0: bytes
by hand from Kafka's JSON definitions (a null topic list asks for every partition), round trips, and fuzzed or cut
answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_round_trip,
    h,
    int16,
    int32,
    int64,
    nullable_text,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(DescribeShareGroupOffsetsRequest)

requests = st.builds(
    DescribeShareGroupOffsetsRequest,
    groups=tuples(
        st.builds(
            DescribeShareGroupOffsetsRequestGroup,
            group_id=text,
            topics=st.none()
            | tuples(st.builds(DescribeShareGroupOffsetsRequestTopic, topic_name=text, partitions=tuples(int32))),
        ),
        2,
    ),
)


def responses(version: int) -> st.SearchStrategy[DescribeShareGroupOffsetsResponse]:
    partitions = st.builds(
        DescribeShareGroupOffsetsResponsePartition,
        partition_index=int32,
        start_offset=int64,
        leader_epoch=int32,
        lag=since(version, 1, int64, -1),
        error_code=int16,
        error_message=nullable_text,
    )
    topics = st.builds(
        DescribeShareGroupOffsetsResponseTopic, topic_name=text, topic_id=st.uuids(), partitions=tuples(partitions)
    )
    groups = st.builds(
        DescribeShareGroupOffsetsResponseGroup,
        group_id=text,
        topics=tuples(topics, 2),
        error_code=int16,
        error_message=nullable_text,
    )
    return st.builds(DescribeShareGroupOffsetsResponse, throttle_time_ms=int32, groups=tuples(groups, 2))


def test_the_request_class_declares_the_contract() -> None:
    request = DescribeShareGroupOffsetsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (90, 0, 1, 0)
    assert request.RESPONSE is DescribeShareGroupOffsetsResponse


def test_request_golden_every_topic() -> None:
    request = DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(group_id="g"),))
    # Groups: 1; GroupId "g"; Topics: null (every partition the group has a start offset for); tagged fields.
    assert encode(request, 0) == encode(request, 1) == h("02  02 67  00  00  00")


RESPONSE_V1 = """
    00 00 00 00                    # ThrottleTimeMs
    02                             # Groups: 1
      02 67                        #   GroupId "g"
      02                           #   Topics: 1
        02 74                      #     TopicName "t"
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 09  # TopicId
        02                         #     Partitions: 1
          00 00 00 01              #       PartitionIndex
          00 00 00 00 00 00 00 07  #       StartOffset
          00 00 00 02              #       LeaderEpoch
          {lag}
          00 00  00                #       ErrorCode, ErrorMessage: null
          00                       #       tagged fields
        00                         #     topic's tagged fields
      00 00  00                    #   ErrorCode, ErrorMessage: null
      00                           #   group's tagged fields
    00                             # tagged fields
"""


@pytest.mark.parametrize(("version", "lag", "lag_hex"), [(0, -1, ""), (1, 3, "00 00 00 00 00 00 00 03")])
def test_response_golden(version: int, lag: int, lag_hex: str) -> None:
    partition = DescribeShareGroupOffsetsResponsePartition(partition_index=1, start_offset=7, leader_epoch=2, lag=lag)
    topic = DescribeShareGroupOffsetsResponseTopic(topic_name="t", topic_id=uuid.UUID(int=9), partitions=(partition,))
    response = DescribeShareGroupOffsetsResponse(
        groups=(DescribeShareGroupOffsetsResponseGroup(group_id="g", topics=(topic,)),)
    )
    body = h(RESPONSE_V1.replace("{lag}", lag_hex))
    assert encode(response, version) == body
    assert decode(DescribeShareGroupOffsetsResponse, body, version) == response


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests, label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(DescribeShareGroupOffsetsRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version), label="response")
    check_fuzzed_responses(DescribeShareGroupOffsetsRequest, version, data, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(
        DescribeShareGroupOffsetsRequest, version, data.draw(responses(version), label="response")
    )
