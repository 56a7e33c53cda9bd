"""The surface for plugin authors: a plugin is a factory ``(PluginContext) -> RequestManager``.

Install one with an entry point in the group ``asyncconsumer.managers``::

    [project.entry-points."asyncconsumer.managers"]
    my-plugin = "my_package.module:create"

and enable it with ``AsyncConsumer(..., plugins=["my-plugin"], plugin_options={"my-plugin": {...}})``, or pass
``Plugin("my-plugin", create)`` directly. The manager runs on the background thread, polled after the built-in
managers; it must not block or do I/O itself: it returns requests (``asyncconsumer.protocol`` classes, e.g.
``ListOffsetsRequest``) in ``PollResult.unsent_requests`` and handles each answer in its ``on_response``.
``asyncconsumer.plugins.lag_monitor`` is the reference plugin.
"""

from asyncconsumer._clock import Clock
from asyncconsumer._state.cluster import Broker, Cluster, TopicInfo
from asyncconsumer.errors import PluginError
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, RequestManager, ResponseCallback, UnsentRequest
from asyncconsumer.metrics import PluginMetrics
from asyncconsumer.plugins.context import PluginContext
from asyncconsumer.plugins.registry import ENTRY_POINT_GROUP, Plugin, PluginFactory, installed_plugins

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_POLL_WAIT_MS",
    "Broker",
    "Clock",
    "Cluster",
    "Plugin",
    "PluginContext",
    "PluginError",
    "PluginFactory",
    "PluginMetrics",
    "PollResult",
    "RequestManager",
    "ResponseCallback",
    "TopicInfo",
    "UnsentRequest",
    "installed_plugins",
]
