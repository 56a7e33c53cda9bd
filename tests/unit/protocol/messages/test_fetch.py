"""Fetch (API key 1), v4-12, the hot path: aiokafka's independent encoders agree for v4-11, the flexible v12 is pinned
with bytes computed by hand from Kafka's JSON definitions, record sets are views of the response (no copy), every
version round-trips, framed too, and fuzzed or cut answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import fetch as ak_fetch
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
    LeaderIdAndEpoch,
    PartitionData,
    SnapshotId,
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

VERSIONS = versions(FetchRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[FetchRequest]:
    partition = st.builds(
        FetchPartition,
        partition=int32,
        fetch_offset=int64,
        partition_max_bytes=int32,
        current_leader_epoch=since(v, 9, int32, -1),
        last_fetched_epoch=since(v, 12, int32, -1),
        log_start_offset=since(v, 5, int64, -1),
    )
    topic = st.builds(FetchTopic, topic=text, partitions=tuples(partition))
    forgotten = st.builds(ForgottenTopic, topic=text, partitions=tuples(int32))
    return st.builds(
        FetchRequest,
        max_wait_ms=int32,
        min_bytes=int32,
        max_bytes=int32,
        topics=tuples(topic),
        isolation_level=int8,
        session_id=since(v, 7, int32, 0),
        session_epoch=since(v, 7, int32, -1),
        forgotten_topics_data=since(v, 7, tuples(forgotten), ()),
        rack_id=since(v, 11, text, ""),
        replica_id=int32,
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[FetchResponse]:
    partition = st.builds(
        PartitionData,
        partition_index=int32,
        error_code=int16,
        high_watermark=int64,
        last_stable_offset=int64,
        log_start_offset=since(v, 5, int64, -1),
        aborted_transactions=st.none() | tuples(st.builds(AbortedTransaction, producer_id=int64, first_offset=int64)),
        preferred_read_replica=since(v, 11, int32, -1),
        records=st.none() | st.binary(max_size=24),
        current_leader=since(v, 12, st.none() | st.builds(LeaderIdAndEpoch, leader_id=int32, leader_epoch=int32), None),
    )
    topic = st.builds(FetchableTopicResponse, topic=text, partitions=tuples(partition))
    return st.builds(
        FetchResponse,
        responses=tuples(topic),
        throttle_time_ms=int32,
        error_code=since(v, 7, int16, 0),
        session_id=since(v, 7, int32, 0),
    )


def test_the_request_class_declares_the_contract() -> None:
    assert (FetchRequest.API_KEY, FetchRequest.MIN_VERSION, FetchRequest.MAX_VERSION) == (1, 4, 12)
    assert FetchRequest.FLEXIBLE_FROM == 12
    assert FetchRequest.RESPONSE is FetchResponse


# --- aiokafka's independent encoders (v4-11) --------------------------------------------------------------------


def ak_request(req: FetchRequest, v: int) -> Any:
    cls = getattr(ak_fetch, f"FetchRequest_v{v}")

    def partition(p: FetchPartition) -> tuple[int, ...]:
        if v >= 9:
            return (p.partition, p.current_leader_epoch, p.fetch_offset, p.log_start_offset, p.partition_max_bytes)
        if v >= 5:
            return (p.partition, p.fetch_offset, p.log_start_offset, p.partition_max_bytes)
        return (p.partition, p.fetch_offset, p.partition_max_bytes)

    topics = [(t.topic, [partition(p) for p in t.partitions]) for t in req.topics]
    fields: list[Any] = [req.replica_id, req.max_wait_ms, req.min_bytes, req.max_bytes, req.isolation_level]
    if v >= 7:
        fields += [req.session_id, req.session_epoch]
    fields.append(topics)
    if v >= 7:
        fields.append([(f.topic, list(f.partitions)) for f in req.forgotten_topics_data])
    if v >= 11:
        fields.append(req.rack_id)
    return cls(*fields)


def ak_response(resp: FetchResponse, v: int) -> Any:
    cls = getattr(ak_fetch, f"FetchResponse_v{v}")

    def partition(p: PartitionData) -> tuple[Any, ...]:
        aborted = (
            None
            if p.aborted_transactions is None
            else [(a.producer_id, a.first_offset) for a in p.aborted_transactions]
        )
        fields: list[Any] = [p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset]
        if v >= 5:
            fields.append(p.log_start_offset)
        fields.append(aborted)
        if v >= 11:
            fields.append(p.preferred_read_replica)
        fields.append(None if p.records is None else bytes(p.records))
        return tuple(fields)

    topics = [(t.topic, [partition(p) for p in t.partitions]) for t in resp.responses]
    if v >= 7:
        return cls(resp.throttle_time_ms, resp.error_code, resp.session_id, topics)
    return cls(resp.throttle_time_ms, topics)


@pytest.mark.parametrize("version", range(4, 12))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    check_request_matches_aiokafka(FetchRequest, version, request, ak_request(request, version))


@pytest.mark.parametrize("version", range(4, 12))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(FetchRequest, version, response, ak_response(response, version))


def test_aiokafka_cross_check_covers_a_concrete_response() -> None:
    """A readable instance of the generated check: aiokafka's own FetchResponse_v11 decoded by us."""
    theirs = ak_fetch.FetchResponse_v11(5, 0, 123, [("topic", [(2, 0, 100, 90, 10, [(1000, 80)], 3, b"\x00records")])])
    ours = decode(FetchResponse, theirs.encode(), 11)
    assert ours == FetchResponse(
        responses=(
            FetchableTopicResponse(
                topic="topic",
                partitions=(
                    PartitionData(
                        partition_index=2,
                        error_code=0,
                        high_watermark=100,
                        last_stable_offset=90,
                        log_start_offset=10,
                        aborted_transactions=(AbortedTransaction(producer_id=1000, first_offset=80),),
                        preferred_read_replica=3,
                        records=b"\x00records",
                    ),
                ),
            ),
        ),
        throttle_time_ms=5,
        error_code=0,
        session_id=123,
    )


def test_v12_request_golden() -> None:
    expected = h(
        """
        ff ff ff ff                 # ReplicaId -1 (consumer); no ClusterId tag
        00 00 01 f4                 # MaxWaitMs 500
        00 00 00 01                 # MinBytes 1
        03 20 00 00                 # MaxBytes 52428800
        01                          # IsolationLevel READ_COMMITTED
        00 00 00 00                 # SessionId 0
        ff ff ff ff                 # SessionEpoch -1
        02                          # Topics: compact array of 1
          02 74                     #   Topic "t"
          02                        #   Partitions: compact array of 1
            00 00 00 00             #     Partition 0
            00 00 00 03             #     CurrentLeaderEpoch 3
            00 00 00 00 00 00 00 64 #     FetchOffset 100
            00 00 00 02             #     LastFetchedEpoch 2
            ff ff ff ff ff ff ff ff #     LogStartOffset -1
            00 10 00 00             #     PartitionMaxBytes 1 MiB
            00                      #     tagged fields
          00                        #   tagged fields
        02                          # ForgottenTopicsData: compact array of 1
          02 75                     #   Topic "u"
          03 00 00 00 01 00 00 00 02 #  Partitions [1, 2]
          00                        #   tagged fields
        02 72                       # RackId "r"
        00                          # tagged fields
        """
    )
    request = FetchRequest(
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        topics=(
            FetchTopic(
                topic="t",
                partitions=(
                    FetchPartition(
                        partition=0,
                        fetch_offset=100,
                        partition_max_bytes=1048576,
                        current_leader_epoch=3,
                        last_fetched_epoch=2,
                    ),
                ),
            ),
        ),
        isolation_level=1,
        forgotten_topics_data=(ForgottenTopic(topic="u", partitions=(1, 2)),),
        rack_id="r",
    )
    assert encode(request, 12) == expected
    assert decode(FetchRequest, expected, 12) == request


FETCH_V12_RESPONSE = h(
    """
    00 00 00 00                     # ThrottleTimeMs
    00 00                           # ErrorCode
    00 00 00 09                     # SessionId 9
    02                              # Responses: compact array of 1
      02 74                         #   Topic "t"
      02                            #   Partitions: compact array of 1
        00 00 00 00                 #     PartitionIndex 0
        00 00                       #     ErrorCode
        00 00 00 00 00 00 00 0a     #     HighWatermark 10
        00 00 00 00 00 00 00 0a     #     LastStableOffset 10
        00 00 00 00 00 00 00 00     #     LogStartOffset 0
        02                          #     AbortedTransactions: compact array of 1
          00 00 00 00 00 00 00 07   #       ProducerId 7
          00 00 00 00 00 00 00 03   #       FirstOffset 3
          00                        #       tagged fields
        ff ff ff ff                 #     PreferredReadReplica -1
        04 61 62 63                 #     Records: compact bytes, 3 + 1, "abc"
        01                          #     tagged fields: 1
          01 09                     #       tag 1 (CurrentLeader), 9 bytes:
            00 00 00 01             #         LeaderId 1
            00 00 00 05             #         LeaderEpoch 5
            00                      #         tagged fields
      00                            #   tagged fields
    00                              # tagged fields
    """
)


FETCH_V12_RESPONSE_VALUE = FetchResponse(
    responses=(
        FetchableTopicResponse(
            topic="t",
            partitions=(
                PartitionData(
                    partition_index=0,
                    error_code=0,
                    high_watermark=10,
                    last_stable_offset=10,
                    log_start_offset=0,
                    aborted_transactions=(AbortedTransaction(producer_id=7, first_offset=3),),
                    records=b"abc",
                    current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=5),
                ),
            ),
        ),
    ),
    session_id=9,
)


def test_v12_response_golden() -> None:
    assert encode(FETCH_V12_RESPONSE_VALUE, 12) == FETCH_V12_RESPONSE
    assert decode(FetchResponse, FETCH_V12_RESPONSE, 12) == FETCH_V12_RESPONSE_VALUE


def test_v12_response_reads_its_tagged_fields() -> None:
    data = h(
        """
        00 00 00 00  00 00  00 00 00 00   # throttle, error, session
        02 02 74 02                       # one topic "t", one partition
          00 00 00 01  00 00              #   partition 1, no error
          00 00 00 00 00 00 00 05         #   HighWatermark 5
          ff ff ff ff ff ff ff ff         #   LastStableOffset -1
          ff ff ff ff ff ff ff ff         #   LogStartOffset -1
          00                              #   AbortedTransactions: null
          00 00 00 02                     #   PreferredReadReplica 2
          00                              #   Records: null
          03                              #   tagged fields: 3
            00 0d                         #     tag 0 DivergingEpoch, 13 bytes
              00 00 00 04 00 00 00 00 00 00 00 09 00
            01 09                         #     tag 1 CurrentLeader, 9 bytes
              00 00 00 02 00 00 00 06 00
            02 0d                         #     tag 2 SnapshotId, 13 bytes
              00 00 00 00 00 00 00 08 00 00 00 03 00
          00                              #   topic tagged fields
        00                                # tagged fields
        """
    )
    assert decode(FetchResponse, data, 12) == FetchResponse(
        responses=(
            FetchableTopicResponse(
                topic="t",
                partitions=(
                    PartitionData(
                        partition_index=1,
                        error_code=0,
                        high_watermark=5,
                        preferred_read_replica=2,
                        current_leader=LeaderIdAndEpoch(leader_id=2, leader_epoch=6),
                        diverging_epoch=EpochEndOffset(epoch=4, end_offset=9),
                        snapshot_id=SnapshotId(end_offset=8, epoch=3),
                    ),
                ),
            ),
        )
    )


@pytest.mark.parametrize("version", [4, 11, 12])
def test_records_are_views_of_the_frame(version: int) -> None:
    response = FetchResponse(
        responses=(
            FetchableTopicResponse(
                topic="t",
                partitions=(PartitionData(partition_index=0, error_code=0, high_watermark=10, records=b"batch-bytes"),),
            ),
        )
    )
    frame = base.encode_response(response, FetchRequest, version, 9)[4:]
    decoded = base.decode_response(frame, FetchRequest, version)
    assert isinstance(decoded, FetchResponse)
    records = decoded.responses[0].partitions[0].records
    assert isinstance(records, memoryview)
    assert records.obj is frame
    assert bytes(records) == b"batch-bytes"
    assert decoded == response


def test_records_equality_and_hash_compare_content() -> None:
    a = PartitionData(partition_index=0, error_code=0, high_watermark=0, records=memoryview(b"xyz"))
    b = PartitionData(partition_index=0, error_code=0, high_watermark=0, records=b"xyz")
    assert a == b
    assert hash(a) == hash(b)
    assert a != PartitionData(partition_index=0, error_code=0, high_watermark=0, records=b"xy")
    assert a != PartitionData(partition_index=0, error_code=0, high_watermark=0, records=None)


def test_v12_response_skips_unknown_partition_tags() -> None:
    """Tags the JSON does not define for the version (here 5, and a tagged field in the topic) are skipped."""
    data = h(
        """
        00 00 00 00  00 00  00 00 00 00   # throttle, error, session
        02 02 74 02                       # one topic "t", one partition
          00 00 00 01  00 00              #   partition 1, no error
          00 00 00 00 00 00 00 05         #   HighWatermark 5
          ff ff ff ff ff ff ff ff         #   LastStableOffset -1
          ff ff ff ff ff ff ff ff         #   LogStartOffset -1
          00                              #   AbortedTransactions: null
          00 00 00 02                     #   PreferredReadReplica 2
          00                              #   Records: null
          02                              #   tagged fields: 2
            05 03 01 02 03                #     tag 5 (unknown), 3 bytes
            01 09                         #     tag 1 CurrentLeader, 9 bytes
              00 00 00 02 00 00 00 06 00
          01 07 01 ff                     #   topic tagged fields: tag 7 (unknown), 1 byte
        00                                # tagged fields
        """
    )
    partition = PartitionData(
        partition_index=1,
        high_watermark=5,
        preferred_read_replica=2,
        current_leader=LeaderIdAndEpoch(leader_id=2, leader_epoch=6),
    )
    assert decode(FetchResponse, data, 12) == FetchResponse(
        responses=(FetchableTopicResponse(topic="t", partitions=(partition,)),)
    )


def test_a_tagged_field_read_past_its_size_is_corrupt() -> None:
    body = encode(PartitionData(current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=5)), 12)
    assert body.endswith(h("01  01 09 00 00 00 01 00 00 00 05 00"))
    shrunk = body[:-10] + b"\x04" + body[-9:]  # the tag claims 4 bytes; its struct reads 9
    with pytest.raises(CorruptResponseError, match="past its end"):
        decode(PartitionData, shrunk, 12)


def test_a_request_refuses_what_its_version_cannot_carry() -> None:
    """LastFetchedEpoch (v12+) and ForgottenTopicsData (v7+) are not ignorable: Kafka's writers refuse to drop them."""
    partition = FetchPartition(partition=0, fetch_offset=1, partition_max_bytes=2, last_fetched_epoch=3)
    request = FetchRequest(topics=(FetchTopic(topic="t", partitions=(partition,)),))
    assert decode(FetchRequest, encode(request, 12), 12) == request
    with pytest.raises(ValueError, match="last_fetched_epoch needs v12"):
        encode(request, 11)
    forgetting = FetchRequest(forgotten_topics_data=(ForgottenTopic(topic="t", partitions=(0,)),))
    assert decode(FetchRequest, encode(forgetting, 7), 7) == forgetting
    with pytest.raises(ValueError, match="forgotten_topics_data needs v7"):
        encode(forgetting, 6)
    assert encode(FetchRequest(rack_id="r"), 10) == encode(FetchRequest(), 10)  # RackId is ignorable: dropped


def test_the_partition_head_is_one_struct_per_layout() -> None:
    """The fixed-width head of a partition answer reads the same whether a version has LogStartOffset or not."""
    v4 = PartitionData(partition_index=1, error_code=2, high_watermark=3, last_stable_offset=4)
    assert encode(v4, 4)[:22] == h("00 00 00 01  00 02  00 00 00 00 00 00 00 03  00 00 00 00 00 00 00 04")
    assert decode(PartitionData, encode(v4, 4), 4) == v4
    v5 = PartitionData(partition_index=1, error_code=2, high_watermark=3, last_stable_offset=4, log_start_offset=5)
    assert encode(v5, 5)[22:30] == h("00 00 00 00 00 00 00 05")
    assert decode(PartitionData, encode(v5, 5), 5) == v5


# --- every version ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version), label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(FetchRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(FetchRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    check_every_truncation_is_corrupt(FetchRequest, version, FETCH_V12_RESPONSE_VALUE)
