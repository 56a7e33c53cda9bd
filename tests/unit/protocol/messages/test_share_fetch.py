"""ShareFetch (API key 78, KIP-932), v1-2, flexible: bytes by hand from Kafka's JSON definitions, records as views of
the response (non-nullable here, unlike Fetch's), IsRenewAck (v2, not ignorable) refused at v1, round trips at both
versions, and fuzzed or cut answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol import base
from asyncconsumer.protocol.messages.share_fetch import (
    AcknowledgementBatch,
    AcquiredRecords,
    FetchPartition,
    FetchTopic,
    ForgottenTopic,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
    ShareFetchableTopicResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    blob,
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

VERSIONS = versions(ShareFetchRequest)
TOPIC_ID = uuid.UUID(int=7)


@functools.cache
def requests(v: int) -> st.SearchStrategy[ShareFetchRequest]:
    batch = st.builds(AcknowledgementBatch, first_offset=int64, last_offset=int64, acknowledge_types=tuples(int8))
    partition = st.builds(FetchPartition, partition_index=int32, acknowledgement_batches=tuples(batch))
    return st.builds(
        ShareFetchRequest,
        group_id=nullable_text,
        member_id=nullable_text,
        share_session_epoch=int32,
        max_wait_ms=int32,
        min_bytes=int32,
        max_bytes=int32,
        max_records=int32,
        batch_size=int32,
        share_acquire_mode=since(v, 2, int8, 0),
        is_renew_ack=since(v, 2, st.booleans(), False),
        topics=tuples(st.builds(FetchTopic, topic_id=st.uuids(), partitions=tuples(partition))),
        forgotten_topics_data=tuples(st.builds(ForgottenTopic, topic_id=st.uuids(), partitions=tuples(int32))),
    )


partitions = st.builds(
    PartitionData,
    partition_index=int32,
    error_code=int16,
    error_message=nullable_text,
    acknowledge_error_code=int16,
    acknowledge_error_message=nullable_text,
    current_leader=st.builds(LeaderIdAndEpoch, leader_id=int32, leader_epoch=int32),
    records=blob.map(memoryview),
    acquired_records=tuples(st.builds(AcquiredRecords, first_offset=int64, last_offset=int64, delivery_count=int16)),
)
responses = st.builds(
    ShareFetchResponse,
    throttle_time_ms=int32,
    error_code=int16,
    error_message=nullable_text,
    acquisition_lock_timeout_ms=int32,
    responses=tuples(st.builds(ShareFetchableTopicResponse, topic_id=st.uuids(), partitions=tuples(partitions))),
    node_endpoints=tuples(st.builds(NodeEndpoint, node_id=int32, host=text, port=int32, rack=nullable_text)),
)

PARTITION = PartitionData(
    partition_index=0,
    current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=2),
    records=memoryview(b"abc"),
    acquired_records=(AcquiredRecords(first_offset=0, last_offset=2, delivery_count=1),),
)
RESPONSE = ShareFetchResponse(
    acquisition_lock_timeout_ms=30_000,
    responses=(ShareFetchableTopicResponse(topic_id=TOPIC_ID, partitions=(PARTITION,)),),
)
RESPONSE_BYTES = h(
    """
    00 00 00 00  00 00  00          # ThrottleTimeMs, ErrorCode, ErrorMessage: null
    00 00 75 30                     # AcquisitionLockTimeoutMs 30000
    02                              # Responses: 1
      00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 07  # TopicId
      02                            #   Partitions: 1
        00 00 00 00  00 00  00      #     PartitionIndex, ErrorCode, ErrorMessage: null
        00 00  00                   #     AcknowledgeErrorCode, AcknowledgeErrorMessage: null
        00 00 00 01  00 00 00 02  00  #   CurrentLeader {1, 2}, its tagged fields
        04 61 62 63                 #     Records "abc"
        02                          #     AcquiredRecords: 1
          00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 02  00 01  00   # 0..2, delivered once, tags
        00                          #     tagged fields
      00                            #   tagged fields
    01                              # NodeEndpoints: none
    00                              # tagged fields
    """
)


def test_the_request_class_declares_the_contract() -> None:
    request = ShareFetchRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (78, 1, 2, 0)
    assert request.RESPONSE is ShareFetchResponse


def test_response_golden_at_both_versions() -> None:
    for version in VERSIONS:
        assert encode(RESPONSE, version) == RESPONSE_BYTES
        assert decode(ShareFetchResponse, RESPONSE_BYTES, version) == RESPONSE


def test_records_are_views_of_the_frame() -> None:
    frame = base.encode_response(RESPONSE, ShareFetchRequest, 2, 1)[4:]
    decoded = base.decode_response(frame, ShareFetchRequest, 2)
    assert isinstance(decoded, ShareFetchResponse)
    records = decoded.responses[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is frame and bytes(records) == b"abc"
    with pytest.raises(Exception, match="null where non-nullable bytes"):
        decode(ShareFetchResponse, RESPONSE_BYTES.replace(h("04 61 62 63"), h("00")), 2)


def test_a_renewing_acknowledgement_needs_v2() -> None:
    request = ShareFetchRequest(group_id="g", member_id="m", is_renew_ack=True)
    assert decode(ShareFetchRequest, encode(request, 2), 2) == request
    with pytest.raises(ValueError, match="is_renew_ack needs v2"):
        encode(request, 1)
    assert encode(ShareFetchRequest(share_acquire_mode=1), 1) == encode(ShareFetchRequest(), 1)  # ignorable


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(ShareFetchRequest, version, data.draw(requests(version)), data.draw(responses))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(ShareFetchRequest, version, data, data.draw(responses, label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    check_every_truncation_is_corrupt(ShareFetchRequest, version, RESPONSE)
