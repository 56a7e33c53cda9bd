"""Builds the enabled plugins' managers for one consumer, each behind a ``GuardedManager``."""

from __future__ import annotations

from collections.abc import Callable

from asyncconsumer._clock import Clock
from asyncconsumer._logs import get_logger
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError
from asyncconsumer.events.background import BackgroundEvent
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.metrics import PluginMetricsStore
from asyncconsumer.plugins.context import PluginContext
from asyncconsumer.plugins.guard import GuardedManager
from asyncconsumer.plugins.registry import check_installed, plugin_name, resolve

log = get_logger("asyncconsumer.plugins")

_MANAGER_METHODS = ("poll", "poll_on_close")


def load_plugins(
    config: ConsumerConfig,
    clock: Clock,
    metadata: MetadataManager,
    subscriptions: SubscriptionState,
    emit: Callable[[BackgroundEvent], None],
) -> dict[str, tuple[GuardedManager, PluginMetricsStore]]:
    """One guarded manager (and its metrics) per enabled plugin, in config order.

    A plugin that cannot be loaded or built is a ``PluginError`` raised here under ``plugin_errors="fatal"``;
    otherwise it is logged and kept switched off, so ``metrics()`` shows why. Bad options (``ConfigError`` from the
    factory) and names no installed plugin has are always raised.
    """
    check_installed(config.plugins)
    fatal = config.plugin_errors == "fatal"
    loaded: dict[str, tuple[GuardedManager, PluginMetricsStore]] = {}
    for item in config.plugins:
        name = plugin_name(item)
        store = PluginMetricsStore()
        context = PluginContext(
            name, config.plugin_options.get(name, {}), config, clock, metadata, subscriptions, emit, store
        )
        guarded = GuardedManager(name, None, store, fatal)
        try:
            manager = resolve(item)(context)
            missing = [m for m in _MANAGER_METHODS if not callable(getattr(manager, m, None))]
            if missing:
                raise TypeError(f"its factory returned {type(manager).__name__}, which lacks {', '.join(missing)}")
        except ConfigError:
            raise  # bad plugin_options are the caller's mistake, whatever plugin_errors says
        except Exception as exc:
            guarded.fail("factory", exc)  # raises when fatal
        else:
            guarded = GuardedManager(name, manager, store, fatal)
            log.debug("plugin.loaded", plugin=name, manager=type(manager).__name__)
        loaded[name] = (guarded, store)
    return loaded
