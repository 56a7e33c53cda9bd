"""The KIP-848 membership manager (``managers/membership_consumer.py``): reconciling what the coordinator assigns
(topic ids to names through metadata, revoke with its callback before assign, a newer assignment after the
acknowledgement), being fenced, and leaving; driven through its heartbeat manager with literal times and hand-built
ConsumerGroupHeartbeat answers."""

from __future__ import annotations

from asyncconsumer.managers.commit import NO_GENERATION
from asyncconsumer.managers.member_state_consumer import ConsumerMemberState as S
from asyncconsumer.protocol.messages.consumer_group_heartbeat import TopicPartitions
from asyncconsumer.records import TopicPartition
from tests.support.consumer_member import T0, T1, T2, T_ID, U_ID, Harness, answer, cluster


def test_a_moved_partition_is_revoked_with_its_callback_before_the_new_ones_are_assigned() -> None:
    h = Harness()
    h.join({T_ID: (0, 1)})
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(1), 2)
    _, unsent = h.send(2000)
    unsent.on_response(answer(2, {T_ID: (1, 2)}), 2001)
    h.tick(2002)
    kind, revoked, future = h.calls[-1]
    assert (kind, revoked) == ("revoked", {T0})
    assert h.membership.owned == {T0, T1}  # still held (positions intact) while the callback may commit
    # Heartbeats during the callback still report the old partitions: the coordinator must not hand T0 out yet.
    during, _ = h.send(3001)
    assert during.topic_partitions is None
    future.set_result(None)
    h.tick(3002)
    assert (h.calls[-1][0], h.calls[-1][1]) == ("assigned", {T2})
    assert h.applied[-1] == {T1, T2}
    h.finish_callbacks()
    h.membership.poll(3003)
    assert h.membership.state is S.ACKNOWLEDGING


def test_a_new_assignment_during_reconciliation_is_reconciled_after_the_acknowledgement() -> None:
    h = Harness()
    h.join({T_ID: (0,)})
    h.tick(1)  # assign callback pending
    # A heartbeat goes out meanwhile (interval) and brings a newer assignment.
    _, unsent = h.send(1001)
    unsent.on_response(answer(2, {T_ID: (0, 1)}), 1002)
    h.finish_callbacks()
    ack, _ = h.send(1003)
    assert ack.topic_partitions == (TopicPartitions(topic_id=T_ID, partitions=(0,)),)
    assert h.membership.state is S.RECONCILING  # the newer target is next
    h.tick(1004)
    assert h.calls[-1][1] == {T1}


def test_unknown_topic_ids_wait_for_metadata_and_the_rest_is_reconciled_meanwhile() -> None:
    h = Harness()
    h.join({T_ID: (0,), U_ID: (0,)})
    h.tick(1)
    assert h.metadata_requests == 1
    assert h.applied[-1] == {T0}
    h.finish_callbacks()
    h.send(2)  # acknowledges what it has
    assert h.membership.state is S.RECONCILING
    h.cluster = cluster(("t", T_ID, 4), ("u", U_ID, 1))
    h.tick(3)
    assert h.applied[-1] == {T0, TopicPartition("u", 0)}


def test_fenced_loses_the_partitions_and_rejoins_with_epoch_zero_and_every_field() -> None:
    h = Harness()
    h.join({T_ID: (0, 1)}, epoch=4)
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(4), 2)
    member_id = h.membership.member_id
    _, unsent = h.send(1002)
    unsent.on_response(answer(-1, code=110), 1003)  # FENCED_MEMBER_EPOCH
    assert h.membership.state is S.FENCED
    assert h.membership.generation() is NO_GENERATION
    assert (h.calls[-1][0], h.calls[-1][1]) == ("lost", {T0, T1})
    assert h.applied[-1] == {T0, T1}  # the partitions leave the assignment only after the caller's callback
    assert h.tick(1004) == []  # no heartbeat until the lost callback returned
    assert h.applied[-1] == {T0, T1}
    h.finish_callbacks()
    rejoin, _ = h.send(1005)
    assert h.applied[-1] == frozenset()
    assert h.membership.state is S.JOINING
    assert (rejoin.member_epoch, rejoin.member_id, rejoin.subscribed_topic_names) == (0, member_id, ("t",))
    assert not [e for e in h.errors]  # fencing is not the caller's error


def test_an_answer_arriving_after_leave_does_not_reconcile() -> None:
    h = Harness()
    h.membership.subscribe()
    _, unsent = h.send(0)
    h.membership.leave()
    unsent.on_response(answer(1, {T_ID: (0,)}), 1)
    assert h.applied[-1:] != [{T0}]
    assert h.membership.state in (S.LEAVING, S.UNSUBSCRIBED)


def test_a_v0_coordinator_s_member_id_replaces_the_generated_one() -> None:
    h = Harness()
    h.membership.subscribe()
    join, unsent = h.send(0)
    unsent.on_response(answer(1, {T_ID: (0,)}, member_id="coordinator-made"), 1)
    assert h.membership.member_id == "coordinator-made" != join.member_id
    h.membership.poll(2)
    h.finish_callbacks()
    ack, _ = h.send(3)
    assert ack.member_id == "coordinator-made"
