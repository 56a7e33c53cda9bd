"""The classic protocol as a kind of membership (``managers/group_classic.py``): what ``build`` wires from the
configuration, what a JoinGroup offers (one protocol per assignor, owned partitions only when cooperative), and the
leader's side: assigning by the chosen assignor over the metadata it has, asking for topics it lacks, rejoining
when the partitions changed since, and joining only once the subscription's topics are known."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

from asyncconsumer.assignors import NoCommonAssignorError, RebalanceProtocol, to_wire
from asyncconsumer.managers.group_classic import ClassicLeader, build
from asyncconsumer.managers.heartbeat_classic import ClassicHeartbeatManager
from asyncconsumer.managers.membership_classic import ClassicMembershipManager
from asyncconsumer.protocol.consumer_protocol import decode_assignment, decode_subscription, encode_subscription
from asyncconsumer.protocol.messages.consumer_protocol import ConsumerProtocolSubscription
from asyncconsumer.protocol.messages.consumer_protocol import TopicPartition as WireTopicPartition
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponseMember
from asyncconsumer.records import TopicPartition
from tests.support.group_context import answer_metadata, membership_context

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def member(member_id: str, *topics: str) -> JoinGroupResponseMember:
    return JoinGroupResponseMember(
        member_id=member_id,
        group_instance_id=None,
        metadata=encode_subscription(ConsumerProtocolSubscription(topics=topics)),
    )


def as_member(member_id: str, leader_id: str, *, owned: frozenset[TopicPartition] = frozenset()) -> SimpleNamespace:
    """What the leader reads of its own membership manager."""
    return SimpleNamespace(member_id=member_id, leader_id=leader_id, owned=owned, cooperative=True, generation_id=4)


def test_build_wires_a_classic_member_whose_join_offers_each_assignor_in_order() -> None:
    context, _ = membership_context(
        partition_assignment_strategy=["cooperative-sticky", "range"], max_poll_interval_ms=40_000
    )
    built = build(context)
    assert isinstance(built.manager, ClassicMembershipManager) and isinstance(built.heartbeat, ClassicHeartbeatManager)
    assert built.managers == (built.manager, built.heartbeat)
    assert (built.coordinator_matches_patterns, built.member_epoch_in_offset_fetch) == (False, False)
    assert built.manager.cooperative is False  # range is eager only: the group rebalances eagerly
    context.subscriptions.subscribe(["b", "a"])
    answer_metadata(context.metadata, {"a": 2, "b": 1})
    (find,) = context.coordinator.poll(0).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
    built.manager.subscribe()
    (join,) = built.manager.poll(1).unsent_requests
    assert isinstance(join.request, JoinGroupRequest)
    assert join.request.rebalance_timeout_ms == 40_000  # max_poll_interval_ms, as Java
    offered = [(p.name, decode_subscription(p.metadata)) for p in join.request.protocols]
    assert [name for name, _ in offered] == ["cooperative-sticky", "range"]
    assert [s.topics for _, s in offered] == [("a", "b"), ("a", "b")]
    assert offered[0][1].user_data == struct.pack(">i", -1)  # cooperative-sticky sends its generation
    assert offered[1][1].user_data is None
    assert all((s.owned_partitions, s.generation_id) == ((), -1) for _, s in offered)  # eager: owns nothing


def test_a_cooperative_member_offers_what_it_owns_and_its_generation() -> None:
    context, _ = membership_context(partition_assignment_strategy=["cooperative-sticky"])
    leader = ClassicLeader(context)
    assert leader.protocol is RebalanceProtocol.COOPERATIVE
    context.subscriptions.subscribe(["t"])
    (protocol,) = leader.protocols(as_member("m-1", "m-2", owned=frozenset([T1, T0])))  # type: ignore[arg-type]
    subscription = decode_subscription(protocol.metadata)
    assert (subscription.owned_partitions, subscription.generation_id) == (to_wire([T0, T1]), 4)
    assert build(context).manager.cooperative is True


def test_the_leader_assigns_with_the_chosen_assignor_over_the_metadata_it_has() -> None:
    context, _ = membership_context(partition_assignment_strategy=["roundrobin", "range"])
    answer_metadata(context.metadata, {"t": 4})
    leader = ClassicLeader(context)
    result = leader.assign("range", [member("m-2", "t"), member("m-1", "t")])
    assert {m: decode_assignment(data).assigned_partitions for m, data in result.items()} == {
        "m-1": (WireTopicPartition(topic="t", partitions=(0, 1)),),
        "m-2": (WireTopicPartition(topic="t", partitions=(2, 3)),),
    }
    with pytest.raises(NoCommonAssignorError, match="this member: \\[roundrobin, range\\]; the group: \\[sticky\\]"):
        leader.assign("sticky", [member("m-1", "t")])


def test_a_topic_the_leader_has_no_metadata_for_is_asked_for_and_assigned_nothing_yet() -> None:
    context, _ = membership_context()
    answer_metadata(context.metadata, {"t": 1})
    result = ClassicLeader(context).assign("range", [member("m-1", "t", "u")])
    assert decode_assignment(result["m-1"]).assigned_partitions == (WireTopicPartition(topic="t", partitions=(0,)),)
    (request,) = context.metadata.poll(1).unsent_requests  # the leader asked for u
    assert "u" in {t.name for t in request.request.topics or ()}  # type: ignore[attr-defined]


def test_a_leader_whose_topics_changed_since_it_assigned_rejoins_once() -> None:
    context, _ = membership_context()
    answer_metadata(context.metadata, {"t": 2})
    leader = ClassicLeader(context)
    me = as_member("m-1", "m-1")
    assert leader.stale_assignment(me) is None  # never assigned
    leader.assign("range", [member("m-1", "t")])
    assert leader.stale_assignment(me) is None  # nothing changed
    answer_metadata(context.metadata, {"t": 3}, now_ms=10)
    assert leader.stale_assignment(me) == "the partitions of subscribed topics changed since the assignment: ['t']"
    assert leader.stale_assignment(me) is None  # told once: the rejoin assigns anew


def test_a_member_that_is_no_longer_the_leader_forgets_what_it_assigned() -> None:
    context, _ = membership_context()
    answer_metadata(context.metadata, {"t": 2})
    leader = ClassicLeader(context)
    leader.assign("range", [member("m-1", "t")])
    assert leader.stale_assignment(as_member("m-1", "m-2")) is None
    answer_metadata(context.metadata, {"t": 3}, now_ms=10)
    assert leader.stale_assignment(as_member("m-1", "m-1")) is None  # the snapshot went with the leadership


def test_a_join_waits_until_the_metadata_answered_for_every_subscribed_topic() -> None:
    context, _ = membership_context()
    leader = ClassicLeader(context)
    context.subscriptions.subscribe(["t", "gone"])
    assert leader.subscription_known() is False
    answer_metadata(context.metadata, {"t": 1})
    assert leader.subscription_known() is False
    answer_metadata(context.metadata, {"t": 1}, unknown=["gone"], now_ms=10)  # it does not exist: known too
    assert leader.subscription_known() is True
