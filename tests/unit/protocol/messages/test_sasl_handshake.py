"""SaslHandshake (API key 17), v1 only (SASL tokens then travel in SaslAuthenticate, KIP-152), never flexible: bytes
by hand, round trips, and fuzzed answers that fail only with ``CorruptResponseError``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol import base
from asyncconsumer.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from tests.support.codec import decode, encode
from tests.support.protocol import check_fuzzed_responses, check_round_trip, h, int16, text, tuples

responses = st.builds(SaslHandshakeResponse, error_code=int16, mechanisms=tuples(text))


def test_the_request_class_declares_the_contract() -> None:
    request = SaslHandshakeRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION) == (17, 1, 1)
    assert request.FLEXIBLE_FROM > 2**14  # never flexible
    assert not base.is_flexible(request, 1)


def test_v1_golden() -> None:
    request = SaslHandshakeRequest(mechanism="PLAIN")
    assert encode(request, 1) == h("00 05 50 4c 41 49 4e")  # a classic string
    response = SaslHandshakeResponse(error_code=33, mechanisms=("SCRAM-SHA-256",))
    body = h("00 21  00 00 00 01  00 0d 53 43 52 41 4d 2d 53 48 41 2d 32 35 36")
    assert encode(response, 1) == body
    assert decode(SaslHandshakeResponse, body, 1) == response


@settings(max_examples=30, deadline=None)
@given(mechanism=text, response=responses)
def test_round_trip(mechanism: str, response: SaslHandshakeResponse) -> None:
    check_round_trip(SaslHandshakeRequest, 1, SaslHandshakeRequest(mechanism=mechanism), response)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(data: st.DataObject) -> None:
    check_fuzzed_responses(SaslHandshakeRequest, 1, data, data.draw(responses, label="response"))
