"""The classic membership manager (``managers/membership_classic.py``), driven with literal times and hand-built
answers."""

from __future__ import annotations

import pytest

from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.managers.commit import NO_GENERATION
from asyncconsumer.managers.member_state import MemberState
from asyncconsumer.managers.membership_classic import sends_leave
from asyncconsumer.protocol.consumer_protocol import encode_assignment
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from asyncconsumer.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from asyncconsumer.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from asyncconsumer.records import GroupMembershipOperation, TopicPartition
from tests.support.classic_member import Harness, joined

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_join_with_member_id_required_then_lead_sync_and_become_stable() -> None:
    h = Harness()
    h.manager.subscribe()
    first = h.one(0)
    assert isinstance(first.request, JoinGroupRequest) and first.request.member_id == ""
    assert first.timeout_ms == 35_000  # a join may be held for the whole rebalance timeout
    first.on_response(
        JoinGroupResponse(
            error_code=79,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None,
            leader="",
            member_id="m-1",
            members=(),
        ),
        1,
    )  # MEMBER_ID_REQUIRED
    second = h.one(2)
    assert isinstance(second.request, JoinGroupRequest) and second.request.member_id == "m-1"
    second.on_response(joined("m-1", leader="m-1"), 3)
    assert h.manager.state is MemberState.SYNCING
    assert h.leader_inputs[0][0] == "range" and [m.member_id for m in h.leader_inputs[0][1]] == ["m-1"]
    sync = h.one(4)
    assert isinstance(sync.request, SyncGroupRequest)
    assert (sync.request.generation_id, sync.request.member_id) == (5, "m-1")
    assert [a.member_id for a in sync.request.assignments] == ["m-1"]
    sync.on_response(
        SyncGroupResponse(
            error_code=0,
            assignment=encode_assignment(
                ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),))
            ),
        ),
        5,
    )
    assert h.applied[-1] == {TP0, TP1}
    assert h.manager.state is MemberState.ASSIGNING
    kind, partitions, done = h.calls[-1]
    assert (kind, partitions) == ("assigned", {TP0, TP1})
    assert h.manager.poll(6).unsent_requests == ()  # waits for the caller's callback
    assert h.manager.state is MemberState.ASSIGNING
    done.set_result(None)
    h.manager.poll(7)
    assert h.manager.state is MemberState.STABLE
    assert h.manager.generation().generation_id == 5


def test_a_stable_leader_whose_assignment_went_stale_rejoins_even_when_metadata_came_while_syncing() -> None:
    """The leader assigned before it knew the topic (it came in the same moment as the SyncGroup answer): the
    staleness is asked on every poll once stable, not only when metadata arrives (Java's rejoinNeededOrPending)."""
    h = Harness()
    h.stale = "the partitions of subscribed topics changed since the assignment: ['t']"
    h.manager.subscribe()
    h.one(0).on_response(joined("m-1", leader="m-1"), 0)
    assert h.manager.state is MemberState.SYNCING
    h.one(0).on_response(
        SyncGroupResponse(
            error_code=0,
            assignment=encode_assignment(
                ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),))
            ),
        ),
        0,
    )
    assert h.manager.state is MemberState.ASSIGNING  # the assign callback is pending: not yet
    assert h.manager.poll(1).unsent_requests == ()
    h.calls[-1][2].set_result(None)
    assert h.manager.poll(2).unsent_requests == ()  # stable now, and stale: the leader rejoins at once...
    assert [kind for kind, _, _ in h.calls] == ["assigned", "revoked"]  # ...revoking first (eager)
    h.calls[-1][2].set_result(None)
    assert isinstance(h.one(3).request, JoinGroupRequest)


def test_the_join_waits_until_the_metadata_covers_the_subscription() -> None:
    h = Harness()
    h.ready = False
    h.manager.subscribe()
    assert h.manager.poll(0).unsent_requests == ()
    assert h.manager.poll(100).unsent_requests == ()
    h.ready = True  # the metadata answered
    assert isinstance(h.one(200).request, JoinGroupRequest)


def test_a_follower_sends_no_assignments() -> None:
    h = Harness()
    h.manager.subscribe()
    h.one(0).on_response(joined("m-2", leader="m-1"), 1)
    sync = h.one(2)
    assert isinstance(sync.request, SyncGroupRequest) and sync.request.assignments == ()
    assert h.leader_inputs == []


def test_a_rejoin_revokes_first_and_waits_for_the_callback() -> None:
    h = Harness()
    h.join_as_leader()
    h.manager.request_rejoin("heartbeat said REBALANCE_IN_PROGRESS")
    assert h.manager.state is MemberState.PREPARING
    assert h.applied[-1] == {TP0, TP1}  # still assigned while the revoke callback may commit
    kind, partitions, done = h.calls[-1]
    assert (kind, partitions) == ("revoked", {TP0, TP1})
    assert h.manager.generation().generation_id == 5  # commits during the revoke callback use the old generation
    assert h.manager.poll(10).unsent_requests == ()
    done.set_result(None)
    join = h.one(11)
    assert h.applied[-1] == frozenset()  # given up once the callback returned
    assert isinstance(join.request, JoinGroupRequest) and join.request.member_id == "m-1"


def test_sync_with_an_illegal_generation_rejoins_after_backoff() -> None:
    h = Harness()
    h.manager.subscribe()
    h.one(0).on_response(joined("m-1", leader="m-1"), 0)
    h.one(1).on_response(SyncGroupResponse(error_code=22, assignment=b""), 10)  # ILLEGAL_GENERATION
    assert h.manager.state is MemberState.JOINING
    assert h.manager.generation() is NO_GENERATION
    assert h.manager.poll(50).unsent_requests == ()
    assert isinstance(h.one(110).request, JoinGroupRequest)


def test_being_fenced_loses_the_partitions_and_joins_again_as_new() -> None:
    h = Harness()
    h.join_as_leader()
    h.manager.fenced(25)  # UNKNOWN_MEMBER_ID
    assert h.manager.state is MemberState.UNJOINED
    assert (h.calls[-1][0], h.calls[-1][1]) == ("lost", {TP0, TP1})
    assert h.manager.generation() is NO_GENERATION
    h.calls[-1][2].set_result(None)
    join = h.one(1)
    assert isinstance(join.request, JoinGroupRequest) and join.request.member_id == ""


def test_no_common_assignor_is_fatal_once_with_a_clear_error() -> None:
    h = Harness()
    h.manager.subscribe()
    h.one(0).on_response(joined("m-1", leader="m-1", code=23), 1)  # INCONSISTENT_GROUP_PROTOCOL
    assert h.manager.state is MemberState.FATAL
    assert len(h.errors) == 1
    assert "no partition assignment strategy in common" in str(h.errors[0].error)
    assert "range" in str(h.errors[0].error)
    assert h.manager.poll(5_000).unsent_requests == ()


def test_a_lost_coordinator_during_join_is_forgotten_and_the_join_retried() -> None:
    h = Harness()
    h.manager.subscribe()
    h.one(0).on_response(KafkaConnectionError("gone"), 1)
    assert h.coordinator.coordinator is None
    assert h.manager.poll(500).unsent_requests == ()  # no coordinator: nothing to send
    (find,) = h.coordinator.poll(500).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=2, host="h2", port=9092, error_message=None), 501)
    assert isinstance(h.one(502).request, JoinGroupRequest)


def test_leaving_revokes_and_sends_leave_group() -> None:
    h = Harness()
    h.join_as_leader()
    h.manager.leave()
    assert h.calls[-1][0] == "revoked"
    leave = h.one(1)
    assert isinstance(leave.request, LeaveGroupRequest)
    assert [m.member_id for m in leave.request.members] == ["m-1"]
    leave.on_response(LeaveGroupResponse(error_code=0), 2)
    assert h.manager.state is MemberState.UNJOINED
    assert h.manager.poll(3).unsent_requests == ()  # unsubscribed: no rejoin


def test_a_static_member_leaves_without_leave_group() -> None:
    h = Harness(instance_id="static-1")
    h.join_as_leader()
    join_request = h.manager._join_request()
    assert join_request.group_instance_id == "static-1"
    h.manager.leave()
    assert h.manager.state is MemberState.UNJOINED
    assert h.manager.poll(1).unsent_requests == ()


def cooperative_harness() -> Harness:
    h = Harness()
    h.manager.cooperative = True
    return h


def test_cooperative_rejoin_keeps_the_partitions_and_revokes_only_what_moved() -> None:
    h = cooperative_harness()
    h.join_as_leader()
    assert h.applied[-1] == {TP0, TP1}
    h.manager.request_rejoin("a member joined")
    assert h.manager.state is MemberState.JOINING  # no revoke before joining
    assert h.calls[-1][0] == "assigned"
    join = h.one(1)
    join.on_response(joined("m-1", leader="m-2", generation=6), 2)
    sync = h.one(3)
    sync.on_response(
        SyncGroupResponse(
            error_code=0,
            assignment=encode_assignment(
                ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0,)),))
            ),
        ),
        4,
    )
    kind, partitions, done = h.calls[-1]
    assert (kind, partitions) == ("revoked", {TP1})  # only the partition that moved
    assert h.applied[-1] == {TP0, TP1}  # still held while the callback may commit
    done.set_result(None)
    h.manager.poll(5)
    assert h.applied[-1] == {TP0}
    kind, partitions, done = h.calls[-1]
    assert (kind, partitions) == ("assigned", frozenset())
    done.set_result(None)
    h.manager.poll(6)
    # Something was revoked: rejoin at once so the group can give it to its new owner.
    assert h.manager.state is MemberState.JOINING


def test_cooperative_assignment_without_revocation_settles() -> None:
    h = cooperative_harness()
    h.manager.subscribe()
    h.one(0).on_response(joined("m-1", leader="m-2"), 1)
    h.one(2).on_response(
        SyncGroupResponse(
            error_code=0,
            assignment=encode_assignment(
                ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(1,)),))
            ),
        ),
        3,
    )
    kind, partitions, done = h.calls[-1]
    assert (kind, partitions) == ("assigned", {TP1})
    done.set_result(None)
    h.manager.poll(4)
    assert h.manager.state is MemberState.STABLE


def test_a_cooperative_rebalance_notice_during_the_assign_callback_waits_for_it() -> None:
    """The race seen in the group benchmark: a heartbeat says REBALANCE_IN_PROGRESS while the caller has not yet run
    on_partitions_assigned. The member finishes that callback (STABLE), then rejoins; before the fix it moved to
    JOINING at once and died with IllegalStateError('JOINING cannot move to STABLE') when the callback returned."""
    h = cooperative_harness()
    h.join_as_follower()
    kind, _, done = h.calls[-1]
    assert kind == "assigned" and h.manager.state is MemberState.ASSIGNING
    h.manager.request_rejoin("the coordinator started a rebalance")
    assert h.manager.state is MemberState.ASSIGNING  # not before the callback returned
    assert h.manager.poll(4).unsent_requests == ()
    done.set_result(None)
    (join,) = h.manager.poll(5).unsent_requests  # STABLE for a moment, then the deferred rejoin
    assert isinstance(join.request, JoinGroupRequest) and join.request.member_id == "m-1"
    assert h.manager.state is MemberState.JOINING
    assert h.manager.owned == {TP0, TP1}  # cooperative: kept across the rejoin


def test_an_eager_rejoin_during_the_assign_callback_revokes_after_it() -> None:
    h = Harness()
    h.join_as_follower()
    assigned = h.calls[-1][2]
    h.manager.request_rejoin("the coordinator started a rebalance")
    assert [c[0] for c in h.calls] == ["assigned"]  # no revoke of partitions the caller has not been given yet
    assigned.set_result(None)
    h.manager.poll(4)
    assert [(c[0], c[1]) for c in h.calls] == [("assigned", {TP0, TP1}), ("revoked", {TP0, TP1})]
    assert h.manager.state is MemberState.PREPARING


def test_leaving_while_a_callback_is_pending_abandons_what_was_to_follow_it() -> None:
    h = Harness()
    h.join_as_follower()
    assigned = h.calls[-1][2]
    h.manager.leave_until_next_poll()  # the caller stopped polling before it ran on_partitions_assigned
    (leave,) = h.manager.poll(4).unsent_requests  # the pending callback does not hold the LeaveGroup back
    assert isinstance(leave.request, LeaveGroupRequest)
    leave.on_response(LeaveGroupResponse(error_code=0), 5)
    assigned.set_result(None)  # the caller finally runs it; nothing may move the member to STABLE now
    h.manager.poll(6)
    assert h.manager.state is MemberState.UNJOINED
    h.manager.caller_polled()
    (join,) = h.manager.poll(7).unsent_requests
    assert isinstance(join.request, JoinGroupRequest)


@pytest.mark.parametrize(
    ("instance_id", "operation", "leaves"),
    [
        (None, GroupMembershipOperation.DEFAULT, True),
        (None, GroupMembershipOperation.LEAVE_GROUP, True),
        (None, GroupMembershipOperation.REMAIN_IN_GROUP, False),
        ("static-1", GroupMembershipOperation.DEFAULT, False),
        ("static-1", GroupMembershipOperation.LEAVE_GROUP, True),
        ("static-1", GroupMembershipOperation.REMAIN_IN_GROUP, False),
    ],
)
def test_close_sends_leave_group_as_the_close_operation_says(
    instance_id: str | None, operation: GroupMembershipOperation, leaves: bool
) -> None:
    """KIP-1092 on the classic protocol: a static member's LeaveGroup names its instance id, which removes it."""
    h = Harness(instance_id=instance_id)
    h.join_as_leader()
    h.manager.closing(operation)
    sent = h.manager.poll_on_close(1).unsent_requests
    assert h.applied[-1] == frozenset()  # the partitions leave the assignment either way
    if not leaves:
        assert sent == () and h.manager.state is MemberState.UNJOINED
        return
    (leave,) = sent
    assert isinstance(leave.request, LeaveGroupRequest)
    assert [(m.member_id, m.group_instance_id) for m in leave.request.members] == [("m-1", instance_id)]


def test_a_leave_before_the_close_keeps_the_default() -> None:
    assert sends_leave(GroupMembershipOperation.DEFAULT, static=False)
    assert not sends_leave(GroupMembershipOperation.DEFAULT, static=True)
    h = Harness()
    h.join_as_leader()
    h.manager.leave()  # unsubscribe: nothing set by a close
    assert isinstance(h.one(1).request, LeaveGroupRequest)
