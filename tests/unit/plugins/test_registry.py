"""Which plugins exist and what a config entry names (``plugins/registry.py``): installed plugins by entry point,
``Plugin`` (or an object of its shape) given directly, and a name no installed plugin has."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from asyncconsumer import Consumer
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError, PluginError
from asyncconsumer.plugins import Plugin
from asyncconsumer.plugins.lag_monitor import LagMonitor, create
from asyncconsumer.plugins.registry import ENTRY_POINT_GROUP, check_installed, installed_plugins, plugin_name, resolve


def test_unknown_plugin_name_is_a_config_error_listing_the_installed_ones() -> None:
    ConsumerConfig.from_kwargs("h:1", plugins=["nope"])  # the config checks only the shape
    with pytest.raises(ConfigError, match=r"unknown plugin 'nope'; installed: .*lag-monitor") as raised:
        Consumer("h:1", plugins=["nope"])  # names are looked up where the consumer is built
    assert raised.value.key == "plugins"


def test_a_plugin_needs_a_name_and_a_callable_factory() -> None:
    with pytest.raises(ConfigError, match="non-empty string"):
        Plugin("", LagMonitor)
    with pytest.raises(ConfigError, match="factory must be callable"):
        Plugin("x", 3)  # type: ignore[arg-type]


def test_the_reference_plugin_is_installed_by_its_entry_point_and_resolves_to_its_factory() -> None:
    installed = installed_plugins()
    assert list(installed) == sorted(installed)
    entry = installed["lag-monitor"]
    assert (entry.group, entry.value) == (ENTRY_POINT_GROUP, "asyncconsumer.plugins.lag_monitor:create")
    assert resolve("lag-monitor") is create


def test_a_plugin_given_directly_is_its_own_factory_and_needs_no_lookup() -> None:
    def factory(ctx: object) -> LagMonitor:
        raise AssertionError("not called")

    direct = Plugin("mine", factory)  # type: ignore[arg-type]
    assert resolve(direct) is factory
    assert (plugin_name(direct), plugin_name("lag-monitor")) == ("mine", "lag-monitor")
    check_installed((direct,))  # no name to look up
    assert direct == Plugin("mine", LagMonitor)  # a plugin is its name: its factory is not compared


def test_any_object_with_a_name_and_a_factory_is_taken_as_the_config_takes_it() -> None:
    """The config takes an entry by its shape (``config.PluginLike``, a foundation type), so the registry does too:
    such an object resolves to its factory, not to an installed plugin of its name."""

    @attrs.frozen
    class Mine:
        name: str
        factory: Callable[[object], LagMonitor]

    def factory(ctx: object) -> LagMonitor:
        raise AssertionError("not called")

    entry = Mine("lag-monitor", factory)
    config = ConsumerConfig.from_kwargs("h:1", plugins=[entry])
    assert config.plugins == (entry,)
    assert (resolve(entry), plugin_name(entry)) == (factory, "lag-monitor")


def test_a_name_that_is_no_longer_installed_is_a_plugin_error() -> None:
    with pytest.raises(PluginError, match="plugin 'gone': is no longer installed") as raised:
        resolve("gone")
    assert raised.value.plugin == "gone"
