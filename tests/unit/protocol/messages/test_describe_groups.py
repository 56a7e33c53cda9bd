"""DescribeGroups (API 15): aiokafka's independent encoders agree with ours for v0-3, v4 and v5 (flexible) are
pinned with bytes computed by hand from Kafka's JSON definitions, every version round-trips (framed too), and
garbage answers fail only with ``CorruptResponseError``."""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import pytest
from aiokafka.protocol import admin as ak_admin
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol import base
from asyncconsumer.protocol.consumer_protocol import decode_assignment, encode_assignment
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from tests.support.codec import decode, encode
from tests.support.protocol import blob, h, int16, int32, text, tuples, versions

VERSIONS = versions(DescribeGroupsRequest)


@functools.cache
def request(v: int) -> st.SearchStrategy[DescribeGroupsRequest]:
    return st.builds(
        DescribeGroupsRequest,
        groups=tuples(text),
        include_authorized_operations=st.booleans() if v >= 3 else st.just(False),
    )


@functools.cache
def response(v: int) -> st.SearchStrategy[DescribeGroupsResponse]:
    member = st.builds(
        DescribedGroupMember,
        member_id=text,
        client_id=text,
        client_host=text,
        member_metadata=blob,
        member_assignment=blob,
        group_instance_id=(st.none() | text) if v >= 4 else st.just(None),
    )
    group = st.builds(
        DescribedGroup,
        error_code=int16,
        group_id=text,
        group_state=text,
        protocol_type=text,
        protocol_data=text,
        members=tuples(member),
        authorized_operations=int32 if v >= 3 else st.just(-(2**31)),
    )
    return st.builds(DescribeGroupsResponse, groups=tuples(group), throttle_time_ms=int32 if v >= 1 else st.just(0))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_version_round_trips(version: int, data: st.DataObject) -> None:
    req = data.draw(request(version))
    assert decode(DescribeGroupsRequest, encode(req, version), version) == req
    resp = data.draw(response(version))
    assert decode(DescribeGroupsResponse, encode(resp, version), version) == resp
    frame = base.encode_response(resp, DescribeGroupsRequest, version, 9)
    assert base.peek_correlation_id(frame[4:]) == 9
    assert base.decode_response(frame[4:], DescribeGroupsRequest, version) == resp
    framed = base.encode_request(req, version, 5, "cid")
    assert base.decode_request_frame(framed[4:], {15: DescribeGroupsRequest})[4] == req


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    req = data.draw(request(version))
    ak_request = getattr(ak_admin, f"DescribeGroupsRequest_v{version}")
    args: list[Any] = [list(req.groups)] + ([req.include_authorized_operations] if version >= 3 else [])
    assert encode(req, version) == ak_request(*args).encode()

    resp = data.draw(response(version))
    ak_response = getattr(ak_admin, f"DescribeGroupsResponse_v{version}")
    groups = [
        (
            g.error_code,
            g.group_id,
            g.group_state,
            g.protocol_type,
            g.protocol_data,
            [(m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment) for m in g.members],
            *([g.authorized_operations] if version >= 3 else []),
        )
        for g in resp.groups
    ]
    theirs = ak_response(*([resp.throttle_time_ms] if version >= 1 else []), groups).encode()
    assert encode(resp, version) == theirs
    assert decode(DescribeGroupsResponse, theirs, version) == resp


def test_v5_request_bytes_by_hand() -> None:
    req = DescribeGroupsRequest(groups=("g1",), include_authorized_operations=True)
    assert encode(req, 5) == h(
        """
        02 03 6731   # Groups: compact array of 1, compact string "g1"
        01           # IncludeAuthorizedOperations
        00           # tagged fields
        """
    )


def test_v5_response_bytes_by_hand() -> None:
    member = DescribedGroupMember(
        member_id="m",
        client_id="c",
        client_host="/h",
        member_metadata=b"\x01",
        member_assignment=b"\x02\x03",
        group_instance_id=None,
    )
    group = DescribedGroup(
        error_code=0,
        group_id="g",
        group_state="Stable",
        protocol_type="consumer",
        protocol_data="range",
        members=(member,),
        authorized_operations=-(2**31),
    )
    resp = DescribeGroupsResponse(groups=(group,), throttle_time_ms=7)
    expected = h(
        """
        00000007                 # ThrottleTimeMs
        02                       # Groups: compact array of 1
          0000                   # ErrorCode
          02 67                  # GroupId "g"
          07 537461626c65        # GroupState "Stable"
          09 636f6e73756d6572    # ProtocolType "consumer"
          06 72616e6765          # ProtocolData "range"
          02                     # Members: compact array of 1
            02 6d                # MemberId "m"
            00                   # GroupInstanceId null
            02 63                # ClientId "c"
            03 2f68              # ClientHost "/h"
            02 01                # MemberMetadata
            03 0203              # MemberAssignment
            00                   # member tagged fields
          80000000               # AuthorizedOperations
          00                     # group tagged fields
        00                       # tagged fields
        """
    )
    assert encode(resp, 5) == expected
    assert decode(DescribeGroupsResponse, expected, 5) == resp


def test_v4_member_carries_its_instance_id() -> None:
    member = DescribedGroupMember(
        member_id="m", client_id="c", client_host="h", member_metadata=b"", member_assignment=b"", group_instance_id="i"
    )
    body = encode(member, 4)
    assert body == h("0001 6d  0001 69  0001 63  0001 68  00000000  00000000")
    assert decode(DescribedGroupMember, body, 4) == member
    assert encode(member, 3) == h("0001 6d  0001 63  0001 68  00000000  00000000")


def test_a_member_assignment_decodes_with_the_consumer_protocol() -> None:
    assignment = ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 2)),))
    member = DescribedGroupMember(
        member_id="m",
        client_id="c",
        client_host="h",
        member_metadata=b"",
        member_assignment=encode_assignment(assignment),
    )
    decoded = decode(
        DescribeGroupsResponse,
        encode(
            DescribeGroupsResponse(
                groups=(
                    DescribedGroup(
                        error_code=0,
                        group_id="g",
                        group_state="Stable",
                        protocol_type="consumer",
                        protocol_data="range",
                        members=(member,),
                    ),
                )
            ),
            5,
        ),
        5,
    )
    assert (
        decode_assignment(decoded.groups[0].members[0].member_assignment).assigned_partitions
        == assignment.assigned_partitions
    )


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=60, deadline=None)
@given(garbage=st.binary(max_size=64))
def test_garbage_fails_only_with_corrupt_response(version: int, garbage: bytes) -> None:
    frame = b"\x00\x00\x00\x01" + garbage
    with contextlib.suppress(CorruptResponseError):
        base.decode_response(frame, DescribeGroupsRequest, version)
