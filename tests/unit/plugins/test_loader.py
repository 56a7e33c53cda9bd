"""Building the enabled plugins' managers (``plugins/loader.py``): a factory that fails is switched off, bad
options are raised."""

from __future__ import annotations

import pytest

from asyncconsumer._clock import ManualClock
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError, PluginError
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


def test_each_enabled_plugin_gets_a_guarded_manager_and_its_own_options_in_config_order() -> None:
    _, subs, meta, _, events = context()
    seen: list[tuple[str, dict[str, object]]] = []

    class Quiet:
        def poll(self, now_ms: int) -> PollResult:
            return PollResult(1_000)

        def poll_on_close(self, now_ms: int) -> PollResult:
            return PollResult()

    def make(name: str) -> Plugin:
        def factory(ctx: PluginContext) -> Quiet:
            seen.append((ctx.name, dict(ctx.options)))
            return Quiet()

        return Plugin(name, factory)  # type: ignore[arg-type]

    config = ConsumerConfig.from_kwargs("h:1", plugins=[make("b"), make("a")], plugin_options={"a": {"x": 1}})
    loaded = load_plugins(config, ManualClock(), meta, subs, events.append)
    assert list(loaded) == ["b", "a"]
    assert seen == [("b", {}), ("a", {"x": 1})]
    guarded, store = loaded["a"]
    assert guarded.poll(0) == PollResult(1_000) and guarded.failed is None
    assert store.snapshot().failed is None


def test_under_fatal_plugin_errors_a_factory_that_fails_is_raised() -> None:
    _, subs, meta, _, events = context()

    def broken(ctx: PluginContext) -> object:
        raise RuntimeError("no database")

    config = ConsumerConfig.from_kwargs("h:1", plugins=[Plugin("db", broken)], plugin_errors="fatal")  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="plugin 'db': factory raised RuntimeError\\('no database'\\)"):
        load_plugins(config, ManualClock(), meta, subs, events.append)
