"""What an admin client returns, and the plain functions that read it out of decoded responses (no I/O: each is
unit-tested on hand-built responses). Names follow Java's ``Admin``: ``GroupListing``, ``ConsumerGroupDescription``,
``TopicDescription``, ``NewTopic``...

A function here raises the typed error of the first error code it meets, naming the group, topic or partition; an
error a retry can fix (a coordinator moving, a leader election) is raised as retriable and the caller retries it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

import attrs

from asyncconsumer.errors import (
    CorruptResponseError,
    ErrorCode,
    GroupIdNotFoundError,
    KafkaError,
    UnknownTopicOrPartitionError,
    for_code,
)
from asyncconsumer.protocol.consumer_protocol import ConsumerProtocolAssignment, decode_assignment
from asyncconsumer.protocol.messages.consumer_group_describe import ConsumerGroupDescribeResponse
from asyncconsumer.protocol.messages.create_partitions import CreatePartitionsResponse
from asyncconsumer.protocol.messages.create_topics import CreateTopicsResponse
from asyncconsumer.protocol.messages.delete_groups import DeleteGroupsResponse
from asyncconsumer.protocol.messages.delete_topics import DeleteTopicsResponse
from asyncconsumer.protocol.messages.describe_cluster import DescribeClusterResponse
from asyncconsumer.protocol.messages.describe_groups import DescribedGroup, DescribeGroupsResponse
from asyncconsumer.protocol.messages.list_groups import ListGroupsResponse
from asyncconsumer.protocol.messages.metadata import MetadataResponse
from asyncconsumer.protocol.messages.offset_commit import OffsetCommitResponse
from asyncconsumer.protocol.messages.offset_delete import OffsetDeleteResponse
from asyncconsumer.protocol.messages.offset_fetch import OffsetFetchResponseGroup
from asyncconsumer.records import OffsetAndMetadata, TopicPartition

GROUP_TYPES = ("classic", "consumer", "share", "streams")
"""KIP-1043's group types, as ListGroups v5 filters and names them."""


# --- results ----------------------------------------------------------------------------------------------------


@attrs.frozen
class GroupListing:
    """One group a coordinator hosts: its id, type (KIP-1043: ``classic``, ``consumer``, ``share``, ``streams``),
    state and protocol type (``consumer`` for a consumer group of either protocol)."""

    group_id: str
    type: str
    state: str
    protocol_type: str


@attrs.frozen
class MemberDescription:
    """One member of a consumer group and the partitions assigned to it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: frozenset[TopicPartition]


@attrs.frozen
class ConsumerGroupDescription:
    """A consumer group as its coordinator describes it: its type (``consumer`` for KIP-848's protocol, described
    by ConsumerGroupDescribe; ``classic``, by DescribeGroups), state, assignor and members."""

    group_id: str
    type: str
    state: str
    protocol_type: str
    partition_assignor: str
    coordinator: int
    members: tuple[MemberDescription, ...]


def offsets_only(group_id: str) -> ConsumerGroupDescription:
    """A group its coordinator does not describe but that has committed offsets: Empty, with no members."""
    return ConsumerGroupDescription(group_id, "classic", "Empty", "consumer", "", -1, ())


@attrs.frozen
class PartitionLag:
    """One partition a consumer group has committed for or has assigned, as ``kafka-consumer-groups.sh --describe``
    shows it: the committed offset (None: nothing committed), the log-end offset (None: the topic is gone), and
    the member it is assigned to (None: nobody)."""

    partition: TopicPartition
    committed: int | None
    log_end_offset: int | None
    member: MemberDescription | None

    @property
    def lag(self) -> int | None:
        """How far the committed offset trails the log end (never below 0); None without both."""
        if self.committed is None or self.log_end_offset is None:
            return None
        return max(self.log_end_offset - self.committed, 0)


def group_lag(
    described: ConsumerGroupDescription,
    committed: Mapping[TopicPartition, OffsetAndMetadata],
    log_ends: Mapping[TopicPartition, int | None],
) -> list[PartitionLag]:
    """Every partition committed or assigned, in order, with its owner: the rows of Kafka's ``--describe``."""
    owner = {tp: m for m in described.members for tp in m.assignment}
    return [
        PartitionLag(tp, committed[tp].offset if tp in committed else None, log_ends.get(tp), owner.get(tp))
        for tp in sorted(set(owner) | set(committed))
    ]


@attrs.frozen
class NewTopic:
    """A topic to create: -1 partitions or replication factor leave it to the broker's defaults."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class TopicPartitionInfo:
    """One partition of a topic: its leader (-1 when it has none), replicas and in-sync replicas, by broker id."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@attrs.frozen
class TopicDescription:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[TopicPartitionInfo, ...]


@attrs.frozen
class BrokerNode:
    id: int
    host: str
    port: int
    rack: str | None


@attrs.frozen
class ClusterDescription:
    """The cluster's id, its controller as brokers see it (a broker's id on KRaft clusters) and its brokers."""

    cluster_id: str
    controller: int
    brokers: tuple[BrokerNode, ...]


# --- reading responses --------------------------------------------------------------------------------------------


def _check(code: int, what: str, message: str | None = None) -> None:
    if code != ErrorCode.NONE:
        raise for_code(code, f"{what}: {message}" if message else what)


def listed_groups(response: ListGroupsResponse, node: int) -> list[GroupListing]:
    """The groups one broker coordinates. A group type the broker does not name (ListGroups below v5) reads as
    ``classic`` for protocol type ``consumer``, as Java's Admin reads it."""
    _check(response.error_code, f"listing the groups of node {node}")
    found = []
    for g in response.groups:
        kind = g.group_type.lower() or ("classic" if g.protocol_type in ("consumer", "") else g.protocol_type)
        found.append(GroupListing(g.group_id, kind, g.group_state, g.protocol_type))
    return found


def _assigned(member_assignment: bytes) -> frozenset[TopicPartition]:
    if not member_assignment:
        return frozenset()
    try:
        assignment = decode_assignment(member_assignment)
    except CorruptResponseError:
        assignment = ConsumerProtocolAssignment()
    return frozenset(TopicPartition(t.topic, p) for t in assignment.assigned_partitions for p in t.partitions)


def described_group(response: DescribeGroupsResponse, group_id: str, coordinator: int) -> ConsumerGroupDescription:
    """``group_id``'s description; ``GroupIdNotFoundError`` for a group the coordinator does not know (Kafka answers
    an unknown group as state Dead with no members, or GROUP_ID_NOT_FOUND)."""
    group: DescribedGroup | None = next((g for g in response.groups if g.group_id == group_id), None)
    if group is None:
        raise CorruptResponseError(f"DescribeGroups answered without group {group_id!r}")
    if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND or group.group_state == "Dead":
        raise GroupIdNotFoundError(f"group {group_id!r} does not exist")
    _check(group.error_code, f"describing group {group_id!r}")
    members = tuple(
        sorted(
            (
                MemberDescription(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    _assigned(m.member_assignment) if group.protocol_type in ("consumer", "") else frozenset(),
                )
                for m in group.members
            ),
            key=lambda m: m.member_id,
        )
    )
    return ConsumerGroupDescription(
        group.group_id, "classic", group.group_state, group.protocol_type, group.protocol_data, coordinator, members
    )


def described_consumer_group(
    response: ConsumerGroupDescribeResponse, group_id: str, coordinator: int
) -> ConsumerGroupDescription | None:
    """``group_id``'s description if it is a KIP-848 consumer group; None when the coordinator knows no consumer
    group of that id (GROUP_ID_NOT_FOUND: a classic group, or none), to be asked with DescribeGroups."""
    group = next((g for g in response.groups if g.group_id == group_id), None)
    if group is None:
        raise CorruptResponseError(f"ConsumerGroupDescribe answered without group {group_id!r}")
    if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    _check(group.error_code, f"describing group {group_id!r}", group.error_message)
    members = tuple(
        sorted(
            (
                MemberDescription(
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    frozenset(
                        TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions
                    ),
                )
                for m in group.members
            ),
            key=lambda m: m.member_id,
        )
    )
    return ConsumerGroupDescription(
        group.group_id, "consumer", group.group_state, "consumer", group.assignor_name, coordinator, members
    )


def committed_offsets(group: OffsetFetchResponseGroup) -> dict[TopicPartition, OffsetAndMetadata]:
    """The group's committed offsets (partitions with none left out), as ``Admin.listConsumerGroupOffsets``."""
    _check(group.error_code, f"fetching the offsets of group {group.group_id!r}")
    found: dict[TopicPartition, OffsetAndMetadata] = {}
    for topic in group.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            _check(p.error_code, f"fetching the offset of group {group.group_id!r} for {tp}")
            if p.committed_offset >= 0:
                epoch = p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None
                found[tp] = OffsetAndMetadata(p.committed_offset, p.metadata or "", epoch)
    return dict(sorted(found.items()))


def _partition_errors(
    rows: Iterable[tuple[str, int, int]], what: str, group_id: str
) -> dict[TopicPartition, KafkaError]:
    errors: dict[TopicPartition, KafkaError] = {}
    for topic, partition, code in rows:
        if code != ErrorCode.NONE:
            tp = TopicPartition(topic, partition)
            errors[tp] = for_code(code, f"{what} of group {group_id!r} for {tp}")
    return errors


def commit_errors(response: OffsetCommitResponse, group_id: str) -> dict[TopicPartition, KafkaError]:
    """Each partition the commit failed for, with its error (empty: every offset was written)."""
    rows = ((t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions)
    return _partition_errors(rows, "altering the offset", group_id)


def offset_delete_errors(response: OffsetDeleteResponse, group_id: str) -> dict[TopicPartition, KafkaError]:
    """Each partition whose offset was not deleted, with its error; a group-level error raises."""
    if response.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        raise GroupIdNotFoundError(f"group {group_id!r} does not exist")
    _check(response.error_code, f"deleting offsets of group {group_id!r}")
    rows = ((t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions)
    return _partition_errors(rows, "deleting the offset", group_id)


def group_delete_errors(response: DeleteGroupsResponse) -> dict[str, KafkaError]:
    """Each group not deleted, with its error (``NonEmptyGroupError``, ``GroupIdNotFoundError``...)."""
    return {
        r.group_id: for_code(r.error_code, f"deleting group {r.group_id!r}")
        for r in response.results
        if r.error_code != ErrorCode.NONE
    }


def topic_create_errors(response: CreateTopicsResponse) -> dict[str, KafkaError]:
    """Each topic not created, with its error and the broker's message (``TopicAlreadyExistsError``...)."""
    return {
        t.name: for_code(t.error_code, f"creating topic {t.name!r}: {t.error_message}" if t.error_message else "")
        for t in response.topics
        if t.error_code != ErrorCode.NONE
    }


def topic_delete_errors(response: DeleteTopicsResponse) -> dict[str, KafkaError]:
    """Each topic not deleted, with its error (``UnknownTopicOrPartitionError`` for one that does not exist)."""
    return {
        (t.name or ""): for_code(
            t.error_code, f"deleting topic {t.name!r}: {t.error_message}" if t.error_message else f"topic {t.name!r}"
        )
        for t in response.responses
        if t.error_code != ErrorCode.NONE
    }


def partitions_create_errors(response: CreatePartitionsResponse) -> dict[str, KafkaError]:
    return {
        r.name: for_code(r.error_code, f"adding partitions to {r.name!r}: {r.error_message}" if r.error_message else "")
        for r in response.results
        if r.error_code != ErrorCode.NONE
    }


def topic_names(response: MetadataResponse, *, internal: bool) -> set[str]:
    """Every topic's name (the internal ones, ``__consumer_offsets``..., only with ``internal``)."""
    return {
        t.name for t in response.topics if t.name and t.error_code == ErrorCode.NONE and (internal or not t.is_internal)
    }


def topic_descriptions(response: MetadataResponse, names: Iterable[str]) -> dict[str, TopicDescription]:
    """Each of ``names`` described; ``UnknownTopicOrPartitionError`` naming the first that does not exist."""
    by_name = {t.name: t for t in response.topics if t.name}
    found: dict[str, TopicDescription] = {}
    for name in names:
        topic = by_name.get(name)
        if topic is None or topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        _check(topic.error_code, f"describing topic {name!r}")
        partitions = tuple(
            TopicPartitionInfo(p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
            for p in sorted(topic.partitions, key=lambda p: p.partition_index)
        )
        found[name] = TopicDescription(name, topic.topic_id, topic.is_internal, partitions)
    return found


def cluster_description(response: DescribeClusterResponse) -> ClusterDescription:
    _check(response.error_code, "describing the cluster", response.error_message)
    brokers = tuple(
        sorted((BrokerNode(b.broker_id, b.host, b.port, b.rack) for b in response.brokers), key=lambda b: b.id)
    )
    return ClusterDescription(response.cluster_id, response.controller_id, brokers)
