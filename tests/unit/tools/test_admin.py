"""The admin client's reading of answers: a group's description (assignments, committed offsets, lag), and the
errors it raises; the description's text and JSON lines as the CLI prints them."""

from __future__ import annotations

import json

import pytest

from asyncconsumer.errors import BrokerResponseError
from asyncconsumer.protocol.consumer_protocol import encode_assignment
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.protocol.messages.describe_groups import DescribedGroup, DescribedGroupMember
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from asyncconsumer.records import TopicPartition
from asyncconsumer.tools.admin import GroupNotFoundError, group_description
from asyncconsumer.tools.cli import group_lines


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
