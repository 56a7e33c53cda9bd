"""Answers whose layout changed inside the versions we speak, read one way.

FindCoordinator batches its keys from v4, OffsetFetch its groups from v8: ``coordinator_for`` and
``offsets_for_group`` read an answer of any version. (Their requests, and LeaveGroup's, are built in either layout
and rewritten for the version they are sent at by their generated ``for_version``.)
"""

from __future__ import annotations

from asyncconsumer.errors import ErrorCode
from asyncconsumer.protocol.messages.find_coordinator import Coordinator, FindCoordinatorResponse
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)

__all__ = ["coordinator_for", "offsets_for_group"]


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
