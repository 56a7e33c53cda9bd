"""DescribeConfigs (API key 32), v1-4, flexible from v4: bytes by hand from Kafka's JSON definitions (a topic's listed
keys and a broker's null list; a config with its synonyms, v3's type and documentation), round trips, and fuzzed or
cut answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
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
    nullable_text,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(DescribeConfigsRequest)
TOPIC, BROKER = 2, 4
TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
STRING = 2


@functools.cache
def requests(v: int) -> st.SearchStrategy[DescribeConfigsRequest]:
    resource = st.builds(
        DescribeConfigsResource,
        resource_type=int8,
        resource_name=text,
        configuration_keys=st.none() | tuples(text),
    )
    return st.builds(
        DescribeConfigsRequest,
        resources=tuples(resource, 2),
        include_synonyms=st.booleans(),
        include_documentation=since(v, 3, st.booleans(), False),
    )


@functools.cache
def responses(v: int) -> st.SearchStrategy[DescribeConfigsResponse]:
    synonym = st.builds(DescribeConfigsSynonym, name=text, value=nullable_text, source=int8)
    config = st.builds(
        DescribeConfigsResourceResult,
        name=text,
        value=nullable_text,
        read_only=st.booleans(),
        config_source=int8,
        is_sensitive=st.booleans(),
        synonyms=tuples(synonym, 2),
        config_type=since(v, 3, int8, 0),
        documentation=since(v, 3, nullable_text, ""),
    )
    result = st.builds(
        DescribeConfigsResult,
        error_code=int16,
        error_message=nullable_text,
        resource_type=int8,
        resource_name=text,
        configs=tuples(config, 2),
    )
    return st.builds(DescribeConfigsResponse, throttle_time_ms=int32, results=tuples(result, 2))


def test_the_request_class_declares_the_contract() -> None:
    request = DescribeConfigsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (32, 1, 4, 4)
    assert request.RESPONSE is DescribeConfigsResponse


RESOURCES = (
    DescribeConfigsResource(resource_type=TOPIC, resource_name="t", configuration_keys=("k",)),
    DescribeConfigsResource(resource_type=BROKER, resource_name="1", configuration_keys=None),
)


def test_request_golden_v1() -> None:
    request = DescribeConfigsRequest(resources=RESOURCES, include_synonyms=True)
    body = h(
        """
        00 00 00 02              # Resources: 2
          02                     #   ResourceType TOPIC (2)
          00 01 74               #   ResourceName "t"
          00 00 00 01  00 01 6b  #   ConfigurationKeys: ["k"]
          04                     #   ResourceType BROKER (4)
          00 01 31               #   ResourceName "1"
          ff ff ff ff            #   ConfigurationKeys: null (every key)
        01                       # IncludeSynonyms (no IncludeDocumentation before v3)
        """
    )
    assert encode(request, 1) == body
    assert decode(DescribeConfigsRequest, body, 1) == request


def test_request_golden_v4() -> None:
    request = DescribeConfigsRequest(resources=RESOURCES, include_synonyms=True, include_documentation=True)
    body = h(
        """
        03                       # Resources: compact array of 2
          02  02 74  02 02 6b  00  #   TOPIC, "t", ConfigurationKeys ["k"], tagged fields
          04  02 31  00        00  #   BROKER, "1", ConfigurationKeys null, tagged fields
        01                       # IncludeSynonyms
        01                       # IncludeDocumentation
        00                       # tagged fields
        """
    )
    assert encode(request, 4) == body
    assert decode(DescribeConfigsRequest, body, 4) == request


def test_documentation_needs_v3() -> None:
    with pytest.raises(ValueError, match="needs v3"):
        encode(DescribeConfigsRequest(include_documentation=True), 2)
    assert encode(DescribeConfigsRequest(include_documentation=True), 3) == h("00 00 00 00  00  01")


def test_response_golden_v1() -> None:
    body = h(
        """
        00 00 00 00              # ThrottleTimeMs
        00 00 00 01              # Results: 1
          00 00                  #   ErrorCode
          ff ff                  #   ErrorMessage: null
          02                     #   ResourceType TOPIC
          00 01 74               #   ResourceName "t"
          00 00 00 01            #   Configs: 1
            00 01 6b             #     Name "k"
            00 01 76             #     Value "v"
            00                   #     ReadOnly false
            01                   #     ConfigSource TOPIC_CONFIG (1)
            00                   #     IsSensitive false
            00 00 00 01          #     Synonyms: 1
              00 01 6b  00 01 76  01  # Name "k", Value "v", Source TOPIC_CONFIG
        """
    )
    config = DescribeConfigsResourceResult(
        name="k", value="v", config_source=TOPIC_CONFIG, synonyms=(DescribeConfigsSynonym("k", "v", TOPIC_CONFIG),)
    )
    response = DescribeConfigsResponse(
        results=(DescribeConfigsResult(error_message=None, resource_type=TOPIC, resource_name="t", configs=(config,)),)
    )
    assert encode(response, 1) == body
    assert decode(DescribeConfigsResponse, body, 1) == response


def test_response_golden_v4() -> None:
    body = h(
        """
        00 00 00 00              # ThrottleTimeMs
        02                       # Results: compact array of 1
          00 00                  #   ErrorCode
          00                     #   ErrorMessage: null
          02                     #   ResourceType TOPIC
          02 74                  #   ResourceName "t"
          02                     #   Configs: compact array of 1
            02 6b                #     Name "k"
            02 76                #     Value "v"
            00                   #     ReadOnly false
            01                   #     ConfigSource TOPIC_CONFIG (1)
            01                   #     IsSensitive true
            03                   #     Synonyms: compact array of 2
              02 6b  02 76  01  00  #   "k", "v", TOPIC_CONFIG, tagged fields
              02 6b  00     05  00  #   "k", null, DEFAULT_CONFIG, tagged fields
            02                   #     ConfigType STRING (2)
            04 64 6f 63          #     Documentation "doc"
            00                   #     tagged fields
          00                     #   tagged fields
        00                       # tagged fields
        """
    )
    config = DescribeConfigsResourceResult(
        name="k",
        value="v",
        config_source=TOPIC_CONFIG,
        is_sensitive=True,
        synonyms=(DescribeConfigsSynonym("k", "v", TOPIC_CONFIG), DescribeConfigsSynonym("k", None, DEFAULT_CONFIG)),
        config_type=STRING,
        documentation="doc",
    )
    response = DescribeConfigsResponse(
        results=(DescribeConfigsResult(error_message=None, resource_type=TOPIC, resource_name="t", configs=(config,)),)
    )
    assert encode(response, 4) == body
    assert decode(DescribeConfigsResponse, body, 4) == response


def test_v3_adds_type_and_documentation_before_flexible() -> None:
    config = DescribeConfigsResourceResult(name="k", value=None, config_type=STRING, documentation=None)
    # Name, Value null, ReadOnly, ConfigSource -1, IsSensitive, Synonyms: 0, then ConfigType and Documentation null.
    assert encode(config, 3) == h("00 01 6b  ff ff  00 ff 00  00 00 00 00  02  ff ff")
    assert encode(config, 2) == h("00 01 6b  ff ff  00 ff 00  00 00 00 00")


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(DescribeConfigsRequest, version, data.draw(requests(version)), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(DescribeConfigsRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_truncation_of_a_response_is_corrupt(version: int, data: st.DataObject) -> None:
    check_every_truncation_is_corrupt(DescribeConfigsRequest, version, data.draw(responses(version), label="response"))
