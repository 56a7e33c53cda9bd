"""Requests and answers whose layout changed inside the versions we speak, written and read one way.

FindCoordinator batches its keys from v4, LeaveGroup its members from v3, OffsetFetch its groups from v8. Their
users build one request in either layout, and ``for_version`` rewrites it for the version it is sent at when it is
framed (``base.encode_request``), as Kafka's request builders do; ``coordinator_for`` and ``offsets_for_group``
read an answer of any version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from asyncconsumer.errors import ErrorCode
from asyncconsumer.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from asyncconsumer.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Request

__all__ = ["coordinator_for", "for_version", "offsets_for_group"]

_BATCHED_KEYS_FROM = 4
_BATCHED_MEMBERS_FROM = 3
_BATCHED_GROUPS_FROM = 8


def for_version(request: Request, version: int) -> Request:
    """``request`` in the layout ``version`` has; ``ValueError`` if an older one cannot say it (several keys,
    members or groups)."""
    if isinstance(request, FindCoordinatorRequest):
        return _find_coordinator(request, version)
    if isinstance(request, LeaveGroupRequest):
        return _leave_group(request, version)
    if isinstance(request, OffsetFetchRequest):
        return _offset_fetch(request, version)
    return request


def _find_coordinator(request: FindCoordinatorRequest, version: int) -> FindCoordinatorRequest:
    keys = request.coordinator_keys or (request.key,)
    if version >= _BATCHED_KEYS_FROM:
        if request.coordinator_keys and not request.key:
            return request
        return attrs.evolve(request, key="", coordinator_keys=keys)
    if not request.coordinator_keys:
        return request
    if len(keys) != 1:
        raise ValueError(f"FindCoordinator v{version} looks up one key, not {len(keys)}")
    return attrs.evolve(request, key=keys[0], coordinator_keys=())


def _leave_group(request: LeaveGroupRequest, version: int) -> LeaveGroupRequest:
    members = request.members or (MemberIdentity(member_id=request.member_id),)
    if version >= _BATCHED_MEMBERS_FROM:
        if request.members and not request.member_id:
            return request
        return attrs.evolve(request, member_id="", members=members)
    if not request.members:
        return request
    if len(members) != 1:
        raise ValueError(f"LeaveGroup v{version} removes one member, not {len(members)}")
    return attrs.evolve(request, member_id=members[0].member_id, members=())


def _offset_fetch(request: OffsetFetchRequest, version: int) -> OffsetFetchRequest:
    if version >= _BATCHED_GROUPS_FROM:
        if request.groups:
            return request
        topics = None
        if request.topics is not None:
            topics = tuple(
                OffsetFetchRequestTopics(name=t.name, partition_indexes=t.partition_indexes) for t in request.topics
            )
        group = OffsetFetchRequestGroup(group_id=request.group_id, topics=topics)
        return attrs.evolve(request, group_id="", topics=None, groups=(group,))
    if not request.groups:
        return request
    if len(request.groups) != 1:
        raise ValueError(f"OffsetFetch v{version} asks for one group, not {len(request.groups)}")
    group = request.groups[0]
    old = None
    if group.topics is not None:
        old = tuple(OffsetFetchRequestTopic(name=t.name, partition_indexes=t.partition_indexes) for t in group.topics)
    return attrs.evolve(request, group_id=group.group_id, topics=old, groups=())


def coordinator_for(response: FindCoordinatorResponse, key: str) -> Coordinator:
    """The answer for ``key`` whatever the version.

    A batched answer that lacks ``key``, or a success naming no node (a v4 answer with no coordinators at all),
    reads as COORDINATOR_NOT_AVAILABLE, which is retriable.
    """
    if response.coordinators:
        for coordinator in response.coordinators:
            if coordinator.key == key:
                return coordinator
        return _not_available(key, f"no coordinator for {key!r} in response")
    if response.error_code == ErrorCode.NONE and (response.node_id < 0 or not response.host):
        return _not_available(key, "no coordinator in response")
    return Coordinator(
        key=key,
        node_id=response.node_id,
        host=response.host,
        port=response.port,
        error_code=response.error_code,
        error_message=response.error_message,
    )


def _not_available(key: str, why: str) -> Coordinator:
    return Coordinator(key=key, node_id=-1, port=-1, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message=why)


def offsets_for_group(response: OffsetFetchResponse, group_id: str) -> OffsetFetchResponseGroup:
    """The committed offsets of ``group_id`` whatever the version (before v8 the answer's top level is the one
    group's); a batched answer that lacks the group reads as COORDINATOR_NOT_AVAILABLE (retriable)."""
    if response.groups:
        for group in response.groups:
            if group.group_id == group_id:
                return group
        return OffsetFetchResponseGroup(group_id=group_id, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    topics = tuple(
        OffsetFetchResponseTopics(
            name=topic.name,
            partitions=tuple(
                OffsetFetchResponsePartitions(
                    partition_index=p.partition_index,
                    committed_offset=p.committed_offset,
                    committed_leader_epoch=p.committed_leader_epoch,
                    metadata=p.metadata,
                    error_code=p.error_code,
                )
                for p in topic.partitions
            ),
        )
        for topic in response.topics
    )
    return OffsetFetchResponseGroup(group_id=group_id, topics=topics, error_code=response.error_code)
