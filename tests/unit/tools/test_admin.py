"""The CLI's admin client's reading of answers: a share group's description (members, assignments, start offsets and
lag) and the errors it raises; its text and JSON lines as the CLI prints them; the Fetch that reads a partition's end
and the high watermarks read from its answer; a group's configs request. Consumer groups are described on
``AsyncAdmin`` (``tests/unit/tools/test_group_describe.py``)."""

from __future__ import annotations

import json
import uuid

import pytest

from asyncconsumer.errors import (
    BrokerResponseError,
    CorruptResponseError,
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
)
from asyncconsumer.managers.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID
from asyncconsumer.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from asyncconsumer.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from asyncconsumer.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from asyncconsumer.protocol.messages.share_group_describe import Assignment
from asyncconsumer.protocol.messages.share_group_describe import DescribedGroup as DescribedShareGroup
from asyncconsumer.protocol.messages.share_group_describe import Member as ShareMember
from asyncconsumer.protocol.messages.share_group_describe import TopicPartitions as ShareTopicPartitions
from asyncconsumer.records import TopicPartition
from asyncconsumer.tools._admin_commands import share_group_lines
from asyncconsumer.tools.admin import (
    GroupNotFoundError,
    end_offsets_fetch,
    group_configs_altered,
    group_configs_request,
    high_watermarks,
    share_group_description,
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


TOPIC_ID = uuid.UUID(int=7)


def _share_member(member_id: str, *partitions: int) -> ShareMember:
    return ShareMember(
        member_id=member_id,
        member_epoch=5,
        client_id="cli",
        client_host="/10.0.0.1",
        subscribed_topic_names=("t",),
        assignment=Assignment(
            topic_partitions=(ShareTopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=partitions),)
        ),
    )


def _start_offsets(*partitions: DescribeShareGroupOffsetsResponsePartition) -> DescribeShareGroupOffsetsResponseGroup:
    topic = DescribeShareGroupOffsetsResponseTopic(topic_name="t", topic_id=TOPIC_ID, partitions=partitions)
    return DescribeShareGroupOffsetsResponseGroup(group_id="s", topics=(topic,))


def test_share_group_description_reads_members_assignments_and_start_offsets() -> None:
    described = DescribedShareGroup(
        group_id="s",
        group_state="Stable",
        group_epoch=5,
        assignment_epoch=5,
        assignor_name="simple",
        members=(_share_member("m-2", 2), _share_member("m-1", 1, 0)),
    )
    offsets = _start_offsets(
        DescribeShareGroupOffsetsResponsePartition(partition_index=1, start_offset=4, lag=2),
        DescribeShareGroupOffsetsResponsePartition(partition_index=0, start_offset=9, lag=0),
        DescribeShareGroupOffsetsResponsePartition(partition_index=2, start_offset=-1, lag=-1),  # no share state yet
    )
    group = share_group_description(described, offsets, coordinator=3)
    assert [m.member_id for m in group.members] == ["m-1", "m-2"]
    assert group.members[0].partitions == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert group.members[0].subscribed_topics == ("t",)
    rows = [(str(p.partition), p.start_offset, p.lag, p.error) for p in group.start_offsets]
    assert rows == [("t-0", 9, 0, None), ("t-1", 4, 2, None), ("t-2", None, None, None)]
    assert group.total_lag == 2
    text = share_group_lines(group, "text")
    assert text[0] == (
        "share group s: Stable, group epoch 5, assignment epoch 5, assignor simple, coordinator node 3, "
        "2 member(s), total lag 2"
    )
    assert text[2].split() == ["MEMBER", "CLIENT-ID", "HOST", "EPOCH", "SUBSCRIBED", "PARTITIONS"]
    assert text[3].split() == ["m-1", "cli", "/10.0.0.1", "5", "t", "t-0,t-1"]
    assert text[6].split() == ["TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert [line.split() for line in text[7:]] == [["t", "0", "9", "0"], ["t", "1", "4", "2"], ["t", "2", "-", "-"]]
    as_json = json.loads(share_group_lines(group, "json")[0])
    assert as_json["members"][1] == {
        "member_id": "m-2",
        "client_id": "cli",
        "client_host": "/10.0.0.1",
        "rack_id": None,
        "member_epoch": 5,
        "subscribed_topics": ["t"],
        "partitions": [{"topic": "t", "partition": 2}],
    }
    assert as_json["start_offsets"][2] == {
        "topic": "t",
        "partition": 2,
        "start_offset": None,
        "lag": None,
        "error": None,
    }
    assert (as_json["state"], as_json["assignor"], as_json["total_lag"]) == ("Stable", "simple", 2)


def test_share_start_offsets_without_lag_or_with_errors() -> None:
    empty = DescribedShareGroup(group_id="s", group_state="Empty", assignor_name="simple")
    # v0 of DescribeShareGroupOffsets has no lag (-1); a partition's error is shown by name; the topic's name
    # comes from the answer, else the members' assignments, else its id.
    offsets = _start_offsets(
        DescribeShareGroupOffsetsResponsePartition(partition_index=0, start_offset=3),
        DescribeShareGroupOffsetsResponsePartition(partition_index=1, start_offset=0, error_code=3),
    )
    group = share_group_description(empty, offsets, coordinator=1)
    assert [(p.start_offset, p.lag, p.error) for p in group.start_offsets] == [
        (3, None, None),
        (None, None, "UNKNOWN_TOPIC_OR_PARTITION"),
    ]
    assert group.total_lag is None
    text = share_group_lines(group, "text")
    assert text[0].endswith("0 member(s), total lag -")
    assert text[2].split() == ["TOPIC", "PARTITION", "START-OFFSET", "LAG", "ERROR"]
    assert text[4].split() == ["t", "1", "-", "-", "UNKNOWN_TOPIC_OR_PARTITION"]
    nameless = DescribeShareGroupOffsetsResponseGroup(
        group_id="s",
        topics=(
            DescribeShareGroupOffsetsResponseTopic(
                topic_id=TOPIC_ID, partitions=(DescribeShareGroupOffsetsResponsePartition(partition_index=0),)
            ),
        ),
    )
    running = DescribedShareGroup(group_id="s", group_state="Stable", members=(_share_member("m", 0),))
    assert share_group_description(running, nameless, 1).start_offsets[0].partition == TopicPartition("t", 0)
    assert share_group_description(empty, nameless, 1).start_offsets[0].partition.topic == str(TOPIC_ID)


def test_an_unknown_share_group_is_not_found_and_errors_are_raised() -> None:
    missing = DescribedShareGroup(error_code=69, error_message="Group s is not a share group.", group_id="s")
    with pytest.raises(GroupNotFoundError, match=r"share group 's' does not exist: Group s is not a share group\."):
        share_group_description(missing, DescribeShareGroupOffsetsResponseGroup(group_id="s"), coordinator=1)
    gone = DescribeShareGroupOffsetsResponseGroup(group_id="s", error_code=69)
    with pytest.raises(GroupNotFoundError, match=r"share group 's' does not exist$"):
        share_group_description(DescribedShareGroup(group_id="s"), gone, coordinator=1)
    refused = DescribedShareGroup(error_code=30, error_message="no", group_id="s")  # GROUP_AUTHORIZATION_FAILED
    with pytest.raises(BrokerResponseError, match=r"describing share group 's': no"):
        share_group_description(refused, DescribeShareGroupOffsetsResponseGroup(group_id="s"), coordinator=1)


def test_group_configs_request_sets_then_deletes_on_one_group_resource() -> None:
    request = group_configs_request(
        "workers", {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3"}, iter(["x.y"])
    )
    assert request.resources == (
        AlterConfigsResource(
            resource_type=32,  # GROUP
            resource_name="workers",
            configs=(
                AlterableConfig(name="share.auto.offset.reset", config_operation=0, value="earliest"),  # SET
                AlterableConfig(name="share.delivery.count.limit", config_operation=0, value="3"),
                AlterableConfig(name="x.y", config_operation=1, value=None),  # DELETE
            ),
        ),
    )
    assert request.validate_only is False


def _altered(code: int, message: str | None, name: str = "workers", kind: int = 32) -> IncrementalAlterConfigsResponse:
    answer = AlterConfigsResourceResponse(
        error_code=code, error_message=message, resource_type=kind, resource_name=name
    )
    return IncrementalAlterConfigsResponse(responses=(answer,))


def test_group_configs_altered_passes_the_brokers_message_through() -> None:
    group_configs_altered("workers", _altered(0, None))
    group_configs_altered("workers", _altered(0, ""))  # Tansu's empty message
    bound = "Invalid value 10 for configuration share.record.lock.duration.ms: Value must be at least 1000"
    with pytest.raises(InvalidConfigError) as refused:
        group_configs_altered("workers", _altered(40, bound))
    assert str(refused.value) == f"[INVALID_CONFIG (40)] configuring group 'workers': {bound}"
    assert not refused.value.retriable
    with pytest.raises(InvalidRequestError, match=r"configuring group '': Default group resources are not allowed"):
        group_configs_altered("", _altered(42, "Default group resources are not allowed.", name=""))
    for other in (_altered(0, None, name="other"), _altered(0, None, kind=2), IncrementalAlterConfigsResponse()):
        with pytest.raises(CorruptResponseError, match=r"IncrementalAlterConfigs answered without group 'workers'"):
            group_configs_altered("workers", other)
