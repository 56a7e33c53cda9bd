"""The assignor interface's pure helpers (``assignors/base.py``): the strategy the group chooses, the rebalance
protocol all assignors support, the leader's checks in ``perform_assignment``, the wire shape of partitions and of
the group's result, and Java's member order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from asyncconsumer.assignors import (
    GroupAssignment,
    GroupMember,
    NoCommonAssignorError,
    PartitionAssignor,
    RebalanceProtocol,
    assignor_for,
    choose_protocol,
    from_wire,
    member_sort_key,
    perform_assignment,
    rebalance_protocol,
    subscribed_topics,
    to_wire,
)
from asyncconsumer.errors import ConfigError, IllegalStateError, KafkaError
from asyncconsumer.protocol.consumer_protocol import decode_assignment, encode_assignment
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.records import TopicPartition
from tests.support.assignors import TP, EverythingToFirst, member, tps


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


# --- the wire shape and the member order ----------------------------------------------------------------------


def test_to_wire_groups_sorts_and_deduplicates_and_from_wire_reads_it_back_in_order() -> None:
    wire = to_wire([TP("b", 2), TP("a", 1), TP("b", 0), TP("a", 1)])
    assert wire == (WireTopicPartition(topic="a", partitions=(1,)), WireTopicPartition(topic="b", partitions=(0, 2)))
    assert from_wire(wire) == [TP("a", 1), TP("b", 0), TP("b", 2)]
    assert to_wire([]) == () and from_wire(()) == []
    assert from_wire((WireTopicPartition(topic="z", partitions=(3, 1)),)) == [TP("z", 3), TP("z", 1)]  # wire order kept


def test_members_sort_static_first_by_instance_id_then_by_member_id() -> None:
    members = [
        member("m-b", ["t"]),
        member("m-z", ["t"], instance="i-2"),
        member("m-a", ["t"]),
        member("m-y", ["t"], instance="i-1"),
    ]
    assert [m.member_id for m in sorted(members, key=member_sort_key)] == ["m-y", "m-z", "m-a", "m-b"]


def test_subscribed_topics_is_the_union_of_every_members_topics() -> None:
    assert subscribed_topics([member("a", ["t", "u"]), member("b", ["u", "v"])]) == {"t", "u", "v"}
    assert subscribed_topics([]) == set()


def test_choose_protocol_needs_one_member_id_per_member() -> None:
    with pytest.raises(ValueError, match="1 member ids for 2 members"):
        choose_protocol([["range"], ["range"]], member_ids=["only-one"])


def test_an_assignment_leaving_members_out_gives_them_nothing_and_keeps_its_order_sorted() -> None:
    result = perform_assignment(
        Fixed({"b": [TP("t", 1), TP("t", 0)]}), {"t": 2}, [member("a", ["t"]), member("b", ["t"])]
    )
    assert result.partitions == {"a": (), "b": (TP("t", 0), TP("t", 1))}
    assert isinstance(result, GroupAssignment)
