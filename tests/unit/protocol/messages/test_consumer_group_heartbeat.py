"""ConsumerGroupHeartbeat (API key 68, KIP-848): golden bytes, framing, round-trips and truncation.

The golden bytes are written by hand from Kafka's ConsumerGroupHeartbeatRequest/Response.json (v0-1, flexible
from v0): compact strings are an unsigned varint of length + 1 (0 = null), compact arrays an unsigned varint of
count + 1 (0 = null), a uuid is 16 raw bytes, a nullable struct field is an int8 marker (-1 null, 1 present)
followed by the struct, and every struct and the message itself end with a tagged-field section (0x00 if empty).
v1 only adds the request's nullable SubscribedTopicRegex, right after SubscribedTopicNames.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.constants import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from tests.support.codec import decode, encode

VERSIONS = [0, 1]
TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
TOPIC_ID_HEX = "00112233445566778899aabbccddeeff"


def h(text: str) -> bytes:
    """Hex with spaces, newlines and ``#`` comments allowed."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


def test_api_key_and_versions_match_kafka() -> None:
    assert int(ConsumerGroupHeartbeatRequest.API_KEY) == 68
    assert (ConsumerGroupHeartbeatRequest.MIN_VERSION, ConsumerGroupHeartbeatRequest.MAX_VERSION) == (0, 1)
    assert ConsumerGroupHeartbeatRequest.FLEXIBLE_FROM == 0
    assert ConsumerGroupHeartbeatRequest.RESPONSE is ConsumerGroupHeartbeatResponse
    assert (JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH) == (0, -1, -2)


# --- requests: golden bytes ------------------------------------------------------------------------------------

FULL_JOIN = ConsumerGroupHeartbeatRequest(
    group_id="grp",
    member_id="m-1",
    member_epoch=JOIN_EPOCH,
    instance_id="i1",
    rack_id="r1",
    rebalance_timeout_ms=300_000,
    subscribed_topic_names=("a", "bc"),
    subscribed_topic_regex=None,
    server_assignor="uniform",
    topic_partitions=(TopicPartitions(topic_id=TOPIC_ID, partitions=(0, 5)),),
)

FULL_JOIN_HEAD = """
    04 677270                # GroupId "grp": uvarint 3+1
    04 6d2d31                # MemberId "m-1"
    00000000                 # MemberEpoch 0 (join)
    03 6931                  # InstanceId "i1"
    03 7231                  # RackId "r1"
    000493e0                 # RebalanceTimeoutMs 300000
    03                       # SubscribedTopicNames: 2 names (uvarint 2+1)
       02 61                 #   "a"
       03 6263               #   "bc"
"""
FULL_JOIN_TAIL = f"""
    08 756e69666f726d        # ServerAssignor "uniform"
    02                       # TopicPartitions: 1 topic
       {TOPIC_ID_HEX}        #   TopicId (16 bytes)
       03 00000000 00000005  #   Partitions [0, 5]
       00                    #   topic struct: empty tagged fields
    00                       # message: empty tagged fields
"""
REGEX_NULL = "00             # SubscribedTopicRegex null (v1+ only)"

FULL_JOIN_V0 = h(FULL_JOIN_HEAD + FULL_JOIN_TAIL)
FULL_JOIN_V1 = h(FULL_JOIN_HEAD + REGEX_NULL + FULL_JOIN_TAIL)

DELTA = ConsumerGroupHeartbeatRequest(group_id="grp", member_id="m-1", member_epoch=7)
DELTA_HEAD = """
    04 677270                # GroupId "grp"
    04 6d2d31                # MemberId "m-1"
    00000007                 # MemberEpoch 7
    00                       # InstanceId null
    00                       # RackId null
    ffffffff                 # RebalanceTimeoutMs -1 (unchanged)
    00                       # SubscribedTopicNames null (unchanged)
"""
DELTA_TAIL = """
    00                       # ServerAssignor null
    00                       # TopicPartitions null (unchanged)
    00                       # message: empty tagged fields
"""
DELTA_V0 = h(DELTA_HEAD + DELTA_TAIL)
DELTA_V1 = h(DELTA_HEAD + REGEX_NULL + DELTA_TAIL)

LEAVE = ConsumerGroupHeartbeatRequest(group_id="grp", member_id="m-1", member_epoch=LEAVE_EPOCH)
LEAVE_HEAD = """
    04 677270                # GroupId "grp"
    04 6d2d31                # MemberId "m-1"
    ffffffff                 # MemberEpoch -1 (leave)
    00 00                    # InstanceId, RackId null
    ffffffff                 # RebalanceTimeoutMs -1
    00                       # SubscribedTopicNames null
"""
LEAVE_V0 = h(LEAVE_HEAD + DELTA_TAIL)
LEAVE_V1 = h(LEAVE_HEAD + REGEX_NULL + DELTA_TAIL)

STATIC_LEAVE = ConsumerGroupHeartbeatRequest(
    group_id="grp", member_id="m-1", member_epoch=STATIC_LEAVE_EPOCH, instance_id="i1"
)
STATIC_LEAVE_V1 = h(
    """
    04 677270 04 6d2d31      # GroupId, MemberId
    fffffffe                 # MemberEpoch -2 (static member leaving for now)
    03 6931                  # InstanceId "i1"
    00                       # RackId null
    ffffffff                 # RebalanceTimeoutMs -1
    00 00 00 00              # SubscribedTopicNames, SubscribedTopicRegex, ServerAssignor, TopicPartitions: null
    00                       # message: empty tagged fields
"""
)

REQUEST_GOLDEN = [
    pytest.param(FULL_JOIN, 0, FULL_JOIN_V0, id="full-join-v0"),
    pytest.param(FULL_JOIN, 1, FULL_JOIN_V1, id="full-join-v1"),
    pytest.param(DELTA, 0, DELTA_V0, id="delta-v0"),
    pytest.param(DELTA, 1, DELTA_V1, id="delta-v1"),
    pytest.param(LEAVE, 0, LEAVE_V0, id="leave-v0"),
    pytest.param(LEAVE, 1, LEAVE_V1, id="leave-v1"),
    pytest.param(STATIC_LEAVE, 1, STATIC_LEAVE_V1, id="static-leave-v1"),
]


@pytest.mark.parametrize(("request_", "version", "golden"), REQUEST_GOLDEN)
def test_request_golden_bytes(request_: ConsumerGroupHeartbeatRequest, version: int, golden: bytes) -> None:
    assert encode(request_, version).hex() == golden.hex()
    assert decode(ConsumerGroupHeartbeatRequest, golden, version) == request_


def test_v0_has_no_regex_field_and_v1_adds_exactly_one_byte_for_a_null_one() -> None:
    assert len(FULL_JOIN_V1) == len(FULL_JOIN_V0) + 1
    assert len(DELTA_V1) == len(DELTA_V0) + 1
    # the byte is inserted right after SubscribedTopicNames, before ServerAssignor
    split = len(h(FULL_JOIN_HEAD))
    assert FULL_JOIN_V1[:split] == FULL_JOIN_V0[:split]
    assert FULL_JOIN_V1[split] == 0x00
    assert FULL_JOIN_V1[split + 1 :] == FULL_JOIN_V0[split:]
    assert decode(ConsumerGroupHeartbeatRequest, FULL_JOIN_V0, 0).subscribed_topic_regex is None


def test_regex_is_encoded_at_v1() -> None:
    request = ConsumerGroupHeartbeatRequest(
        group_id="grp", member_id="m-1", member_epoch=JOIN_EPOCH, subscribed_topic_regex="^t.*"
    )
    golden = h(
        """
        04 677270 04 6d2d31  # GroupId, MemberId
        00000000             # MemberEpoch 0
        00 00                # InstanceId, RackId null
        ffffffff             # RebalanceTimeoutMs -1
        00                   # SubscribedTopicNames null
        05 5e742e2a          # SubscribedTopicRegex "^t.*"
        00 00                # ServerAssignor, TopicPartitions null
        00                   # message: empty tagged fields
        """
    )
    assert encode(request, 1) == golden
    assert decode(ConsumerGroupHeartbeatRequest, golden, 1) == request


def test_regex_cannot_be_encoded_at_v0() -> None:
    request = ConsumerGroupHeartbeatRequest(
        group_id="grp", member_id="m-1", member_epoch=JOIN_EPOCH, subscribed_topic_regex="^t.*"
    )
    with pytest.raises(ValueError, match="v0"):
        encode(request, 0)
    with pytest.raises(ValueError):
        base.encode_request(request, 0, 1, "cli")


def test_empty_topic_lists_are_not_null() -> None:
    request = ConsumerGroupHeartbeatRequest(
        group_id="grp", member_id="", member_epoch=0, subscribed_topic_names=(), topic_partitions=()
    )
    golden = h(
        """
        04 677270            # GroupId "grp"
        01                   # MemberId "" (v0: the coordinator generates one)
        00000000             # MemberEpoch 0
        00 00 ffffffff       # InstanceId, RackId null, RebalanceTimeoutMs -1
        01                   # SubscribedTopicNames: empty array (uvarint 0+1), not null
        00                   # ServerAssignor null
        01                   # TopicPartitions: empty array, not null
        00                   # message: empty tagged fields
        """
    )
    assert encode(request, 0) == golden
    decoded = decode(ConsumerGroupHeartbeatRequest, golden, 0)
    assert decoded == request
    assert decoded.subscribed_topic_names == ()
    assert decoded.topic_partitions == ()


def test_long_strings_use_a_multi_byte_varint_length() -> None:
    group = "g" * 127  # length + 1 = 128 = uvarint 80 01
    request = ConsumerGroupHeartbeatRequest(group_id=group, member_id="m", member_epoch=1)
    golden = h("80 01") + group.encode() + h("02 6d  00000001  00 00 ffffffff 00 00 00 00 00")
    assert encode(request, 1) == golden
    assert decode(ConsumerGroupHeartbeatRequest, golden, 1) == request


# --- responses: golden bytes -----------------------------------------------------------------------------------

RESPONSE_ASSIGNED = ConsumerGroupHeartbeatResponse(
    error_code=0,
    member_id="m-1",
    member_epoch=5,
    heartbeat_interval_ms=5000,
    error_message=None,
    assignment=Assignment(topic_partitions=(TopicPartitions(topic_id=TOPIC_ID, partitions=(1, 2)),)),
    throttle_time_ms=0,
)
RESPONSE_ASSIGNED_BYTES = h(
    f"""
    00000000                 # ThrottleTimeMs 0
    0000                     # ErrorCode 0
    00                       # ErrorMessage null
    04 6d2d31                # MemberId "m-1"
    00000005                 # MemberEpoch 5
    00001388                 # HeartbeatIntervalMs 5000
    01                       # Assignment: present (int8 1)
       02                    #   TopicPartitions: 1 topic
          {TOPIC_ID_HEX}     #     TopicId
          03 00000001 00000002  # Partitions [1, 2]
          00                 #     topic struct: empty tagged fields
       00                    #   Assignment struct: empty tagged fields
    00                       # message: empty tagged fields
"""
)

RESPONSE_FENCED = ConsumerGroupHeartbeatResponse(
    error_code=110,
    member_id=None,
    member_epoch=-1,
    heartbeat_interval_ms=0,
    error_message="fenced",
    assignment=None,
    throttle_time_ms=10,
)
RESPONSE_FENCED_BYTES = h(
    """
    0000000a                 # ThrottleTimeMs 10
    006e                     # ErrorCode 110 (FENCED_MEMBER_EPOCH)
    07 66656e636564          # ErrorMessage "fenced"
    00                       # MemberId null
    ffffffff                 # MemberEpoch -1
    00000000                 # HeartbeatIntervalMs 0
    ff                       # Assignment: null (int8 -1)
    00                       # message: empty tagged fields
"""
)

RESPONSE_GOLDEN = [
    pytest.param(response, v, golden, id=f"{name}-v{v}")
    for name, response, golden in [
        ("assigned", RESPONSE_ASSIGNED, RESPONSE_ASSIGNED_BYTES),
        ("fenced", RESPONSE_FENCED, RESPONSE_FENCED_BYTES),
    ]
    for v in VERSIONS
]


@pytest.mark.parametrize(("response", "version", "golden"), RESPONSE_GOLDEN)
def test_response_golden_bytes(response: ConsumerGroupHeartbeatResponse, version: int, golden: bytes) -> None:
    assert encode(response, version).hex() == golden.hex()
    assert decode(ConsumerGroupHeartbeatResponse, golden, version) == response


def test_response_with_an_empty_assignment_is_not_a_null_one() -> None:
    response = ConsumerGroupHeartbeatResponse(
        error_code=0,
        member_id="m-1",
        member_epoch=6,
        heartbeat_interval_ms=5000,
        assignment=Assignment(topic_partitions=()),
    )
    golden = h("00000000 0000 00 046d2d31 00000006 00001388  01 01 00  00")  # present, 0 topics, tags; tags
    assert encode(response, 1) == golden
    decoded = decode(ConsumerGroupHeartbeatResponse, golden, 1)
    assert decoded.assignment == Assignment(topic_partitions=())
    assert decoded == response


def test_unknown_tagged_fields_in_a_response_are_skipped() -> None:
    # the same fenced response, its last (message-level) tagged-field section now holding tag 7 with 2 bytes
    with_tags = RESPONSE_FENCED_BYTES[:-1] + h("01 07 02 abcd")
    assert decode(ConsumerGroupHeartbeatResponse, with_tags, 1) == RESPONSE_FENCED
    # and inside the topic struct of an assignment
    topic_end = RESPONSE_ASSIGNED_BYTES.index(h("03 00000001 00000002")) + 9
    inner = RESPONSE_ASSIGNED_BYTES[:topic_end] + h("01 00 01 ff") + RESPONSE_ASSIGNED_BYTES[topic_end + 1 :]
    assert decode(ConsumerGroupHeartbeatResponse, inner, 0) == RESPONSE_ASSIGNED


# --- full frames through base.encode_request / base.decode_response --------------------------------------------


@pytest.mark.parametrize(("version", "body"), [(0, DELTA_V0), (1, DELTA_V1)])
def test_encode_request_uses_request_header_v2(version: int, body: bytes) -> None:
    frame = base.encode_request(DELTA, version, 42, "cli")
    header = h(
        f"""
        0044                 # ApiKey 68
        000{version}         # ApiVersion
        0000002a             # CorrelationId 42
        0003 636c69          # ClientId "cli": a classic int16-length string even in header v2
        00                   # header: empty tagged fields
        """
    )
    assert len(header) == 14
    assert frame[:4] == (len(header) + len(body)).to_bytes(4, "big")
    assert frame[4:].hex() == (header + body).hex()


def test_encode_request_with_a_null_client_id() -> None:
    frame = base.encode_request(LEAVE, 1, 7, None)
    assert frame[4:] == h("0044 0001 00000007 ffff 00") + LEAVE_V1
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4


def test_request_frame_decodes_back() -> None:
    frame = base.encode_request(FULL_JOIN, 1, 99, "cli")
    api_key, version, correlation_id, client_id, request = base.decode_request_frame(
        frame[4:], {68: ConsumerGroupHeartbeatRequest}
    )
    assert (api_key, version, correlation_id, client_id) == (68, 1, 99, "cli")
    assert request == FULL_JOIN


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("response", "body"),
    [(RESPONSE_ASSIGNED, RESPONSE_ASSIGNED_BYTES), (RESPONSE_FENCED, RESPONSE_FENCED_BYTES)],
    ids=["assigned", "fenced"],
)
def test_decode_response_reads_response_header_v1(
    response: ConsumerGroupHeartbeatResponse, body: bytes, version: int
) -> None:
    # a frame without its size prefix: CorrelationId 42, then header v1's (empty) tagged fields
    frame = h("0000002a 00") + body
    assert base.peek_correlation_id(frame) == 42
    assert base.decode_response(frame, ConsumerGroupHeartbeatRequest, version) == response
    # a header with a tagged field is skipped too
    tagged = h("0000002a 01 03 02 abcd") + body
    assert base.decode_response(tagged, ConsumerGroupHeartbeatRequest, version) == response
    # and the test-broker side writes the very same frame
    encoded = base.encode_response(response, ConsumerGroupHeartbeatRequest, version, 42)
    assert encoded == len(frame).to_bytes(4, "big") + frame


def test_response_header_is_flexible_for_every_version() -> None:
    for v in VERSIONS:
        assert base.response_header_is_flexible(ConsumerGroupHeartbeatRequest, v)


# --- hypothesis: round-trips and truncation ---------------------------------------------------------------------

int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
text = st.text(max_size=8)
nullable_text = st.none() | text


def tuples(element: st.SearchStrategy[Any], max_size: int = 3) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.lists(element, max_size=max_size).map(tuple)


topic_partitions = st.builds(TopicPartitions, topic_id=st.uuids(), partitions=tuples(int32, 4))


def requests(version: int) -> st.SearchStrategy[ConsumerGroupHeartbeatRequest]:
    return st.builds(
        ConsumerGroupHeartbeatRequest,
        group_id=text,
        member_id=text,
        member_epoch=int32,
        instance_id=nullable_text,
        rack_id=nullable_text,
        rebalance_timeout_ms=int32,
        subscribed_topic_names=st.none() | tuples(text),
        subscribed_topic_regex=nullable_text if version >= 1 else st.none(),
        server_assignor=nullable_text,
        topic_partitions=st.none() | tuples(topic_partitions),
    )


responses = st.builds(
    ConsumerGroupHeartbeatResponse,
    error_code=int16,
    member_id=nullable_text,
    member_epoch=int32,
    heartbeat_interval_ms=int32,
    error_message=nullable_text,
    assignment=st.none() | st.builds(Assignment, topic_partitions=tuples(topic_partitions)),
    throttle_time_ms=int32,
)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_request_round_trip(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    assert decode(ConsumerGroupHeartbeatRequest, encode(request, version), version) == request
    frame = base.encode_request(request, version, 5, "c")
    assert base.decode_request_frame(frame[4:], {68: ConsumerGroupHeartbeatRequest})[4] == request


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=100, deadline=None)
@given(response=responses)
def test_response_round_trip(version: int, response: ConsumerGroupHeartbeatResponse) -> None:
    assert decode(ConsumerGroupHeartbeatResponse, encode(response, version), version) == response
    frame = base.encode_response(response, ConsumerGroupHeartbeatRequest, version, 3)
    assert base.decode_response(frame[4:], ConsumerGroupHeartbeatRequest, version) == response


@settings(max_examples=50, deadline=None)
@given(request=requests(1))
def test_v0_and_v1_differ_only_by_the_regex(request: ConsumerGroupHeartbeatRequest) -> None:
    without = ConsumerGroupHeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=None,
        server_assignor=request.server_assignor,
        topic_partitions=request.topic_partitions,
    )
    v0 = encode(without, 0)
    v1 = encode(without, 1)
    assert len(v1) == len(v0) + 1
    assert decode(ConsumerGroupHeartbeatRequest, v1, 1) == without


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=50, deadline=None)
@given(response=responses)
def test_every_truncation_of_a_response_is_a_corrupt_response(
    version: int, response: ConsumerGroupHeartbeatResponse
) -> None:
    frame = base.encode_response(response, ConsumerGroupHeartbeatRequest, version, 3)[4:]
    for end in range(len(frame)):
        with pytest.raises(CorruptResponseError):
            base.decode_response(frame[:end], ConsumerGroupHeartbeatRequest, version)
    assert base.decode_response(frame, ConsumerGroupHeartbeatRequest, version) == response


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=200, deadline=None)
@given(garbage=st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_corrupt_response(version: int, garbage: bytes) -> None:
    frame = h("00000001 00") + garbage
    try:
        response = base.decode_response(frame, ConsumerGroupHeartbeatRequest, version)
    except CorruptResponseError:
        return
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
