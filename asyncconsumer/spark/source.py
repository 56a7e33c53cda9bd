"""The PySpark data source ``asyncconsumer``: Kafka for ``spark.read`` and ``spark.readStream``.

The driver plans offset ranges (``offsets.py``); executors read them (``reader.py``). Offsets live in Spark's
checkpoint as per-topic-partition JSON; nothing is committed to Kafka by the source itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

import asyncconsumer.spark.offsets as plan
from asyncconsumer.spark.offsets import OffsetRange, Offsets
from asyncconsumer.spark.options import SourceOptions, include_headers, parse_options
from asyncconsumer.spark.reader import read_arrow, read_tuples, schema
from asyncconsumer.sync import Consumer


class RangePartition(InputPartition):
    """One Spark input partition: an offset range of one Kafka partition."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range


class KafkaDataSource(DataSource):
    """``spark.read.format("asyncconsumer")``: options as Spark's Kafka source (``kafka.*``, subscribe, ...)."""

    @classmethod
    def name(cls) -> str:
        return "asyncconsumer"

    def schema(self) -> str:
        # Batch or streaming is not known yet: the full check runs in reader() / streamReader().
        return schema(include_headers(dict(self.options)))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(self._options(streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(self._options(streaming=True))

    def _options(self, *, streaming: bool) -> SourceOptions:
        return parse_options(dict(self.options), streaming=streaming)


class _Reading:
    """What batch and stream readers share: a driver-side consumer (never pickled) and the executor read."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._consumer: Consumer | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_consumer"] = None  # executors make their own client in read()
        return state

    def consumer(self) -> Consumer:
        if self._consumer is None:
            consumer = Consumer(**self.options.consumer)
            consumer.start()
            self._consumer = consumer
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def ranges(self, start: Offsets, end: Offsets) -> list[RangePartition]:
        earliest = dict(self.consumer().beginning_offsets(list(end))) if end else {}
        ranges = plan.plan(
            start,
            end,
            earliest,
            fail_on_data_loss=self.options.fail_on_data_loss,
            min_partitions=self.options.min_partitions,
        )
        return [RangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, RangePartition):
            if partition.value is None:  # nothing planned: Spark still runs one task, on InputPartition(None)
                return iter(())
            raise TypeError(f"not an offset range of this source: {partition!r}")
        if self.options.use_arrow:
            return read_arrow(self.options, partition.offset_range)
        return read_tuples(self.options, partition.offset_range)


class KafkaBatchReader(_Reading, DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` as resolved when the query is planned."""

    def partitions(self) -> Sequence[InputPartition]:
        try:
            consumer = self.consumer()
            tps = plan.partitions(consumer, self.options)
            start = plan.starting_offsets(consumer, tps, self.options)
            end = plan.ending_offsets(consumer, tps, self.options)
            return self.ranges(start, end)
        finally:
            self.close()


class KafkaStreamReader(_Reading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches from offsets in the checkpoint; ``maxOffsetsPerTrigger`` split by lag."""

    _target: Offsets | None = None
    """``trigger(availableNow=True)``: the log ends when the query started; nothing later is read."""
    _latest: Offsets | None = None
    """The log ends the last ``latestOffset`` saw (before any read limit): what ``reportLatestOffset`` reports."""

    def prepareForTriggerAvailableNow(self) -> None:
        consumer = self.consumer()
        self._target = dict(consumer.end_offsets(plan.partitions(consumer, self.options)))

    def initialOffset(self) -> dict[str, Any]:
        consumer = self.consumer()
        tps = plan.partitions(consumer, self.options)
        return plan.to_json(plan.starting_offsets(consumer, tps, self.options))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        consumer = self.consumer()
        tps = plan.partitions(consumer, self.options)
        latest = dict(consumer.end_offsets(tps))
        if self._target is not None:
            tps = list(self._target)
            latest = {tp: min(latest.get(tp, end), end) for tp, end in self._target.items()}
        begin = plan.from_json(start)
        new = [tp for tp in tps if tp not in begin]
        if new:  # new partitions are read from their start
            begin.update(consumer.beginning_offsets(new))
        self._latest = latest
        if isinstance(limit, ReadMaxRows):
            latest = plan.limit(begin, latest, limit.max_rows)
        return plan.to_json(latest)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The progress's ``latestOffset``, as Spark's Kafka source reports it: the log ends ``latestOffset`` saw,
        whatever ``maxOffsetsPerTrigger`` let the batch take (``offsets_behind_latest`` turns the two into Spark's
        source metrics, which a Python source cannot report itself)."""
        return plan.to_json(self._latest) if self._latest else None

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return self.ranges(plan.from_json(start), plan.from_json(end))

    def commit(self, end: dict[str, Any]) -> None:
        """The checkpoint is the source of truth; group offsets are committed by ``commit_batch`` if wanted."""

    def stop(self) -> None:
        self.close()
