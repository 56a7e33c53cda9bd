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


def test_the_edges_and_pauses_of_assigned_partitions_only() -> None:
    ctx, subs, _, _, _ = context()
    assert ctx.high_watermark(TP0) is None  # not assigned
    subs.assign([TP0, TP1])
    version = ctx.assignment_version
    subs.seek(TP0, 0)
    epoch = subs.epoch(TP0)
    assert epoch is not None and subs.fetched(TP0, epoch, 0, 5, 12, -1, -1)
    assert ctx.high_watermark(TP0) == 12 and ctx.high_watermark(TP1) is None
    subs.set_paused([TP1], True)
    assert ctx.paused() == frozenset([TP1])
    subs.assign([TP0])
    assert ctx.assignment_version != version  # per-partition state can be dropped cheaply
    assert ctx.high_watermark(TP1) is None and ctx.position(TP1) is None


def test_metrics_published_through_the_context_are_the_plugins_own() -> None:
    ctx, _, _, store, _ = context()
    ctx.set_metric("rounds", 3)
    ctx.set_partition_metrics("lag", {TP0: 4, TP1: 0})
    ctx.set_partition_metrics("lag", {TP1: 2})  # replaces the last set: t-0 no longer has it
    snapshot = store.snapshot()
    assert snapshot.values == {"rounds": 3}
    assert snapshot.partitions == {TP1: {"lag": 2}}


def test_asking_for_fresher_metadata_makes_the_metadata_manager_send() -> None:
    ctx, _, meta, _, _ = context()
    assert meta.poll(1).unsent_requests == ()  # fresh
    assert set(ctx.cluster.topics) == {"t"}
    ctx.request_metadata_update()
    assert len(meta.poll(2).unsent_requests) == 1


def test_options_are_the_plugins_own_read_only_copy() -> None:
    given = {"interval_ms": 100}
    ctx, _, _, _, _ = context(options=given)
    given["interval_ms"] = 5
    assert ctx.options == {"interval_ms": 100}
    assert (ctx.name, ctx.config.bootstrap_servers) == ("lag-monitor", ("h:1",))
