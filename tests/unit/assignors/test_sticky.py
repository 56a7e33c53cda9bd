"""The sticky assignors (``assignors/sticky.py``): the balance the sticky target keeps, cooperative-sticky's
rebalance simulated round by round (hypothesis properties and hand-written groups), how conflicting claims are
resolved by generation, and the generation the assignor sends as user data."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.assignors import CooperativeStickyAssignor, GroupMember, RebalanceProtocol, perform_assignment
from asyncconsumer.assignors.roundrobin import round_robin_assign
from asyncconsumer.assignors.sticky import cooperative_sticky_assign, member_generation, resolve_owners, sticky_assign
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from tests.support.assignors import (
    TP,
    Group,
    check_balanced,
    check_complete,
    check_cooperative,
    check_eager,
    counts,
    groups,
    member,
    next_round,
    plain,
    subscribed_partitions,
    tps,
)

# --- the sticky target (eager) --------------------------------------------------------------------------------


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_eager_assigns_every_partition_exactly_once_to_a_subscriber(group: Group) -> None:
    check_eager(sticky_assign, group)


@given(group=groups(same_subscriptions=True))
@settings(max_examples=80, deadline=None)
def test_balanced_within_one_when_subscriptions_are_equal(group: Group) -> None:
    check_balanced(sticky_assign, group)


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_sticky_target_has_no_single_move_that_improves_balance(group: Group) -> None:
    # Java's balance criterion: no partition could go to another subscriber that has 2+ fewer partitions.
    partitions, members = group
    result = sticky_assign(partitions, members)
    size = {m: len(v) for m, v in result.items()}
    for giver, assigned in result.items():
        for tp in assigned:
            for other in members:
                if tp.topic in other.subscription.topics:
                    assert size[other.member_id] >= size[giver] - 1, (tp, giver, other.member_id, size)


@given(group=groups(owned=False))
@settings(max_examples=80, deadline=None)
def test_cooperative_sticky_without_owned_partitions_assigns_everything(group: Group) -> None:
    partitions, members = group
    check_complete(partitions, members, cooperative_sticky_assign(partitions, members))


# --- cooperative sticky ---------------------------------------------------------------------------------------


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_cooperative_sticky_moves_nothing_directly(group: Group) -> None:
    partitions, members = group
    result = cooperative_sticky_assign(partitions, members)
    check_cooperative(partitions, members, result)
    perform_assignment(CooperativeStickyAssignor(), partitions, members, RebalanceProtocol.COOPERATIVE)


@given(group=groups(same_subscriptions=True))
@settings(max_examples=80, deadline=None)
def test_cooperative_two_rounds_complete_and_balance(group: Group) -> None:
    partitions, members = group
    first = cooperative_sticky_assign(partitions, members)
    check_cooperative(partitions, members, first)

    second_members = next_round(members, first, 6)
    second = cooperative_sticky_assign(partitions, second_members)
    check_complete(partitions, second_members, second)
    assert max(counts(second)) - min(counts(second)) <= 1
    for member_id, kept in first.items():
        assert set(kept) <= set(second[member_id]), "round two took away what round one left in place"

    third = cooperative_sticky_assign(partitions, next_round(members, second, 7))
    assert plain(third) == plain(second)  # stable: nothing left to move


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_cooperative_converges_with_different_subscriptions(group: Group) -> None:
    partitions, members = group
    current = cooperative_sticky_assign(partitions, members)
    for generation in range(6, 12):
        current_members = next_round(members, current, generation)
        following = cooperative_sticky_assign(partitions, current_members)
        check_cooperative(partitions, current_members, following)
        if plain(following) == plain(current):
            check_complete(partitions, current_members, current)
            return
        current = following
    pytest.fail(f"no fixpoint after 6 rounds: {current}")


@given(group=groups(same_subscriptions=True))
@settings(max_examples=80, deadline=None)
def test_members_keep_their_owned_partitions_up_to_the_fair_share(group: Group) -> None:
    partitions, members = group
    owners = resolve_owners(partitions, members)
    fair = len(subscribed_partitions(partitions, members)) // len(members)
    result = cooperative_sticky_assign(partitions, members)
    for m in members:
        valid = {tp for tp, owner in owners.items() if owner == m.member_id}
        assert len(valid & set(result[m.member_id])) >= min(len(valid), fair)


@given(group=groups(same_subscriptions=True, owned=False), data=st.data())
@settings(max_examples=80, deadline=None)
def test_a_balanced_owned_assignment_is_kept_as_is(group: Group, data: st.DataObject) -> None:
    partitions, members = group
    previous = round_robin_assign(partitions, members)  # balanced, complete, and not what sticky would pick
    ids = [m.member_id for m in members]
    relabel = dict(zip(ids, data.draw(st.permutations(ids)), strict=True))
    owned = {relabel[m]: v for m, v in previous.items()}
    result = cooperative_sticky_assign(partitions, next_round(members, owned, 3))
    assert plain(result) == plain(owned)


def test_sticky_keeps_a_balanced_assignment_exactly() -> None:
    members = [
        member("a", ["t"], tps("t", 5, 1), 3),
        member("b", ["t"], tps("t", 0, 3), 3),
        member("c", ["t"], tps("t", 2, 4), 3),
    ]
    assert plain(cooperative_sticky_assign({"t": 6}, members)) == {
        "a": tps("t", 1, 5),
        "b": tps("t", 0, 3),
        "c": tps("t", 2, 4),
    }


def test_member_joining_takes_partitions_over_two_rounds() -> None:
    partitions = {"t": 6}
    members = [member("a", ["t"], tps("t", 0, 1, 2), 1), member("b", ["t"], tps("t", 3, 4, 5), 1), member("c", ["t"])]
    first = cooperative_sticky_assign(partitions, members)
    assert plain(first) == {"a": tps("t", 0, 1), "b": tps("t", 3, 4), "c": []}  # 2 and 5 revoked, given to nobody
    second = cooperative_sticky_assign(partitions, next_round(members, first, 2))
    assert plain(second) == {"a": tps("t", 0, 1), "b": tps("t", 3, 4), "c": tps("t", 2, 5)}


def test_member_leaving_hands_its_partitions_out_at_once() -> None:
    # The member that left is not in the group: nobody still owns its partitions, so nothing waits.
    members = [member("a", ["t"], tps("t", 0, 1), 4), member("b", ["t"], tps("t", 2, 3), 4)]
    assert plain(cooperative_sticky_assign({"t": 6}, members)) == {"a": tps("t", 0, 1, 4), "b": tps("t", 2, 3, 5)}


def test_conflicting_claims_the_highest_generation_wins() -> None:
    def group(a_generation: int, b_generation: int) -> list[GroupMember]:
        return [
            member("a", ["t"], tps("t", 0, 1), a_generation),
            member("b", ["t"], tps("t", 1, 2), b_generation),
            member("c", ["t"], tps("t", 3), 5),
        ]

    partitions = {"t": 4}
    assert plain(cooperative_sticky_assign(partitions, group(5, 4))) == {
        "a": tps("t", 0, 1),
        "b": tps("t", 2),
        "c": tps("t", 3),
    }
    assert plain(cooperative_sticky_assign(partitions, group(4, 5))) == {
        "a": tps("t", 0),
        "b": tps("t", 1, 2),
        "c": tps("t", 3),
    }
    assert plain(cooperative_sticky_assign(partitions, group(-1, 2))) == {
        "a": tps("t", 0),
        "b": tps("t", 1, 2),
        "c": tps("t", 3),
    }


def test_conflicting_claims_in_the_same_generation_are_revoked_by_both() -> None:
    members = [member("a", ["t"], tps("t", 0, 1), 5), member("b", ["t"], tps("t", 1, 2, 3), 5), member("c", ["t"])]
    assert resolve_owners({"t": 4}, members) == {TP("t", 0): "a", TP("t", 2): "b", TP("t", 3): "b"}
    first = cooperative_sticky_assign({"t": 4}, members)
    assert plain(first) == {"a": tps("t", 0), "b": tps("t", 2, 3), "c": []}  # t-1 goes to c, once both revoked it
    second = cooperative_sticky_assign({"t": 4}, next_round(members, first, 6))
    assert plain(second) == {"a": tps("t", 0), "b": tps("t", 2, 3), "c": tps("t", 1)}


def test_generation_from_user_data_when_the_subscription_has_none() -> None:
    old = struct.pack(">i", 9)
    assert member_generation(ConsumerProtocolSubscription(topics=("t",), user_data=old)) == 9
    assert (
        member_generation(ConsumerProtocolSubscription(topics=("t",), user_data=old, generation_id=4)) == 4
    )  # the v2 field wins
    assert (
        member_generation(ConsumerProtocolSubscription(topics=("t",), user_data=b"\x01")) == -1
    )  # unreadable: no generation
    members = [
        member("a", ["t"], tps("t", 0), user_data=struct.pack(">i", 3)),
        member("b", ["t"], tps("t", 0), user_data=old),
    ]
    assert resolve_owners({"t": 1}, members) == {TP("t", 0): "b"}


def test_claims_on_missing_or_unsubscribed_partitions_are_dropped() -> None:
    members = [member("a", ["t"], [TP("t", 0), TP("t", 9), TP("gone", 0), TP("u", 0)], 2), member("b", ["t", "u"])]
    assert resolve_owners({"t": 2, "u": 1}, members) == {TP("t", 0): "a"}
    # a no longer reads u: it revokes u-0, and b (its only reader) gets it in the next round; t-1 evens a out.
    assert plain(cooperative_sticky_assign({"t": 2, "u": 1}, members)) == {"a": tps("t", 0, 1), "b": []}


def test_cooperative_sticky_assignor_sends_its_generation() -> None:
    assignor = CooperativeStickyAssignor()
    assert assignor.subscription_user_data(frozenset({"t"})) == struct.pack(">i", -1)
    assignor.on_assignment(
        ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0,)),)), 7
    )
    assert assignor.generation == 7
    assert (
        member_generation(
            ConsumerProtocolSubscription(topics=("t",), user_data=assignor.subscription_user_data(frozenset({"t"})))
        )
        == 7
    )
