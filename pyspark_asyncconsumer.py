"""Lets Spark find the ``asyncconsumer`` data source without ``register``: Spark imports every top-level module
named ``pyspark_*`` and registers its ``DefaultSource``."""

from asyncconsumer.spark.source import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
