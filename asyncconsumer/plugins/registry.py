"""Which plugins exist and how a config's ``plugins`` entry becomes a factory.

A plugin is installed by an entry point in the group ``asyncconsumer.managers`` (name: the plugin's name; object:
its factory), or given directly as a ``Plugin``. Entry points are listed when a config names one, and loaded only
when a consumer is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from asyncconsumer.errors import ConfigError, PluginError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from asyncconsumer.config import PluginLike
    from asyncconsumer.managers.base import RequestManager
    from asyncconsumer.plugins.context import PluginContext

ENTRY_POINT_GROUP = "asyncconsumer.managers"

PluginFactory = Callable[["PluginContext"], "RequestManager"]
"""Builds the plugin's request manager from its context; called once per consumer, on the caller's thread."""


def _check_name(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("plugins", f"a plugin's name must be a non-empty string, got {value!r}")


def _check_factory(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not callable(value):
        raise ConfigError("plugins", f"plugin {instance.name!r}: factory must be callable, got {type(value).__name__}")  # type: ignore[attr-defined]


@attrs.define(frozen=True, slots=True)
class Plugin:
    """A plugin given directly, without an entry point: ``plugins=[Plugin("audit", make_audit_manager)]``."""

    name: str = attrs.field(validator=_check_name)
    factory: PluginFactory = attrs.field(validator=_check_factory, eq=False)


def installed_plugins() -> dict[str, EntryPoint]:
    """Every plugin installed in this environment, by name (the first distribution wins on a clash)."""
    from importlib.metadata import entry_points  # late: ~2 MB of imports a consumer without plugins never needs

    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return dict(sorted(found.items()))


def check_installed(value: tuple[str | PluginLike, ...]) -> None:
    """Raises ``ConfigError`` naming the first name that no installed plugin has (the config checked the shape)."""
    names = [item for item in value if isinstance(item, str)]
    if not names:
        return
    installed = installed_plugins()
    for name in names:
        if name not in installed:
            listed = ", ".join(installed) or f"none (no entry points in group {ENTRY_POINT_GROUP!r})"
            raise ConfigError("plugins", f"unknown plugin {name!r}; installed: {listed}")


def plugin_name(item: str | PluginLike) -> str:
    return item if isinstance(item, str) else item.name


def resolve(item: str | PluginLike) -> PluginFactory:
    """The factory behind a config entry (a ``Plugin``, or any object with its two fields, as the config took it);
    a plugin whose entry point cannot be imported is a ``PluginError``."""
    if not isinstance(item, str):
        return item.factory
    entry = installed_plugins().get(item)
    if entry is None:
        raise PluginError(item, "is no longer installed")
    try:
        factory = entry.load()
    except Exception as exc:
        raise PluginError(item, f"entry point {entry.value!r} could not be loaded: {exc!r}") from exc
    if not callable(factory):
        raise PluginError(item, f"entry point {entry.value!r} is not callable")
    return factory  # type: ignore[no-any-return]
