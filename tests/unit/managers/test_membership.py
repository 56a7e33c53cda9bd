"""The one membership contract (``managers/membership.py``): both kinds of membership, as their ``build`` makes
them, offer every member of ``MembershipManager`` and ``HeartbeatManager`` with the same signatures, and behave
alike where the rest of the consumer relies on it (no generation outside the group, nothing sent before a
subscription, the managers in loop order)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import attrs
import pytest

from asyncconsumer.managers import group_classic, group_consumer
from asyncconsumer.managers.base import RequestManager
from asyncconsumer.managers.commit import NO_GENERATION
from asyncconsumer.managers.membership import (
    HeartbeatManager,
    Membership,
    MembershipBuilder,
    MembershipContext,
    MembershipManager,
)
from tests.support.group_context import membership_context

KINDS: dict[str, tuple[MembershipBuilder, dict[str, object]]] = {
    "classic": (group_classic.build, {}),
    "consumer": (group_consumer.build, {"group_protocol": "consumer"}),
}


def build(kind: str) -> Membership:
    builder, settings = KINDS[kind]
    context, _ = membership_context(**settings)
    return builder(context)


def contract(protocol: type) -> dict[str, object]:
    """The members a protocol class declares (and those of ``RequestManager``): attributes and methods."""
    names: dict[str, object] = {}
    for cls in (RequestManager, protocol):
        names.update({name: None for name in getattr(cls, "__annotations__", {})})
        names.update({name: value for name, value in vars(cls).items() if callable(value) and not name.startswith("_")})
    return names


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("part", "protocol"), [("manager", MembershipManager), ("heartbeat", HeartbeatManager)])
def test_each_kind_offers_the_whole_contract_with_its_signatures(kind: str, part: str, protocol: type) -> None:
    implementation = getattr(build(kind), part)
    for name, declared in contract(protocol).items():
        assert hasattr(implementation, name), f"{type(implementation).__name__} lacks {name}"
        if isinstance(declared, Callable):  # type: ignore[arg-type]
            wanted = [(p.name, p.kind) for p in inspect.signature(declared).parameters.values()][1:]
            got = [(p.name, p.kind) for p in inspect.signature(getattr(implementation, name)).parameters.values()]
            assert got == wanted, f"{type(implementation).__name__}.{name}{got} != {wanted}"


@pytest.mark.parametrize("kind", KINDS)
def test_a_member_not_yet_in_its_group_has_no_generation_and_sends_nothing(kind: str) -> None:
    membership = build(kind)
    manager = membership.manager
    assert manager.generation() is NO_GENERATION
    assert (manager.rebalances, manager.rejoin_on_poll) == (0, False)
    assert membership.heartbeat.last_heartbeat_ms is None
    manager.leave()  # leaving before joining is nothing to do
    manager.caller_polled()
    manager.request_rejoin("a test")
    for part in membership.managers:
        assert part.poll(0).unsent_requests == ()
        assert part.poll_on_close(0).unsent_requests == ()


def test_the_membership_lists_its_managers_in_loop_order() -> None:
    membership = build("classic")
    assert membership.managers == (membership.manager, membership.heartbeat)


def test_the_context_and_the_membership_are_frozen_and_built_by_keyword_only() -> None:
    context, _ = membership_context()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        context.group_id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Membership(None, None, False, False)  # type: ignore[misc, arg-type]
    assert all(field.kw_only for field in attrs.fields(MembershipContext))
