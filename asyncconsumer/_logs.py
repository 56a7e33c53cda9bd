"""Structured logs with fixed event names. Quiet unless the application asks.

If the application configured structlog, our events go through its configuration. Otherwise they go to the
standard ``logging`` logger of the same name (``asyncconsumer.fetch``...), rendered as key=value, so the usual
``logging`` levels apply and nothing is printed by default. structlog itself is imported only when the application
has imported it or a line is actually emitted: a quiet consumer does not pay for it (about 1.4 MB).
"""

from __future__ import annotations

import logging
import sys
from typing import Any


def _fallback(logger: logging.Logger) -> Any:
    import structlog

    return structlog.wrap_logger(
        logger,
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
    )


def _imported_structlog() -> Any:
    if "structlog" not in sys.modules:
        return None
    import structlog

    return structlog


class Logger:
    """Chooses structlog's configuration or the stdlib fallback at first use."""

    __slots__ = ("_bound", "_logger", "_name", "_stdlib")

    def __init__(self, name: str, bound: dict[str, Any] | None = None) -> None:
        self._name = name
        self._bound = bound or {}
        self._logger: Any = None
        self._stdlib: logging.Logger | None = None
        """Set on the fallback path: its level decides before structlog is loaded."""

    def bind(self, **kw: Any) -> Logger:
        """A logger that adds ``kw`` to every event (e.g. ``plugin=name``)."""
        return Logger(self._name, {**self._bound, **kw})

    def _emit(self, level: int, method: str, event: str, kw: dict[str, Any]) -> None:
        logger = self._logger
        if logger is None:
            # Imported by the application (or by another of our loggers): the import statement, unlike a look in
            # sys.modules, waits until another thread has finished initialising it.
            structlog = _imported_structlog()
            if structlog is not None and structlog.is_configured():
                logger = structlog.get_logger(self._name)
                self._stdlib = None  # the application's configuration filters
            else:
                if self._stdlib is None:
                    self._stdlib = logging.getLogger(self._name)
                if not self._stdlib.isEnabledFor(level):
                    return
                logger = _fallback(self._stdlib)
            if self._bound:
                logger = logger.bind(**self._bound)
            self._logger = logger
        elif self._stdlib is not None and not self._stdlib.isEnabledFor(level):
            return
        getattr(logger, method)(event, **kw)

    def debug(self, event: str, **kw: Any) -> None:
        self._emit(logging.DEBUG, "debug", event, kw)

    def info(self, event: str, **kw: Any) -> None:
        self._emit(logging.INFO, "info", event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._emit(logging.WARNING, "warning", event, kw)

    def error(self, event: str, **kw: Any) -> None:
        self._emit(logging.ERROR, "error", event, kw)


def get_logger(name: str) -> Logger:
    return Logger(name)
