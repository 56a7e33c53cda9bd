"""SaslAuthenticate (API key 36), v0-2, flexible from v2: bytes by hand, round trips at every version, a repr that
never shows the token, and fuzzed answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from tests.support.codec import decode, encode
from tests.support.protocol import (
    blob,
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_round_trip,
    h,
    int16,
    int64,
    nullable_text,
    since,
    versions,
)

VERSIONS = versions(SaslAuthenticateRequest)


@functools.cache
def responses(v: int) -> st.SearchStrategy[SaslAuthenticateResponse]:
    return st.builds(
        SaslAuthenticateResponse,
        error_code=int16,
        error_message=nullable_text,
        auth_bytes=blob,
        session_lifetime_ms=since(v, 1, int64, 0),
    )


def test_the_request_class_declares_the_contract() -> None:
    request = SaslAuthenticateRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (36, 0, 2, 2)
    assert request.RESPONSE is SaslAuthenticateResponse


def test_classic_and_compact_golden() -> None:
    request = SaslAuthenticateRequest(auth_bytes=b"\x00u\x00p")
    assert encode(request, 1) == h("00 00 00 04  00 75 00 70")  # classic bytes: int32 length
    assert encode(request, 2) == h("05  00 75 00 70  00")  # compact bytes: uvarint length + 1, tags
    response = SaslAuthenticateResponse(error_code=58, error_message="bad", auth_bytes=b"", session_lifetime_ms=9)
    v1 = h("00 3a  00 03 62 61 64  00 00 00 00  00 00 00 00 00 00 00 09")
    assert encode(response, 1) == v1
    assert decode(SaslAuthenticateResponse, v1, 1) == response
    assert encode(response, 0) == v1[:-8]  # v0 has no SessionLifetimeMs


def test_the_token_never_shows_in_a_repr() -> None:
    assert "secret" not in repr(SaslAuthenticateRequest(auth_bytes=b"n,,\x00user\x00secret"))
    assert "<15 bytes>" in repr(SaslAuthenticateRequest(auth_bytes=b"n,,\x00user\x00secret"))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    request = SaslAuthenticateRequest(auth_bytes=data.draw(blob))
    check_round_trip(SaslAuthenticateRequest, version, request, data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(SaslAuthenticateRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    response = SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=b"x")
    check_every_truncation_is_corrupt(SaslAuthenticateRequest, version, response)
