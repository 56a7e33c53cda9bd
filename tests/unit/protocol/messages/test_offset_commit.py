"""OffsetCommit (API key 8), v2-9: aiokafka's independent encoders agree for v2-3, the flexible v8-9 are pinned with
bytes computed by hand from Kafka's JSON definitions, every version round-trips, framed too, and fuzzed or cut
answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import commit as ak_commit
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_request_matches_aiokafka,
    check_response_matches_aiokafka,
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

VERSIONS = versions(OffsetCommitRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[OffsetCommitRequest]:
    partition = st.builds(
        OffsetCommitRequestPartition,
        partition_index=int32,
        committed_offset=int64,
        committed_leader_epoch=since(v, 6, int32, -1),
        committed_metadata=nullable_text,
    )
    topic = st.builds(OffsetCommitRequestTopic, name=text, partitions=tuples(partition))
    return st.builds(
        OffsetCommitRequest,
        group_id=text,
        generation_id_or_member_epoch=int32,
        member_id=text,
        topics=tuples(topic),
        group_instance_id=since(v, 7, nullable_text, None),
        retention_time_ms=int64 if v <= 4 else st.just(-1),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[OffsetCommitResponse]:
    partition = st.builds(OffsetCommitResponsePartition, partition_index=int32, error_code=int16)
    topic = st.builds(OffsetCommitResponseTopic, name=text, partitions=tuples(partition))
    return st.builds(OffsetCommitResponse, topics=tuples(topic), throttle_time_ms=since(v, 3, int32, 0))


def test_the_request_class_declares_the_contract() -> None:
    request = OffsetCommitRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (8, 2, 9, 8)
    assert request.RESPONSE is OffsetCommitResponse


def ak_request(req: OffsetCommitRequest, v: int) -> Any:
    topics = [
        (t.name, [(p.partition_index, p.committed_offset, p.committed_metadata) for p in t.partitions])
        for t in req.topics
    ]
    return getattr(ak_commit, f"OffsetCommitRequest_v{v}")(
        req.group_id, req.generation_id_or_member_epoch, req.member_id, req.retention_time_ms, topics
    )


def ak_response(resp: OffsetCommitResponse, v: int) -> Any:
    topics = [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in resp.topics]
    cls = getattr(ak_commit, f"OffsetCommitResponse_v{v}")
    return cls(resp.throttle_time_ms, topics) if v >= 3 else cls(topics)


@pytest.mark.parametrize("version", [2, 3])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    check_request_matches_aiokafka(OffsetCommitRequest, version, request, ak_request(request, version))


@pytest.mark.parametrize("version", [2, 3])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(OffsetCommitRequest, version, response, ak_response(response, version))


def test_v8_v9_golden() -> None:
    request = h(
        """
        02 67                       # GroupId "g"
        00 00 00 03                 # GenerationIdOrMemberEpoch 3
        03 6d 31                    # MemberId "m1"
        00                          # GroupInstanceId: null (no RetentionTimeMs after v4)
        02                          # Topics: compact array of 1
          02 74                     #   Name "t"
          02                        #   Partitions: compact array of 1
            00 00 00 00             #     PartitionIndex 0
            00 00 00 00 00 00 00 2a #     CommittedOffset 42
            00 00 00 05             #     CommittedLeaderEpoch 5
            01                      #     CommittedMetadata ""
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    partition = OffsetCommitRequestPartition(partition_index=0, committed_offset=42, committed_leader_epoch=5)
    value = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=3,
        member_id="m1",
        topics=(OffsetCommitRequestTopic(name="t", partitions=(partition,)),),
    )
    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        02                          # Topics: compact array of 1
          02 74                     #   Name "t"
          02                        #   Partitions: compact array of 1
            00 00 00 00             #     PartitionIndex 0
            00 00                   #     ErrorCode
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    partition_r = OffsetCommitResponsePartition(partition_index=0, error_code=0)
    value_r = OffsetCommitResponse(topics=(OffsetCommitResponseTopic(name="t", partitions=(partition_r,)),))
    for version in (8, 9):  # v9 only changes what GenerationIdOrMemberEpoch may mean
        assert encode(value, version) == request
        assert decode(OffsetCommitRequest, request, version) == value
        assert encode(value_r, version) == response
        assert decode(OffsetCommitResponse, response, version) == value_r


def test_retention_is_ignorable_and_sent_by_v2_to_v4_only() -> None:
    value = OffsetCommitRequest(group_id="g", member_id="m", retention_time_ms=1000)
    assert encode(value, 4)[-12:] == h("00 00 00 00 00 00 03 e8  00 00 00 00")  # RetentionTimeMs, then no topics
    assert encode(value, 5) == encode(OffsetCommitRequest(group_id="g", member_id="m"), 5)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(OffsetCommitRequest, version, data.draw(requests(version)), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(OffsetCommitRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    partition = OffsetCommitResponsePartition(partition_index=0, error_code=0)
    response = OffsetCommitResponse(topics=(OffsetCommitResponseTopic(name="t", partitions=(partition,)),))
    check_every_truncation_is_corrupt(OffsetCommitRequest, version, response)
