"""Partition assignors: exact results on small hand-written groups (Kafka's documented examples included),
hypothesis properties every assignor must keep, the cooperative-sticky rebalance simulated round by round, and
the registry (``assignor_for``, ``choose_protocol``, ``rebalance_protocol``, ``perform_assignment``).
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.assignors import (
    BUILTIN_ASSIGNORS,
    CooperativeStickyAssignor,
    GroupAssignment,
    GroupMember,
    NoCommonAssignorError,
    PartitionAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    assignor_for,
    choose_protocol,
    from_wire,
    perform_assignment,
    rebalance_protocol,
    to_wire,
)
from asyncconsumer.assignors.range_assignor import range_assign
from asyncconsumer.assignors.roundrobin import round_robin_assign
from asyncconsumer.assignors.sticky import cooperative_sticky_assign, member_generation, resolve_owners, sticky_assign
from asyncconsumer.errors import ConfigError, IllegalStateError, KafkaError
from asyncconsumer.protocol.consumer_protocol import decode_assignment, encode_assignment
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.records import TopicPartition

TP = TopicPartition
Result = Mapping[str, Sequence[TopicPartition]]
Group = tuple[dict[str, int], list[GroupMember]]
Assign = Callable[[Mapping[str, int], Sequence[GroupMember]], dict[str, list[TopicPartition]]]


def member(
    member_id: str,
    topics: Sequence[str],
    owned: Sequence[TopicPartition] = (),
    generation: int = -1,
    instance: str | None = None,
    user_data: bytes | None = None,
) -> GroupMember:
    return GroupMember(
        member_id,
        instance,
        ConsumerProtocolSubscription(
            topics=tuple(topics), user_data=user_data, owned_partitions=to_wire(owned), generation_id=generation
        ),
    )


def tps(topic: str, *partitions: int) -> list[TopicPartition]:
    return [TP(topic, p) for p in partitions]


def plain(result: Result) -> dict[str, list[TopicPartition]]:
    return {member_id: sorted(partitions) for member_id, partitions in result.items()}


def counts(result: Result) -> list[int]:
    return [len(partitions) for partitions in result.values()]


# --- range -------------------------------------------------------------------------------------------------


def test_range_kafka_example() -> None:
    # RangeAssignor's javadoc: two members, two topics of three partitions.
    members = [member("C1", ["t0", "t1"]), member("C0", ["t0", "t1"])]
    assert plain(range_assign({"t0": 3, "t1": 3}, members)) == {
        "C0": tps("t0", 0, 1) + tps("t1", 0, 1),
        "C1": tps("t0", 2) + tps("t1", 2),
    }


def test_range_is_per_topic_over_the_members_subscribed_to_it() -> None:
    members = [member("c", ["t0", "t1"]), member("a", ["t0"]), member("b", ["t0", "t1"])]
    assert plain(range_assign({"t0": 5, "t1": 2}, members)) == {
        "a": tps("t0", 0, 1),
        "b": tps("t0", 2, 3) + tps("t1", 0),
        "c": tps("t0", 4) + tps("t1", 1),
    }


def test_range_orders_static_members_by_instance_id_first() -> None:
    members = [member("a", ["t"]), member("z", ["t"], instance="i1"), member("b", ["t"], instance="i0")]
    assert plain(range_assign({"t": 5}, members)) == {"b": tps("t", 0, 1), "z": tps("t", 2, 3), "a": tps("t", 4)}


def test_range_skips_unknown_topics_and_gives_every_member_an_entry() -> None:
    members = [member("a", ["missing"]), member("b", ["t", "missing"]), member("c", ["t"])]
    assert plain(range_assign({"t": 1}, members)) == {"a": [], "b": tps("t", 0), "c": []}


# --- round robin ------------------------------------------------------------------------------------------


def test_round_robin_kafka_example_same_subscriptions() -> None:
    members = [member("C1", ["t0", "t1"]), member("C0", ["t1", "t0"])]
    assert plain(round_robin_assign({"t0": 3, "t1": 3}, members)) == {
        "C0": tps("t0", 0, 2) + tps("t1", 1),
        "C1": tps("t0", 1) + tps("t1", 0, 2),
    }


def test_round_robin_kafka_example_different_subscriptions() -> None:
    # RoundRobinAssignor's javadoc: members not subscribed to a partition's topic are skipped.
    members = [member("C0", ["t0"]), member("C1", ["t0", "t1"]), member("C2", ["t0", "t1", "t2"])]
    assert plain(round_robin_assign({"t0": 1, "t1": 2, "t2": 3}, members)) == {
        "C0": tps("t0", 0),
        "C1": tps("t1", 0),
        "C2": tps("t1", 1) + tps("t2", 0, 1, 2),
    }


def test_round_robin_continues_the_circle_across_topics() -> None:
    members = [member(m, ["a", "b"]) for m in ("m3", "m1", "m2")]
    assert plain(round_robin_assign({"a": 2, "b": 2}, members)) == {
        "m1": [TP("a", 0), TP("b", 1)],
        "m2": [TP("a", 1)],
        "m3": [TP("b", 0)],
    }


# --- properties of every assignor ---------------------------------------------------------------------------

TOPICS = ("t0", "t1", "t2", "t3")


@st.composite
def groups(draw: st.DrawFn, *, same_subscriptions: bool = False, owned: bool = True) -> Group:
    """Topics with partition counts and members with subscriptions (sometimes to a topic that does not exist),
    owned partitions (sometimes conflicting, stale, on other topics or nonexistent) and generations."""
    partitions = {t: draw(st.integers(1, 7)) for t in draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))}
    names = draw(st.lists(st.sampled_from([f"m{i}" for i in range(8)]), min_size=1, max_size=6, unique=True))
    choices = (*sorted(partitions), "ghost")
    shared = tuple(draw(st.lists(st.sampled_from(choices), min_size=1, unique=True)))
    all_partitions = [TP(t, p) for t, n in partitions.items() for p in range(n + 1)]  # + one that does not exist
    members = []
    for name in names:
        topics = (
            shared if same_subscriptions else tuple(draw(st.lists(st.sampled_from(choices), min_size=1, unique=True)))
        )
        claims = draw(st.lists(st.sampled_from(all_partitions), unique=True)) if owned and all_partitions else []
        generation = draw(st.sampled_from([-1, 3, 4, 5]))
        static = draw(st.none() | st.sampled_from(["i0", "i1", "i2"]))
        members.append(member(name, topics, claims, generation, static))
    unique_static = Counter(m.group_instance_id for m in members if m.group_instance_id)
    members = [
        m if unique_static[m.group_instance_id or ""] <= 1 else GroupMember(m.member_id, None, m.subscription)
        for m in members
    ]
    return partitions, members


def subscribed_partitions(partitions: Mapping[str, int], members: Sequence[GroupMember]) -> set[TopicPartition]:
    topics = {t for m in members for t in m.subscription.topics if t in partitions}
    return {TP(t, p) for t in topics for p in range(partitions[t])}


def check_valid(
    partitions: Mapping[str, int], members: Sequence[GroupMember], result: Result
) -> Counter[TopicPartition]:
    """Every member has an entry; partitions exist, go to subscribers of their topic, at most once."""
    assert set(result) == {m.member_id for m in members}
    subscriptions = {m.member_id: set(m.subscription.topics) for m in members}
    seen: Counter[TopicPartition] = Counter()
    for member_id, assigned in result.items():
        for tp in assigned:
            assert 0 <= tp.partition < partitions[tp.topic]
            assert tp.topic in subscriptions[member_id], f"{tp} given to {member_id}, not subscribed"
            seen[tp] += 1
    assert all(n == 1 for n in seen.values()), seen
    return seen


def check_complete(partitions: Mapping[str, int], members: Sequence[GroupMember], result: Result) -> None:
    assert set(check_valid(partitions, members, result)) == subscribed_partitions(partitions, members)


EAGER_ASSIGNS = [range_assign, round_robin_assign, sticky_assign]


@pytest.mark.parametrize("assign", EAGER_ASSIGNS, ids=lambda f: f.__name__)
@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_eager_assigns_every_partition_exactly_once_to_a_subscriber(assign: Assign, group: Group) -> None:
    partitions, members = group
    result = assign(partitions, members)
    check_complete(partitions, members, result)
    assert plain(assign(partitions, list(reversed(members)))) == plain(result)  # deterministic, order-free


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_every_builtin_assignor_passes_the_leaders_checks(group: Group) -> None:
    partitions, members = group
    for name in ("range", "roundrobin", "cooperative-sticky"):
        assignor = assignor_for(name)
        protocol = max(assignor.supported_protocols, key=lambda p: p.value)
        result = perform_assignment(assignor, partitions, members, protocol)
        check_valid(partitions, members, result.partitions)
        assert all(list(v) == sorted(v) for v in result.partitions.values())


@pytest.mark.parametrize("assign", [round_robin_assign, sticky_assign], ids=lambda f: f.__name__)
@given(group=groups(same_subscriptions=True))
@settings(max_examples=80, deadline=None)
def test_balanced_within_one_when_subscriptions_are_equal(assign: Assign, group: Group) -> None:
    partitions, members = group
    sizes = counts(assign(partitions, members))
    assert max(sizes) - min(sizes) <= 1, sizes


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


def claimants(members: Sequence[GroupMember]) -> dict[TopicPartition, set[str]]:
    found: dict[TopicPartition, set[str]] = {}
    for m in members:
        for tp in from_wire(m.subscription.owned_partitions):
            found.setdefault(tp, set()).add(m.member_id)
    return found


def check_cooperative(partitions: Mapping[str, int], members: Sequence[GroupMember], result: Result) -> None:
    """Valid, never hands a member a partition another member owns, and withholds only such partitions."""
    seen = check_valid(partitions, members, result)
    claimed = claimants(members)
    for member_id, assigned in result.items():
        for tp in assigned:
            assert member_id in claimed.get(tp, {member_id}), f"{tp} moved straight to {member_id}"
    for tp in subscribed_partitions(partitions, members) - set(seen):
        assert claimed.get(tp), f"{tp} is unowned yet was not assigned"


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_cooperative_sticky_moves_nothing_directly(group: Group) -> None:
    partitions, members = group
    result = cooperative_sticky_assign(partitions, members)
    check_cooperative(partitions, members, result)
    perform_assignment(CooperativeStickyAssignor(), partitions, members, RebalanceProtocol.COOPERATIVE)


def next_round(members: Sequence[GroupMember], result: Result, generation: int) -> list[GroupMember]:
    """What every member sends in the follow-up rebalance: its new assignment, at the new generation."""
    return [
        member(m.member_id, m.subscription.topics, result[m.member_id], generation, m.group_instance_id)
        for m in members
    ]


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


# --- registry, protocol choice and the leader's checks ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("range", RangeAssignor),
        ("roundrobin", RoundRobinAssignor),
        ("cooperative-sticky", CooperativeStickyAssignor),
        ("org.apache.kafka.clients.consumer.RangeAssignor", RangeAssignor),
        ("org.apache.kafka.clients.consumer.RoundRobinAssignor", RoundRobinAssignor),
        ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", CooperativeStickyAssignor),
    ],
)
def test_assignor_for_builtin_names(name: str, cls: type) -> None:
    first, second = assignor_for(name), assignor_for(name)
    assert type(first) is cls
    assert first is not second  # assignors keep per-consumer state
    assert first.name in {"range", "roundrobin", "cooperative-sticky"}
    assert isinstance(first, PartitionAssignor)


def test_assignor_for_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        assignor_for("sticky-ish")
    assert info.value.key == "partition_assignment_strategy"
    assert "'sticky-ish'" in str(info.value)
    for name in BUILTIN_ASSIGNORS:
        assert repr(name) in str(info.value)


class EverythingToFirst(PartitionAssignor):
    """A user-defined assignor relying on the protocol's defaults."""

    name = "first"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        first = min(m.member_id for m in members)
        return {first: [TP(t, p) for t in sorted(partitions_per_topic) for p in range(partitions_per_topic[t])]}


def test_assignor_for_user_defined_instances_and_classes() -> None:
    instance = EverythingToFirst()
    assert assignor_for(instance) is instance
    made = assignor_for(EverythingToFirst)
    assert isinstance(made, EverythingToFirst)
    assert made.supported_protocols == (RebalanceProtocol.EAGER,)
    assert made.subscription_user_data(frozenset()) is None
    made.on_assignment(ConsumerProtocolAssignment(assigned_partitions=()), 1)  # the default is a no-op that must exist
    result = perform_assignment(made, {"t": 2}, [member("b", ["t"]), member("a", ["t"])])
    assert result.partitions == {"b": (), "a": (TP("t", 0), TP("t", 1))}


def test_assignor_for_rejects_non_assignors() -> None:
    with pytest.raises(ConfigError, match=r"not a partition assignor.*assign"):
        assignor_for(object())  # type: ignore[arg-type]

    class Nameless(EverythingToFirst):
        name = ""

    with pytest.raises(ConfigError, match="no name"):
        assignor_for(Nameless())


def test_choose_protocol_same_preferences_picks_the_first() -> None:
    assert choose_protocol([["cooperative-sticky", "range"]] * 3) == "cooperative-sticky"


def test_choose_protocol_only_common_strategies_and_majority_vote() -> None:
    assert choose_protocol([["roundrobin", "range"], ["range"]]) == "range"
    # Both common; two members prefer roundrobin over the leader's range.
    assert choose_protocol([["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range"]]) == "roundrobin"
    # A tie goes to the leader's preference.
    assert choose_protocol([["range", "roundrobin"], ["roundrobin", "range"]]) == "range"
    assert choose_protocol([["roundrobin", "range"], ["range", "roundrobin"]]) == "roundrobin"


def test_no_common_assignor_names_every_members_strategies() -> None:
    with pytest.raises(NoCommonAssignorError) as info:
        choose_protocol([["range", "roundrobin"], ["cooperative-sticky"]], member_ids=["m-1", "m-2"])
    message = str(info.value)
    assert "m-1: [range, roundrobin]" in message
    assert "m-2: [cooperative-sticky]" in message
    assert isinstance(info.value, KafkaError)
    with pytest.raises(NoCommonAssignorError, match=r"member 0: \[range\]; member 1: \[roundrobin\]"):
        choose_protocol([["range"], ["roundrobin"]])
    with pytest.raises(ValueError):
        choose_protocol([])


def test_rebalance_protocol_is_the_newest_all_assignors_support() -> None:
    assert rebalance_protocol([assignor_for("cooperative-sticky")]) is RebalanceProtocol.COOPERATIVE
    assert rebalance_protocol([assignor_for("cooperative-sticky"), assignor_for("range")]) is RebalanceProtocol.EAGER

    class CooperativeOnly(EverythingToFirst):
        supported_protocols = (RebalanceProtocol.COOPERATIVE,)

    with pytest.raises(ConfigError, match="no rebalance protocol"):
        rebalance_protocol([CooperativeOnly(), assignor_for("range")])
    with pytest.raises(ConfigError):
        rebalance_protocol([])


class Fixed(PartitionAssignor):
    name = "fixed"

    def __init__(self, result: dict[str, list[TopicPartition]]) -> None:
        self.result = result

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        return self.result


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"zz": [TP("t", 0)]}, "unknown member"),
        ({"a": [TP("t", 2)]}, "does not exist"),
        ({"a": [TP("x", 0)]}, "does not exist"),
        ({"a": [TP("t", 0)], "b": [TP("t", 0)]}, "more than once"),
        ({"a": [TP("t", 1), TP("t", 1)]}, "more than once"),
    ],
)
def test_perform_assignment_rejects_impossible_results(result: dict[str, list[TopicPartition]], message: str) -> None:
    with pytest.raises(IllegalStateError, match=message):
        perform_assignment(Fixed(result), {"t": 2}, [member("a", ["t"]), member("b", ["t"])])


def test_perform_assignment_rejects_direct_moves_only_under_cooperative() -> None:
    members = [member("a", ["t"], tps("t", 0)), member("b", ["t"], tps("t", 0, 1))]
    moved = Fixed({"b": [TP("t", 1)], "a": [TP("t", 0)]})  # b also claims t-0: a keeping it is not a move
    assert perform_assignment(moved, {"t": 2}, members, RebalanceProtocol.COOPERATIVE).partitions["a"] == (TP("t", 0),)
    direct = Fixed({"a": [TP("t", 1)]})
    assert perform_assignment(direct, {"t": 2}, members).partitions == {"a": (TP("t", 1),), "b": ()}
    with pytest.raises(IllegalStateError, match="moved t-1 from 'b' to 'a'"):
        perform_assignment(direct, {"t": 2}, members, RebalanceProtocol.COOPERATIVE)


def test_group_assignment_to_wire() -> None:
    result = GroupAssignment({"a": (TP("t", 1), TP("s", 0), TP("t", 0)), "b": ()}, {"a": b"x"})
    wire = result.to_assignments()
    assert wire == {
        "a": ConsumerProtocolAssignment(
            assigned_partitions=(
                WireTopicPartition(topic="s", partitions=(0,)),
                WireTopicPartition(topic="t", partitions=(0, 1)),
            ),
            user_data=b"x",
        ),
        "b": ConsumerProtocolAssignment(assigned_partitions=()),
    }
    assert decode_assignment(encode_assignment(wire["a"])) == wire["a"]
    assert from_wire(wire["a"].assigned_partitions) == [TP("s", 0), TP("t", 0), TP("t", 1)]
    assert result.assignment_for("nobody") == ConsumerProtocolAssignment(assigned_partitions=())
