"""``protocol/layouts.py``: one request value at every version of FindCoordinator, LeaveGroup and OffsetFetch (each
rewritten in the layout the version has when it is framed), and one view of their answers, whatever the version."""

from __future__ import annotations

import attrs
import pytest

from asyncconsumer.errors import ErrorCode
from asyncconsumer.protocol import base
from asyncconsumer.protocol.layouts import coordinator_for, for_version, offsets_for_group
from asyncconsumer.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from asyncconsumer.protocol.messages.heartbeat import HeartbeatRequest
from asyncconsumer.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from tests.support.codec import encode
from tests.support.protocol import h

COORDINATOR_NOT_AVAILABLE = 15


def framed(request: base.Request, version: int) -> bytes:
    """The body ``base.encode_request`` writes (after header v1/v2)."""
    frame = base.encode_request(request, version, 1, None)
    return frame[4 + 10 + (1 if base.is_flexible(type(request), version) else 0) :]


# --- requests: one value, the version's layout -------------------------------------------------------------------


def test_find_coordinator_single_key_at_every_version() -> None:
    single, batched = FindCoordinatorRequest(key="g"), FindCoordinatorRequest(coordinator_keys=("g",))
    for version in range(1, 5):
        assert framed(single, version) == framed(batched, version)
    assert framed(single, 4) == h("00  02 02 67  00")  # KeyType, CoordinatorKeys ["g"], tags
    assert framed(batched, 3) == h("02 67  00  00")  # Key "g", KeyType, tags
    assert for_version(single, 4) == FindCoordinatorRequest(coordinator_keys=("g",))
    assert for_version(batched, 3) == FindCoordinatorRequest(key="g")
    assert for_version(single, 3) is single and for_version(batched, 4) is batched


def test_find_coordinator_keys() -> None:
    """What ``FindCoordinatorRequest.keys`` and its v1-3 check were."""
    assert encode(for_version(FindCoordinatorRequest(key="", key_type=1, coordinator_keys=("t",)), 2), 2) == encode(
        FindCoordinatorRequest(key="t", key_type=1), 2
    )
    with pytest.raises(ValueError, match="one key"):
        for_version(FindCoordinatorRequest(key="", key_type=0, coordinator_keys=("a", "b")), 3)
    both = FindCoordinatorRequest(key="x", coordinator_keys=("a", "b"))  # the batch wins, as it did
    assert for_version(both, 4) == FindCoordinatorRequest(coordinator_keys=("a", "b"))


def test_leave_group_single_and_batched_forms() -> None:
    single = LeaveGroupRequest(group_id="g", member_id="m1")
    batched = LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id="m1"),))
    # The single-member form is written as a one-member batch.
    assert framed(single, 4) == h("02 67  02 03 6d 31 00 00  00")  # "g", [{"m1", null instance, tags}], tags
    for version in range(1, 6):
        assert framed(single, version) == framed(batched, version)
    assert encode(
        for_version(LeaveGroupRequest(group_id="g", member_id="", members=(MemberIdentity(member_id="m"),)), 2), 2
    ) == encode(LeaveGroupRequest(group_id="g", member_id="m"), 2)
    with pytest.raises(ValueError, match="one member"):
        for_version(
            LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id="a"), MemberIdentity(member_id="b"))), 2
        )


def test_offset_fetch_one_group_at_every_version() -> None:
    old = OffsetFetchRequest(
        group_id="g", topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0, 1)),), require_stable=True
    )
    new = OffsetFetchRequest(
        groups=(
            OffsetFetchRequestGroup(
                group_id="g",
                member_id="m",
                member_epoch=3,
                topics=(OffsetFetchRequestTopics(name="t", partition_indexes=(0, 1)),),
            ),
        ),
        require_stable=True,
    )
    for version in range(7, 9):  # the member fields are v9+ (and ignorable)
        assert framed(old, version) == framed(new, version)
    assert framed(new, 9) != framed(old, 9)
    for version in range(1, 7):  # RequireStable is v7+ and not ignorable: Kafka's builder refuses it too
        loose = attrs.evolve(new, require_stable=False)
        assert framed(attrs.evolve(old, require_stable=False), version) == framed(loose, version)
        with pytest.raises(ValueError, match="require_stable needs v7"):
            framed(new, version)
    every_topic = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="g"),))
    assert framed(every_topic, 6) == h("02 67  00  00")  # GroupId "g", Topics: null (all), tags
    with pytest.raises(ValueError, match="v2"):
        framed(every_topic, 1)  # null topics need v2+
    two = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="g"), OffsetFetchRequestGroup(group_id="h")))
    assert framed(two, 8) == h("03  02 67 00 00  02 68 00 00  00  00")
    with pytest.raises(ValueError, match="one group"):
        framed(two, 7)


def test_other_requests_pass_through() -> None:
    request = HeartbeatRequest(group_id="g")
    assert for_version(request, 1) is request


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
