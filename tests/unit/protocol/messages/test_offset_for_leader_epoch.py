"""OffsetForLeaderEpoch (API key 23), v2-4: what a consumer asks after a leader change (KIP-320). Bytes computed by
hand from Kafka's JSON definitions for v3 and the flexible v4; every version round-trips, framed too, and fuzzed or
cut answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetForLeaderTopicResult,
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
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(OffsetForLeaderEpochRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[OffsetForLeaderEpochRequest]:
    partition = st.builds(OffsetForLeaderPartition, partition=int32, current_leader_epoch=int32, leader_epoch=int32)
    topic = st.builds(OffsetForLeaderTopic, topic=text, partitions=tuples(partition))
    return st.builds(OffsetForLeaderEpochRequest, replica_id=since(v, 3, int32, -2), topics=tuples(topic))


responses = st.builds(
    OffsetForLeaderEpochResponse,
    throttle_time_ms=int32,
    topics=tuples(
        st.builds(
            OffsetForLeaderTopicResult,
            topic=text,
            partitions=tuples(
                st.builds(EpochEndOffset, error_code=int16, partition=int32, leader_epoch=int32, end_offset=int64)
            ),
        )
    ),
)


def test_the_request_class_declares_the_contract() -> None:
    request = OffsetForLeaderEpochRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (23, 2, 4, 4)
    assert request.RESPONSE is OffsetForLeaderEpochResponse


def test_a_consumer_sends_its_replica_id_from_v3() -> None:
    """ReplicaId (v3+) is ignorable: v2 leaves it out, whatever it holds."""
    request = OffsetForLeaderEpochRequest(replica_id=-1)
    assert encode(request, 3) == h("ff ff ff ff  00 00 00 00")
    assert encode(request, 2) == h("00 00 00 00")


def test_v4_request_golden() -> None:
    expected = h(
        """
        ff ff ff ff                 # ReplicaId -1 (a consumer)
        02                          # Topics: compact array of 1
          02 74                     #   Topic "t"
          02                        #   Partitions: compact array of 1
            00 00 00 02             #     Partition 2
            00 00 00 07             #     CurrentLeaderEpoch 7
            00 00 00 05             #     LeaderEpoch 5
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    request = OffsetForLeaderEpochRequest(
        topics=(
            OffsetForLeaderTopic(
                topic="t", partitions=(OffsetForLeaderPartition(partition=2, leader_epoch=5, current_leader_epoch=7),)
            ),
        ),
        replica_id=-1,
    )
    assert encode(request, 4) == expected
    assert decode(OffsetForLeaderEpochRequest, expected, 4) == request


def test_v3_response_golden() -> None:
    expected = h(
        """
        00 00 00 00                 # ThrottleTimeMs 0
        00 00 00 01                 # Topics: array of 1
          00 01 74                  #   Topic "t"
          00 00 00 01               #   Partitions: array of 1
            00 00                   #     ErrorCode NONE
            00 00 00 02             #     Partition 2
            00 00 00 05             #     LeaderEpoch 5
            00 00 00 00 00 00 00 64 #     EndOffset 100
        """
    )
    response = OffsetForLeaderEpochResponse(
        topics=(
            OffsetForLeaderTopicResult(
                topic="t", partitions=(EpochEndOffset(error_code=0, partition=2, leader_epoch=5, end_offset=100),)
            ),
        )
    )
    assert decode(OffsetForLeaderEpochResponse, expected, 3) == response
    assert encode(response, 3) == expected


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(OffsetForLeaderEpochRequest, version, data.draw(requests(version)), data.draw(responses))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(OffsetForLeaderEpochRequest, version, data, data.draw(responses, label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    partitions = (EpochEndOffset(error_code=0, partition=2, leader_epoch=5, end_offset=100),)
    response = OffsetForLeaderEpochResponse(topics=(OffsetForLeaderTopicResult(topic="t", partitions=partitions),))
    check_every_truncation_is_corrupt(OffsetForLeaderEpochRequest, version, response)
