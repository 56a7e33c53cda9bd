"""The assignors package's own surface (``assignors/__init__.py``): ``assignor_for`` by built-in name, Java class
name, instance or class, and what it refuses; and every built-in assignor passing the leader's checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from asyncconsumer.assignors import (
    BUILTIN_ASSIGNORS,
    CooperativeStickyAssignor,
    PartitionAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    assignor_for,
    perform_assignment,
)
from asyncconsumer.errors import ConfigError
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
)
from tests.support.assignors import TP, EverythingToFirst, Group, check_valid, groups, member


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
