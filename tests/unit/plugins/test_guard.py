"""The guard around a plugin's manager (``plugins/guard.py``): a manager that raises, returns the wrong thing or
fails in a response callback is switched off for good and its metrics say why, or, when fatal, raises."""

from __future__ import annotations

from typing import Any

import pytest

from asyncconsumer.errors import PluginError
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.metrics import PluginMetricsStore
from asyncconsumer.plugins.guard import GuardedManager
from asyncconsumer.protocol.messages.list_offsets import ListOffsetsRequest


class Scripted:
    """A manager whose ``poll`` does what the test says."""

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls = 0

    def poll(self, now_ms: int) -> PollResult:
        self.calls += 1
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome  # type: ignore[no-any-return]

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()


def test_a_manager_that_raises_is_switched_off_and_its_metrics_say_why() -> None:
    store = PluginMetricsStore()
    manager = Scripted(ValueError("boom"))
    guarded = GuardedManager("p", manager, store, fatal=False)
    assert guarded.poll(0) == PollResult()
    assert guarded.poll(1) == PollResult()
    assert manager.calls == 1  # never called again
    assert guarded.failed is not None and guarded.failed.plugin == "p"
    assert isinstance(guarded.failed.__cause__, ValueError)
    assert store.snapshot().failed == "plugin 'p': poll raised ValueError('boom')"


def test_a_manager_returning_something_else_than_a_poll_result_is_a_failure() -> None:
    guarded = GuardedManager("p", Scripted(None), PluginMetricsStore(), fatal=False)
    assert guarded.poll(0) == PollResult()
    assert "returned NoneType, not PollResult" in str(guarded.failed)


def test_fatal_mode_raises_the_plugin_error() -> None:
    guarded = GuardedManager("p", Scripted(RuntimeError("x")), PluginMetricsStore(), fatal=True)
    with pytest.raises(PluginError, match="plugin 'p': poll raised RuntimeError"):
        guarded.poll(0)


def test_response_callbacks_are_guarded_too() -> None:
    answered: list[object] = []

    def callback(result: object, now_ms: int) -> None:
        answered.append(result)
        raise KeyError("in callback")

    request = UnsentRequest(ListOffsetsRequest(topics=(), replica_id=-1), 1, callback)
    guarded = GuardedManager("p", Scripted(PollResult(5, (request,))), PluginMetricsStore(), fatal=False)
    result = guarded.poll(0)
    assert result.time_until_next_poll_ms == 5
    (wrapped,) = result.unsent_requests
    assert (wrapped.request, wrapped.node_id) == (request.request, 1)
    wrapped.on_response("answer", 3)
    assert answered == ["answer"]
    assert "LIST_OFFSETS response callback raised KeyError" in str(guarded.failed)
    wrapped.on_response("late", 4)  # a switched-off plugin hears nothing more
    assert answered == ["answer"]


def test_poll_on_close_is_guarded_too_and_a_switched_off_plugin_is_never_called_again() -> None:
    manager = Scripted(PollResult(7))
    guarded = GuardedManager("p", manager, PluginMetricsStore(), fatal=False)
    assert guarded.poll(0) == PollResult(7)
    manager.outcome = KeyError("close")
    manager.poll_on_close = manager.poll  # type: ignore[method-assign]
    assert guarded.poll_on_close(1) == PollResult()
    assert "poll_on_close raised KeyError" in str(guarded.failed)
    calls = manager.calls
    assert guarded.poll(2) == PollResult() and manager.calls == calls


def test_a_plugin_error_from_the_manager_is_kept_as_it_is() -> None:
    error = PluginError("p", "my own words")
    guarded = GuardedManager("p", Scripted(error), PluginMetricsStore(), fatal=False)
    guarded.poll(0)
    assert guarded.failed is error
