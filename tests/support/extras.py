"""Tests that need one of the package's extras (``[arrow]``, ``[spark]``, ``[bench]``).

Where the extra is missing they are skipped with its name and the command that installs it, so a developer with
only ``.[test]`` sees what the run left out and why. CI installs every extra the tests need, so there (the ``CI``
environment variable set) a missing one fails instead: a CI run can never pass by skipping.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def requires_extra(extra: str, module: str) -> ModuleType:
    """``module``, imported; else skip (at module level or inside a test) naming ``extra``, or fail under CI."""
    __tracebackhide__ = True  # the skip is reported at the test that asked, not here
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        reason = f"needs the [{extra}] extra: pip install 'asyncconsumer[{extra}]' ({module}: {exc})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}\n(CI is set: CI installs every extra, so a missing one fails)", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
