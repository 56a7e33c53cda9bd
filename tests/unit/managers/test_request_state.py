"""The request state's exponential backoff with jitter, driven with literal timestamps."""

from __future__ import annotations

import random

from asyncconsumer.managers.request_state import ExponentialBackoff, RequestState
from tests.support.managers import no_jitter


def test_request_state_backs_off_exponentially_after_failures() -> None:
    state = RequestState(no_jitter(100, 1000))
    assert state.can_send_request(0)
    state.on_send_attempt(0)
    assert not state.can_send_request(0)
    state.on_failed_attempt(35)
    assert not state.can_send_request(134)
    assert state.can_send_request(135)
    state.on_send_attempt(135)
    state.on_failed_attempt(200)
    assert state.remaining_backoff_ms(200) == 200
    state.on_send_attempt(400)
    state.on_successful_attempt(410)
    assert state.can_send_request(410)


def test_backoff_is_capped_and_jittered_within_bounds() -> None:
    backoff = ExponentialBackoff(50, 1000, jitter=0.2, rng=random.Random(1))
    values = [backoff.backoff_ms(n) for n in range(1, 20)]
    assert values[0] in range(40, 61)
    assert max(values) <= 1200
    assert min(values[6:]) >= 800
