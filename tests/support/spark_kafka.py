"""Spark's own Kafka source (``format("kafka")``), the reference for differential tests and benchmarks.

``jars()`` is the list to give ``spark.jars``: ``spark-sql-kafka-0-10`` and what it needs beyond Spark's own jars,
fetched with Maven (``spark/pom.xml``) into the cache the broker's jars use. Never a dependency of the package.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tests.support.kafka_broker import cache_root, maven_fetch

SPARK_KAFKA_VERSION = os.environ.get("ASYNCCONSUMER_SPARK_KAFKA_VERSION", "4.2.0")
"""The newest ``spark-sql-kafka-0-10_2.13`` on Maven Central; the installed pyspark 4.3.0 has none of its own."""

POM = Path(__file__).with_name("spark") / "pom.xml"


def fetch_jars(version: str = SPARK_KAFKA_VERSION) -> Path:
    """The directory of the source's jars, fetched on first use; ``KafkaUnavailable`` without Java 17+ or Maven."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    libs = cache_root() / f"spark-sql-kafka-{version}" / f"libs-{digest}"
    return maven_fetch(POM, libs, {"spark.version": version}, f"Spark's Kafka source {version}")


def jars(version: str = SPARK_KAFKA_VERSION) -> list[str]:
    """Paths for ``spark.jars``."""
    return sorted(str(path) for path in fetch_jars(version).glob("*.jar"))
