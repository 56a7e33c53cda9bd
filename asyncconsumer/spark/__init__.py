"""Kafka for PySpark through asyncconsumer: ``asyncconsumer.spark.register(spark)``, then
``spark.read.format("asyncconsumer")`` or ``spark.readStream.format("asyncconsumer")``. Needs ``asyncconsumer[spark]``.
"""

from __future__ import annotations

from typing import Any

from asyncconsumer.spark import workers
from asyncconsumer.spark.commit import commit_batch, with_group_commit
from asyncconsumer.spark.progress import offsets_behind_latest
from asyncconsumer.spark.source import KafkaDataSource
from asyncconsumer.spark.workers import WorkerPythonError

__all__ = [
    "KafkaDataSource",
    "WorkerPythonError",
    "commit_batch",
    "offsets_behind_latest",
    "register",
    "with_group_commit",
]


def register(spark: Any) -> None:
    """Registers the ``asyncconsumer`` format with ``spark``, its Python workers running: ``PYSPARK_PYTHON`` if
    set, else ``spark.pyspark.python`` if set, else on a local master this driver's own interpreter
    (``sys.executable``), else ``python3`` as PySpark does. Raises ``WorkerPythonError`` if that interpreter is not
    this one and cannot import asyncconsumer here (where the planner, and on a local master the readers, run it).

    Spark's own lookup also finds the format through ``pyspark_asyncconsumer``, but only where its workers'
    interpreter (``PYSPARK_PYTHON``, else ``python3`` from PATH) has asyncconsumer installed; registering does not
    depend on that."""
    workers.register(spark, KafkaDataSource)
