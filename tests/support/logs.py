"""The structlog events modules emit, captured whatever the process's logging was before.

A module's ``log`` (``asyncconsumer._logs.Logger``) settles on structlog or on the stdlib fallback at its first
emitted line, and keeps that choice; ``caplog`` sees only the fallback. So each module named gets a fresh logger of
the same name for the test, settled on a structlog logger of its own whose only processor captures: its events are
captured, from any thread, as dicts (``event``, ``log_level`` and the fields). structlog's global configuration is
never touched, so a module not named that first logs during the block settles as it would have anyway (with
``structlog.testing.capture_logs`` it settled on the capture for good, and later tests' ``caplog`` missed it).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest
import structlog
from structlog.testing import LogCapture

from asyncconsumer._logs import Logger, get_logger


@contextmanager
def captured_events(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> Iterator[list[MutableMapping[str, Any]]]:
    """The events the ``log`` of each of ``modules`` emits within the block."""
    capture = LogCapture()
    for module in modules:
        current = getattr(module, "log", None)
        assert isinstance(current, Logger), f"{module.__name__} has no module logger"
        fresh = get_logger(current._name)
        fresh._logger = structlog.wrap_logger(
            None,
            processors=[capture],
            wrapper_class=structlog.make_filtering_bound_logger(0),
            cache_logger_on_first_use=True,
        )
        monkeypatch.setattr(module, "log", fresh)
    yield capture.entries


def events_named(events: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    """The captured events called ``event``."""
    return [e for e in list(events) if e["event"] == event]
