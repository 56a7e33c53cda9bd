"""Runs a plugin's request manager so that its failure cannot take the consumer down (unless asked to).

Every call into the plugin (``poll``, ``poll_on_close``, and the response callbacks of its requests) is guarded.
On the first exception the plugin is switched off for good, since its state is unknown: ``plugin.failed`` is
logged naming it, and its metrics say why. With ``plugin_errors="fatal"`` the ``PluginError``
is raised instead, which stops the consumer and is raised from the caller's next call.
"""

from __future__ import annotations

from typing import Any

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import PluginError
from asyncconsumer.managers.base import EMPTY, PollResult, RequestManager, UnsentRequest
from asyncconsumer.metrics import PluginMetricsStore

log = get_logger("asyncconsumer.plugins")


class GuardedManager:
    """A plugin's manager as the background loop sees it."""

    __slots__ = ("_fatal", "_manager", "_metrics", "failed", "name")

    def __init__(self, name: str, manager: RequestManager | None, metrics: PluginMetricsStore, fatal: bool) -> None:
        self.name = name
        self._manager = manager
        self._metrics = metrics
        self._fatal = fatal
        self.failed: PluginError | None = None

    def poll(self, now_ms: int) -> PollResult:
        return self._call("poll", now_ms)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return self._call("poll_on_close", now_ms)

    def _call(self, method: str, now_ms: int) -> PollResult:
        manager = self._manager
        if manager is None:
            return EMPTY
        try:
            result = getattr(manager, method)(now_ms)
            if not isinstance(result, PollResult):
                raise TypeError(f"{method}() returned {type(result).__name__}, not PollResult")
        except Exception as exc:
            self.fail(method, exc)
            return EMPTY
        if not result.unsent_requests:
            return result
        return attrs.evolve(result, unsent_requests=tuple(self._guard(u) for u in result.unsent_requests))

    def _guard(self, unsent: UnsentRequest) -> UnsentRequest:
        callback = unsent.on_response

        def on_response(response: Any, now_ms: int) -> None:
            if self._manager is None:
                return
            try:
                callback(response, now_ms)
            except Exception as exc:
                self.fail(f"{unsent.request.API_KEY.name} response callback", exc)

        return attrs.evolve(unsent, on_response=on_response)

    def fail(self, where: str, exc: Exception) -> None:
        """Switch the plugin off (or, when fatal, raise); ``where`` says which call raised."""
        if isinstance(exc, PluginError):
            error = exc
        else:
            error = PluginError(self.name, f"{where} raised {exc!r}")
            error.__cause__ = exc
        log.error("plugin.failed", plugin=self.name, where=where, error=repr(exc), fatal=self._fatal)
        self.failed = error
        self._manager = None
        self._metrics.fail(str(error))
        if self._fatal:
            raise error
