"""The pytest side of ``scripts/sanitize.py``'s run (``-p tests.support.sanitized``): the sanitized record decoder.

The run's ``sitecustomize`` (``tests/support/sanitizer_site/``) made ``_v2records_c`` load from the sanitized build
``ASYNCCONSUMER_SANITIZED_DECODER`` names. This plugin proves that file is what was loaded, that it is instrumented and
that the AddressSanitizer runtime is in the process, or stops the run (``pytest.UsageError``); caps each Hypothesis
test at ``ASYNCCONSUMER_SANITIZED_EXAMPLES`` examples, without deadlines (the sanitizers slow every allocation down);
and at the end writes what it checked to ``ASYNCCONSUMER_SANITIZED_REPORT``, so the script can tell a run that never
loaded the build, or died, from one that passed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

MODULE = "asyncconsumer.protocol._v2records_c"
DECODER_ENV = "ASYNCCONSUMER_SANITIZED_DECODER"
EXAMPLES_ENV = "ASYNCCONSUMER_SANITIZED_EXAMPLES"
REPORT_ENV = "ASYNCCONSUMER_SANITIZED_REPORT"
INSTRUMENTED = (b"__asan_init", b"__ubsan_handle_")
"""Symbols every AddressSanitizer and UndefinedBehaviorSanitizer build imports (gcc's and clang's alike)."""


def problems() -> list[str]:
    """What is wrong with the decoder this interpreter uses, for a sanitized run: nothing, or each fault."""
    expected = os.environ.get(DECODER_ENV)
    if not expected:
        return [f"{DECODER_ENV} is not set: run the sanitized tests with scripts/sanitize.py"]
    from asyncconsumer.protocol import v2decode

    found: list[str] = []
    module = sys.modules.get(MODULE)
    loaded = getattr(module, "__file__", None)
    if module is None or loaded is None or Path(loaded).resolve() != Path(expected).resolve():
        found.append(f"{MODULE} was loaded from {loaded}, not from the sanitized build {expected}")
    if v2decode.IMPLEMENTATION != "c" or module is None or v2decode.ColumnSink is not module.ColumnSink:
        found.append(f"v2decode decodes with {v2decode.fill_records.__module__}, not the sanitized build")
    build = Path(expected).read_bytes() if Path(expected).is_file() else b""
    found += [
        f"{expected} has no {symbol.decode()} (not built with the sanitizers)"
        for symbol in INSTRUMENTED
        if symbol not in build
    ]
    maps = Path("/proc/self/maps")
    if maps.exists() and "asan" not in maps.read_text():
        found.append("no AddressSanitizer runtime is mapped in this process (LD_PRELOAD it)")
    return found


def pytest_configure(config: Any) -> None:
    import pytest

    found = problems()
    if found:
        raise pytest.UsageError("the sanitized decoder is not the one in use:\n  " + "\n  ".join(found))


def pytest_report_header(config: Any) -> str:
    return f"record decoder: {sys.modules[MODULE].__file__} (AddressSanitizer + UndefinedBehaviorSanitizer)"


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Each Hypothesis test capped at ``EXAMPLES_ENV`` examples, with no deadline and no too-slow check."""
    import hypothesis
    import pytest

    cap = int(os.environ.get(EXAMPLES_ENV) or 0)
    if cap <= 0:
        return
    for item in items:
        test = getattr(item, "obj", None)
        if not getattr(test, "is_hypothesis_test", False):
            continue
        # The settings a @given test runs with are read from this attribute when it runs; Hypothesis offers no
        # public way to lower a test's own max_examples, so a run that cannot find it stops rather than run uncapped.
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if not isinstance(current, hypothesis.settings):
            raise pytest.UsageError(f"cannot cap {item.nodeid}: Hypothesis keeps its settings elsewhere now")
        test._hypothesis_internal_use_settings = hypothesis.settings(  # type: ignore[union-attr]
            current,
            max_examples=min(current.max_examples, cap),
            deadline=None,
            suppress_health_check=[*current.suppress_health_check, hypothesis.HealthCheck.too_slow],
        )


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    report = os.environ.get(REPORT_ENV)
    if report:
        module = sys.modules.get(MODULE)
        checked = {
            "decoder": getattr(module, "__file__", None),
            "problems": problems(),
            "tests": session.testscollected,
        }
        Path(report).write_text(json.dumps(checked))
