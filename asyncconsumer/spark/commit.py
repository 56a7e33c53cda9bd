"""foreachBatch and Kafka group offsets: after a batch is processed, commit where it ended to a consumer group,
so lag dashboards and other tools see the pipeline's progress. The checkpoint stays the source of truth."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncconsumer.records import TopicPartition
from asyncconsumer.sync import Consumer


def commit_batch(batch: Any, group_id: str, bootstrap_servers: str, **config: Any) -> dict[TopicPartition, int]:
    """Commits to ``group_id``, per topic-partition in ``batch`` (a DataFrame with the source's ``topic``,
    ``partition`` and ``offset`` columns), the offset after its last row; returns what it committed."""
    from pyspark.sql import functions as F

    rows = batch.groupBy("topic", "partition").agg(F.max("offset").alias("last")).collect()
    offsets = {TopicPartition(row["topic"], row["partition"]): row["last"] + 1 for row in rows}
    if offsets:
        with Consumer(bootstrap_servers, group_id=group_id, enable_auto_commit=False, **config) as consumer:
            consumer.commit(offsets)
    return offsets


def with_group_commit(
    process: Callable[[Any, int], Any], *, group_id: str, bootstrap_servers: str, **config: Any
) -> Callable[[Any, int], None]:
    """Wraps a ``foreachBatch`` function: run it, and only if it succeeded commit the batch's ends to ``group_id``.

    The batch is persisted for the two passes (the function and the commit) so Kafka is read once. A batch that
    fails is replayed by Spark with the same ``batch_id`` (at-least-once); nothing is committed for it meanwhile.
    """

    def run(batch: Any, batch_id: int) -> None:
        batch.persist()
        try:
            process(batch, batch_id)
            commit_batch(batch, group_id, bootstrap_servers, **config)
        finally:
            batch.unpersist()

    return run
