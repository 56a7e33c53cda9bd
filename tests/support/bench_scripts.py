"""The benchmark scripts, imported in unit tests by their plain names, as they import their siblings."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def script(name: str) -> Iterator[ModuleType]:
    """``benchmarks/<name>.py`` as a module, with ``benchmarks/`` on ``sys.path`` until the generator ends (a
    module-scoped fixture yields from it)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
