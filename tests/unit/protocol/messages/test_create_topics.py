"""CreateTopics (API key 19), v2-7, flexible from v5: bytes by hand from Kafka's JSON definitions (a manual assignment
and a null config value; answers with the v5+ partitions, replication and configs, v7's topic id and the tagged
TopicConfigErrorCode), round trips, and fuzzed or cut answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from asyncconsumer.protocol.wire import ZERO_UUID
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

VERSIONS = versions(CreateTopicsRequest)
TOPIC_AUTHORIZATION_FAILED = 29
TOPIC_ALREADY_EXISTS = 36
DEFAULT_CONFIG = 5
TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")

requests = st.builds(
    CreateTopicsRequest,
    topics=tuples(
        st.builds(
            CreatableTopic,
            name=text,
            num_partitions=int32,
            replication_factor=int16,
            assignments=tuples(st.builds(CreatableReplicaAssignment, partition_index=int32, broker_ids=tuples(int32))),
            configs=tuples(st.builds(CreatableTopicConfig, name=text, value=nullable_text)),
        ),
        2,
    ),
    timeout_ms=int32,
    validate_only=st.booleans(),
)


@functools.cache
def responses(v: int) -> st.SearchStrategy[CreateTopicsResponse]:
    config = st.builds(
        CreatableTopicConfigs,
        name=text,
        value=nullable_text,
        read_only=st.booleans(),
        config_source=int8,
        is_sensitive=st.booleans(),
    )
    topic = st.builds(
        CreatableTopicResult,
        name=text,
        topic_id=since(v, 7, st.uuids(), ZERO_UUID),
        error_code=int16,
        error_message=nullable_text,
        topic_config_error_code=since(v, 5, int16, 0),
        num_partitions=since(v, 5, int32, -1),
        replication_factor=since(v, 5, int16, -1),
        configs=since(v, 5, st.none() | tuples(config), None),
    )
    return st.builds(CreateTopicsResponse, throttle_time_ms=int32, topics=tuples(topic, 2))


def test_the_request_class_declares_the_contract() -> None:
    request = CreateTopicsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (19, 2, 7, 5)
    assert request.RESPONSE is CreateTopicsResponse
    assert request().timeout_ms == 60000  # the JSON's default


REQUEST = CreateTopicsRequest(
    topics=(
        CreatableTopic(
            name="t",
            num_partitions=-1,
            replication_factor=-1,
            assignments=(CreatableReplicaAssignment(partition_index=0, broker_ids=(1, 2)),),
            configs=(CreatableTopicConfig(name="k", value="v"), CreatableTopicConfig(name="n", value=None)),
        ),
    ),
    timeout_ms=30000,
    validate_only=True,
)


def test_request_golden_v4() -> None:
    body = h(
        """
        00 00 00 01              # Topics: 1
          00 01 74               #   Name "t"
          ff ff ff ff            #   NumPartitions -1 (manual assignment)
          ff ff                  #   ReplicationFactor -1
          00 00 00 01            #   Assignments: 1
            00 00 00 00          #     PartitionIndex 0
            00 00 00 02          #     BrokerIds: 2
              00 00 00 01  00 00 00 02
          00 00 00 02            #   Configs: 2
            00 01 6b  00 01 76   #     Name "k", Value "v"
            00 01 6e  ff ff      #     Name "n", Value null
        00 00 75 30              # timeoutMs 30000
        01                       # validateOnly
        """
    )
    assert encode(REQUEST, 4) == body
    assert decode(CreateTopicsRequest, body, 4) == REQUEST


def test_request_golden_v7() -> None:
    body = h(
        """
        02                       # Topics: compact array of 1
          02 74                  #   Name "t"
          ff ff ff ff            #   NumPartitions -1
          ff ff                  #   ReplicationFactor -1
          02                     #   Assignments: compact array of 1
            00 00 00 00          #     PartitionIndex 0
            03                   #     BrokerIds: compact array of 2
              00 00 00 01  00 00 00 02
            00                   #     tagged fields
          03                     #   Configs: compact array of 2
            02 6b  02 76  00     #     "k", "v", tagged fields
            02 6e  00     00     #     "n", null, tagged fields
          00                     #   tagged fields
        00 00 75 30              # timeoutMs 30000
        01                       # validateOnly
        00                       # tagged fields
        """
    )
    assert encode(REQUEST, 7) == body
    assert decode(CreateTopicsRequest, body, 7) == REQUEST


def test_response_golden_v4() -> None:
    body = h(
        """
        00 00 00 00              # ThrottleTimeMs
        00 00 00 01              # Topics: 1
          00 01 74               #   Name "t"
          00 24                  #   ErrorCode TOPIC_ALREADY_EXISTS (36)
          00 06 65 78 69 73 74 73  # ErrorMessage "exists"
        """
    )
    response = CreateTopicsResponse(
        topics=(CreatableTopicResult(name="t", error_code=TOPIC_ALREADY_EXISTS, error_message="exists"),)
    )
    assert encode(response, 4) == body
    assert decode(CreateTopicsResponse, body, 4) == response


def test_response_golden_v7() -> None:
    body = h(
        """
        00 00 00 00              # ThrottleTimeMs
        02                       # Topics: compact array of 1
          02 74                  #   Name "t"
          01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef  # TopicId
          00 00                  #   ErrorCode
          00                     #   ErrorMessage: null
          00 00 00 03            #   NumPartitions 3
          00 01                  #   ReplicationFactor 1
          02                     #   Configs: compact array of 1
            02 6b                #     Name "k"
            02 76                #     Value "v"
            00                   #     ReadOnly false
            05                   #     ConfigSource DEFAULT_CONFIG (5)
            00                   #     IsSensitive false
            00                   #     tagged fields
          00                     #   tagged fields: none (TopicConfigErrorCode 0)
        00                       # tagged fields
        """
    )
    response = CreateTopicsResponse(
        topics=(
            CreatableTopicResult(
                name="t",
                topic_id=TOPIC_ID,
                error_message=None,
                num_partitions=3,
                replication_factor=1,
                configs=(CreatableTopicConfigs(name="k", value="v", config_source=DEFAULT_CONFIG),),
            ),
        )
    )
    assert encode(response, 7) == body
    assert decode(CreateTopicsResponse, body, 7) == response


TAGGED_V5 = h(
    """
    00 00 00 00                  # ThrottleTimeMs
    02                           # Topics: compact array of 1
      02 74                      #   Name "t" (no TopicId before v7)
      00 00                      #   ErrorCode
      00                         #   ErrorMessage: null
      00 00 00 03  00 01         #   NumPartitions 3, ReplicationFactor 1
      00                         #   Configs: null
      01                         #   tagged fields: 1
        00 02 00 1d              #     tag 0 (TopicConfigErrorCode), 2 bytes: TOPIC_AUTHORIZATION_FAILED (29)
    00                           # tagged fields
    """
)
TAGGED = CreateTopicsResponse(
    topics=(
        CreatableTopicResult(
            name="t",
            error_message=None,
            topic_config_error_code=TOPIC_AUTHORIZATION_FAILED,
            num_partitions=3,
            replication_factor=1,
            configs=None,
        ),
    )
)


@pytest.mark.parametrize("version", [5, 6])
def test_response_golden_with_the_tagged_config_error(version: int) -> None:
    assert encode(TAGGED, version) == TAGGED_V5
    assert decode(CreateTopicsResponse, TAGGED_V5, version) == TAGGED


def test_an_unknown_tag_is_skipped() -> None:
    # The same answer with a tag 7 of 3 bytes after tag 0: decoded as if it were not there.
    body = TAGGED_V5.replace(h("01  00 02 00 1d"), h("02  00 02 00 1d  07 03 aa bb cc"))
    assert len(body) == len(TAGGED_V5) + 5
    assert decode(CreateTopicsResponse, body, 5) == TAGGED


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(CreateTopicsRequest, version, data.draw(requests), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(CreateTopicsRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(CreateTopicsRequest, version, data.draw(responses(version), label="response"))
