"""Share groups for the admin client without a broker: a ShareGroupDescribe answer read into members and their
partitions (in member order), a group the coordinator does not know raised with the broker's message; the offsets
request for some partitions or all; a DescribeShareGroupOffsets answer read into start offsets, leader epochs and
lags (None where the broker has none), a topic named only by id named from metadata, a partition's error raised
naming it, and a group left out of an answer a ``CorruptResponseError``."""

from __future__ import annotations

import uuid

import pytest

from asyncconsumer._caller.admin_share import (
    SharePartitionOffsetInfo,
    described_share_group,
    share_group_offsets,
    share_offsets_request,
)
from asyncconsumer.errors import CorruptResponseError, ErrorCode, GroupIdNotFoundError, NotCoordinatorError
from asyncconsumer.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from asyncconsumer.protocol.messages.share_group_describe import (
    Assignment,
    DescribedGroup,
    Member,
    ShareGroupDescribeResponse,
    TopicPartitions,
)
from asyncconsumer.records import TopicPartition

TOPIC_ID = uuid.uuid4()


def test_a_description_reads_members_and_their_partitions() -> None:
    member = Member(
        member_id="m-2",
        client_id="c",
        client_host="/10.0.0.1",
        member_epoch=4,
        subscribed_topic_names=("t", "a"),
        assignment=Assignment(
            topic_partitions=(TopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=(1, 0)),)
        ),
    )
    response = ShareGroupDescribeResponse(
        groups=(
            DescribedGroup(
                group_id="s",
                group_state="Stable",
                group_epoch=4,
                assignment_epoch=4,
                assignor_name="simple",
                members=(member, Member(member_id="m-1")),
            ),
        )
    )
    described = described_share_group(response, "s", coordinator=2)
    assert (described.state, described.group_epoch, described.assignor, described.coordinator) == (
        "Stable",
        4,
        "simple",
        2,
    )
    assert [m.member_id for m in described.members] == ["m-1", "m-2"]
    assert described.members[1].assignment == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert described.members[1].subscribed_topics == ("a", "t")


def test_a_group_the_coordinator_does_not_know_is_named() -> None:
    missing = ShareGroupDescribeResponse(
        groups=(
            DescribedGroup(group_id="s", error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message="Group s not found."),
        )
    )
    with pytest.raises(GroupIdNotFoundError, match="describing share group 's': Group s not found"):
        described_share_group(missing, "s", 1)
    with pytest.raises(CorruptResponseError, match="without group 'x'"):
        described_share_group(missing, "x", 1)


def test_the_offsets_request_asks_for_some_partitions_or_all() -> None:
    every = share_offsets_request("s", None)
    assert every.groups[0].group_id == "s" and every.groups[0].topics is None
    some = share_offsets_request("s", [TopicPartition("t", 2), TopicPartition("t", 0), TopicPartition("u", 1)])
    assert [(t.topic_name, t.partitions) for t in some.groups[0].topics or ()] == [("t", (0, 2)), ("u", (1,))]


def _offsets(
    *partitions: DescribeShareGroupOffsetsResponsePartition, name: str = "t"
) -> DescribeShareGroupOffsetsResponse:
    topic = DescribeShareGroupOffsetsResponseTopic(topic_name=name, topic_id=TOPIC_ID, partitions=partitions)
    return DescribeShareGroupOffsetsResponse(
        groups=(DescribeShareGroupOffsetsResponseGroup(group_id="s", topics=(topic,)),)
    )


def test_start_offsets_and_lags_are_read_with_none_where_the_broker_has_none() -> None:
    response = _offsets(
        DescribeShareGroupOffsetsResponsePartition(partition_index=1, start_offset=-1, leader_epoch=-1, lag=-1),
        DescribeShareGroupOffsetsResponsePartition(partition_index=0, start_offset=7, leader_epoch=3, lag=2),
        name="",  # named by id only: the caller names it from metadata
    )
    found = share_group_offsets(response, "s", {TOPIC_ID: "t"})
    assert found == {
        TopicPartition("t", 0): SharePartitionOffsetInfo(7, 3, 2),
        TopicPartition("t", 1): SharePartitionOffsetInfo(None, None, None),
    }
    assert list(found) == [TopicPartition("t", 0), TopicPartition("t", 1)]
    with pytest.raises(CorruptResponseError, match="unknown id"):
        share_group_offsets(response, "s", {})


def test_a_partitions_error_is_raised_naming_it() -> None:
    response = _offsets(
        DescribeShareGroupOffsetsResponsePartition(partition_index=3, error_code=ErrorCode.NOT_COORDINATOR),
    )
    with pytest.raises(NotCoordinatorError, match="t-3 in share group 's'"):
        share_group_offsets(response, "s", {})
    with pytest.raises(CorruptResponseError, match="without group 'x'"):
        share_group_offsets(response, "x", {})
