"""Kafka for PySpark through asyncconsumer: ``asyncconsumer.spark.register(spark)``, then
``spark.read.format("asyncconsumer")`` or ``spark.readStream.format("asyncconsumer")``. Needs ``asyncconsumer[spark]``.
"""

from __future__ import annotations

from typing import Any

from asyncconsumer.spark.commit import commit_batch, with_group_commit
from asyncconsumer.spark.progress import offsets_behind_latest
from asyncconsumer.spark.source import KafkaDataSource

__all__ = ["KafkaDataSource", "commit_batch", "offsets_behind_latest", "register", "with_group_commit"]


def register(spark: Any) -> None:
    """Registers the ``asyncconsumer`` format with ``spark`` (also found without this, through
    ``pyspark_asyncconsumer``, by Spark's own data source lookup)."""
    spark.dataSource.register(KafkaDataSource)
