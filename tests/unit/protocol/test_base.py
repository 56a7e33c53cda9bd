"""``protocol/base.py``: request frames (header v1 or v2, the client id a classic string in both), response frames
(header v0 for ApiVersions at every version, v1 for flexible others), ApiVersions' fallback to a v0 body, the layout
of a request rewritten for its version when framed, and any decoding failure reported as ``CorruptResponseError``."""

from __future__ import annotations

import pytest

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorRequest
from asyncconsumer.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataResponse, MetadataResponseTopic
from tests.support.protocol import h


def test_request_header_v1_then_v2_from_the_flexible_versions() -> None:
    request = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    v3 = base.encode_request(request, 3, 7, "c")
    assert v3 == h("00 00 00 17  00 0c 00 03 00 00 00 07  00 01 63") + h("00 01 67 00 00 00 01 00 01 6d ff ff")
    v4 = base.encode_request(request, 4, 7, "c")
    assert v4[4:18] == h("00 0c 00 04 00 00 00 07  00 01 63  00  02 67")  # header v2's tags, then compact "g"
    assert base.decode_request_frame(v4[4:], {12: HeartbeatRequest}) == (12, 4, 7, "c", request)


def test_a_null_client_id() -> None:
    frame = base.encode_request(ApiVersionsRequest(), 0, 1, None)
    assert frame == h("00 00 00 0a  00 12 00 00 00 00 00 01 ff ff")


def test_api_versions_answers_with_header_v0_at_every_version() -> None:
    assert not base.response_header_is_flexible(ApiVersionsRequest, 3)
    assert base.response_header_is_flexible(HeartbeatRequest, 4)
    assert not base.response_header_is_flexible(HeartbeatRequest, 3)
    response = ApiVersionsResponse(api_keys=(ApiVersion(api_key=18, max_version=3),))
    frame = base.encode_response(response, ApiVersionsRequest, 3, 5)
    assert frame[4:8] == h("00 00 00 05") and frame[8:10] == h("00 00")  # correlation id, then the body at once
    assert base.decode_response(frame[4:], ApiVersionsRequest, 3) == response


def test_api_versions_unsupported_version_falls_back_to_v0_body() -> None:
    """A broker that lacks the requested version answers UNSUPPORTED_VERSION (35) with a v0 body."""
    v0_body = h(
        """
        00 23                  # ErrorCode 35
        00 00 00 01            # ApiKeys: classic array of 1
          00 12 00 00 00 03    #   ApiVersions 0..3
        """
    )
    expected = ApiVersionsResponse(error_code=35, api_keys=(ApiVersion(api_key=18, min_version=0, max_version=3),))
    for version in (1, 2, 3):
        frame = b"\x00\x00\x00\x07" + v0_body
        assert base.decode_response(frame, ApiVersionsRequest, version) == expected


def test_only_api_versions_falls_back() -> None:
    with pytest.raises(CorruptResponseError):
        base.decode_response(h("00 00 00 07  00"), HeartbeatRequest, 4)


def test_a_request_is_framed_in_its_versions_layout() -> None:
    """FindCoordinator v4 batches keys: the single-key request goes out as a one-key batch (its ``for_version``);
    a request of one layout at every version goes out as it was built."""
    frame = base.encode_request(FindCoordinatorRequest(key="g"), 4, 1, None)
    assert frame[4:] == h("00 0a 00 04 00 00 00 01 ff ff 00") + h("00  02 02 67  00")
    request = HeartbeatRequest(group_id="g")
    assert request.for_version(1) is request


def test_decoding_errors_are_corrupt_responses() -> None:
    frame = base.encode_response(MetadataResponse(topics=(MetadataResponseTopic(name="t"),)), MetadataRequest, 1, 3)[4:]
    bad_utf8 = frame.replace(b"\x00\x01t", b"\x00\x01\xff")
    with pytest.raises(CorruptResponseError, match="undecodable METADATA v1 response"):
        base.decode_response(bad_utf8, MetadataRequest, 1)
    with pytest.raises(CorruptResponseError, match="shorter than its header"):
        base.peek_correlation_id(b"\x00")
    assert base.peek_correlation_id(h("00 00 01 00")) == 256


def test_response_frames_carry_size_and_correlation_id() -> None:
    frame = base.encode_response(HeartbeatResponse(error_code=27), HeartbeatRequest, 4, 9)
    assert frame == h("00 00 00 0c  00 00 00 09  00  00 00 00 00  00 1b  00")
    assert base.decode_response(frame[4:], HeartbeatRequest, 4) == HeartbeatResponse(error_code=27)
