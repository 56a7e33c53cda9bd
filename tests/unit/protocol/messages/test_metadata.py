"""Metadata (API key 3), v1-12: aiokafka's independent encoders agree for v1-5, flexible versions are pinned with
bytes computed by hand from Kafka's JSON definitions, every version round-trips, framed too, and fuzzed or cut
answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
import uuid
from typing import Any

import pytest
from aiokafka.protocol import metadata as ak_metadata
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from asyncconsumer.protocol.wire import ZERO_UUID
from tests.support.codec import decode, encode
from tests.support.protocol import (
    NO_AUTH_OPS,
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_request_matches_aiokafka,
    check_response_matches_aiokafka,
    check_round_trip,
    h,
    int16,
    int32,
    nullable_text,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(MetadataRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[MetadataRequest]:
    return st.builds(
        MetadataRequest,
        topics=(st.none() | tuples(text)).map(
            lambda ts: None if ts is None else tuple(MetadataRequestTopic(name=t) for t in ts)
        ),
        # v1-3 cannot carry AllowAutoTopicCreation: those brokers create topics, as its default (true) says
        allow_auto_topic_creation=since(v, 4, st.booleans(), True),
        include_topic_authorized_operations=since(v, 8, st.booleans(), False),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[MetadataResponse]:
    broker = st.builds(
        MetadataResponseBroker, node_id=int32, host=text, port=int32, rack=since(v, 1, nullable_text, None)
    )
    partition = st.builds(
        MetadataResponsePartition,
        error_code=int16,
        partition_index=int32,
        leader_id=int32,
        leader_epoch=since(v, 7, int32, -1),
        replica_nodes=tuples(int32),
        isr_nodes=tuples(int32),
        offline_replicas=since(v, 5, tuples(int32), ()),
    )
    topic = st.builds(
        MetadataResponseTopic,
        error_code=int16,
        name=nullable_text if v >= 12 else text,
        partitions=tuples(partition, 2),
        topic_id=since(v, 10, st.uuids(), ZERO_UUID),
        is_internal=since(v, 1, st.booleans(), False),
        topic_authorized_operations=since(v, 8, int32, NO_AUTH_OPS),
    )
    return st.builds(
        MetadataResponse,
        brokers=tuples(broker),
        topics=tuples(topic, 2),
        cluster_id=since(v, 2, nullable_text, None),
        controller_id=since(v, 1, int32, -1),
        throttle_time_ms=since(v, 3, int32, 0),
        cluster_authorized_operations=int32 if 8 <= v <= 10 else st.just(NO_AUTH_OPS),
    )


def test_the_request_class_declares_the_contract() -> None:
    assert (MetadataRequest.API_KEY, MetadataRequest.MIN_VERSION, MetadataRequest.MAX_VERSION) == (3, 1, 13)
    assert MetadataRequest.FLEXIBLE_FROM == 9
    assert MetadataRequest.RESPONSE is MetadataResponse


# --- aiokafka's independent encoders (v1-5) ---------------------------------------------------------------------


def ak_request(req: MetadataRequest, v: int) -> Any:
    cls = getattr(ak_metadata, f"MetadataRequest_v{v}")
    topics = None if req.topics is None else [t.name for t in req.topics]
    if v >= 4:
        return cls(topics, req.allow_auto_topic_creation)
    return cls(topics)


def ak_response(resp: MetadataResponse, v: int) -> Any:
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


@pytest.mark.parametrize("version", range(1, 6))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    check_request_matches_aiokafka(MetadataRequest, version, request, ak_request(request, version))


@pytest.mark.parametrize("version", range(1, 6))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(MetadataRequest, version, response, ak_response(response, version))


# --- flexible versions: bytes computed by hand from the JSON definitions -----------------------------------------


def test_v12_request_golden() -> None:
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
    request = MetadataRequest(topics=(MetadataRequestTopic(name="t"),), allow_auto_topic_creation=True)
    assert encode(request, 12) == expected
    assert decode(MetadataRequest, expected, 12) == request


def test_v9_and_v10_request_golden() -> None:
    # v9: no TopicId yet; IncludeClusterAuthorizedOperations (8-10) sits before the topic flag.
    v9 = h("02 02 74 00  00  00  01  00")  # [{"t", tags}], auto-create, cluster ops, topic ops, tags
    request = MetadataRequest(
        topics=(MetadataRequestTopic(name="t"),),
        include_topic_authorized_operations=True,
        allow_auto_topic_creation=False,
    )
    assert encode(request, 9) == v9
    # v10 with all topics: a null compact array is a single zero.
    v10 = h("00  00  00  00  00")  # null topics, auto-create, cluster ops, topic ops, tags
    assert encode(MetadataRequest(topics=None, allow_auto_topic_creation=False), 10) == v10
    assert decode(MetadataRequest, v10, 10) == MetadataRequest(topics=None, allow_auto_topic_creation=False)


def test_v12_response_golden() -> None:
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
    partition = MetadataResponsePartition(
        error_code=0, partition_index=0, leader_id=1, leader_epoch=5, replica_nodes=(1,), isr_nodes=(1,)
    )
    response = MetadataResponse(
        brokers=(MetadataResponseBroker(node_id=1, host="h", port=9092),),
        topics=(MetadataResponseTopic(name="t", partitions=(partition,), topic_id=uuid.UUID(int=1)),),
        cluster_id="c",
        controller_id=1,
    )
    assert encode(response, 12) == expected
    assert decode(MetadataResponse, expected, 12) == response


def test_a_topic_name_is_null_only_from_v12() -> None:
    """v12 answers topics asked for by id with a null name; before, null is refused as Kafka refuses it."""
    topic = MetadataResponseTopic(name=None)
    assert decode(MetadataResponseTopic, encode(topic, 12), 12) == topic
    with pytest.raises(ValueError, match="v12"):
        encode(topic, 11)
    assert decode(MetadataResponseTopic, encode(topic, 12), 11).name is None  # read leniently at any version


def test_v1_to_v3_requests_cannot_refuse_topic_creation() -> None:
    """AllowAutoTopicCreation exists from v4; a request that turns it off cannot be sent before (Kafka's rule)."""
    assert encode(MetadataRequest(topics=None), 3) == h("ff ff ff ff")
    with pytest.raises(ValueError, match="v4"):
        encode(MetadataRequest(topics=None, allow_auto_topic_creation=False), 3)


# --- every version ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version), label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(MetadataRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(MetadataRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    response = MetadataResponse(
        brokers=(MetadataResponseBroker(node_id=1, host="h", port=1, rack="r"),),
        topics=(
            MetadataResponseTopic(
                error_code=0,
                name="t",
                partitions=(MetadataResponsePartition(error_code=0, partition_index=0, leader_id=1),),
            ),
        ),
        cluster_id="c",
    )
    check_every_truncation_is_corrupt(MetadataRequest, version, response)
