"""Structured logs with fixed event names. Quiet unless the application asks.

If the application configured structlog, our events go through its configuration. Otherwise they go to the
standard ``logging`` logger of the same name (``asyncconsumer.fetch``...), rendered as key=value, so the usual
``logging`` levels apply and nothing is printed by default.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

_FALLBACK_PROCESSORS: list[Any] = [
    structlog.stdlib.filter_by_level,
    structlog.processors.format_exc_info,
    structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
]


class Logger:
    """Chooses structlog's configuration or the stdlib fallback at first use."""

    __slots__ = ("_bound", "_logger", "_name")

    def __init__(self, name: str, bound: dict[str, Any] | None = None) -> None:
        self._name = name
        self._bound = bound or {}
        self._logger: Any = None

    def bind(self, **kw: Any) -> Logger:
        """A logger that adds ``kw`` to every event (e.g. ``plugin=name``)."""
        return Logger(self._name, {**self._bound, **kw})

    def _bind(self) -> Any:
        if self._logger is None:
            if structlog.is_configured():
                self._logger = structlog.get_logger(self._name)
            else:
                self._logger = structlog.wrap_logger(
                    logging.getLogger(self._name),
                    processors=_FALLBACK_PROCESSORS,
                    wrapper_class=structlog.stdlib.BoundLogger,
                )
            if self._bound:
                self._logger = self._logger.bind(**self._bound)
        return self._logger

    def debug(self, event: str, **kw: Any) -> None:
        logger = self._bind()
        if isinstance(logger, structlog.stdlib.BoundLogger) and not logger.isEnabledFor(logging.DEBUG):
            return
        logger.debug(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self._bind().info(event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._bind().warning(event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._bind().error(event, **kw)


def get_logger(name: str) -> Logger:
    return Logger(name)
