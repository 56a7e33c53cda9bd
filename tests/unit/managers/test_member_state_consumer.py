"""The KIP-848 member's transition table (``managers/member_state_consumer.py``): exactly Kafka's, and the only
moves ``transition`` allows."""

from __future__ import annotations

import itertools

import pytest

from asyncconsumer.errors import IllegalStateError
from asyncconsumer.managers.member_state_consumer import TRANSITIONS, transition
from asyncconsumer.managers.member_state_consumer import ConsumerMemberState as S

# Kafka's MemberState.previousValidStates (clients/.../consumer/internals/MemberState.java), verbatim.
JAVA_PREVIOUS_VALID_STATES = {
    S.STABLE: {S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.RECONCILING: {S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.ACKNOWLEDGING: {S.RECONCILING},
    S.FATAL: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING, S.UNSUBSCRIBED},
    S.FENCED: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING},
    S.JOINING: {S.FENCED, S.UNSUBSCRIBED, S.STALE},
    S.PREPARE_LEAVING: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED},
    S.LEAVING: {S.PREPARE_LEAVING},
    S.UNSUBSCRIBED: {S.PREPARE_LEAVING, S.LEAVING, S.FENCED},
    S.STALE: {S.LEAVING},
}


def test_the_table_is_kafkas_previous_valid_states_inverted() -> None:
    assert set(TRANSITIONS) == set(S)
    for new in S:
        allowed_from = {current for current in S if new in TRANSITIONS[current]}
        assert allowed_from == JAVA_PREVIOUS_VALID_STATES.get(new, set()), new


@pytest.mark.parametrize(("current", "new"), list(itertools.product(S, S)))
def test_only_the_transitions_in_the_table_are_possible(current: S, new: S) -> None:
    if new in TRANSITIONS[current]:
        assert transition(current, new) is new
    else:
        with pytest.raises(IllegalStateError, match=f"{current.name} cannot move to {new.name}"):
            transition(current, new)
