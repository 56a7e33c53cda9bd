"""Partition assignors: how the group leader splits the subscribed partitions among the members.

On the classic group protocol (JoinGroup/SyncGroup) every member names the assignors it supports, in preference
order; the broker picks one all members support, and the member elected leader runs it over every member's
``Subscription`` and sends each member its ``Assignment``. This module is the public surface for that step, like
Java's ``ConsumerPartitionAssignor`` and ``partition.assignment.strategy``:

- ``PartitionAssignor``: the protocol built-in and user-defined assignors implement;
- ``assignor_for``: an assignor from a configured name (``"range"``, ``"roundrobin"``, ``"cooperative-sticky"``
  or the Java class names) or from an instance;
- ``choose_protocol`` / ``rebalance_protocol``: which assignor a group uses and whether it rebalances eagerly
  or cooperatively;
- ``perform_assignment``: runs an assignor as the leader and checks its output before it goes on the wire.

Everything here is pure: no I/O, no clocks, no randomness; the same input always gives the same assignment.
"""

from __future__ import annotations

from collections.abc import Mapping

from asyncconsumer.assignors.base import (
    GroupAssignment,
    GroupMember,
    NoCommonAssignorError,
    PartitionAssignor,
    RebalanceProtocol,
    choose_protocol,
    from_wire,
    member_sort_key,
    perform_assignment,
    rebalance_protocol,
    subscribed_topics,
    to_wire,
)
from asyncconsumer.assignors.range_assignor import RangeAssignor
from asyncconsumer.assignors.roundrobin import RoundRobinAssignor
from asyncconsumer.assignors.sticky import CooperativeStickyAssignor
from asyncconsumer.errors import ConfigError

__all__ = [
    "BUILTIN_ASSIGNORS",
    "CooperativeStickyAssignor",
    "GroupAssignment",
    "GroupMember",
    "NoCommonAssignorError",
    "PartitionAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "assignor_for",
    "choose_protocol",
    "from_wire",
    "member_sort_key",
    "perform_assignment",
    "rebalance_protocol",
    "subscribed_topics",
    "to_wire",
]

BUILTIN_ASSIGNORS: Mapping[str, type[PartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    "org.apache.kafka.clients.consumer.RangeAssignor": RangeAssignor,
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": RoundRobinAssignor,
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": CooperativeStickyAssignor,
}
"""Built-in strategies by configured name: Kafka's names and the Java class names for the same algorithms."""


def assignor_for(name_or_instance: str | PartitionAssignor | type[PartitionAssignor]) -> PartitionAssignor:
    """A new assignor for a configured strategy.

    Accepts a built-in name (``"range"``, ``"roundrobin"``, ``"cooperative-sticky"``), the matching Java class
    name (``"org.apache.kafka.clients.consumer.RangeAssignor"``, ...), an object implementing
    ``PartitionAssignor`` (returned as is) or a class of one (instantiated with no arguments).
    Raises ``ConfigError`` for an unknown name or an object that is not an assignor.
    """
    key = "partition_assignment_strategy"
    if isinstance(name_or_instance, str):
        factory = BUILTIN_ASSIGNORS.get(name_or_instance.strip())
        if factory is None:
            known = ", ".join(repr(name) for name in BUILTIN_ASSIGNORS)
            raise ConfigError(key, f"unknown assignor {name_or_instance!r}; known names are {known}")
        return factory()
    candidate: object = name_or_instance
    if isinstance(candidate, type):
        try:
            candidate = candidate()
        except TypeError as exc:
            raise ConfigError(key, f"cannot instantiate assignor class {name_or_instance!r}: {exc}") from exc
    if not isinstance(candidate, PartitionAssignor):
        missing = [
            attr
            for attr in ("name", "supported_protocols", "subscription_user_data", "assign", "on_assignment")
            if not hasattr(candidate, attr)
        ]
        raise ConfigError(key, f"{candidate!r} is not a partition assignor (missing: {', '.join(missing)})")
    if not isinstance(candidate.name, str) or not candidate.name:
        raise ConfigError(key, f"assignor {candidate!r} has no name")
    if not candidate.supported_protocols or not all(
        isinstance(p, RebalanceProtocol) for p in candidate.supported_protocols
    ):
        raise ConfigError(key, f"assignor {candidate.name!r} must list its supported RebalanceProtocol values")
    return candidate
