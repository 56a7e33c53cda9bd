"""A debug mode for the thread rule: what the background thread owns, no other thread may touch.

With ``ASYNCCONSUMER_CHECK_THREADS=1`` in the environment when a consumer is built, each object the background
owns (managers, the delegate, the event processor, the group wiring) is given a subclass whose attribute reads and
writes check the thread once the background thread runs: any other thread raises ``ThreadOwnershipError`` (and
the access is kept in ``violations``, in case something swallowed the error). Off by default: it slows every
attribute access of the background's objects.
"""

from __future__ import annotations

import os
import threading
from typing import Any, TypeVar

ENV = "ASYNCCONSUMER_CHECK_THREADS"

T = TypeVar("T")

violations: list[str] = []
"""Every access the guard refused, for tests that must see none (also those whose error something caught)."""


class ThreadOwnershipError(AssertionError):
    """A thread other than the background's touched an object the background thread owns."""


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


class Owner:
    """The thread that owns the guarded objects: none until the background thread starts and claims them."""

    __slots__ = ("thread",)

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    def claim(self) -> None:
        """Called first thing on the background thread."""
        self.thread = threading.current_thread()


def guard(obj: T, owner: Owner, name: str) -> T:
    """``obj``, its class swapped for a subclass that checks the thread on every attribute read and write."""
    base = type(obj)

    def check(attr: str) -> None:
        thread = owner.thread
        current = threading.current_thread()
        if thread is not None and current is not thread:
            what = f"thread {current.name!r} touched {name}.{attr}, which the background thread owns"
            violations.append(what)
            raise ThreadOwnershipError(what)

    def __getattribute__(self: Any, attr: str) -> Any:
        check(attr)
        return base.__getattribute__(self, attr)

    def __setattr__(self: Any, attr: str, value: Any) -> None:
        check(attr)
        base.__setattr__(self, attr, value)

    checked = type(
        f"Owned{base.__name__}",
        (base,),
        {"__slots__": (), "__getattribute__": __getattribute__, "__setattr__": __setattr__},
    )
    object.__setattr__(obj, "__class__", checked)
    return obj
