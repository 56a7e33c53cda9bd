"""ShareAcknowledge (API key 79, KIP-932), v1-2, flexible: bytes by hand from Kafka's JSON definitions, the fields v2
adds (IsRenewAck, not ignorable; AcquisitionLockTimeoutMs in the answer, ignorable), round trips at both versions,
and fuzzed or cut answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.share_acknowledge import (
    AcknowledgementBatch,
    AcknowledgePartition,
    AcknowledgeTopic,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeTopicResponse,
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
    int64,
    nullable_text,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(ShareAcknowledgeRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[ShareAcknowledgeRequest]:
    batch = st.builds(AcknowledgementBatch, first_offset=int64, last_offset=int64, acknowledge_types=tuples(int8))
    partition = st.builds(AcknowledgePartition, partition_index=int32, acknowledgement_batches=tuples(batch))
    return st.builds(
        ShareAcknowledgeRequest,
        group_id=nullable_text,
        member_id=nullable_text,
        share_session_epoch=int32,
        is_renew_ack=since(v, 2, st.booleans(), False),
        topics=tuples(st.builds(AcknowledgeTopic, topic_id=st.uuids(), partitions=tuples(partition))),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[ShareAcknowledgeResponse]:
    partition = st.builds(
        PartitionData,
        partition_index=int32,
        error_code=int16,
        error_message=nullable_text,
        current_leader=st.builds(LeaderIdAndEpoch, leader_id=int32, leader_epoch=int32),
    )
    return st.builds(
        ShareAcknowledgeResponse,
        throttle_time_ms=int32,
        error_code=int16,
        error_message=nullable_text,
        acquisition_lock_timeout_ms=since(v, 2, int32, 0),
        responses=tuples(st.builds(ShareAcknowledgeTopicResponse, topic_id=st.uuids(), partitions=tuples(partition))),
        node_endpoints=tuples(st.builds(NodeEndpoint, node_id=int32, host=text, port=int32, rack=nullable_text)),
    )


def test_the_request_class_declares_the_contract() -> None:
    request = ShareAcknowledgeRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (79, 1, 2, 0)
    assert request.RESPONSE is ShareAcknowledgeResponse


def test_request_golden() -> None:
    batch = AcknowledgementBatch(first_offset=5, last_offset=6, acknowledge_types=(1,))
    request = ShareAcknowledgeRequest(
        group_id="g",
        member_id="m",
        share_session_epoch=1,
        topics=(
            AcknowledgeTopic(
                topic_id=uuid.UUID(int=4),
                partitions=(AcknowledgePartition(partition_index=0, acknowledgement_batches=(batch,)),),
            ),
        ),
    )
    v1 = h(
        """
        02 67  02 6d  00 00 00 01   # GroupId "g", MemberId "m", ShareSessionEpoch 1
        02                          # Topics: 1
          00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 04  # TopicId
          02 00 00 00 00            #   Partitions: 1, PartitionIndex 0
            02                      #     AcknowledgementBatches: 1
              00 00 00 00 00 00 00 05  00 00 00 00 00 00 00 06  # FirstOffset 5, LastOffset 6
              02 01                 #       AcknowledgeTypes [1] (accept)
              00                    #       tagged fields
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    assert encode(request, 1) == v1
    assert decode(ShareAcknowledgeRequest, v1, 1) == request
    v2 = v1[:8] + b"\x00" + v1[8:]  # IsRenewAck false, after the epoch
    assert encode(request, 2) == v2
    with pytest.raises(ValueError, match="is_renew_ack needs v2"):
        encode(ShareAcknowledgeRequest(is_renew_ack=True), 1)


def test_the_lock_timeout_is_answered_from_v2() -> None:
    response = ShareAcknowledgeResponse(acquisition_lock_timeout_ms=30_000)
    assert encode(response, 2) == h("00 00 00 00  00 00  00  00 00 75 30  01  01  00")
    assert encode(response, 1) == h("00 00 00 00  00 00  00  01  01  00")  # ignorable: left out


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(ShareAcknowledgeRequest, version, data.draw(requests(version)), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(ShareAcknowledgeRequest, version, data, data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(ShareAcknowledgeRequest, version, data.draw(responses(version)))
