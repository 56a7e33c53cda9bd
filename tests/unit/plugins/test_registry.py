"""Which plugins exist and what a config entry names (``plugins/registry.py``): installed plugins by entry point,
``Plugin`` given directly, and a name no installed plugin has."""

from __future__ import annotations

import pytest

from asyncconsumer import Consumer
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError
from asyncconsumer.plugins import Plugin
from asyncconsumer.plugins.lag_monitor import LagMonitor


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
