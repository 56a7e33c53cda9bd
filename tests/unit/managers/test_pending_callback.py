"""The rebalance-listener callback a membership waits for (``managers/pending_callback.py``): nothing moves while it
runs; once it returns, the state it was to lead to and what was to follow it; a state change meanwhile abandons both."""

from __future__ import annotations

from concurrent.futures import Future

from asyncconsumer.managers.pending_callback import PendingCallback


def test_with_no_callback_the_member_may_go_on() -> None:
    pending: PendingCallback[str] = PendingCallback()
    assert not pending.pending
    assert pending.resume("stable", lambda state: None) is True
    assert pending.abandon() is False


def test_nothing_moves_while_the_callback_runs_then_the_state_and_what_follows() -> None:
    pending: PendingCallback[str] = PendingCallback()
    done: Future[None] = Future()
    moves: list[str] = []
    followed: list[str] = []
    pending.wait(done, "stable", lambda: followed.append("acknowledge"))
    assert pending.pending
    assert pending.resume("assigning", moves.append) is False
    assert (moves, followed) == ([], [])
    done.set_result(None)
    assert pending.resume("assigning", moves.append) is True
    assert (moves, followed) == (["stable"], ["acknowledge"])
    assert not pending.pending
    assert pending.resume("stable", moves.append) is True and moves == ["stable"]  # done once


def test_a_callback_that_raised_counts_as_returned() -> None:
    pending: PendingCallback[str] = PendingCallback()
    done: Future[None] = Future()
    done.set_exception(RuntimeError("the listener raised"))
    moves: list[str] = []
    pending.wait(done, "joining")
    assert pending.resume("preparing", moves.append) is True
    assert moves == ["joining"]


def test_no_move_when_the_member_is_already_in_the_state_to_follow() -> None:
    pending: PendingCallback[str] = PendingCallback()
    done: Future[None] = Future()
    done.set_result(None)
    moves: list[str] = []
    pending.wait(done, "unjoined")
    assert pending.resume("unjoined", moves.append) is True
    assert moves == []


def test_abandoning_forgets_the_state_and_what_was_to_follow() -> None:
    pending: PendingCallback[str] = PendingCallback()
    done: Future[None] = Future()
    followed: list[str] = []
    pending.wait(done, "stable", lambda: followed.append("x"))
    assert pending.abandon() is True
    done.set_result(None)
    moves: list[str] = []
    assert pending.resume("leaving", moves.append) is True
    assert (moves, followed) == ([], [])
