"""Share groups (KIP-932) for the admin client: what a share group's coordinator describes
(``ShareGroupDescription``, ShareGroupDescribe) and where each of its partitions stands (``SharePartitionOffsetInfo``,
DescribeShareGroupOffsets: the start offset, below which every record is acknowledged or will never be delivered,
and from v1 the broker's count of records from there on not yet acknowledged, KIP-1226). Plain functions read the
answers (no I/O; unit-tested on hand-built responses). Names are Java's ``Admin``'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

import attrs

from asyncconsumer.errors import CorruptResponseError, ErrorCode, KafkaError, for_code
from asyncconsumer.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsResponse,
)
from asyncconsumer.protocol.messages.share_group_describe import ShareGroupDescribeResponse
from asyncconsumer.records import TopicPartition


@attrs.frozen
class ShareMemberDescription:
    """One member of a share group: who it is, what it subscribes to, and the partitions it is assigned."""

    member_id: str
    client_id: str
    host: str
    rack_id: str | None
    member_epoch: int
    subscribed_topics: tuple[str, ...]
    assignment: frozenset[TopicPartition]


@attrs.frozen
class ShareGroupDescription:
    """A share group as its coordinator describes it: state, group and assignment epochs, assignor and members."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: int
    members: tuple[ShareMemberDescription, ...]


@attrs.frozen
class SharePartitionOffsetInfo:
    """Where one partition of a share group stands: its start offset and leader epoch (None where the broker has no
    share state for it yet) and its lag (None where the broker does not count it: below v1, or -1)."""

    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


def _said(what: str, message: str | None) -> str:
    return f"{what}: {message}" if message else what


def described_share_group(
    response: ShareGroupDescribeResponse, group_id: str, coordinator: int
) -> ShareGroupDescription:
    """``group_id``'s description; ``GroupIdNotFoundError`` when the coordinator knows no share group of that id (none,
    or a group of another type), with the broker's message."""
    group = next((g for g in response.groups if g.group_id == group_id), None)
    if group is None:
        raise CorruptResponseError(f"ShareGroupDescribe answered without group {group_id!r}")
    if group.error_code != ErrorCode.NONE:
        raise for_code(group.error_code, _said(f"describing share group {group_id!r}", group.error_message))
    members = tuple(
        sorted(
            (
                ShareMemberDescription(
                    m.member_id,
                    m.client_id,
                    m.client_host,
                    m.rack_id,
                    m.member_epoch,
                    tuple(sorted(m.subscribed_topic_names)),
                    frozenset(
                        TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions
                    ),
                )
                for m in group.members
            ),
            key=lambda m: m.member_id,
        )
    )
    return ShareGroupDescription(
        group.group_id,
        group.group_state,
        group.group_epoch,
        group.assignment_epoch,
        group.assignor_name,
        coordinator,
        members,
    )


def share_offsets_request(
    group_id: str, partitions: Iterable[TopicPartition] | None
) -> DescribeShareGroupOffsetsRequest:
    """The partitions asked (None: every partition the group has state for)."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(set(partitions)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = tuple(
            DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=tuple(ps)) for t, ps in by_topic.items()
        )
    return DescribeShareGroupOffsetsRequest(
        groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group_id, topics=topics),)
    )


def share_group_offsets(
    response: DescribeShareGroupOffsetsResponse, group_id: str, names: Mapping[uuid.UUID, str]
) -> dict[TopicPartition, SharePartitionOffsetInfo]:
    """Each partition's start offset, leader epoch and lag, in order; a topic the answer names only by id is named
    from ``names``. A group or partition error is raised (the first, naming the partition), and a group the
    coordinator does not know is ``GroupIdNotFoundError``."""
    group = next((g for g in response.groups if g.group_id == group_id), None)
    if group is None:
        raise CorruptResponseError(f"DescribeShareGroupOffsets answered without group {group_id!r}")
    if group.error_code != ErrorCode.NONE:
        raise for_code(group.error_code, _said(f"the offsets of share group {group_id!r}", group.error_message))
    found: dict[TopicPartition, SharePartitionOffsetInfo] = {}
    errors: dict[TopicPartition, KafkaError] = {}
    for topic in group.topics:
        name = topic.topic_name or names.get(topic.topic_id, "")
        if not name:
            raise CorruptResponseError(f"DescribeShareGroupOffsets named a topic by an unknown id {topic.topic_id}")
        for p in topic.partitions:
            tp = TopicPartition(name, p.partition_index)
            if p.error_code != ErrorCode.NONE:
                errors[tp] = for_code(
                    p.error_code, _said(f"the offset of {tp} in share group {group_id!r}", p.error_message)
                )
                continue
            found[tp] = SharePartitionOffsetInfo(
                p.start_offset if p.start_offset >= 0 else None,
                p.leader_epoch if p.leader_epoch >= 0 else None,
                p.lag if p.lag >= 0 else None,
            )
    if errors:
        raise errors[min(errors)]
    return dict(sorted(found.items()))
