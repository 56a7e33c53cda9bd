"""The part of aiokafka we use, without its client: its Cython record-batch reader (``RecordBatchView.decode``, a
second reading for the fuzz tests, and the CRC check when neither ``_crc32c`` nor google-crc32c is there).

Importing any ``aiokafka.x`` first runs aiokafka's package ``__init__``, which imports its whole client (producer,
consumer, connections): 3 MB of resident memory that a consumer built on asyncconsumer never uses. So when the
application has not imported aiokafka yet, the package is registered with its ``__init__`` deferred: it runs, once,
the first time anything asks the package for a name that is not there yet (``from aiokafka import
AIOKafkaProducer``, ``aiokafka.__all__``). Submodules import as usual meanwhile (``from aiokafka.consumer import
...`` too), so an application that uses aiokafka itself sees no difference.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import threading
import types
from typing import Any

_complete_lock = threading.RLock()
_completing = False
_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


class _InitDeferred(types.ModuleType):
    """aiokafka's package module until its ``__init__`` has run."""

    def __getattr__(self, name: str) -> Any:
        _complete(self)
        return types.ModuleType.__getattribute__(self, name)


def _complete(module: types.ModuleType) -> None:
    """Runs the package ``__init__`` in the registered module, once. Asked again from inside that run (the same
    thread), it returns at once: the caller then sees a partly initialised module, as Python's own imports do."""
    global _completing
    with _complete_lock:
        deferred: bool = module.__class__ is _InitDeferred
        if not deferred or _completing:
            return
        _completing = True
        try:
            spec = module.__spec__
            assert spec is not None and spec.loader is not None
            spec.loader.exec_module(module)
            module.__class__ = types.ModuleType
        finally:
            _completing = False


def _register_deferred() -> None:
    if "aiokafka" in sys.modules:
        return
    spec = importlib.util.find_spec("aiokafka")
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        return  # not a plain package on disk: let the imports below load it the usual way
    module = importlib.util.module_from_spec(spec)
    if type(module) is not types.ModuleType or not hasattr(spec.loader, "exec_module"):
        return
    # aiokafka's own modules ask the package for its version while they load; give it without the ``__init__``.
    with open(spec.origin, encoding="utf-8") as source:
        version = _VERSION.search(source.read())
    if version is None:
        return
    module.__dict__["__version__"] = version.group(1)
    module.__class__ = _InitDeferred
    sys.modules["aiokafka"] = module


_register_deferred()

from aiokafka.record.default_records import DefaultRecordBatch  # noqa: E402

__all__ = ["DefaultRecordBatch"]
