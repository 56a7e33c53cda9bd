"""What a plugin may see and do (``plugins/context.py``): read-only views of the assignment, positions and
leaders, and speaking up through background events."""

from __future__ import annotations

import pytest

from asyncconsumer.errors import KafkaConnectionError
from asyncconsumer.events.background import CallbackEvent, ErrorEvent
from tests.support.plugins import TP0, TP1, context


def test_context_views_are_read_only_copies_and_speaking_up_makes_background_events() -> None:
    ctx, subs, _, _, events = context()
    subs.assign([TP0])
    subs.seek(TP0, 4)
    view = ctx.assignment()
    assert view == frozenset([TP0]) and isinstance(view, frozenset)
    assert ctx.position(TP0) == 4 and ctx.position(TP1) is None
    assert ctx.positions() == {TP0: 4}
    assert ctx.leader_for(TP1) == 2
    with pytest.raises(TypeError):
        ctx.options["x"] = 1  # type: ignore[index]
    error = KafkaConnectionError("x")
    ctx.report_error(error)
    ctx.call_on_caller(lambda: None)
    assert isinstance(events[0], ErrorEvent) and events[0].error is error
    assert isinstance(events[1], CallbackEvent)
