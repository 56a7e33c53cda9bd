"""Which Python runs the source's workers, and the source's registration with a session.

Spark runs a Python data source in Python processes of its own: on the driver, a planner worker (schema,
partitions, offsets) and, once per JVM, the lookup of ``pyspark_*`` modules; on the executors, the readers. Each
runs the interpreter its function names, and PySpark names ``PYSPARK_PYTHON`` or, unset, ``python3`` from PATH:
not the driver's own interpreter. A driver run as ``.venv/bin/python app.py`` (no venv activated) thus hands its
workers a ``python3`` without asyncconsumer: the lookup finds nothing (``DATA_SOURCE_NOT_FOUND``) and a
registered source's workers cannot unpickle it (``ModuleNotFoundError``). Neither failure runs any of our code.

``register`` registers the source with the interpreter ``choose`` picks, for this source only (the session's
other Python functions keep PySpark's choice), and on this machine checks that it imports asyncconsumer first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError

log = get_logger("asyncconsumer.spark")

CHECK_TIMEOUT_S = 60.0
"""How long the interpreter check may take: an interpreter start and asyncconsumer's, pyspark's, pyarrow's imports."""


class WorkerPythonError(ConfigError):
    """The interpreter Spark would run the source's workers with cannot import asyncconsumer (or does not run)."""


@attrs.frozen
class WorkerPython:
    """The interpreter for the source's workers, and what chose it."""

    executable: str
    chosen_by: str
    """``PYSPARK_PYTHON``, ``spark.pyspark.python``, ``driver`` (a local master, nothing set) or ``default``."""


def is_local(master: str) -> bool:
    """``local``, ``local[N]``, ``local[N,F]``, ``local[*]``, ``local-cluster[...]``: every worker on this machine."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def choose(
    *, master: str, environ: Mapping[str, str], configured: str | None, driver: str, default: str
) -> WorkerPython:
    """What the source's workers run, first of:

    - ``PYSPARK_PYTHON`` (``environ``): what PySpark runs already (``spark-submit`` also sets it from
      ``spark.pyspark.python``), never overridden;
    - ``spark.pyspark.python`` (``configured``): set on the session's builder, which PySpark does not read;
    - on a local master, the driver's own interpreter (``driver``, ``sys.executable``): the workers run here, with
      the driver's Python version as PySpark requires, and it has asyncconsumer since it is running it;
    - else (a cluster, nothing set) PySpark's ``default``, ``python3`` on each executor's PATH.
    """
    if "PYSPARK_PYTHON" in environ:
        return WorkerPython(default, "PYSPARK_PYTHON")
    if configured:
        return WorkerPython(configured, "spark.pyspark.python")
    if is_local(master):
        return WorkerPython(driver, "driver")
    return WorkerPython(default, "default")


def check(python: WorkerPython, *, pythonpath: str, where: str) -> None:
    """Raise ``WorkerPythonError`` unless ``python`` imports ``asyncconsumer.spark`` here, with Spark's workers'
    ``pythonpath`` (pyspark's own, then the driver's PYTHONPATH) and working directory. ``where`` says which
    workers run it on this machine, for the message."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    command = [python.executable, "-c", "import asyncconsumer.spark"]
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        failure = f"does not run ({exc})"
    else:
        if result.returncode == 0:
            return
        lines = result.stderr.strip().splitlines()
        failure = f"cannot import asyncconsumer.spark ({lines[-1] if lines else f'exit code {result.returncode}'})"
    key = "PYSPARK_PYTHON" if python.chosen_by in ("default", "driver") else python.chosen_by
    origin = "PySpark's default, from PATH" if python.chosen_by == "default" else f"from {python.chosen_by}"
    raise WorkerPythonError(
        key,
        f"Spark would run the asyncconsumer source's {where} with {python.executable!r} ({origin}), which "
        f"{failure}. {_remedy(python)}",
    )


def _remedy(python: WorkerPython) -> str:
    if python.chosen_by == "default":
        return (
            "Set PYSPARK_PYTHON to an interpreter with asyncconsumer[spark] installed, at the same path on the "
            "driver and on every executor."
        )
    return (
        f"Install asyncconsumer[spark] into it, or set {python.chosen_by} to an interpreter that has it (on a local "
        f"master, leave PYSPARK_PYTHON and spark.pyspark.python unset to use this driver's, {sys.executable!r})."
    )


def register(spark: Any, source: type) -> WorkerPython | None:
    """Register ``source`` with ``spark``, its workers running ``choose``'s interpreter, checked first on this
    machine unless it is the driver's own. Returns the interpreter, or ``None`` for a Spark Connect session (the
    server runs its workers; nothing here to choose or check)."""
    sc = getattr(spark, "_sc", None)  # a classic session; Spark Connect's has no SparkContext here
    if sc is None:
        _register(spark, source)
        return None
    master = str(sc.master)
    python = choose(
        master=master,
        environ=os.environ,
        configured=sc.getConf().get("spark.pyspark.python"),
        driver=sys.executable,
        default=sc.pythonExec,
    )
    if python.executable != sys.executable:
        # The planner worker runs on the driver's machine whatever the master; on a local master the readers too.
        where = "planner and readers" if is_local(master) else "planner (on this driver)"
        pythonpath = os.pathsep.join(
            p for p in (str(sc._jvm.PythonUtils.sparkPythonPath()), os.environ.get("PYTHONPATH", "")) if p
        )
        check(python, pythonpath=pythonpath, where=where)
    previous = sc.pythonExec
    sc.pythonExec = python.executable  # read once, by the registration's function; restored below
    try:
        _register(spark, source)
    finally:
        sc.pythonExec = previous
    log.info("spark.registered", source=source.__name__, python=python.executable, chosen_by=python.chosen_by)
    return python


def _register(spark: Any, source: type) -> None:
    from pyspark.errors import AnalysisException

    try:
        spark.dataSource.register(source)
    except AnalysisException as exc:
        # Some Spark 4 releases refuse to replace a source their own lookup found (pyspark_asyncconsumer, with
        # PYSPARK_PYTHON set): that one is used. Spark 4.3 replaces it, with a warning of its own.
        if exc.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise
        log.info("spark.found_by_lookup", source=source.__name__)
