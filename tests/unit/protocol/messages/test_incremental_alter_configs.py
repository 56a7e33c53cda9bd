"""IncrementalAlterConfigs (API key 44, KIP-339), flexible from v1: bytes by hand from Kafka's JSON definitions (a
SET with its value, a DELETE with a null one, on resource type GROUP), round trips, and fuzzed or cut answers that
fail only with ``CorruptResponseError``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
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
    text,
    tuples,
    versions,
)

VERSIONS = versions(IncrementalAlterConfigsRequest)
GROUP = 32

requests = st.builds(
    IncrementalAlterConfigsRequest,
    resources=tuples(
        st.builds(
            AlterConfigsResource,
            resource_type=int8,
            resource_name=text,
            configs=tuples(st.builds(AlterableConfig, name=text, config_operation=int8, value=nullable_text)),
        ),
        2,
    ),
    validate_only=st.booleans(),
)

responses = st.builds(
    IncrementalAlterConfigsResponse,
    throttle_time_ms=int32,
    responses=tuples(
        st.builds(
            AlterConfigsResourceResponse,
            error_code=int16,
            error_message=nullable_text,
            resource_type=int8,
            resource_name=text,
        )
    ),
)


def test_the_request_class_declares_the_contract() -> None:
    request = IncrementalAlterConfigsRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (44, 0, 1, 1)
    assert request.RESPONSE is IncrementalAlterConfigsResponse


REQUEST = IncrementalAlterConfigsRequest(
    resources=(
        AlterConfigsResource(
            resource_type=GROUP,
            resource_name="g",
            configs=(
                AlterableConfig(name="k", config_operation=0, value="v"),
                AlterableConfig(name="d", config_operation=1, value=None),
            ),
        ),
    )
)


def test_request_golden_v0() -> None:
    assert encode(REQUEST, 0) == h(
        """
        00 00 00 01        # Resources: 1
          20               #   ResourceType GROUP (32)
          00 01 67         #   ResourceName "g"
          00 00 00 02      #   Configs: 2
            00 01 6b       #     Name "k"
            00             #     ConfigOperation SET
            00 01 76       #     Value "v"
            00 01 64       #     Name "d"
            01             #     ConfigOperation DELETE
            ff ff          #     Value: null
        00                 # ValidateOnly false
        """
    )


def test_request_golden_v1() -> None:
    assert encode(REQUEST, 1) == h(
        """
        02                 # Resources: 1
          20               #   ResourceType GROUP (32)
          02 67            #   ResourceName "g"
          03               #   Configs: 2
            02 6b  00  02 76  00   # "k", SET, "v", tagged fields
            02 64  01  00     00   # "d", DELETE, null, tagged fields
          00               #   resource's tagged fields
        00                 # ValidateOnly false
        00                 # tagged fields
        """
    )


@pytest.mark.parametrize(
    ("version", "body"),
    [
        (0, "00 00 00 05  00 00 00 01  00 28  00 03 62 61 64  20  00 01 67"),
        (1, "00 00 00 05  02  00 28  04 62 61 64  20  02 67  00  00"),
    ],
)
def test_response_golden(version: int, body: str) -> None:
    # ThrottleTimeMs 5; Responses: 1; ErrorCode INVALID_CONFIG (40), ErrorMessage "bad", ResourceType GROUP,
    # ResourceName "g" (and from v1 the tagged fields).
    response = IncrementalAlterConfigsResponse(
        throttle_time_ms=5,
        responses=(
            AlterConfigsResourceResponse(error_code=40, error_message="bad", resource_type=GROUP, resource_name="g"),
        ),
    )
    assert encode(response, version) == h(body)
    assert decode(IncrementalAlterConfigsResponse, h(body), version) == response


def test_a_null_error_message_decodes_as_none() -> None:
    body = h("00 00 00 00  02  00 00  00  20  02 67  00  00")
    decoded = decode(IncrementalAlterConfigsResponse, body, 1)
    assert decoded.responses == (AlterConfigsResourceResponse(0, None, GROUP, "g"),)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(request=requests, response=responses)
def test_round_trip(
    version: int, request: IncrementalAlterConfigsRequest, response: IncrementalAlterConfigsResponse
) -> None:
    check_round_trip(IncrementalAlterConfigsRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(IncrementalAlterConfigsRequest, version, data, data.draw(responses, label="response"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=10, deadline=None)
@given(response=responses)
def test_every_truncation_of_a_response_is_corrupt(version: int, response: IncrementalAlterConfigsResponse) -> None:
    check_every_truncation_is_corrupt(IncrementalAlterConfigsRequest, version, response)
