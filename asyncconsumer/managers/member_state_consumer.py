"""The consumer-protocol (KIP-848) member's states and every transition allowed between them, in one table.

The table is Kafka's (``MemberState`` of the Java consumer), written as state -> next states. Everything that
changes a member's state goes through ``transition``; a move the table does not list raises ``IllegalStateError``.
"""

from __future__ import annotations

import enum

from asyncconsumer.errors import IllegalStateError


class ConsumerMemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    """Not subscribed (never was, or left): no heartbeats; commits still allowed."""
    JOINING = "joining"
    """Heartbeats with epoch 0 (then the epoch given) until the first assignment arrives."""
    RECONCILING = "reconciling"
    """A new assignment arrived: resolving topic ids, revoking (callback, commit), then assigning."""
    ACKNOWLEDGING = "acknowledging"
    """The assignment is in effect; the next heartbeat, sent at once, reports it to the coordinator."""
    STABLE = "stable"
    """In the group with every assignment received in effect; heartbeats at the coordinator's interval."""
    FENCED = "fenced"
    """The coordinator fenced us (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): partitions lost, then join again."""
    PREPARE_LEAVING = "prepare_leaving"
    """Leaving: giving up the partitions (callback) before the leave heartbeat."""
    LEAVING = "leaving"
    """The leave heartbeat (epoch -1, or -2 for a static member) is due at once."""
    FATAL = "fatal"
    """An error no retry can fix; the caller was told once. Nothing is sent any more."""
    STALE = "stale"
    """Left because the caller did not poll within ``max_poll_interval_ms``; joins again on the next poll."""


S = ConsumerMemberState
_ANY_MEMBER = frozenset({S.FATAL, S.FENCED, S.PREPARE_LEAVING})

TRANSITIONS: dict[ConsumerMemberState, frozenset[ConsumerMemberState]] = {
    S.UNSUBSCRIBED: frozenset({S.JOINING, S.PREPARE_LEAVING, S.FATAL}),
    S.JOINING: frozenset({S.RECONCILING, S.STABLE}) | _ANY_MEMBER,
    S.RECONCILING: frozenset({S.RECONCILING, S.ACKNOWLEDGING, S.STABLE}) | _ANY_MEMBER,
    S.ACKNOWLEDGING: frozenset({S.RECONCILING, S.STABLE}) | _ANY_MEMBER,
    S.STABLE: frozenset({S.RECONCILING}) | _ANY_MEMBER,
    S.FENCED: frozenset({S.JOINING, S.UNSUBSCRIBED}),
    S.PREPARE_LEAVING: frozenset({S.LEAVING, S.UNSUBSCRIBED, S.FENCED, S.FATAL}),
    S.LEAVING: frozenset({S.UNSUBSCRIBED, S.STALE, S.FENCED, S.FATAL}),
    S.FATAL: frozenset(),
    S.STALE: frozenset({S.JOINING}),
}
"""state -> the states it may move to (Kafka's ``previousValidStates``, inverted)."""


def transition(current: ConsumerMemberState, new: ConsumerMemberState) -> ConsumerMemberState:
    """Returns ``new`` if the table allows ``current -> new``; raises ``IllegalStateError`` otherwise."""
    if new not in TRANSITIONS[current]:
        raise IllegalStateError(f"consumer-protocol member state {current.name} cannot move to {new.name}")
    return new
