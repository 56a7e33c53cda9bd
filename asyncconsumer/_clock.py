"""Time as an injected clock in integer milliseconds, so managers and the loop can be driven by tests; ``now_ns``
for spans shorter than a millisecond (a handler's time in ``process``)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def now_ns(self) -> int: ...


class SystemClock:
    """Monotonic milliseconds (and nanoseconds, on the same clock)."""

    __slots__ = ()

    def now_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    now_ns = staticmethod(time.monotonic_ns)
    """The C function itself: the processing driver times handlers with it, and a call of ours would add a frame."""


def wall_ms() -> int:
    """Unix epoch milliseconds: only for dating what ``metrics()`` shows a person (everything else runs on a
    ``Clock``)."""
    return time.time_ns() // 1_000_000


def unix_offset_ms(clock: Clock) -> int:
    """What to add to ``clock``'s milliseconds for Unix epoch milliseconds, read once when a part is built: a manager
    dates what it sends (a telemetry push, a ``by_duration`` reset) from the ``now_ms`` it is polled with."""
    return wall_ms() - clock.now_ms()


class ManualClock:
    """A clock that moves only when told to."""

    __slots__ = ("_now",)

    def __init__(self, now_ms: int = 0) -> None:
        self._now = now_ms

    def now_ms(self) -> int:
        return self._now

    def now_ns(self) -> int:
        return self._now * 1_000_000

    def advance(self, ms: int) -> int:
        self._now += ms
        return self._now
