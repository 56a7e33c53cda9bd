"""What the protocol tests share: hex written with comments, hypothesis strategies of Kafka's primitive types, and
the checks every message gets (round trips, framed too; aiokafka's independent encoders; fuzzed and truncated
responses, which may fail only with ``CorruptResponseError``)."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from aiokafka.protocol.api import RequestHeader_v1
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from tests.support.codec import decode, encode

int8 = st.integers(-(2**7), 2**7 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
text = st.text(max_size=8)
nullable_text = st.none() | text
blob = st.binary(max_size=12)
NO_AUTH_OPS = -(2**31)


def h(text: str) -> bytes:
    """Hex with spaces, newlines and ``#`` comments allowed."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


def tuples(element: st.SearchStrategy[Any], max_size: int = 3, min_size: int = 0) -> st.SearchStrategy[Any]:
    return st.lists(element, min_size=min_size, max_size=max_size).map(tuple)


def since(version: int, first: int, strategy: st.SearchStrategy[Any], default: Any) -> st.SearchStrategy[Any]:
    """``strategy`` from version ``first`` on, before it the field's default (what an older version cannot carry)."""
    return strategy if version >= first else st.just(default)


def framed(request: base.Request, version: int) -> bytes:
    """The body ``base.encode_request`` writes (after header v1/v2): the request in the layout ``version`` has."""
    frame = base.encode_request(request, version, 1, None)
    return frame[4 + 10 + (1 if base.is_flexible(type(request), version) else 0) :]


def versions(request_type: type[base.Request]) -> list[int]:
    return list(range(request_type.MIN_VERSION, request_type.MAX_VERSION + 1))


def check_round_trip(request_type: type[base.Request], version: int, request: Any, response: Any) -> None:
    """Request and response decode back from their bytes, bare and framed."""
    assert decode(request_type, encode(request, version), version) == request
    assert decode(request_type.RESPONSE, encode(response, version), version) == response

    frame = base.encode_request(request, version, 1234, "client")
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    assert base.decode_request_frame(frame[4:], {int(request_type.API_KEY): request_type}) == (
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


def check_request_matches_aiokafka(request_type: type[base.Request], version: int, request: Any, theirs: Any) -> None:
    """Our bytes are aiokafka's, we read theirs back, and the whole frame (header v1) is theirs too."""
    assert encode(request, version) == theirs.encode()
    assert decode(request_type, theirs.encode(), version) == request
    # The whole frame too: size, header v1 (flexible headers never occur below aiokafka's max versions), body.
    header = RequestHeader_v1(theirs, correlation_id=77, client_id="cid").encode()
    frame = header + theirs.encode()
    assert base.encode_request(request, version, 77, "cid") == struct.pack(">i", len(frame)) + frame


def check_response_matches_aiokafka(request_type: type[base.Request], version: int, response: Any, theirs: Any) -> None:
    their_bytes = theirs.encode()
    # aiokafka encodes, we decode: every field comes back.
    assert decode(request_type.RESPONSE, their_bytes, version) == response
    # We encode, aiokafka decodes: same bytes, hence the same fields.
    ours = encode(response, version)
    assert ours == their_bytes
    assert type(theirs).decode(ours) == theirs


def decode_or_corrupt(frame: bytes, request_type: type[base.Request], version: int) -> None:
    with contextlib.suppress(CorruptResponseError):
        base.decode_response(frame, request_type, version)


def check_fuzzed_responses(request_type: type[base.Request], version: int, data: st.DataObject, response: Any) -> None:
    """Garbage, a cut and a mutated frame of ``response``: each decodes or raises ``CorruptResponseError``."""
    garbage = data.draw(st.binary(max_size=64), label="garbage")
    decode_or_corrupt(garbage, request_type, version)

    frame = base.encode_response(response, request_type, version, 1)[4:]
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    decode_or_corrupt(frame[:cut], request_type, version)

    rnd = data.draw(st.randoms(use_true_random=False), label="mutations")
    mutated = bytearray(frame)
    for _ in range(rnd.randint(1, 4)):
        mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
    decode_or_corrupt(bytes(mutated), request_type, version)


def check_every_truncation_is_corrupt(request_type: type[base.Request], version: int, response: Any) -> None:
    """For a response with no optional tail: every strict prefix of its frame is reported as corrupt."""
    frame = base.encode_response(response, request_type, version, 1)[4:]
    for cut in range(len(frame)):
        with pytest.raises(CorruptResponseError):
            base.decode_response(frame[:cut], request_type, version)
