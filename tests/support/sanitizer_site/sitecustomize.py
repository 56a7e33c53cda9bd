"""For ``scripts/sanitize.py``'s run, which puts this folder first on ``PYTHONPATH``: every interpreter of the run
(children included) loads the record decoder from the sanitized build ``ASYNCCONSUMER_SANITIZED_DECODER`` names, by a
finder put first on ``sys.meta_path`` before anything imports the package. ``tests/support/sanitized.py`` checks it."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

MODULE = "asyncconsumer.protocol._v2records_c"


class SanitizedDecoder(importlib.abc.MetaPathFinder):
    """Finds ``MODULE`` at one file, whatever else is on ``sys.path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != MODULE:
            return None
        return importlib.util.spec_from_loader(
            fullname, importlib.machinery.ExtensionFileLoader(fullname, self.path), origin=self.path
        )


_build = os.environ.get("ASYNCCONSUMER_SANITIZED_DECODER")
if _build:
    sys.meta_path.insert(0, SanitizedDecoder(_build))
