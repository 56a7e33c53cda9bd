"""Building the enabled plugins' managers (``plugins/loader.py``): a factory that fails is switched off, bad
options are raised."""

from __future__ import annotations

import pytest

from asyncconsumer._clock import ManualClock
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError
from asyncconsumer.managers.base import PollResult
from asyncconsumer.plugins import Plugin, PluginContext
from asyncconsumer.plugins.loader import load_plugins
from tests.support.plugins import context


def test_loader_switches_off_a_factory_that_fails_but_raises_bad_options() -> None:
    _, subs, meta, _, events = context()

    def bad_factory(c: PluginContext) -> object:
        return object()

    config = ConsumerConfig.from_kwargs("h:1", plugins=[Plugin("odd", bad_factory)])  # type: ignore[arg-type]
    loaded = load_plugins(config, ManualClock(), meta, subs, events.append)
    guarded, store = loaded["odd"]
    assert "lacks poll, poll_on_close" in str(store.snapshot().failed)
    assert guarded.poll(0) == PollResult()

    config = ConsumerConfig.from_kwargs("h:1", plugins=["lag-monitor"], plugin_options={"lag-monitor": {"interval": 5}})
    with pytest.raises(ConfigError, match="lag-monitor: unknown option"):
        load_plugins(config, ManualClock(), meta, subs, events.append)
