"""The admin client's reading of answers: a group's description (assignments, committed offsets, lag), and the
errors it raises; the description's text and JSON lines as the CLI prints them; the Fetch that reads a partition's
end and the high watermarks read from its answer."""

from __future__ import annotations

import json

import pytest

from asyncconsumer.errors import BrokerResponseError, CorruptResponseError, ErrorCode
from asyncconsumer.managers.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID
from asyncconsumer.protocol.consumer_protocol import encode_assignment
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.protocol.messages.describe_groups import DescribedGroup, DescribedGroupMember
from asyncconsumer.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from asyncconsumer.records import TopicPartition
from asyncconsumer.tools._admin_commands import group_lines
from asyncconsumer.tools.admin import GroupNotFoundError, end_offsets_fetch, group_description, high_watermarks


def _committed(*offsets: tuple[str, int, int]) -> OffsetFetchResponseGroup:
    topics: dict[str, list[OffsetFetchResponsePartition]] = {}
    for topic, partition, offset in offsets:
        topics.setdefault(topic, []).append(
            OffsetFetchResponsePartition(partition_index=partition, committed_offset=offset)
        )
    return OffsetFetchResponseGroup(
        group_id="g", topics=tuple(OffsetFetchResponseTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items())
    )


def test_group_description_decodes_assignments_and_computes_lag() -> None:
    member = DescribedGroupMember(
        member_id="m-1",
        client_id="cli",
        client_host="/10.0.0.1",
        member_metadata=b"",
        member_assignment=encode_assignment(
            ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(1, 0)),))
        ),
    )
    described = DescribedGroup(
        error_code=0,
        group_id="g",
        group_state="Stable",
        protocol_type="consumer",
        protocol_data="range",
        members=(member,),
    )
    ends = {TopicPartition("t", 0): 10, TopicPartition("t", 1): 5, TopicPartition("u", 0): 3}
    group = group_description(described, _committed(("t", 0, 7), ("t", 1, -1), ("u", 0, 3)), ends, coordinator=1)
    assert group.members[0].partitions == (TopicPartition("t", 0), TopicPartition("t", 1))
    rows = [(str(p.partition), p.committed, p.end, p.lag, p.member_id) for p in group.partitions]
    assert rows == [("t-0", 7, 10, 3, "m-1"), ("t-1", None, 5, None, "m-1"), ("u-0", 3, 3, 0, None)]
    assert group.total_lag == 3
    text = group_lines(group, "text")
    assert text[0] == (
        "group g: Stable, protocol type consumer, assignor range, coordinator node 1, 1 member(s), total lag 3"
    )
    assert "t-0,t-1" in text[3]
    assert text[6].split() == ["t", "0", "7", "10", "3", "m-1"]
    assert text[7].split() == ["t", "1", "-", "5", "-", "m-1"]
    as_json = json.loads(group_lines(group, "json")[0])
    assert as_json["members"][0]["partitions"] == [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    assert as_json["partitions"][0] == {
        "topic": "t",
        "partition": 0,
        "committed": 7,
        "log_end": 10,
        "lag": 3,
        "member_id": "m-1",
    }


def test_a_group_with_nothing_is_not_found_and_errors_are_raised() -> None:
    with pytest.raises(GroupNotFoundError):
        group_description(
            DescribedGroup(
                error_code=0, group_id="g", group_state="Dead", protocol_type="", protocol_data="", members=()
            ),
            _committed(),
            {},
            coordinator=1,
        )
    with pytest.raises(BrokerResponseError):
        group_description(
            DescribedGroup(error_code=16, group_id="g", group_state="", protocol_type="", protocol_data="", members=()),
            _committed(),
            {},
            coordinator=1,
        )


def test_the_end_offsets_fetch_is_sessionless_and_asks_for_almost_nothing() -> None:
    request = end_offsets_fetch("t", {1: 11, 0: 4})
    assert (request.session_id, request.session_epoch) == (INVALID_SESSION_ID, FINAL_EPOCH) == (0, -1)
    assert (request.min_bytes, request.max_bytes, request.isolation_level) == (0, 1, 0)
    # not 0: Tansu 0.6 answers max_wait_ms 0 with no topics at all
    assert request.max_wait_ms == 1
    assert request.forgotten_topics_data == ()
    [topic] = request.topics
    assert topic.topic == "t"
    assert [(p.partition, p.fetch_offset, p.partition_max_bytes) for p in topic.partitions] == [(0, 4, 1), (1, 11, 1)]


def _fetched(topic: str, *partitions: PartitionData, error_code: int = 0) -> FetchResponse:
    return FetchResponse(
        error_code=error_code, responses=(FetchableTopicResponse(topic=topic, partitions=tuple(partitions)),)
    )


def test_high_watermarks_are_the_ends_whatever_records_came_back() -> None:
    # Tansu answers a fetch at its LATEST (11: the last batch's base + 1) with that batch and the right watermark.
    response = _fetched(
        "t",
        PartitionData(partition_index=1, high_watermark=1),
        PartitionData(partition_index=0, high_watermark=15, records=memoryview(b"\x00" * 106)),
    )
    assert high_watermarks("t", [0, 1], response) == {0: 15, 1: 1}
    assert high_watermarks("t", [1], response) == {1: 1}  # only what was asked


def test_high_watermarks_raise_errors_and_a_partition_left_out() -> None:
    with pytest.raises(CorruptResponseError, match=r"partitions \[0\]"):
        high_watermarks("t", [0], FetchResponse())  # what Tansu answers a fetch with max_wait_ms 0
    with pytest.raises(CorruptResponseError, match=r"partitions \[1\]"):
        high_watermarks("t", [0, 1], _fetched("t", PartitionData(partition_index=0, high_watermark=3)))
    with pytest.raises(CorruptResponseError):
        high_watermarks("t", [0], _fetched("u", PartitionData(partition_index=0, high_watermark=3)))
    not_leader = _fetched("t", PartitionData(partition_index=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER))
    with pytest.raises(BrokerResponseError) as raised:
        high_watermarks("t", [0], not_leader)
    assert raised.value.retriable
    with pytest.raises(BrokerResponseError, match="high watermarks"):
        high_watermarks("t", [0], _fetched("t", error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND))
