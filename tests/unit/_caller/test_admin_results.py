"""What the admin client reads out of decoded responses (``_caller/admin_results.py``), on hand-built answers:
groups listed and described by either protocol, offsets, per-partition and per-topic errors typed and named, topics
and the cluster."""

from __future__ import annotations

import uuid

import pytest

from asyncconsumer._caller.admin_results import (
    BrokerNode,
    GroupListing,
    cluster_description,
    commit_errors,
    committed_offsets,
    described_consumer_group,
    described_group,
    group_delete_errors,
    listed_groups,
    offset_delete_errors,
    topic_create_errors,
    topic_delete_errors,
    topic_descriptions,
    topic_names,
)
from asyncconsumer.errors import (
    CoordinatorLoadInProgressError,
    ErrorCode,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from asyncconsumer.protocol.consumer_protocol import encode_assignment
from asyncconsumer.protocol.messages import consumer_group_describe as cgd
from asyncconsumer.protocol.messages.consumer_protocol import ConsumerProtocolAssignment
from asyncconsumer.protocol.messages.consumer_protocol import TopicPartition as Assigned
from asyncconsumer.protocol.messages.create_topics import CreatableTopicResult, CreateTopicsResponse
from asyncconsumer.protocol.messages.delete_groups import DeletableGroupResult, DeleteGroupsResponse
from asyncconsumer.protocol.messages.delete_topics import DeletableTopicResult, DeleteTopicsResponse
from asyncconsumer.protocol.messages.describe_cluster import DescribeClusterBroker, DescribeClusterResponse
from asyncconsumer.protocol.messages.describe_groups import DescribedGroup, DescribedGroupMember, DescribeGroupsResponse
from asyncconsumer.protocol.messages.list_groups import ListedGroup, ListGroupsResponse
from asyncconsumer.protocol.messages.metadata import MetadataResponse, MetadataResponsePartition, MetadataResponseTopic
from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from asyncconsumer.protocol.messages.offset_delete import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from asyncconsumer.records import OffsetAndMetadata, TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_listed_groups_take_the_brokers_type_or_read_an_old_brokers_consumer_groups_as_classic() -> None:
    response = ListGroupsResponse(
        groups=(
            ListedGroup(group_id="a", protocol_type="consumer", group_state="Stable", group_type="consumer"),
            ListedGroup(group_id="b", protocol_type="consumer", group_state="Empty", group_type=""),
            ListedGroup(group_id="c", protocol_type="", group_state="Empty", group_type="Share"),
        )
    )
    assert listed_groups(response, 1) == [
        GroupListing("a", "consumer", "Stable", "consumer"),
        GroupListing("b", "classic", "Empty", "consumer"),
        GroupListing("c", "share", "Empty", ""),
    ]
    with pytest.raises(CoordinatorLoadInProgressError, match="listing the groups of node 7"):
        listed_groups(ListGroupsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 7)


def test_a_classic_group_is_described_with_each_members_decoded_assignment() -> None:
    assignment = encode_assignment(
        ConsumerProtocolAssignment(assigned_partitions=(Assigned(topic="t", partitions=(1, 0)),))
    )
    response = DescribeGroupsResponse(
        groups=(
            DescribedGroup(
                group_id="g",
                group_state="Stable",
                protocol_type="consumer",
                protocol_data="range",
                members=(
                    DescribedGroupMember(member_id="m2", client_id="c", client_host="/h", member_assignment=b""),
                    DescribedGroupMember(
                        member_id="m1",
                        group_instance_id="i",
                        client_id="c",
                        client_host="/h",
                        member_assignment=assignment,
                    ),
                ),
            ),
        )
    )
    described = described_group(response, "g", 3)
    assert (described.type, described.state, described.partition_assignor, described.coordinator) == (
        "classic",
        "Stable",
        "range",
        3,
    )
    assert [(m.member_id, m.group_instance_id, m.assignment) for m in described.members] == [
        ("m1", "i", frozenset({T0, T1})),
        ("m2", None, frozenset()),
    ]


@pytest.mark.parametrize(
    "group",
    [
        DescribedGroup(group_id="g", group_state="Dead"),
        DescribedGroup(group_id="g", error_code=ErrorCode.GROUP_ID_NOT_FOUND),
    ],
)
def test_a_group_the_coordinator_does_not_know_is_named_not_found(group: DescribedGroup) -> None:
    with pytest.raises(GroupIdNotFoundError, match="group 'g' does not exist"):
        described_group(DescribeGroupsResponse(groups=(group,)), "g", 1)


def test_a_kip848_group_is_described_and_a_classic_one_is_left_to_describe_groups() -> None:
    member = cgd.Member(
        member_id="m",
        instance_id=None,
        client_id="c",
        client_host="/h",
        assignment=cgd.Assignment(
            topic_partitions=(cgd.TopicPartitions(topic_id=uuid.uuid4(), topic_name="t", partitions=(0, 1)),)
        ),
    )
    response = cgd.ConsumerGroupDescribeResponse(
        groups=(cgd.DescribedGroup(group_id="g", group_state="Stable", assignor_name="uniform", members=(member,)),)
    )
    described = described_consumer_group(response, "g", 2)
    assert described is not None
    assert (described.type, described.partition_assignor, described.members[0].assignment) == (
        "consumer",
        "uniform",
        frozenset({T0, T1}),
    )
    not_found = cgd.ConsumerGroupDescribeResponse(
        groups=(cgd.DescribedGroup(group_id="g", error_code=ErrorCode.GROUP_ID_NOT_FOUND),)
    )
    assert described_consumer_group(not_found, "g", 2) is None


def test_committed_offsets_leave_out_partitions_without_one_and_keep_metadata_and_epoch() -> None:
    group = OffsetFetchResponseGroup(
        group_id="g",
        topics=(
            OffsetFetchResponseTopics(
                name="t",
                partitions=(
                    OffsetFetchResponsePartitions(
                        partition_index=1, committed_offset=7, committed_leader_epoch=3, metadata="m"
                    ),
                    OffsetFetchResponsePartitions(partition_index=0, committed_offset=-1),
                ),
            ),
        ),
    )
    assert committed_offsets(group) == {T1: OffsetAndMetadata(7, "m", 3)}


def test_partition_and_topic_errors_are_typed_and_name_what_they_concern() -> None:
    commit = OffsetCommitResponse(
        topics=(
            OffsetCommitResponseTopic(
                name="t",
                partitions=(
                    OffsetCommitResponsePartition(partition_index=0),
                    OffsetCommitResponsePartition(partition_index=1, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                ),
            ),
        )
    )
    (error,) = commit_errors(commit, "g").items()
    assert error[0] == T1 and isinstance(error[1], UnknownTopicOrPartitionError) and "t-1" in str(error[1])
    deleted = OffsetDeleteResponse(
        topics=(
            OffsetDeleteResponseTopic(
                name="t",
                partitions=(
                    OffsetDeleteResponsePartition(partition_index=0, error_code=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
                ),
            ),
        )
    )
    assert isinstance(offset_delete_errors(deleted, "g")[T0], GroupSubscribedToTopicError)
    with pytest.raises(GroupIdNotFoundError, match="'g'"):
        offset_delete_errors(OffsetDeleteResponse(error_code=ErrorCode.GROUP_ID_NOT_FOUND), "g")
    groups = group_delete_errors(
        DeleteGroupsResponse(
            results=(
                DeletableGroupResult(group_id="a"),
                DeletableGroupResult(group_id="b", error_code=ErrorCode.NON_EMPTY_GROUP),
            )
        )
    )
    assert list(groups) == ["b"] and isinstance(groups["b"], NonEmptyGroupError) and "'b'" in str(groups["b"])
    created = topic_create_errors(
        CreateTopicsResponse(
            topics=(CreatableTopicResult(name="x", error_code=ErrorCode.TOPIC_ALREADY_EXISTS, error_message="exists"),)
        )
    )
    assert isinstance(created["x"], TopicAlreadyExistsError) and "creating topic 'x': exists" in str(created["x"])
    gone = topic_delete_errors(
        DeleteTopicsResponse(
            responses=(DeletableTopicResult(name="y", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),)
        )
    )
    assert isinstance(gone["y"], UnknownTopicOrPartitionError) and "'y'" in str(gone["y"])


def test_topics_are_named_and_described_and_a_missing_one_is_named() -> None:
    metadata = MetadataResponse(
        topics=(
            MetadataResponseTopic(
                name="t",
                partitions=(
                    MetadataResponsePartition(partition_index=1, leader_id=2, replica_nodes=(2, 1), isr_nodes=(2,)),
                    MetadataResponsePartition(partition_index=0, leader_id=1, replica_nodes=(1, 2), isr_nodes=(1, 2)),
                ),
            ),
            MetadataResponseTopic(name="__consumer_offsets", is_internal=True),
        )
    )
    assert topic_names(metadata, internal=False) == {"t"}
    assert topic_names(metadata, internal=True) == {"t", "__consumer_offsets"}
    described = topic_descriptions(metadata, ["t"])["t"]
    assert [(p.partition, p.leader, p.replicas, p.isr) for p in described.partitions] == [
        (0, 1, (1, 2), (1, 2)),
        (1, 2, (2, 1), (2,)),
    ]
    with pytest.raises(UnknownTopicOrPartitionError, match="topic 'nope' does not exist"):
        topic_descriptions(metadata, ["nope"])


def test_the_cluster_is_its_id_controller_and_brokers_in_id_order() -> None:
    response = DescribeClusterResponse(
        cluster_id="c1",
        controller_id=2,
        brokers=(
            DescribeClusterBroker(broker_id=2, host="b", port=9093),
            DescribeClusterBroker(broker_id=1, host="a", port=9092, rack="r"),
        ),
    )
    cluster = cluster_description(response)
    assert (cluster.cluster_id, cluster.controller) == ("c1", 2)
    assert cluster.brokers == (BrokerNode(1, "a", 9092, "r"), BrokerNode(2, "b", 9093, None))
