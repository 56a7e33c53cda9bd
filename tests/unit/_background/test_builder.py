"""The caller's way into the background (``_background/builder.py``): a consumer's and a share consumer's parts,
built on the chassis with nothing running."""

from __future__ import annotations

from typing import Any

from asyncconsumer._background.builder import build
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer.config import ConsumerConfig


def config(**settings: Any) -> ConsumerConfig:
    return ConsumerConfig.from_kwargs("h:1", **settings)


def test_everything_is_built_and_nothing_runs() -> None:
    parts = build(config(fetch_buffer_bytes=8 << 20), ManualClock())
    assert not parts.thread.alive
    assert parts.owned.group is None and parts.owned.plugins == {} and parts.plugin_metrics == {}
    assert isinstance(parts.buffer, FetchBuffer) and parts.buffer.limit == 4 << 20  # starts at half the bound
    assert parts.subscriptions.subscription is None and not parts.app_events and not parts.background_events
