"""The data source's executor entry point without a broker: what it does with partitions it did not plan."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")

from pyspark.sql.datasource import InputPartition

from asyncconsumer.spark.options import SourceOptions
from asyncconsumer.spark.source import KafkaBatchReader


def test_the_task_of_an_empty_plan_reads_nothing_and_a_foreign_partition_is_an_error() -> None:
    reader = KafkaBatchReader(SourceOptions(consumer={"bootstrap.servers": "h:1"}))
    assert list(reader.read(InputPartition(None))) == []  # Spark runs one task on InputPartition(None)
    with pytest.raises(TypeError, match="not an offset range"):
        reader.read(InputPartition({"topic": "t"}))
