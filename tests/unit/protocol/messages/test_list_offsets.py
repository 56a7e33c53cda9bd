"""ListOffsets (API key 2), v1-9: aiokafka's independent encoders agree where theirs are right (requests v1-3,
responses v1-5), the flexible v6+ is pinned with bytes computed by hand from Kafka's JSON definitions, every version
round-trips, framed too, and fuzzed or cut answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import offset as ak_offset
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.constants import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
    ListOffsetsTopicResponse,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_request_matches_aiokafka,
    check_response_matches_aiokafka,
    check_round_trip,
    h,
    int8,
    int16,
    int32,
    int64,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(ListOffsetsRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[ListOffsetsRequest]:
    partition = st.builds(
        ListOffsetsPartition, partition_index=int32, timestamp=int64, current_leader_epoch=since(v, 4, int32, -1)
    )
    topic = st.builds(ListOffsetsTopic, name=text, partitions=tuples(partition))
    return st.builds(ListOffsetsRequest, topics=tuples(topic), isolation_level=since(v, 2, int8, 0), replica_id=int32)


@functools.cache
def responses(v: int) -> st.SearchStrategy[ListOffsetsResponse]:
    partition = st.builds(
        ListOffsetsPartitionResponse,
        partition_index=int32,
        error_code=int16,
        timestamp=int64,
        offset=int64,
        leader_epoch=since(v, 4, int32, -1),
    )
    topic = st.builds(ListOffsetsTopicResponse, name=text, partitions=tuples(partition))
    return st.builds(ListOffsetsResponse, topics=tuples(topic), throttle_time_ms=since(v, 2, int32, 0))


def test_the_request_class_declares_the_contract() -> None:
    assert (ListOffsetsRequest.API_KEY, ListOffsetsRequest.MIN_VERSION, ListOffsetsRequest.MAX_VERSION) == (2, 1, 9)
    assert ListOffsetsRequest.FLEXIBLE_FROM == 6
    assert ListOffsetsRequest.RESPONSE is ListOffsetsResponse


# --- aiokafka's independent encoders ----------------------------------------------------------------------------


def ak_request(req: ListOffsetsRequest, v: int) -> Any:
    cls = getattr(ak_offset, f"OffsetRequest_v{v}")
    topics = [(t.name, [(p.partition_index, p.timestamp) for p in t.partitions]) for t in req.topics]
    if v >= 2:
        return cls(req.replica_id, req.isolation_level, topics)
    return cls(req.replica_id, topics)


def ak_response(resp: ListOffsetsResponse, v: int) -> Any:
    cls = getattr(ak_offset, f"OffsetResponse_v{v}")
    topics = [
        (
            t.name,
            [
                (p.partition_index, p.error_code, p.timestamp, p.offset) + ((p.leader_epoch,) if v >= 4 else ())
                for p in t.partitions
            ],
        )
        for t in resp.topics
    ]
    if v >= 2:
        return cls(resp.throttle_time_ms, topics)
    return cls(topics)


# ListOffsets v4/v5 requests are left out: aiokafka's OffsetRequest_v4 declares CurrentLeaderEpoch as Int64,
# the JSON (and Kafka) say int32; its responses v4/v5 are right.
@pytest.mark.parametrize("version", range(1, 4))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    check_request_matches_aiokafka(ListOffsetsRequest, version, request, ak_request(request, version))


@pytest.mark.parametrize("version", range(1, 6))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(ListOffsetsRequest, version, response, ak_response(response, version))


# --- flexible versions: bytes computed by hand from the JSON definitions -----------------------------------------


def test_v6_to_v9_request_golden() -> None:
    expected = h(
        """
        ff ff ff ff                 # ReplicaId -1
        01                          # IsolationLevel READ_COMMITTED
        02                          # Topics: compact array of 1
          02 74                     #   Name "t"
          02                        #   Partitions: compact array of 1
            00 00 00 00             #     PartitionIndex 0
            00 00 00 03             #     CurrentLeaderEpoch 3
            ff ff ff ff ff ff ff fe #     Timestamp -2 (earliest)
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    partition = ListOffsetsPartition(partition_index=0, timestamp=EARLIEST_TIMESTAMP, current_leader_epoch=3)
    request = ListOffsetsRequest(
        topics=(ListOffsetsTopic(name="t", partitions=(partition,)),), isolation_level=1, replica_id=-1
    )
    for version in (6, 7, 8, 9):  # v7-9 only widen the accepted timestamps
        assert encode(request, version) == expected
        assert decode(ListOffsetsRequest, expected, version) == request


def test_v6_response_golden() -> None:
    expected = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        02                          # Topics: compact array of 1
          02 74                     #   Name "t"
          02                        #   Partitions: compact array of 1
            00 00 00 00             #     PartitionIndex 0
            00 00                   #     ErrorCode
            ff ff ff ff ff ff ff ff #     Timestamp -1
            00 00 00 00 00 00 00 2a #     Offset 42
            00 00 00 07             #     LeaderEpoch 7
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    partition = ListOffsetsPartitionResponse(
        partition_index=0, error_code=0, timestamp=LATEST_TIMESTAMP, offset=42, leader_epoch=7
    )
    response = ListOffsetsResponse(topics=(ListOffsetsTopicResponse(name="t", partitions=(partition,)),))
    for version in (6, 9):
        assert encode(response, version) == expected
        assert decode(ListOffsetsResponse, expected, version) == response


def test_the_isolation_level_needs_v2() -> None:
    """IsolationLevel is not ignorable: a v1 request cannot ask for committed reads (Kafka's writers refuse it)."""
    request = ListOffsetsRequest(replica_id=-1, isolation_level=1)
    assert encode(request, 2) == h("ff ff ff ff  01  00 00 00 00")
    with pytest.raises(ValueError, match="v2"):
        encode(request, 1)


# --- every version ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version), label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(ListOffsetsRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(ListOffsetsRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    partition = ListOffsetsPartitionResponse(partition_index=0, error_code=0, timestamp=1, offset=2)
    response = ListOffsetsResponse(topics=(ListOffsetsTopicResponse(name="t", partitions=(partition,)),))
    check_every_truncation_is_corrupt(ListOffsetsRequest, version, response)
