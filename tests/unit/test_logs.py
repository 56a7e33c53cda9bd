"""Logs go through the application's structlog configuration or the stdlib logger of the same name, and a consumer
that logs nothing does not load what it does not use (structlog, the group stack, SASL, plugins)."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import structlog
from structlog.testing import capture_logs

from asyncconsumer._logs import get_logger
from tests.support.logs import captured_events


def test_stdlib_fallback_renders_key_value_at_enabled_levels(caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("asyncconsumer.test_fallback")
    caplog.set_level(logging.INFO, logger="asyncconsumer.test_fallback")
    log.debug("test.hidden", n=1)
    log.info("test.shown", partition="t-0", offset=5)
    messages = [r.getMessage() for r in caplog.records if r.name == "asyncconsumer.test_fallback"]
    assert messages == ["event='test.shown' offset=5 partition='t-0'"]


def test_level_raised_after_first_use_is_respected(caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("asyncconsumer.test_levels")
    caplog.set_level(logging.DEBUG, logger="asyncconsumer.test_levels")
    log.debug("test.first")
    caplog.set_level(logging.WARNING, logger="asyncconsumer.test_levels")
    log.info("test.quiet")
    log.warning("test.loud")
    messages = [r.getMessage() for r in caplog.records if r.name == "asyncconsumer.test_levels"]
    assert messages == ["event='test.first'", "event='test.loud'"]


def test_bound_fields_reach_every_event(caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("asyncconsumer.test_bound").bind(plugin="lag")
    caplog.set_level(logging.ERROR, logger="asyncconsumer.test_bound")
    log.error("test.failed", reason="x")
    assert [r.getMessage() for r in caplog.records if r.name == "asyncconsumer.test_bound"] == [
        "event='test.failed' plugin='lag' reason='x'"
    ]


def test_application_structlog_configuration_is_used() -> None:
    log = get_logger("asyncconsumer.test_structlog")
    configured = structlog.is_configured()
    try:
        with capture_logs() as captured:
            assert structlog.is_configured()
            log.debug("test.debug_event", offset=3)
    finally:
        if not configured:  # capture_logs leaves structlog configured: later loggers would settle on it
            structlog.reset_defaults()
    assert captured == [{"event": "test.debug_event", "offset": 3, "log_level": "debug"}]


def test_captured_events_leave_the_loggers_of_modules_not_named_as_they_were(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A consumer run inside captured_events logs from modules the test did not name; the first line of one of them
    # must settle it as it would have outside (here the stdlib fallback), not on the capture, or a later test's caplog
    # misses it (the rebootstrap tests missed metadata.rebootstrap after the network-fault suite).
    named = types.ModuleType("asyncconsumer.test_named")
    named.log = get_logger("asyncconsumer.test_named")  # type: ignore[attr-defined]
    other = get_logger("asyncconsumer.test_other")
    caplog.set_level(logging.INFO, logger="asyncconsumer.test_other")
    with captured_events(monkeypatch, named) as events:
        named.log.info("test.named", offset=1)  # type: ignore[attr-defined]
        other.info("test.other_first")
    other.info("test.other_after")
    assert events == [{"event": "test.named", "offset": 1, "log_level": "info"}]
    assert [r.getMessage() for r in caplog.records if r.name == "asyncconsumer.test_other"] == [
        "event='test.other_first'",
        "event='test.other_after'",
    ]
    assert not structlog.is_configured()


_PROBE = """
import json, sys
import asyncconsumer
consumer = asyncconsumer.Consumer("127.0.0.1:1")  # no group, no SASL, no plugins; never started
loaded = sorted(m for m in ("structlog", "asyncconsumer._background.group", "asyncconsumer.managers.membership_classic",
    "asyncconsumer.managers.membership_consumer", "asyncconsumer.network.sasl", "asyncconsumer.plugins.loader")
    if m in sys.modules)
consumer.close()
grouped = asyncconsumer.Consumer("127.0.0.1:1", group_id="g")
print(json.dumps({"plain": loaded, "group": "asyncconsumer._background.group" in sys.modules,
    "kip848": "asyncconsumer.managers.membership_consumer" in sys.modules}))
grouped.close()
"""


def test_a_plain_consumer_loads_only_what_it_uses() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"plain": [], "group": True, "kip848": False}


_RACE = """
import logging, sys, threading
from asyncconsumer._logs import get_logger
assert "structlog" not in sys.modules
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
barrier = threading.Barrier(8)
errors = []
def log(i):
    barrier.wait()
    try:
        get_logger(f"asyncconsumer.race{i}").info("race.event", thread=i)
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=log, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print("errors", errors)
"""


def test_first_log_lines_from_many_threads_at_once() -> None:
    """The first emitted line imports structlog; threads that log meanwhile wait for it instead of failing."""
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, text=True, timeout=60, check=True)
        lines = out.stdout.strip().splitlines()
        assert lines[-1] == "errors []"
        assert sorted(lines[:-1]) == sorted(f"event='race.event' thread={i}" for i in range(8))


def test_every_event_the_package_logs_is_listed_in_docs_logging() -> None:
    """The event names are the stable interface; ``docs/logging.md`` lists them all, so users can match on them."""
    package = Path(__file__).resolve().parents[2] / "asyncconsumer"
    pattern = re.compile(r'\blog\.(?:debug|info|warning|error|exception|critical)\(\s*"([a-z0-9_.]+)"')
    logged = {m.group(1) for path in package.rglob("*.py") for m in pattern.finditer(path.read_text())}
    listed = set(re.findall(r"`([a-z0-9_]+\.[a-z0-9_.]+)`", (package.parent / "docs" / "logging.md").read_text()))
    assert len(logged) > 50  # the scan found the calls
    assert sorted(logged - listed) == []
