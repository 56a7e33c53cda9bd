"""The structlog events modules emit, captured whatever the process's logging was before.

A module's ``log`` (``asyncconsumer._logs.Logger``) settles on structlog or on the stdlib fallback at its first
emitted line, and keeps that choice; ``caplog`` sees only the fallback, and ``structlog.testing.capture_logs`` only
a logger that has not settled on it. So each module named gets a fresh logger of the same name for the test, which
settles inside ``capture_logs``: its events are captured, from any thread, as dicts (``event``, ``log_level`` and
the fields). structlog is left unconfigured after if it was before.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from asyncconsumer._logs import Logger, get_logger


@contextmanager
def captured_events(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> Iterator[list[MutableMapping[str, Any]]]:
    """The events the ``log`` of each of ``modules`` emits within the block."""
    for module in modules:
        current = getattr(module, "log", None)
        assert isinstance(current, Logger), f"{module.__name__} has no module logger"
        monkeypatch.setattr(module, "log", get_logger(current._name))
    configured = structlog.is_configured()
    try:
        with capture_logs() as captured:
            yield captured
    finally:
        if not configured:  # capture_logs leaves structlog configured: later loggers would not fall back to stdlib
            structlog.reset_defaults()


def events_named(events: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    """The captured events called ``event``."""
    return [e for e in list(events) if e["event"] == event]
