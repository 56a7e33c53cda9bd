"""Backoff and in-flight bookkeeping shared by every manager that retries."""

from __future__ import annotations

import random


class ExponentialBackoff:
    """``initial * 2**attempts`` capped at ``maximum``, with +/- ``jitter`` spread."""

    def __init__(self, initial_ms: int, maximum_ms: int, jitter: float = 0.2, rng: random.Random | None = None) -> None:
        self.initial_ms = initial_ms
        self.maximum_ms = max(maximum_ms, initial_ms)
        self.jitter = jitter
        self._rng = rng or random.Random()

    def backoff_ms(self, attempts: int) -> int:
        if attempts <= 0 or self.initial_ms == 0:
            return 0
        base = min(self.maximum_ms, self.initial_ms * (2 ** min(attempts - 1, 30)))
        if self.jitter:
            base = int(base * self._rng.uniform(1 - self.jitter, 1 + self.jitter))
        return int(min(base, int(self.maximum_ms * (1 + self.jitter))))


class RequestState:
    """Whether a request may be sent at ``now``: none in flight and any backoff from failures over."""

    def __init__(self, backoff: ExponentialBackoff) -> None:
        self._backoff = backoff
        self.in_flight = False
        self.failures = 0
        self._last_send_ms: int | None = None
        self._retry_at_ms = 0

    def can_send_request(self, now_ms: int) -> bool:
        return not self.in_flight and now_ms >= self._retry_at_ms

    def remaining_backoff_ms(self, now_ms: int) -> int:
        return max(0, self._retry_at_ms - now_ms)

    def on_send_attempt(self, now_ms: int) -> None:
        self.in_flight = True
        self._last_send_ms = now_ms

    def on_successful_attempt(self, now_ms: int) -> None:
        self.in_flight = False
        self.failures = 0
        self._retry_at_ms = now_ms

    def on_failed_attempt(self, now_ms: int) -> None:
        self.in_flight = False
        self.failures += 1
        self._retry_at_ms = now_ms + self._backoff.backoff_ms(self.failures)

    def reset(self) -> None:
        self.in_flight = False
        self.failures = 0
        self._retry_at_ms = 0
