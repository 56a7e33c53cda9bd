"""ApiVersions (API key 18), v0-3: aiokafka's independent encoders agree for v0-2, the flexible v3 is pinned with
bytes computed by hand from Kafka's JSON definitions, every version round-trips, framed too, and fuzzed answers fail
only with ``CorruptResponseError``."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aiokafka.protocol import admin as ak_admin
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_fuzzed_responses,
    check_request_matches_aiokafka,
    check_response_matches_aiokafka,
    check_round_trip,
    h,
    int16,
    int32,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(ApiVersionsRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[ApiVersionsRequest]:
    if v < 3:
        return st.just(ApiVersionsRequest())
    return st.builds(ApiVersionsRequest, client_software_name=text, client_software_version=text)


@functools.cache
def responses(v: int) -> st.SearchStrategy[ApiVersionsResponse]:
    return st.builds(
        ApiVersionsResponse,
        error_code=int16,
        api_keys=tuples(st.builds(ApiVersion, api_key=int16, min_version=int16, max_version=int16), 4),
        throttle_time_ms=since(v, 1, int32, 0),
    )


def test_the_request_class_declares_the_contract() -> None:
    assert (ApiVersionsRequest.API_KEY, ApiVersionsRequest.MIN_VERSION, ApiVersionsRequest.MAX_VERSION) == (18, 0, 3)
    assert ApiVersionsRequest.FLEXIBLE_FROM == 3
    assert ApiVersionsRequest.RESPONSE is ApiVersionsResponse


# --- aiokafka's independent encoders (v0-2) ---------------------------------------------------------------------


def ak_response(resp: ApiVersionsResponse, v: int) -> Any:
    cls = getattr(ak_admin, f"ApiVersionResponse_v{v}")
    keys = [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys]
    if v >= 1:
        return cls(resp.error_code, keys, resp.throttle_time_ms)
    return cls(resp.error_code, keys)


@pytest.mark.parametrize("version", range(0, 3))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    theirs = getattr(ak_admin, f"ApiVersionRequest_v{version}")()
    check_request_matches_aiokafka(ApiVersionsRequest, version, request, theirs)


@pytest.mark.parametrize("version", range(0, 3))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(ApiVersionsRequest, version, response, ak_response(response, version))


# --- v3: bytes computed by hand from the JSON definitions --------------------------------------------------------


def test_v3_request_golden() -> None:
    expected = h(
        """
        03 61 63      # ClientSoftwareName: compact string, length 2 + 1, "ac"
        04 31 2e 30   # ClientSoftwareVersion: compact string, length 3 + 1, "1.0"
        00            # tagged fields: none
        """
    )
    request = ApiVersionsRequest(client_software_name="ac", client_software_version="1.0")
    assert encode(request, 3) == expected
    assert decode(ApiVersionsRequest, expected, 3) == request
    assert encode(request, 2) == b""  # v0-2 have an empty body


def test_v3_response_golden() -> None:
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
    response = ApiVersionsResponse(
        error_code=0, api_keys=(ApiVersion(api_key=1, min_version=4, max_version=12),), throttle_time_ms=0
    )
    assert encode(response, 3) == expected
    assert decode(ApiVersionsResponse, expected, 3) == response


FEATURES_V3 = h(
    """
    00 00                           # ErrorCode
    01                              # ApiKeys: compact array of 0
    00 00 00 01                     # ThrottleTimeMs 1
    01                              # one tagged field
      00 08                         #   tag 0 (SupportedFeatures), 8 bytes:
        02 02 78 00 01 00 02 00     #     [{Name "x", MinVersion 1, MaxVersion 2, no tags}]
    """
)


def test_v3_response_reads_the_supported_features_tag() -> None:
    """The tagged SupportedFeatures are a field of v3 like any other, read when the tag is there."""
    assert decode(ApiVersionsResponse, FEATURES_V3, 3) == ApiVersionsResponse(
        error_code=0,
        api_keys=(),
        throttle_time_ms=1,
        supported_features=(SupportedFeatureKey(name="x", min_version=1, max_version=2),),
    )


def test_v3_response_skips_unknown_tags_and_writes_tags_only_away_from_their_defaults() -> None:
    unknown = FEATURES_V3[:-11] + h("02  00 08 02 02 78 00 01 00 02 00  09 02 ab cd")  # tag 9: 2 bytes
    assert decode(ApiVersionsResponse, unknown, 3) == decode(ApiVersionsResponse, FEATURES_V3, 3)
    response = ApiVersionsResponse(
        finalized_features_epoch=7,
        finalized_features=(FinalizedFeatureKey(name="y", max_version_level=2, min_version_level=1),),
        zk_migration_ready=True,
    )
    body = encode(response, 3)
    assert body.endswith(
        h("03  01 08 00 00 00 00 00 00 00 07  02 08 02 02 79 00 02 00 01 00  03 01 01")
    )  # tags 1, 2, 3; tag 0 (no features) left out
    assert decode(ApiVersionsResponse, body, 3) == response
    assert encode(ApiVersionsResponse(), 3).endswith(b"\x00")  # every tag at its default: an empty section


# --- every version ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version), label="request")
    response = data.draw(responses(version), label="response")
    check_round_trip(ApiVersionsRequest, version, request, response)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(ApiVersionsRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    response = ApiVersionsResponse(
        error_code=0, api_keys=(ApiVersion(api_key=1, min_version=4, max_version=12),), throttle_time_ms=0
    )
    frame = base.encode_response(response, ApiVersionsRequest, version, 1)[4:]
    for cut in range(len(frame)):
        if version in (1, 2) and cut >= 4 + 2 + 4 + 6:
            continue  # a whole v0 body: accepted by the UNSUPPORTED_VERSION fallback
        with pytest.raises(CorruptResponseError):
            base.decode_response(frame[:cut], ApiVersionsRequest, version)
