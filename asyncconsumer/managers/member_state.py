"""The classic-protocol member's states and every transition allowed between them, in one table.

Everything that changes a member's state goes through ``transition``; a move the table does not list is a bug and
raises ``IllegalStateError`` naming both states.
"""

from __future__ import annotations

import enum

from asyncconsumer.errors import IllegalStateError


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    """Not in the group: never joined, left, or reset after the coordinator fenced us."""
    PREPARING = "preparing"
    """Before (re)joining: waiting for the caller's revoke callback (and the commit before it)."""
    JOINING = "joining"
    """JoinGroup is due or in flight."""
    SYNCING = "syncing"
    """SyncGroup is due or in flight (the leader sends the assignment it computed)."""
    ASSIGNING = "assigning"
    """The assignment arrived; waiting for the caller's assign callback."""
    STABLE = "stable"
    """In the group with an assignment; heartbeats flow."""
    LEAVING = "leaving"
    """LeaveGroup is due or in flight (unsubscribe, close, or the caller stopped polling)."""
    FATAL = "fatal"
    """An error no retry can fix (e.g. no common assignor, group authorization); the caller was told."""


_ANY_LIVE = frozenset({MemberState.UNJOINED, MemberState.LEAVING, MemberState.FATAL})

TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    MemberState.UNJOINED: frozenset({MemberState.PREPARING, MemberState.JOINING, MemberState.FATAL}),
    MemberState.PREPARING: frozenset({MemberState.JOINING}) | _ANY_LIVE,
    MemberState.JOINING: frozenset({MemberState.JOINING, MemberState.SYNCING, MemberState.PREPARING}) | _ANY_LIVE,
    MemberState.SYNCING: frozenset({MemberState.ASSIGNING, MemberState.JOINING, MemberState.PREPARING}) | _ANY_LIVE,
    MemberState.ASSIGNING: frozenset({MemberState.STABLE, MemberState.PREPARING, MemberState.JOINING}) | _ANY_LIVE,
    MemberState.STABLE: frozenset({MemberState.PREPARING, MemberState.JOINING}) | _ANY_LIVE,
    MemberState.LEAVING: frozenset({MemberState.UNJOINED, MemberState.FATAL}),
    MemberState.FATAL: frozenset(),
}
"""state -> the states it may move to. UNJOINED may not go straight to SYNCING: a member joins first."""


def transition(current: MemberState, new: MemberState) -> MemberState:
    """Returns ``new`` if the table allows ``current -> new``; raises ``IllegalStateError`` otherwise."""
    if new not in TRANSITIONS[current]:
        raise IllegalStateError(f"member state {current.name} cannot move to {new.name}")
    return new
