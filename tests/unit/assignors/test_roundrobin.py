"""The round-robin assignor (``assignors/roundrobin.py``): Kafka's documented examples, one circle across topics,
and the properties it keeps (every partition once; balanced within one when subscriptions are equal)."""

from __future__ import annotations

from hypothesis import given, settings

from asyncconsumer.assignors import RebalanceProtocol
from asyncconsumer.assignors.roundrobin import RoundRobinAssignor, round_robin_assign
from tests.support.assignors import TP, Group, check_balanced, check_eager, groups, member, plain, tps


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


@given(group=groups())
@settings(max_examples=80, deadline=None)
def test_eager_assigns_every_partition_exactly_once_to_a_subscriber(group: Group) -> None:
    check_eager(round_robin_assign, group)


@given(group=groups(same_subscriptions=True))
@settings(max_examples=80, deadline=None)
def test_balanced_within_one_when_subscriptions_are_equal(group: Group) -> None:
    check_balanced(round_robin_assign, group)


def test_the_assignor_goes_by_javas_wire_name_and_is_eager_only() -> None:
    assignor = RoundRobinAssignor()
    assert (assignor.name, assignor.supported_protocols) == ("roundrobin", (RebalanceProtocol.EAGER,))
    members = [member("b", ["t"]), member("a", ["t"])]
    assert (
        plain(assignor.assign({"t": 3}, members))
        == plain(round_robin_assign({"t": 3}, members))
        == {
            "a": tps("t", 0, 2),
            "b": tps("t", 1),
        }
    )
