"""The classic member's transition table (``managers/member_state.py``): every state has a row, FATAL is terminal,
and ``transition`` allows exactly the moves the table lists."""

from __future__ import annotations

import itertools

import pytest

from asyncconsumer.errors import IllegalStateError
from asyncconsumer.managers.member_state import TRANSITIONS, MemberState, transition


def test_every_state_has_a_row_and_fatal_is_terminal() -> None:
    assert set(TRANSITIONS) == set(MemberState)
    assert TRANSITIONS[MemberState.FATAL] == frozenset()


@pytest.mark.parametrize(("current", "new"), list(itertools.product(MemberState, MemberState)))
def test_only_the_transitions_in_the_table_are_possible(current: MemberState, new: MemberState) -> None:
    if new in TRANSITIONS[current]:
        assert transition(current, new) is new
    else:
        with pytest.raises(IllegalStateError, match=f"{current.name} cannot move to {new.name}"):
            transition(current, new)


def test_a_member_cannot_sync_without_joining_first() -> None:
    with pytest.raises(IllegalStateError):
        transition(MemberState.UNJOINED, MemberState.SYNCING)
