"""Groups for the assignor tests: hand-built members, a hypothesis strategy of whole groups, and the checks every
assignor's result must pass (valid, complete, cooperative), shared by ``tests/unit/assignors/``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from hypothesis import strategies as st

from asyncconsumer.assignors import GroupMember, PartitionAssignor, from_wire, to_wire
from asyncconsumer.protocol.messages.consumer_protocol import ConsumerProtocolSubscription
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


def check_eager(assign: Assign, group: Group) -> None:
    """The property of every eager assignor: every partition exactly once to a subscriber, whatever the members'
    order (deterministic)."""
    partitions, members = group
    result = assign(partitions, members)
    check_complete(partitions, members, result)
    assert plain(assign(partitions, list(reversed(members)))) == plain(result)  # deterministic, order-free


def check_balanced(assign: Assign, group: Group) -> None:
    """With equal subscriptions, no member has two partitions more than another."""
    partitions, members = group
    sizes = counts(assign(partitions, members))
    assert max(sizes) - min(sizes) <= 1, sizes


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


def next_round(members: Sequence[GroupMember], result: Result, generation: int) -> list[GroupMember]:
    """What every member sends in the follow-up rebalance: its new assignment, at the new generation."""
    return [
        member(m.member_id, m.subscription.topics, result[m.member_id], generation, m.group_instance_id)
        for m in members
    ]


class EverythingToFirst(PartitionAssignor):
    """A user-defined assignor relying on the protocol's defaults."""

    name = "first"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        first = min(m.member_id for m in members)
        return {first: [TP(t, p) for t in sorted(partitions_per_topic) for p in range(partitions_per_topic[t])]}
