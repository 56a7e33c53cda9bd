"""``protocol/layouts.py``: one view of FindCoordinator's and OffsetFetch's answers, whatever the version (their
requests' layouts are the generated ``for_version``'s, tested with each message)."""

from __future__ import annotations

from asyncconsumer.errors import ErrorCode
from asyncconsumer.protocol.layouts import coordinator_for, offsets_for_group
from asyncconsumer.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorResponse,
)
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)

COORDINATOR_NOT_AVAILABLE = 15


# --- answers: one view ----------------------------------------------------------------------------------------------


def test_find_coordinator_for_key() -> None:
    single = FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None)
    assert coordinator_for(single, "g") == Coordinator(key="g", node_id=1, host="h", port=9092, error_message=None)
    failed = FindCoordinatorResponse(error_code=15, node_id=-1, host="", port=-1, error_message="loading")
    assert coordinator_for(failed, "g") == Coordinator(
        key="g", node_id=-1, host="", port=-1, error_code=15, error_message="loading"
    )
    batched = FindCoordinatorResponse(
        coordinators=(
            Coordinator(key="a", node_id=1, host="h", port=1, error_message=None),
            Coordinator(key="g", node_id=2, host="k", port=2, error_message=None),
        ),
    )
    assert coordinator_for(batched, "g") == Coordinator(key="g", node_id=2, host="k", port=2, error_message=None)
    assert coordinator_for(batched, "x").error_code == COORDINATOR_NOT_AVAILABLE
    assert coordinator_for(FindCoordinatorResponse(), "g").error_code == COORDINATOR_NOT_AVAILABLE  # v4, no answers
    assert COORDINATOR_NOT_AVAILABLE == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_offset_fetch_partitions_for_either_layout() -> None:
    v7 = OffsetFetchResponse(
        topics=(
            OffsetFetchResponseTopic(
                name="t",
                partitions=(
                    OffsetFetchResponsePartition(
                        partition_index=0, committed_offset=42, committed_leader_epoch=5, metadata=None
                    ),
                ),
            ),
        ),
        error_code=14,
    )
    topics = (
        OffsetFetchResponseTopics(
            name="t",
            partitions=(
                OffsetFetchResponsePartitions(
                    partition_index=0, committed_offset=42, committed_leader_epoch=5, metadata=None
                ),
            ),
        ),
    )
    v8 = OffsetFetchResponse(groups=(OffsetFetchResponseGroup(group_id="g", topics=topics, error_code=14),))
    # One view over both layouts.
    assert (
        offsets_for_group(v7, "g")
        == offsets_for_group(v8, "g")
        == OffsetFetchResponseGroup(group_id="g", topics=topics, error_code=14)
    )


def test_offset_fetch_partitions_for_a_missing_group_is_retriable() -> None:
    other = OffsetFetchResponse(groups=(OffsetFetchResponseGroup(group_id="other", topics=()),))
    assert offsets_for_group(other, "g") == OffsetFetchResponseGroup(
        group_id="g", topics=(), error_code=COORDINATOR_NOT_AVAILABLE
    )
