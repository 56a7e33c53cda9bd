"""Protocol messages: golden bytes, cross-checks against aiokafka's encoders, round-trips and fuzzing.

aiokafka ships independent (non-flexible) encoders for Metadata v0-5, Fetch v0-11, ListOffsets v0-5 and
ApiVersions v0-2; for every version both sides implement, hypothesis-generated messages must encode to the very
same bytes and decode back from aiokafka's bytes. Flexible versions are pinned with bytes computed by hand from
Kafka's JSON message definitions.
"""

from __future__ import annotations

import contextlib
import functools
import struct
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka.protocol import admin as ak_admin
from aiokafka.protocol import fetch as ak_fetch
from aiokafka.protocol import metadata as ak_metadata
from aiokafka.protocol import offset as ak_offset
from aiokafka.protocol.api import RequestHeader_v1
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.api_versions import ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse
from asyncconsumer.protocol.fetch import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
    LeaderIdAndEpoch,
)
from asyncconsumer.protocol.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
    ListOffsetsTopicResponse,
)
from asyncconsumer.protocol.metadata import (
    MetadataBroker,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
)
from asyncconsumer.protocol.offsets_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetForLeaderTopicResult,
)
from asyncconsumer.protocol.wire import ZERO_UUID
from tests.support.codec import decode, encode

REQUEST_TYPES: dict[int, type[base.Request]] = {
    int(t.API_KEY): t for t in (ApiVersionsRequest, MetadataRequest, ListOffsetsRequest, FetchRequest)
}
NO_AUTH_OPS = -2147483648


def versions(request_type: type[base.Request]) -> list[int]:
    return list(range(request_type.MIN_VERSION, request_type.MAX_VERSION + 1))


def h(text: str) -> bytes:
    """Hex with spaces, newlines and ``#`` comments allowed."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


# --- strategies: one per message and version, fields outside the version left at their defaults -------------

int8 = st.integers(-(2**7), 2**7 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
text = st.text(max_size=8)
nullable_text = st.none() | text


def tuples(element: st.SearchStrategy[Any], max_size: int = 3) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.lists(element, max_size=max_size).map(tuple)


def since(version: int, first: int, strategy: st.SearchStrategy[Any], default: Any) -> st.SearchStrategy[Any]:
    return strategy if version >= first else st.just(default)


@functools.cache
def api_versions_request(v: int) -> st.SearchStrategy[ApiVersionsRequest]:
    if v < 3:
        return st.just(ApiVersionsRequest())
    return st.builds(ApiVersionsRequest, text, text)


@functools.cache
def api_versions_response(v: int) -> st.SearchStrategy[ApiVersionsResponse]:
    return st.builds(
        ApiVersionsResponse,
        int16,
        tuples(st.builds(ApiVersionRange, int16, int16, int16), 4),
        since(v, 1, int32, 0),
    )


@functools.cache
def metadata_request(v: int) -> st.SearchStrategy[MetadataRequest]:
    return st.builds(
        MetadataRequest,
        st.none() | tuples(text),
        since(v, 4, st.booleans(), False),
        since(v, 8, st.booleans(), False),
    )


@functools.cache
def metadata_response(v: int) -> st.SearchStrategy[MetadataResponse]:
    broker = st.builds(MetadataBroker, int32, text, int32, since(v, 1, nullable_text, None))
    partition = st.builds(
        MetadataPartition,
        int16,
        int32,
        int32,
        since(v, 7, int32, -1),
        tuples(int32),
        tuples(int32),
        since(v, 5, tuples(int32), ()),
    )
    topic = st.builds(
        MetadataTopic,
        int16,
        nullable_text if v >= 12 else text,
        tuples(partition, 2),
        since(v, 10, st.uuids(), ZERO_UUID),
        since(v, 1, st.booleans(), False),
        since(v, 8, int32, NO_AUTH_OPS),
    )
    return st.builds(
        MetadataResponse,
        tuples(broker),
        tuples(topic, 2),
        since(v, 2, nullable_text, None),
        since(v, 1, int32, -1),
        since(v, 3, int32, 0),
        int32 if 8 <= v <= 10 else st.just(NO_AUTH_OPS),
    )


@functools.cache
def list_offsets_request(v: int) -> st.SearchStrategy[ListOffsetsRequest]:
    partition = st.builds(ListOffsetsPartition, int32, int64, since(v, 4, int32, -1))
    topic = st.builds(ListOffsetsTopic, text, tuples(partition))
    return st.builds(ListOffsetsRequest, tuples(topic), since(v, 2, int8, 0), int32)


@functools.cache
def list_offsets_response(v: int) -> st.SearchStrategy[ListOffsetsResponse]:
    partition = st.builds(ListOffsetsPartitionResponse, int32, int16, int64, int64, since(v, 4, int32, -1))
    topic = st.builds(ListOffsetsTopicResponse, text, tuples(partition))
    return st.builds(ListOffsetsResponse, tuples(topic), since(v, 2, int32, 0))


@functools.cache
def fetch_request(v: int) -> st.SearchStrategy[FetchRequest]:
    partition = st.builds(
        FetchPartition,
        int32,
        int64,
        int32,
        since(v, 9, int32, -1),
        since(v, 12, int32, -1),
        since(v, 5, int64, -1),
    )
    topic = st.builds(FetchTopic, text, tuples(partition))
    forgotten = st.builds(ForgottenTopic, text, tuples(int32))
    return st.builds(
        FetchRequest,
        int32,
        int32,
        int32,
        tuples(topic),
        int8,
        since(v, 7, int32, 0),
        since(v, 7, int32, -1),
        since(v, 7, tuples(forgotten), ()),
        since(v, 11, text, ""),
        int32,
    )


@functools.cache
def fetch_response(v: int) -> st.SearchStrategy[FetchResponse]:
    partition = st.builds(
        FetchPartitionData,
        int32,
        int16,
        int64,
        int64,
        since(v, 5, int64, -1),
        st.none() | tuples(st.builds(AbortedTransaction, int64, int64)),
        since(v, 11, int32, -1),
        st.none() | st.binary(max_size=24),
        since(v, 12, st.none() | st.builds(LeaderIdAndEpoch, int32, int32), None),
    )
    topic = st.builds(FetchableTopicResponse, text, tuples(partition))
    return st.builds(FetchResponse, tuples(topic), int32, since(v, 7, int16, 0), since(v, 7, int32, 0))


STRATEGIES: dict[type[base.Request], tuple[Callable[[int], Any], Callable[[int], Any]]] = {
    ApiVersionsRequest: (api_versions_request, api_versions_response),
    MetadataRequest: (metadata_request, metadata_response),
    ListOffsetsRequest: (list_offsets_request, list_offsets_response),
    FetchRequest: (fetch_request, fetch_response),
}

ALL_VERSIONS = [
    pytest.param(request_type, v, id=f"{request_type.__name__}-v{v}")
    for request_type in STRATEGIES
    for v in versions(request_type)
]


# --- 1. cross-checks against aiokafka's independent encoders -------------------------------------------------


def ak_metadata_request(req: MetadataRequest, v: int) -> Any:
    cls = getattr(ak_metadata, f"MetadataRequest_v{v}")
    topics = None if req.topics is None else list(req.topics)
    if v >= 4:
        return cls(topics, req.allow_auto_topic_creation)
    return cls(topics)


def ak_metadata_response(resp: MetadataResponse, v: int) -> Any:
    cls = getattr(ak_metadata, f"MetadataResponse_v{v}")
    brokers = [(b.node_id, b.host, b.port, b.rack) for b in resp.brokers]
    topics = [
        (
            t.error_code,
            t.name,
            t.is_internal,
            [
                (p.error_code, p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
                + ((list(p.offline_replicas),) if v >= 5 else ())
                for p in t.partitions
            ],
        )
        for t in resp.topics
    ]
    fields: list[Any] = [brokers]
    if v >= 2:
        fields.append(resp.cluster_id)
    fields += [resp.controller_id, topics]
    if v >= 3:
        fields.insert(0, resp.throttle_time_ms)
    return cls(*fields)


def ak_fetch_request(req: FetchRequest, v: int) -> Any:
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


def ak_fetch_response(resp: FetchResponse, v: int) -> Any:
    cls = getattr(ak_fetch, f"FetchResponse_v{v}")

    def partition(p: FetchPartitionData) -> tuple[Any, ...]:
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


def ak_list_offsets_request(req: ListOffsetsRequest, v: int) -> Any:
    cls = getattr(ak_offset, f"OffsetRequest_v{v}")
    topics = [(t.name, [(p.partition_index, p.timestamp) for p in t.partitions]) for t in req.topics]
    if v >= 2:
        return cls(req.replica_id, req.isolation_level, topics)
    return cls(req.replica_id, topics)


def ak_list_offsets_response(resp: ListOffsetsResponse, v: int) -> Any:
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


def ak_api_versions_request(req: ApiVersionsRequest, v: int) -> Any:
    return getattr(ak_admin, f"ApiVersionRequest_v{v}")()


def ak_api_versions_response(resp: ApiVersionsResponse, v: int) -> Any:
    cls = getattr(ak_admin, f"ApiVersionResponse_v{v}")
    keys = [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys]
    if v >= 1:
        return cls(resp.error_code, keys, resp.throttle_time_ms)
    return cls(resp.error_code, keys)


# (request type, request converter, request versions, response converter, response versions)
# ListOffsets v4/v5 requests are left out: aiokafka's OffsetRequest_v4 declares CurrentLeaderEpoch as Int64,
# the JSON (and Kafka) say int32; its responses v4/v5 are right.
Converter = Callable[[Any, int], Any]
AIOKAFKA: list[tuple[type[base.Request], Converter, range, Converter, range]] = [
    (ApiVersionsRequest, ak_api_versions_request, range(0, 3), ak_api_versions_response, range(0, 3)),
    (MetadataRequest, ak_metadata_request, range(1, 6), ak_metadata_response, range(1, 6)),
    (ListOffsetsRequest, ak_list_offsets_request, range(1, 4), ak_list_offsets_response, range(1, 6)),
    (FetchRequest, ak_fetch_request, range(4, 12), ak_fetch_response, range(4, 12)),
]
AIOKAFKA_REQUESTS = [pytest.param(t, conv, v, id=f"{t.__name__}-v{v}") for t, conv, vs, _, _ in AIOKAFKA for v in vs]
AIOKAFKA_RESPONSES = [
    pytest.param(t, conv, v, id=f"{t.RESPONSE.__name__}-v{v}") for t, _, _, conv, vs in AIOKAFKA for v in vs
]


@pytest.mark.parametrize(("request_type", "to_aiokafka", "version"), AIOKAFKA_REQUESTS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(
    request_type: type[base.Request], to_aiokafka: Converter, version: int, data: st.DataObject
) -> None:
    request = data.draw(STRATEGIES[request_type][0](version))
    theirs = to_aiokafka(request, version)
    assert encode(request, version) == theirs.encode()
    assert decode(request_type, theirs.encode(), version) == request
    # The whole frame too: size, header v1 (flexible headers never occur below aiokafka's max versions), body.
    header = RequestHeader_v1(theirs, correlation_id=77, client_id="cid").encode()
    frame = header + theirs.encode()
    assert base.encode_request(request, version, 77, "cid") == struct.pack(">i", len(frame)) + frame


@pytest.mark.parametrize(("request_type", "to_aiokafka", "version"), AIOKAFKA_RESPONSES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(
    request_type: type[base.Request], to_aiokafka: Converter, version: int, data: st.DataObject
) -> None:
    response = data.draw(STRATEGIES[request_type][1](version))
    theirs = to_aiokafka(response, version)
    their_bytes = theirs.encode()
    # aiokafka encodes, we decode: every field comes back.
    assert decode(request_type.RESPONSE, their_bytes, version) == response
    # We encode, aiokafka decodes: same bytes, hence the same fields.
    ours = encode(response, version)
    assert ours == their_bytes
    assert type(theirs).decode(ours) == theirs


def test_aiokafka_cross_check_covers_a_concrete_fetch_response() -> None:
    """A readable instance of the generated check: aiokafka's own FetchResponse_v11 decoded by us."""
    theirs = ak_fetch.FetchResponse_v11(5, 0, 123, [("topic", [(2, 0, 100, 90, 10, [(1000, 80)], 3, b"\x00records")])])
    ours = decode(FetchResponse, theirs.encode(), 11)
    assert ours == FetchResponse(
        (
            FetchableTopicResponse(
                "topic",
                (
                    FetchPartitionData(
                        partition_index=2,
                        error_code=0,
                        high_watermark=100,
                        last_stable_offset=90,
                        log_start_offset=10,
                        aborted_transactions=(AbortedTransaction(1000, 80),),
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


# --- 2. flexible versions: bytes computed by hand from the JSON definitions ----------------------------------


def test_api_versions_v3_request_golden() -> None:
    expected = h(
        """
        03 61 63      # ClientSoftwareName: compact string, length 2 + 1, "ac"
        04 31 2e 30   # ClientSoftwareVersion: compact string, length 3 + 1, "1.0"
        00            # tagged fields: none
        """
    )
    request = ApiVersionsRequest("ac", "1.0")
    assert encode(request, 3) == expected
    assert decode(ApiVersionsRequest, expected, 3) == request
    assert encode(request, 2) == b""  # v0-2 have an empty body


def test_api_versions_v3_response_golden() -> None:
    expected = h(
        """
        00 00         # ErrorCode
        02            # ApiKeys: compact array, 1 + 1 entries
          00 01       #   ApiKey 1 (Fetch)
          00 04       #   MinVersion 4
          00 0c       #   MaxVersion 12
          00          #   tagged fields: none
        00 00 00 00   # ThrottleTimeMs
        00            # tagged fields: none
        """
    )
    response = ApiVersionsResponse(0, (ApiVersionRange(1, 4, 12),), 0)
    assert encode(response, 3) == expected
    assert decode(ApiVersionsResponse, expected, 3) == response


def test_api_versions_v3_response_skips_feature_tags() -> None:
    data = h(
        """
        00 00                           # ErrorCode
        01                              # ApiKeys: compact array of 0
        00 00 00 01                     # ThrottleTimeMs 1
        01                              # one tagged field
          00 08                         #   tag 0 (SupportedFeatures), 8 bytes:
            02 02 78 00 01 00 02 00     #     [{Name "x", MinVersion 1, MaxVersion 2, no tags}]
        """
    )
    assert decode(ApiVersionsResponse, data, 3) == ApiVersionsResponse(0, (), 1)


def test_api_versions_unsupported_version_falls_back_to_v0_body() -> None:
    """A broker that lacks the requested version answers UNSUPPORTED_VERSION (35) with a v0 body."""
    v0_body = h(
        """
        00 23                  # ErrorCode 35
        00 00 00 01            # ApiKeys: classic array of 1
          00 12 00 00 00 03    #   ApiVersions 0..3
        """
    )
    expected = ApiVersionsResponse(35, (ApiVersionRange(18, 0, 3),))
    for version in (1, 2, 3):
        frame = b"\x00\x00\x00\x07" + v0_body
        assert base.decode_response(frame, ApiVersionsRequest, version) == expected


def test_metadata_v12_request_golden() -> None:
    expected = h(
        """
        02                                                # Topics: compact array, 1 + 1
          00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 #   TopicId: zero uuid (by name)
          02 74                                           #   Name: compact string "t"
          00                                              #   tagged fields
        01                                                # AllowAutoTopicCreation: true
        00                                                # IncludeTopicAuthorizedOperations: false
        00                                                # tagged fields
        """
    )
    request = MetadataRequest(("t",), allow_auto_topic_creation=True)
    assert encode(request, 12) == expected
    assert decode(MetadataRequest, expected, 12) == request


def test_metadata_v9_and_v10_request_golden() -> None:
    # v9: no TopicId yet; IncludeClusterAuthorizedOperations (8-10) sits before the topic flag.
    v9 = h("02 02 74 00  00  00  01  00")  # [{"t", tags}], auto-create, cluster ops, topic ops, tags
    assert encode(MetadataRequest(("t",), include_topic_authorized_operations=True), 9) == v9
    # v10 with all topics: a null compact array is a single zero.
    v10 = h("00  00  00  00  00")  # null topics, auto-create, cluster ops, topic ops, tags
    assert encode(MetadataRequest(None), 10) == v10
    assert decode(MetadataRequest, v10, 10) == MetadataRequest(None)


def test_metadata_v12_response_golden() -> None:
    expected = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        02                          # Brokers: compact array of 1
          00 00 00 01               #   NodeId 1
          02 68                     #   Host "h"
          00 00 23 84               #   Port 9092
          00                        #   Rack: null
          00                        #   tagged fields
        02 63                       # ClusterId "c"
        00 00 00 01                 # ControllerId 1
        02                          # Topics: compact array of 1
          00 00                     #   ErrorCode
          02 74                     #   Name "t"
          00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01   # TopicId
          00                        #   IsInternal false
          02                        #   Partitions: compact array of 1
            00 00                   #     ErrorCode
            00 00 00 00             #     PartitionIndex 0
            00 00 00 01             #     LeaderId 1
            00 00 00 05             #     LeaderEpoch 5
            02 00 00 00 01          #     ReplicaNodes [1]
            02 00 00 00 01          #     IsrNodes [1]
            01                      #     OfflineReplicas []
            00                      #     tagged fields
          80 00 00 00               #   TopicAuthorizedOperations INT32_MIN
          00                        #   tagged fields
                                    # (no ClusterAuthorizedOperations after v10)
        00                          # tagged fields
        """
    )
    response = MetadataResponse(
        brokers=(MetadataBroker(1, "h", 9092),),
        topics=(
            MetadataTopic(
                0,
                "t",
                (MetadataPartition(0, 0, 1, 5, (1,), (1,), ()),),
                topic_id=uuid.UUID(int=1),
            ),
        ),
        cluster_id="c",
        controller_id=1,
    )
    assert encode(response, 12) == expected
    assert decode(MetadataResponse, expected, 12) == response


def test_list_offsets_v6_to_v9_request_golden() -> None:
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
    request = ListOffsetsRequest(
        (ListOffsetsTopic("t", (ListOffsetsPartition(0, EARLIEST_TIMESTAMP, 3),)),), isolation_level=1
    )
    for version in (6, 7, 8, 9):  # v7-9 only widen the accepted timestamps
        assert encode(request, version) == expected
        assert decode(ListOffsetsRequest, expected, version) == request


def test_list_offsets_v6_response_golden() -> None:
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
    response = ListOffsetsResponse(
        (ListOffsetsTopicResponse("t", (ListOffsetsPartitionResponse(0, 0, LATEST_TIMESTAMP, 42, 7),)),)
    )
    for version in (6, 9):
        assert encode(response, version) == expected
        assert decode(ListOffsetsResponse, expected, version) == response


def test_fetch_v12_request_golden() -> None:
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
        topics=(FetchTopic("t", (FetchPartition(0, 100, 1048576, current_leader_epoch=3, last_fetched_epoch=2),)),),
        isolation_level=1,
        forgotten_topics_data=(ForgottenTopic("u", (1, 2)),),
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
    (
        FetchableTopicResponse(
            "t",
            (
                FetchPartitionData(
                    0,
                    0,
                    10,
                    last_stable_offset=10,
                    log_start_offset=0,
                    aborted_transactions=(AbortedTransaction(7, 3),),
                    records=b"abc",
                    current_leader=LeaderIdAndEpoch(1, 5),
                ),
            ),
        ),
    ),
    session_id=9,
)


def test_fetch_v12_response_golden() -> None:
    assert encode(FETCH_V12_RESPONSE_VALUE, 12) == FETCH_V12_RESPONSE
    assert decode(FetchResponse, FETCH_V12_RESPONSE, 12) == FETCH_V12_RESPONSE_VALUE


def test_fetch_v12_response_skips_unknown_partition_tags() -> None:
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
        (
            FetchableTopicResponse(
                "t",
                (FetchPartitionData(1, 0, 5, preferred_read_replica=2, current_leader=LeaderIdAndEpoch(2, 6)),),
            ),
        )
    )


# --- 3. round-trips for every message at every version -------------------------------------------------------


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(request_type: type[base.Request], version: int, data: st.DataObject) -> None:
    request_strategy, response_strategy = STRATEGIES[request_type]
    request = data.draw(request_strategy(version), label="request")
    response = data.draw(response_strategy(version), label="response")

    assert decode(request_type, encode(request, version), version) == request
    assert decode(request_type.RESPONSE, encode(response, version), version) == response

    frame = base.encode_request(request, version, 1234, "client")
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    assert base.decode_request_frame(frame[4:], REQUEST_TYPES) == (
        int(request_type.API_KEY),
        version,
        1234,
        "client",
        request,
    )

    frame = base.encode_response(response, request_type, version, 4321)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    assert base.peek_correlation_id(frame[4:]) == 4321
    assert base.decode_response(frame[4:], request_type, version) == response


# --- 4. fuzz: garbage and truncated responses fail only with CorruptResponseError ----------------------------


def decode_or_corrupt(frame: bytes, request_type: type[base.Request], version: int) -> None:
    with contextlib.suppress(CorruptResponseError):
        base.decode_response(frame, request_type, version)


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(
    request_type: type[base.Request], version: int, data: st.DataObject
) -> None:
    garbage = data.draw(st.binary(max_size=64), label="garbage")
    decode_or_corrupt(garbage, request_type, version)

    response = data.draw(STRATEGIES[request_type][1](version), label="response")
    frame = base.encode_response(response, request_type, version, 1)[4:]
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    decode_or_corrupt(frame[:cut], request_type, version)

    rnd = data.draw(st.randoms(use_true_random=False), label="mutations")
    mutated = bytearray(frame)
    for _ in range(rnd.randint(1, 4)):
        mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
    decode_or_corrupt(bytes(mutated), request_type, version)


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(request_type: type[base.Request], version: int) -> None:
    """Responses with no optional tail: every strict prefix must be reported as corrupt."""
    responses: dict[type[base.Request], base.Response] = {
        ApiVersionsRequest: ApiVersionsResponse(0, (ApiVersionRange(1, 4, 12),), 0),
        MetadataRequest: MetadataResponse(
            (MetadataBroker(1, "h", 1, "r"),), (MetadataTopic(0, "t", (MetadataPartition(0, 0, 1),)),), "c"
        ),
        ListOffsetsRequest: ListOffsetsResponse(
            (ListOffsetsTopicResponse("t", (ListOffsetsPartitionResponse(0, 0, 1, 2),)),)
        ),
        FetchRequest: FETCH_V12_RESPONSE_VALUE,
    }
    response = responses[request_type]
    frame = base.encode_response(response, request_type, version, 1)[4:]
    for cut in range(len(frame)):
        if request_type is ApiVersionsRequest and version in (1, 2) and cut >= 4 + 2 + 4 + 6:
            continue  # a whole v0 body: accepted by the UNSUPPORTED_VERSION fallback
        with pytest.raises(CorruptResponseError):
            base.decode_response(frame[:cut], request_type, version)


# --- 5. zero copy -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 11, 12])
def test_fetch_records_are_views_of_the_frame(version: int) -> None:
    response = FetchResponse((FetchableTopicResponse("t", (FetchPartitionData(0, 0, 10, records=b"batch-bytes"),)),))
    frame = base.encode_response(response, FetchRequest, version, 9)[4:]
    decoded = base.decode_response(frame, FetchRequest, version)
    assert isinstance(decoded, FetchResponse)
    records = decoded.responses[0].partitions[0].records
    assert isinstance(records, memoryview)
    assert records.obj is frame
    assert bytes(records) == b"batch-bytes"
    assert decoded == response


def test_fetch_records_equality_and_hash_compare_content() -> None:
    a = FetchPartitionData(0, 0, 0, records=memoryview(b"xyz"))
    b = FetchPartitionData(0, 0, 0, records=b"xyz")
    assert a == b
    assert hash(a) == hash(b)
    assert a != FetchPartitionData(0, 0, 0, records=b"xy")
    assert a != FetchPartitionData(0, 0, 0, records=None)


def test_offset_for_leader_epoch_v4_request_golden() -> None:
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
    request = OffsetForLeaderEpochRequest((OffsetForLeaderTopic("t", (OffsetForLeaderPartition(2, 5, 7),)),))
    assert encode(request, 4) == expected
    assert decode(OffsetForLeaderEpochRequest, expected, 4) == request


def test_offset_for_leader_epoch_v3_response_golden() -> None:
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
    response = OffsetForLeaderEpochResponse((OffsetForLeaderTopicResult("t", (EpochEndOffset(0, 2, 5, 100),)),))
    assert decode(OffsetForLeaderEpochResponse, expected, 3) == response
    assert encode(response, 3) == expected
