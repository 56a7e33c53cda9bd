"""The range assignor (``assignors/range_assignor.py``): Kafka's documented example, per-topic ranges over the
members subscribed to each topic, static members first, and the property every eager assignor keeps."""

from __future__ import annotations

from hypothesis import given, settings

from asyncconsumer.assignors import RebalanceProtocol
from asyncconsumer.assignors.range_assignor import RangeAssignor, range_assign
from tests.support.assignors import Group, check_eager, groups, member, plain, tps


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


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_eager_assigns_every_partition_exactly_once_to_a_subscriber(group: Group) -> None:
    check_eager(range_assign, group)


def test_the_assignor_goes_by_javas_wire_name_and_is_eager_only() -> None:
    assignor = RangeAssignor()
    assert (assignor.name, assignor.supported_protocols) == ("range", (RebalanceProtocol.EAGER,))
    members = [member("b", ["t"]), member("a", ["t"])]
    assert (
        plain(assignor.assign({"t": 3}, members))
        == plain(range_assign({"t": 3}, members))
        == {
            "a": tps("t", 0, 1),
            "b": tps("t", 2),
        }
    )
