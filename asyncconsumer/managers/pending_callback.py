"""The rebalance-listener callback a membership manager is waiting for, and what is to follow it.

Both group protocols hand partitions over through the caller's callbacks: the manager moves on only once the
callback's future is done, and a state change made meanwhile (leave, fence, fatal) abandons what was to follow.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

StateT = TypeVar("StateT")


class PendingCallback(Generic[StateT]):
    """At most one callback at a time: its future, the state to move to after it, and a continuation."""

    __slots__ = ("_after", "_future", "_then")

    def __init__(self) -> None:
        self._future: Future[None] | None = None
        self._then: StateT | None = None
        self._after: Callable[[], None] | None = None

    @property
    def pending(self) -> bool:
        return self._future is not None

    def wait(self, future: Future[None], then: StateT, after: Callable[[], None] | None = None) -> None:
        """Once ``future`` is done: move to ``then``, then run ``after``."""
        self._future, self._then, self._after = future, then, after

    def resume(self, state: StateT, move: Callable[[StateT], None]) -> bool:
        """If the callback returned: ``move`` to its next state (unless ``state`` is it) and run what follows.

        False while the callback still runs (the caller's side wakes the loop when it returns).
        """
        if self._future is None:
            return True
        if not self._future.done():
            return False
        then, after = self._then, self._after
        self._future = self._then = self._after = None
        if then is not None and then != state:
            move(then)
        if after is not None:
            after()
        return True

    def abandon(self) -> bool:
        """Forgets the callback and what was to follow it; True if one was pending."""
        was_pending = self._future is not None
        self._future = self._then = self._after = None
        return was_pending
