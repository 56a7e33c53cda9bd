"""Group protocol messages: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch and the embedded consumer protocol.

Same four kinds of checks as test_messages.py: hypothesis-generated messages must encode to the very
bytes aiokafka's independent encoders produce for every (message, version) aiokafka has (and decode back from
them); flexible versions are pinned with bytes computed by hand from Kafka's JSON message definitions; every
message round-trips at every version, framed too; garbage and mutated responses fail only with
``CorruptResponseError``.
"""

from __future__ import annotations

import contextlib
import functools
import struct
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka.coordinator import protocol as ak_consumer_protocol
from aiokafka.protocol import commit as ak_commit
from aiokafka.protocol import coordination as ak_coordination
from aiokafka.protocol import group as ak_group
from aiokafka.protocol.api import RequestHeader_v1
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.consumer_protocol import Assignment, Subscription
from asyncconsumer.protocol.find_coordinator import Coordinator, FindCoordinatorRequest, FindCoordinatorResponse
from asyncconsumer.protocol.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from asyncconsumer.protocol.offsets_commit import (
    OffsetCommitPartition,
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetCommitTopicResponse,
    OffsetFetchGroupResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    OffsetFetchTopicResponse,
)
from tests.support.codec import decode, encode

REQUEST_TYPES: dict[int, type[base.Request]] = {
    int(t.API_KEY): t
    for t in (
        FindCoordinatorRequest,
        JoinGroupRequest,
        SyncGroupRequest,
        HeartbeatRequest,
        LeaveGroupRequest,
        OffsetCommitRequest,
        OffsetFetchRequest,
    )
}
COORDINATOR_NOT_AVAILABLE = 15


def versions(request_type: type[base.Request]) -> list[int]:
    return list(range(request_type.MIN_VERSION, request_type.MAX_VERSION + 1))


def h(text: str) -> bytes:
    """Hex with spaces, newlines and ``#`` comments allowed."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


# --- strategies: one per message and version, fields outside the version left at their defaults -------------

int8 = st.integers(-(2**7), 2**7 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
text = st.text(max_size=8)
nullable_text = st.none() | text
blob = st.binary(max_size=12)


def tuples(element: st.SearchStrategy[Any], max_size: int = 3, min_size: int = 0) -> st.SearchStrategy[Any]:
    return st.lists(element, min_size=min_size, max_size=max_size).map(tuple)


def since(version: int, first: int, strategy: st.SearchStrategy[Any], default: Any) -> st.SearchStrategy[Any]:
    return strategy if version >= first else st.just(default)


topic_partitions = tuples(st.tuples(text, tuples(int32)))


@functools.cache
def find_coordinator_request(v: int) -> st.SearchStrategy[FindCoordinatorRequest]:
    if v < 4:
        return st.builds(FindCoordinatorRequest, text, int8)
    # v4 decodes to the batched form.
    return st.builds(FindCoordinatorRequest, st.just(""), int8, tuples(text, min_size=1))


@functools.cache
def find_coordinator_response(v: int) -> st.SearchStrategy[FindCoordinatorResponse]:
    if v < 4:
        return st.builds(FindCoordinatorResponse, int16, int32, text, int32, nullable_text, st.just(()), int32)
    coordinator = st.builds(Coordinator, text, int32, text, int32, int16, nullable_text)
    return st.builds(FindCoordinatorResponse, coordinators=tuples(coordinator), throttle_time_ms=int32)


@functools.cache
def join_group_request(v: int) -> st.SearchStrategy[JoinGroupRequest]:
    return st.builds(
        JoinGroupRequest,
        text,
        int32,
        int32,
        text,
        text,
        tuples(st.builds(JoinGroupProtocol, text, blob)),
        since(v, 5, nullable_text, None),
        since(v, 8, nullable_text, None),
    )


@functools.cache
def join_group_response(v: int) -> st.SearchStrategy[JoinGroupResponse]:
    member = st.builds(JoinGroupMember, text, since(v, 5, nullable_text, None), blob)
    return st.builds(
        JoinGroupResponse,
        int16,
        int32,
        since(v, 7, nullable_text, None),
        nullable_text if v >= 7 else text,
        text,
        text,
        tuples(member),
        int32,
        since(v, 9, st.booleans(), False),
    )


@functools.cache
def sync_group_request(v: int) -> st.SearchStrategy[SyncGroupRequest]:
    return st.builds(
        SyncGroupRequest,
        text,
        int32,
        text,
        tuples(st.builds(SyncGroupAssignment, text, blob)),
        since(v, 3, nullable_text, None),
        since(v, 5, nullable_text, None),
        since(v, 5, nullable_text, None),
    )


@functools.cache
def sync_group_response(v: int) -> st.SearchStrategy[SyncGroupResponse]:
    return st.builds(
        SyncGroupResponse, int16, blob, int32, since(v, 5, nullable_text, None), since(v, 5, nullable_text, None)
    )


@functools.cache
def heartbeat_request(v: int) -> st.SearchStrategy[HeartbeatRequest]:
    return st.builds(HeartbeatRequest, text, int32, text, since(v, 3, nullable_text, None))


@functools.cache
def heartbeat_response(v: int) -> st.SearchStrategy[HeartbeatResponse]:
    return st.builds(HeartbeatResponse, int16, int32)


@functools.cache
def leave_group_request(v: int) -> st.SearchStrategy[LeaveGroupRequest]:
    if v < 3:
        return st.builds(LeaveGroupRequest, text, text)
    member = st.builds(LeaveGroupMember, text, nullable_text, since(v, 5, nullable_text, None))
    return st.builds(LeaveGroupRequest, text, st.just(""), tuples(member, min_size=1))  # v3+ decodes batched


@functools.cache
def leave_group_response(v: int) -> st.SearchStrategy[LeaveGroupResponse]:
    member = st.builds(LeaveGroupMemberResponse, text, nullable_text, int16)
    return st.builds(LeaveGroupResponse, int16, since(v, 3, tuples(member), ()), int32)


@functools.cache
def offset_commit_request(v: int) -> st.SearchStrategy[OffsetCommitRequest]:
    partition = st.builds(OffsetCommitPartition, int32, int64, since(v, 6, int32, -1), nullable_text)
    topic = st.builds(OffsetCommitTopic, text, tuples(partition))
    return st.builds(
        OffsetCommitRequest,
        text,
        int32,
        text,
        tuples(topic),
        since(v, 7, nullable_text, None),
        int64 if v <= 4 else st.just(-1),
    )


@functools.cache
def offset_commit_response(v: int) -> st.SearchStrategy[OffsetCommitResponse]:
    partition = st.builds(OffsetCommitPartitionResponse, int32, int16)
    topic = st.builds(OffsetCommitTopicResponse, text, tuples(partition))
    return st.builds(OffsetCommitResponse, tuples(topic), since(v, 3, int32, 0))


@functools.cache
def offset_fetch_request(v: int) -> st.SearchStrategy[OffsetFetchRequest]:
    topics = tuples(st.builds(OffsetFetchTopic, text, tuples(int32)))
    return st.builds(
        OffsetFetchRequest,
        text,
        st.none() | topics if v >= 2 else topics,
        since(v, 7, st.booleans(), False),
        since(v, 9, nullable_text, None),
        since(v, 9, int32, -1),
    )


@functools.cache
def offset_fetch_response(v: int) -> st.SearchStrategy[OffsetFetchResponse]:
    partition = st.builds(OffsetFetchPartitionResponse, int32, int64, since(v, 5, int32, -1), nullable_text, int16)
    topic = st.builds(OffsetFetchTopicResponse, text, tuples(partition))
    if v < 8:
        return st.builds(OffsetFetchResponse, tuples(topic), since(v, 2, int16, 0), since(v, 3, int32, 0))
    group = st.builds(OffsetFetchGroupResponse, text, tuples(topic, 2), int16)
    return st.builds(OffsetFetchResponse, throttle_time_ms=int32, groups=tuples(group, 2))


@functools.cache
def subscription(v: int) -> st.SearchStrategy[Subscription]:
    return st.builds(
        Subscription,
        tuples(text),
        st.none() | blob,
        since(v, 1, topic_partitions, ()),
        since(v, 2, int32, -1),
        since(v, 3, nullable_text, None),
    )


assignment = st.builds(Assignment, topic_partitions, st.none() | blob)

STRATEGIES: dict[type[base.Request], tuple[Callable[[int], Any], Callable[[int], Any]]] = {
    FindCoordinatorRequest: (find_coordinator_request, find_coordinator_response),
    JoinGroupRequest: (join_group_request, join_group_response),
    SyncGroupRequest: (sync_group_request, sync_group_response),
    HeartbeatRequest: (heartbeat_request, heartbeat_response),
    LeaveGroupRequest: (leave_group_request, leave_group_response),
    OffsetCommitRequest: (offset_commit_request, offset_commit_response),
    OffsetFetchRequest: (offset_fetch_request, offset_fetch_response),
}

ALL_VERSIONS = [
    pytest.param(request_type, v, id=f"{request_type.__name__}-v{v}")
    for request_type in STRATEGIES
    for v in versions(request_type)
]


def test_request_classes_declare_the_contract() -> None:
    expected: dict[type[base.Request], tuple[base.ApiKey, int, int, int]] = {
        FindCoordinatorRequest: (base.ApiKey.FIND_COORDINATOR, 1, 4, 3),
        JoinGroupRequest: (base.ApiKey.JOIN_GROUP, 2, 9, 6),
        SyncGroupRequest: (base.ApiKey.SYNC_GROUP, 1, 5, 4),
        HeartbeatRequest: (base.ApiKey.HEARTBEAT, 1, 4, 4),
        LeaveGroupRequest: (base.ApiKey.LEAVE_GROUP, 1, 5, 4),
        OffsetCommitRequest: (base.ApiKey.OFFSET_COMMIT, 2, 9, 8),
        OffsetFetchRequest: (base.ApiKey.OFFSET_FETCH, 1, 9, 6),
    }
    for t, contract in expected.items():
        declared = (t.API_KEY, t.MIN_VERSION, t.MAX_VERSION, t.FLEXIBLE_FROM)
        assert declared == contract
        assert t.RESPONSE.__name__ == t.__name__.replace("Request", "Response")


# --- 1. cross-checks against aiokafka's independent encoders -------------------------------------------------


def ak_find_coordinator_request(req: FindCoordinatorRequest, v: int) -> Any:
    return getattr(ak_coordination, f"FindCoordinatorRequest_v{v}")(req.key, req.key_type)


def ak_find_coordinator_response(resp: FindCoordinatorResponse, v: int) -> Any:
    return getattr(ak_coordination, f"FindCoordinatorResponse_v{v}")(
        resp.throttle_time_ms, resp.error_code, resp.error_message, resp.node_id, resp.host, resp.port
    )


def ak_join_group_request(req: JoinGroupRequest, v: int) -> Any:
    fields: list[Any] = [req.group_id, req.session_timeout_ms, req.rebalance_timeout_ms, req.member_id]
    if v >= 5:
        fields.append(req.group_instance_id)
    fields += [req.protocol_type, [(p.name, p.metadata) for p in req.protocols]]
    return getattr(ak_group, f"JoinGroupRequest_v{v}")(*fields)


def ak_join_group_response(resp: JoinGroupResponse, v: int) -> Any:
    members = [
        (m.member_id, m.group_instance_id, m.metadata) if v >= 5 else (m.member_id, m.metadata) for m in resp.members
    ]
    return getattr(ak_group, f"JoinGroupResponse_v{v}")(
        resp.throttle_time_ms,
        resp.error_code,
        resp.generation_id,
        resp.protocol_name,
        resp.leader,
        resp.member_id,
        members,
    )


def ak_sync_group_request(req: SyncGroupRequest, v: int) -> Any:
    fields: list[Any] = [req.group_id, req.generation_id, req.member_id]
    if v >= 3:
        fields.append(req.group_instance_id)
    fields.append([(a.member_id, a.assignment) for a in req.assignments])
    return getattr(ak_group, f"SyncGroupRequest_v{v}")(*fields)


def ak_sync_group_response(resp: SyncGroupResponse, v: int) -> Any:
    return getattr(ak_group, f"SyncGroupResponse_v{v}")(resp.throttle_time_ms, resp.error_code, resp.assignment)


def ak_heartbeat_request(req: HeartbeatRequest, v: int) -> Any:
    return getattr(ak_group, f"HeartbeatRequest_v{v}")(req.group_id, req.generation_id, req.member_id)


def ak_heartbeat_response(resp: HeartbeatResponse, v: int) -> Any:
    return getattr(ak_group, f"HeartbeatResponse_v{v}")(resp.throttle_time_ms, resp.error_code)


def ak_leave_group_request(req: LeaveGroupRequest, v: int) -> Any:
    return getattr(ak_group, f"LeaveGroupRequest_v{v}")(req.group_id, req.member_id)


def ak_leave_group_response(resp: LeaveGroupResponse, v: int) -> Any:
    return getattr(ak_group, f"LeaveGroupResponse_v{v}")(resp.throttle_time_ms, resp.error_code)


def ak_offset_commit_request(req: OffsetCommitRequest, v: int) -> Any:
    topics = [
        (t.name, [(p.partition_index, p.committed_offset, p.committed_metadata) for p in t.partitions])
        for t in req.topics
    ]
    return getattr(ak_commit, f"OffsetCommitRequest_v{v}")(
        req.group_id, req.generation_id_or_member_epoch, req.member_id, req.retention_time_ms, topics
    )


def ak_offset_commit_response(resp: OffsetCommitResponse, v: int) -> Any:
    topics = [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in resp.topics]
    cls = getattr(ak_commit, f"OffsetCommitResponse_v{v}")
    return cls(resp.throttle_time_ms, topics) if v >= 3 else cls(topics)


def ak_offset_fetch_request(req: OffsetFetchRequest, v: int) -> Any:
    topics = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
    return getattr(ak_commit, f"OffsetFetchRequest_v{v}")(req.group_id, topics)


def ak_offset_fetch_response(resp: OffsetFetchResponse, v: int) -> Any:
    topics = [
        (t.name, [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in t.partitions])
        for t in resp.topics
    ]
    cls = getattr(ak_commit, f"OffsetFetchResponse_v{v}")
    if v >= 3:
        return cls(resp.throttle_time_ms, topics, resp.error_code)
    if v == 2:
        return cls(topics, resp.error_code)
    return cls(topics)


# (request type, request converter, request versions, response converter, response versions): every version
# aiokafka 0.14 defines within our range. aiokafka has no flexible version of any of these messages.
Converter = Callable[[Any, int], Any]
AIOKAFKA: list[tuple[type[base.Request], Converter, list[int], Converter, list[int]]] = [
    (FindCoordinatorRequest, ak_find_coordinator_request, [1], ak_find_coordinator_response, [1]),
    (JoinGroupRequest, ak_join_group_request, [2, 5], ak_join_group_response, [2, 5]),
    (SyncGroupRequest, ak_sync_group_request, [1, 3], ak_sync_group_response, [1, 3]),
    (HeartbeatRequest, ak_heartbeat_request, [1], ak_heartbeat_response, [1]),
    (LeaveGroupRequest, ak_leave_group_request, [1], ak_leave_group_response, [1]),
    (OffsetCommitRequest, ak_offset_commit_request, [2, 3], ak_offset_commit_response, [2, 3]),
    (OffsetFetchRequest, ak_offset_fetch_request, [1, 2, 3], ak_offset_fetch_response, [1, 2, 3]),
]
AIOKAFKA_REQUESTS = [pytest.param(t, conv, v, id=f"{t.__name__}-v{v}") for t, conv, vs, _, _ in AIOKAFKA for v in vs]
AIOKAFKA_RESPONSES = [
    pytest.param(t, conv, v, id=f"{t.RESPONSE.__name__}-v{v}") for t, _, _, conv, vs in AIOKAFKA for v in vs
]


@pytest.mark.parametrize(("request_type", "to_aiokafka", "version"), AIOKAFKA_REQUESTS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(
    request_type: type[base.Request], to_aiokafka: Converter, version: int, data: st.DataObject
) -> None:
    request = data.draw(STRATEGIES[request_type][0](version))
    theirs = to_aiokafka(request, version)
    assert encode(request, version) == theirs.encode()
    assert decode(request_type, theirs.encode(), version) == request
    header = RequestHeader_v1(theirs, correlation_id=77, client_id="cid").encode()
    frame = header + theirs.encode()
    assert base.encode_request(request, version, 77, "cid") == struct.pack(">i", len(frame)) + frame


@pytest.mark.parametrize(("request_type", "to_aiokafka", "version"), AIOKAFKA_RESPONSES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(
    request_type: type[base.Request], to_aiokafka: Converter, version: int, data: st.DataObject
) -> None:
    response = data.draw(STRATEGIES[request_type][1](version))
    theirs = to_aiokafka(response, version)
    their_bytes = theirs.encode()
    assert decode(request_type.RESPONSE, their_bytes, version) == response
    ours = encode(response, version)
    assert ours == their_bytes
    assert type(theirs).decode(ours) == theirs


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_consumer_protocol_v0_matches_aiokafka(data: st.DataObject) -> None:
    sub = data.draw(subscription(0))
    theirs = ak_consumer_protocol.ConsumerProtocolMemberMetadata(0, list(sub.topics), sub.user_data).encode()
    assert sub.encode(0) == theirs
    assert Subscription.decode(theirs) == sub
    # aiokafka's JoinGroup-level ProtocolMetadata is the same v0 layout.
    assert ak_group.ProtocolMetadata(0, list(sub.topics), sub.user_data).encode() == theirs

    asg = data.draw(assignment)
    pairs = [(topic, list(partitions)) for topic, partitions in asg.partitions]
    theirs = ak_consumer_protocol.ConsumerProtocolMemberAssignment(0, pairs, asg.user_data).encode()
    assert asg.encode(0) == theirs
    assert Assignment.decode(theirs) == asg
    assert ak_group.MemberAssignment(0, pairs, asg.user_data).encode() == theirs


# --- 2. flexible versions: bytes computed by hand from the JSON definitions ----------------------------------


def test_find_coordinator_v3_golden() -> None:
    request = h("02 67  00  00")  # Key "g", KeyType 0 (group), tagged fields
    assert encode(FindCoordinatorRequest("g"), 3) == request
    assert decode(FindCoordinatorRequest, request, 3) == FindCoordinatorRequest("g")
    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        00                          # ErrorMessage: null
        00 00 00 01                 # NodeId 1
        02 68                       # Host "h"
        00 00 23 84                 # Port 9092
        00                          # tagged fields
        """
    )
    value = FindCoordinatorResponse(0, 1, "h", 9092)
    assert encode(value, 3) == response
    assert decode(FindCoordinatorResponse, response, 3) == value


def test_find_coordinator_v4_golden() -> None:
    request = h(
        """
        00                          # KeyType 0: declared before CoordinatorKeys, so written first
        02 02 67                    # CoordinatorKeys: compact array of 1, "g"
        00                          # tagged fields
        """
    )
    assert encode(FindCoordinatorRequest("g"), 4) == request
    assert encode(FindCoordinatorRequest("", 0, ("g",)), 4) == request
    assert decode(FindCoordinatorRequest, request, 4) == FindCoordinatorRequest("", 0, ("g",))
    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        02                          # Coordinators: compact array of 1
          02 67                     #   Key "g"
          00 00 00 01               #   NodeId 1
          02 68                     #   Host "h"
          00 00 23 84               #   Port 9092
          00 00                     #   ErrorCode
          00                        #   ErrorMessage: null
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value = FindCoordinatorResponse(coordinators=(Coordinator("g", 1, "h", 9092),))
    assert encode(value, 4) == response
    assert decode(FindCoordinatorResponse, response, 4) == value


def test_join_group_v9_golden() -> None:
    request = h(
        """
        02 67                       # GroupId "g"
        00 00 af c8                 # SessionTimeoutMs 45000
        00 04 93 e0                 # RebalanceTimeoutMs 300000
        01                          # MemberId ""
        00                          # GroupInstanceId: null
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        02                          # Protocols: compact array of 1
          06 72 61 6e 67 65         #   Name "range"
          03 00 01                  #   Metadata: compact bytes, 2 + 1
          00                        #   tagged fields
        02 72                       # Reason "r"
        00                          # tagged fields
        """
    )
    value = JoinGroupRequest("g", 45000, 300000, "", "consumer", (JoinGroupProtocol("range", b"\x00\x01"),), None, "r")
    assert encode(value, 9) == request
    assert decode(JoinGroupRequest, request, 9) == value

    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        00 00 00 03                 # GenerationId 3
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        06 72 61 6e 67 65           # ProtocolName "range"
        03 6d 31                    # Leader "m1"
        01                          # SkipAssignment true (sits between Leader and MemberId)
        03 6d 31                    # MemberId "m1"
        02                          # Members: compact array of 1
          03 6d 31                  #   MemberId "m1"
          02 69                     #   GroupInstanceId "i"
          02 ab                     #   Metadata: 1 byte
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value_r = JoinGroupResponse(
        0, 3, "consumer", "range", "m1", "m1", (JoinGroupMember("m1", "i", b"\xab"),), skip_assignment=True
    )
    assert encode(value_r, 9) == response
    assert decode(JoinGroupResponse, response, 9) == value_r


def test_sync_group_v5_golden() -> None:
    request = h(
        """
        02 67                       # GroupId "g"
        00 00 00 03                 # GenerationId 3
        03 6d 31                    # MemberId "m1"
        00                          # GroupInstanceId: null
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        06 72 61 6e 67 65           # ProtocolName "range"
        02                          # Assignments: compact array of 1
          03 6d 31                  #   MemberId "m1"
          02 01                     #   Assignment: 1 byte
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value = SyncGroupRequest("g", 3, "m1", (SyncGroupAssignment("m1", b"\x01"),), None, "consumer", "range")
    assert encode(value, 5) == request
    assert decode(SyncGroupRequest, request, 5) == value

    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        09 63 6f 6e 73 75 6d 65 72  # ProtocolType "consumer"
        06 72 61 6e 67 65           # ProtocolName "range"
        03 01 02                    # Assignment: 2 bytes
        00                          # tagged fields
        """
    )
    value_r = SyncGroupResponse(0, b"\x01\x02", 0, "consumer", "range")
    assert encode(value_r, 5) == response
    assert decode(SyncGroupResponse, response, 5) == value_r


def test_heartbeat_v4_golden() -> None:
    request = h("02 67  00 00 00 03  03 6d 31  02 69  00")  # "g", generation 3, "m1", instance "i", tags
    assert encode(HeartbeatRequest("g", 3, "m1", "i"), 4) == request
    assert decode(HeartbeatRequest, request, 4) == HeartbeatRequest("g", 3, "m1", "i")
    response = h("00 00 00 05  00 1b  00")  # throttle 5, REBALANCE_IN_PROGRESS (27), tags
    assert encode(HeartbeatResponse(27, 5), 4) == response
    assert decode(HeartbeatResponse, response, 4) == HeartbeatResponse(27, 5)


def test_leave_group_v4_v5_golden() -> None:
    v5 = h(
        """
        02 67                       # GroupId "g"
        02                          # Members: compact array of 1
          03 6d 31                  #   MemberId "m1"
          02 69                     #   GroupInstanceId "i"
          04 62 79 65               #   Reason "bye" (v5+)
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value = LeaveGroupRequest("g", members=(LeaveGroupMember("m1", "i", "bye"),))
    assert encode(value, 5) == v5
    assert decode(LeaveGroupRequest, v5, 5) == value
    # The single-member form is written as a one-member batch.
    v4 = h("02 67  02 03 6d 31 00 00  00")  # "g", [{"m1", null instance, tags}], tags
    assert encode(LeaveGroupRequest("g", "m1"), 4) == v4
    assert decode(LeaveGroupRequest, v4, 4) == LeaveGroupRequest("g", "", (LeaveGroupMember("m1"),))

    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        00 00                       # ErrorCode
        02                          # Members: compact array of 1
          03 6d 31                  #   MemberId "m1"
          00                        #   GroupInstanceId: null
          00 19                     #   ErrorCode 25 (UNKNOWN_MEMBER_ID)
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value_r = LeaveGroupResponse(0, (LeaveGroupMemberResponse("m1", None, 25),))
    for version in (4, 5):
        assert encode(value_r, version) == response
        assert decode(LeaveGroupResponse, response, version) == value_r


def test_offset_commit_v8_v9_golden() -> None:
    request = h(
        """
        02 67                       # GroupId "g"
        00 00 00 03                 # GenerationIdOrMemberEpoch 3
        03 6d 31                    # MemberId "m1"
        00                          # GroupInstanceId: null (no RetentionTimeMs after v4)
        02                          # Topics: compact array of 1
          02 74                     #   Name "t"
          02                        #   Partitions: compact array of 1
            00 00 00 00             #     PartitionIndex 0
            00 00 00 00 00 00 00 2a #     CommittedOffset 42
            00 00 00 05             #     CommittedLeaderEpoch 5
            01                      #     CommittedMetadata ""
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value = OffsetCommitRequest("g", 3, "m1", (OffsetCommitTopic("t", (OffsetCommitPartition(0, 42, 5),)),))
    response = h(
        """
        00 00 00 00                 # ThrottleTimeMs
        02                          # Topics: compact array of 1
          02 74                     #   Name "t"
          02                        #   Partitions: compact array of 1
            00 00 00 00             #     PartitionIndex 0
            00 00                   #     ErrorCode
            00                      #     tagged fields
          00                        #   tagged fields
        00                          # tagged fields
        """
    )
    value_r = OffsetCommitResponse((OffsetCommitTopicResponse("t", (OffsetCommitPartitionResponse(0, 0),)),))
    for version in (8, 9):  # v9 only changes what GenerationIdOrMemberEpoch may mean
        assert encode(value, version) == request
        assert decode(OffsetCommitRequest, request, version) == value
        assert encode(value_r, version) == response
        assert decode(OffsetCommitResponse, response, version) == value_r


def test_offset_fetch_v6_to_v9_request_golden() -> None:
    v6 = h("02 67  00  00")  # GroupId "g", Topics: null (all), tags
    assert encode(OffsetFetchRequest("g", None), 6) == v6
    assert decode(OffsetFetchRequest, v6, 6) == OffsetFetchRequest("g", None)
    v8 = h(
        """
        02                          # Groups: compact array of 1
          02 67                     #   GroupId "g"
          02                        #   Topics: compact array of 1
            02 74                   #     Name "t"
            03 00 00 00 00 00 00 00 01  # PartitionIndexes [0, 1]
            00                      #     tagged fields
          00                        #   tagged fields
        01                          # RequireStable true
        00                          # tagged fields
        """
    )
    value = OffsetFetchRequest("g", (OffsetFetchTopic("t", (0, 1)),), require_stable=True)
    assert encode(value, 8) == v8
    assert decode(OffsetFetchRequest, v8, 8) == value
    v9 = h(
        """
        02                          # Groups: compact array of 1
          02 67                     #   GroupId "g"
          03 6d 31                  #   MemberId "m1" (v9+)
          00 00 00 05               #   MemberEpoch 5 (v9+)
          00                        #   Topics: null (all)
          00                        #   tagged fields
        00                          # RequireStable false
        00                          # tagged fields
        """
    )
    value = OffsetFetchRequest("g", None, member_id="m1", member_epoch=5)
    assert encode(value, 9) == v9
    assert decode(OffsetFetchRequest, v9, 9) == value


OFFSET_FETCH_PARTITION = h(
    """
    00 00 00 00                     # PartitionIndex 0
    00 00 00 00 00 00 00 2a         # CommittedOffset 42
    00 00 00 05                     # CommittedLeaderEpoch 5
    00                              # Metadata: null
    00 00                           # ErrorCode
    00                              # tagged fields
    """
)


def test_offset_fetch_v7_and_v8_response_golden() -> None:
    topic = OffsetFetchTopicResponse("t", (OffsetFetchPartitionResponse(0, 42, 5, None, 0),))
    v7 = (
        h("00 00 00 00  02  02 74  02")  # throttle, Topics [1], Name "t", Partitions [1]
        + OFFSET_FETCH_PARTITION
        + h("00  00 0e  00")  # topic tags, top-level ErrorCode 14 (COORDINATOR_LOAD_IN_PROGRESS), tags
    )
    value7 = OffsetFetchResponse((topic,), error_code=14)
    assert encode(value7, 7) == v7
    assert decode(OffsetFetchResponse, v7, 7) == value7
    v8 = (
        h("00 00 00 00  02  02 67  02  02 74  02")  # throttle, Groups [1], "g", Topics [1], "t", Partitions [1]
        + OFFSET_FETCH_PARTITION
        + h("00  00 0e  00  00")  # topic tags, group ErrorCode 14 (after the topics), group tags, tags
    )
    value8 = OffsetFetchResponse(groups=(OffsetFetchGroupResponse("g", (topic,), 14),))
    assert encode(value8, 8) == v8
    assert decode(OffsetFetchResponse, v8, 8) == value8
    # One view over both layouts.
    assert value7.partitions_for("g") == value8.partitions_for("g") == OffsetFetchGroupResponse("g", (topic,), 14)


def test_consumer_protocol_v3_golden() -> None:
    sub = h(
        """
        00 03                       # version 3
        00 00 00 01  00 01 74       # Topics ["t"]
        ff ff ff ff                 # UserData: null
        00 00 00 01                 # OwnedPartitions: 1
          00 01 74                  #   Topic "t"
          00 00 00 01 00 00 00 00   #   Partitions [0]
        00 00 00 07                 # GenerationId 7
        00 01 72                    # RackId "r"
        """
    )
    value = Subscription(("t",), None, (("t", (0,)),), 7, "r")
    assert value.encode(3) == value.encode() == sub
    assert Subscription.decode(sub) == value
    asg = h(
        """
        00 03                       # version 3
        00 00 00 01                 # AssignedPartitions: 1
          00 01 74                  #   Topic "t"
          00 00 00 02 00 00 00 00 00 00 00 01  # Partitions [0, 1]
        00 00 00 01 75              # UserData b"u"
        """
    )
    value_a = Assignment((("t", (0, 1)),), b"u")
    assert value_a.encode(3) == value_a.encode() == asg
    assert Assignment.decode(asg) == value_a


# --- uniform views and conveniences ---------------------------------------------------------------------------


def test_find_coordinator_for_key() -> None:
    single = FindCoordinatorResponse(0, 1, "h", 9092)
    assert single.for_key("g") == Coordinator("g", 1, "h", 9092)
    failed = FindCoordinatorResponse(15, -1, "", -1, "loading")
    assert failed.for_key("g") == Coordinator("g", -1, "", -1, 15, "loading")
    batched = FindCoordinatorResponse(coordinators=(Coordinator("a", 1, "h", 1), Coordinator("g", 2, "k", 2)))
    assert batched.for_key("g") == Coordinator("g", 2, "k", 2)
    assert batched.for_key("x").error_code == COORDINATOR_NOT_AVAILABLE
    assert FindCoordinatorResponse().for_key("g").error_code == COORDINATOR_NOT_AVAILABLE  # v4 with no answers


def test_find_coordinator_request_keys() -> None:
    assert FindCoordinatorRequest("g").keys == ("g",)
    assert FindCoordinatorRequest("", 0, ("a", "b")).keys == ("a", "b")
    assert encode(FindCoordinatorRequest("", 1, ("t",)), 2) == encode(FindCoordinatorRequest("t", 1), 2)
    with pytest.raises(ValueError, match="one key"):
        encode(FindCoordinatorRequest("", 0, ("a", "b")), 3)


def test_leave_group_single_and_batched_forms() -> None:
    assert encode(LeaveGroupRequest("g", "", (LeaveGroupMember("m"),)), 2) == encode(LeaveGroupRequest("g", "m"), 2)
    with pytest.raises(ValueError, match="one member"):
        encode(LeaveGroupRequest("g", members=(LeaveGroupMember("a"), LeaveGroupMember("b"))), 2)


def test_offset_fetch_partitions_for_a_missing_group_is_retriable() -> None:
    other = OffsetFetchResponse(groups=(OffsetFetchGroupResponse("other", ()),))
    assert other.partitions_for("g") == OffsetFetchGroupResponse("g", (), COORDINATOR_NOT_AVAILABLE)


def test_offset_fetch_v1_cannot_ask_for_all_topics() -> None:
    with pytest.raises(ValueError, match="v2"):
        encode(OffsetFetchRequest("g", None), 1)


def test_offset_fetch_v8_request_with_several_groups_is_rejected() -> None:
    two_groups = h("03  02 67 00 00  02 68 00 00  00  00")
    with pytest.raises(CorruptResponseError):
        decode(OffsetFetchRequest, two_groups, 8)


def test_subscription_from_a_newer_version_reads_known_fields() -> None:
    value = Subscription(("t",), b"u", (("t", (1,)),), 4, "r")
    newer = struct.pack(">h", 7) + value.encode(3)[2:] + b"\x00\x01future fields"
    assert Subscription.decode(newer) == value
    # Older layouts ignore trailing bytes as well, as Kafka's reader does.
    assert Subscription.decode(value.encode(0) + b"\xff\xff") == Subscription(("t",), b"u")
    asg = Assignment((("t", (0,)),))
    assert Assignment.decode(struct.pack(">h", 9) + asg.encode(3)[2:] + b"more") == asg


def test_consumer_protocol_edge_cases() -> None:
    assert Assignment.decode(b"") == Assignment(())
    with pytest.raises(CorruptResponseError):
        Subscription.decode(b"")
    with pytest.raises(CorruptResponseError):
        Subscription.decode(h("ff ff  00 00 00 00  ff ff ff ff"))  # version -1
    with pytest.raises(CorruptResponseError):
        Assignment.decode(h("00 00  00 00 00 01  00 02 ff fe  00 00 00 00  ff ff ff ff"))  # invalid UTF-8
    with pytest.raises(ValueError, match="outside"):
        Subscription(()).encode(4)
    with pytest.raises(ValueError, match="outside"):
        Assignment(()).encode(-1)


# --- 3. round-trips for every message at every version -------------------------------------------------------


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(request_type: type[base.Request], version: int, data: st.DataObject) -> None:
    request_strategy, response_strategy = STRATEGIES[request_type]
    request = data.draw(request_strategy(version), label="request")
    response = data.draw(response_strategy(version), label="response")

    assert decode(request_type, encode(request, version), version) == request
    assert decode(request_type.RESPONSE, encode(response, version), version) == response

    frame = base.encode_request(request, version, 1234, "client")
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    assert base.decode_request_frame(frame[4:], REQUEST_TYPES) == (
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


@pytest.mark.parametrize("version", range(4))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_consumer_protocol_round_trip(version: int, data: st.DataObject) -> None:
    sub = data.draw(subscription(version))
    encoded = sub.encode(version)
    assert struct.unpack_from(">h", encoded)[0] == version
    assert Subscription.decode(encoded) == sub
    assert Subscription.decode(memoryview(encoded)) == sub
    asg = data.draw(assignment)
    assert Assignment.decode(asg.encode(version)) == asg


# --- 4. fuzz: garbage and truncated responses fail only with CorruptResponseError ----------------------------


def decode_or_corrupt(frame: bytes, request_type: type[base.Request], version: int) -> None:
    with contextlib.suppress(CorruptResponseError):
        base.decode_response(frame, request_type, version)


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(
    request_type: type[base.Request], version: int, data: st.DataObject
) -> None:
    garbage = data.draw(st.binary(max_size=64), label="garbage")
    decode_or_corrupt(garbage, request_type, version)

    response = data.draw(STRATEGIES[request_type][1](version), label="response")
    frame = base.encode_response(response, request_type, version, 1)[4:]
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    decode_or_corrupt(frame[:cut], request_type, version)

    rnd = data.draw(st.randoms(use_true_random=False), label="mutations")
    mutated = bytearray(frame)
    for _ in range(rnd.randint(1, 4)):
        mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
    decode_or_corrupt(bytes(mutated), request_type, version)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fuzzed_consumer_protocol_raises_only_corrupt_response_error(data: st.DataObject) -> None:
    version = data.draw(st.integers(0, 3), label="version")
    for encoded, decoder in (
        (data.draw(subscription(version)).encode(version), Subscription.decode),
        (data.draw(assignment).encode(version), Assignment.decode),
    ):
        candidates = [data.draw(st.binary(max_size=48), label="garbage"), encoded[: data.draw(st.integers(0, 40))]]
        rnd = data.draw(st.randoms(use_true_random=False), label="mutations")
        mutated = bytearray(encoded)
        for _ in range(rnd.randint(1, 4)):
            mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
        candidates.append(bytes(mutated))
        for candidate in candidates:
            with contextlib.suppress(CorruptResponseError):
                decoder(candidate)


TOPIC = OffsetFetchTopicResponse("t", (OffsetFetchPartitionResponse(0, 42, 5, "m", 0),))
CONCRETE_RESPONSES: dict[type[base.Request], Callable[[int], base.Response]] = {
    FindCoordinatorRequest: lambda v: FindCoordinatorResponse(
        0, 1, "h", 9092, "e", (Coordinator("g", 1, "h", 9092, 0, "e"),) if v >= 4 else ()
    ),
    JoinGroupRequest: lambda v: JoinGroupResponse(
        0, 1, "consumer", "range", "m", "m", (JoinGroupMember("m", "i", b"x"),), 0, True
    ),
    SyncGroupRequest: lambda v: SyncGroupResponse(0, b"x", 0, "consumer", "range"),
    HeartbeatRequest: lambda v: HeartbeatResponse(0),
    LeaveGroupRequest: lambda v: LeaveGroupResponse(0, (LeaveGroupMemberResponse("m", "i", 0),)),
    OffsetCommitRequest: lambda v: OffsetCommitResponse(
        (OffsetCommitTopicResponse("t", (OffsetCommitPartitionResponse(0, 0),)),)
    ),
    OffsetFetchRequest: lambda v: (
        OffsetFetchResponse(groups=(OffsetFetchGroupResponse("g", (TOPIC,)),))
        if v >= 8
        else OffsetFetchResponse((TOPIC,))
    ),
}


@pytest.mark.parametrize(("request_type", "version"), ALL_VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(request_type: type[base.Request], version: int) -> None:
    response = CONCRETE_RESPONSES[request_type](version)
    frame = base.encode_response(response, request_type, version, 1)[4:]
    for cut in range(len(frame)):
        with pytest.raises(CorruptResponseError):
            base.decode_response(frame[:cut], request_type, version)
