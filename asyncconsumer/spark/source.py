"""The PySpark data source ``asyncconsumer``: Kafka for ``spark.read`` and ``spark.readStream``.

The driver plans offset ranges (``offsets.py``); executors read them (``reader.py``). Offsets live in Spark's
checkpoint as per-topic-partition JSON; nothing is committed to Kafka by the source itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

import asyncconsumer.spark.offsets as plan
from asyncconsumer._clock import SystemClock
from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ConfigError, KafkaError
from asyncconsumer.spark.limits import TriggerDelay, rate_limit
from asyncconsumer.spark.offsets import DataLossError, OffsetRange, Offsets
from asyncconsumer.spark.options import SourceOptions, include_headers, parse_options
from asyncconsumer.spark.reader import read_arrow, read_tuples, schema
from asyncconsumer.sync import Consumer

log = get_logger("asyncconsumer.spark")
T = TypeVar("T")


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

    def retrying(self, what: str, body: Callable[[Consumer], T]) -> T:
        """``body`` with the driver's consumer, tried ``fetchOffset.numRetries`` times in all, with a new consumer
        after ``fetchOffset.retryIntervalMs`` each time it fails (Spark's source retries its offset lookups so).
        Bad options and data loss are raised at once: trying again would not change them."""
        attempts = self.options.fetch_offset_retries
        for attempt in range(1, attempts + 1):
            try:
                return body(self.consumer())
            except (ConfigError, DataLossError):
                raise
            except KafkaError as exc:
                if attempt == attempts:
                    raise
                log.warning("spark.offsets_retry", what=what, attempt=attempt, error=str(exc))
                self.close()
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def ranges(self, start: Offsets, end: Offsets) -> list[RangePartition]:
        earliest = dict(self.consumer().beginning_offsets(list(end))) if end else {}
        ranges = plan.plan(
            start,
            end,
            earliest,
            fail_on_data_loss=self.options.fail_on_data_loss,
            min_partitions=self.options.min_partitions,
            max_records_per_partition=self.options.max_records_per_partition,
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
            return self.retrying("batch offsets", self._plan)
        finally:
            self.close()

    def _plan(self, consumer: Consumer) -> list[RangePartition]:
        tps = plan.partitions(consumer, self.options)
        start = plan.starting_offsets(consumer, tps, self.options)
        end = plan.ending_offsets(consumer, tps, self.options)
        return self.ranges(start, end)


class KafkaStreamReader(_Reading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches from offsets in the checkpoint, admitted as Spark's Kafka source admits them:
    ``maxOffsetsPerTrigger`` split by lag, ``minOffsetsPerTrigger`` held back up to ``maxTriggerDelay``."""

    _target: Offsets | None = None
    """``trigger(availableNow=True)``: the log ends when the query started; nothing later is read."""
    _reported: Offsets | None = None
    """The log ends the last ``latestOffset`` saw (before any read limit): what ``reportLatestOffset`` reports."""

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self._clock = SystemClock()
        self._delay: TriggerDelay | None = None
        if options.min_offsets_per_trigger is not None:
            self._delay = TriggerDelay(options.min_offsets_per_trigger, options.max_trigger_delay_ms)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.retrying(
            "availableNow offsets", lambda c: dict(c.end_offsets(plan.partitions(c, self.options)))
        )

    def initialOffset(self) -> dict[str, Any]:
        def initial(consumer: Consumer) -> Offsets:
            return plan.starting_offsets(consumer, plan.partitions(consumer, self.options), self.options)

        return plan.to_json(self.retrying("starting offsets", initial))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin, latest = self.retrying("latest offsets", lambda c: self._latest(c, plan.from_json(start)))
        self._reported = latest
        if isinstance(limit, ReadAllAvailable):  # Trigger.Once, or no limit asked
            return plan.to_json(latest)
        if self._delay is not None and self._target is None:  # availableNow: see docs/spark.md's option table
            available = sum(max(0, end - begin[tp]) for tp, end in latest.items())
            if not self._delay.admit(self._clock.now_ms(), available):
                log.debug("spark.batch_delayed", available=available, min_offsets=self._delay.min_offsets)
                return start
        if isinstance(limit, ReadMaxRows):
            return plan.to_json(rate_limit(begin, latest, limit.max_rows))
        return plan.to_json(latest)

    def _latest(self, consumer: Consumer, known: Offsets) -> tuple[Offsets, Offsets]:
        """Where each partition's batch begins (new partitions at their earliest offset) and the latest offsets
        (capped at the availableNow target). A latest offset below a known one is asked again, up to
        ``fetchOffset.numRetries`` times, as Spark's source does (a lagging broker's answer)."""
        tps = plan.partitions(consumer, self.options)
        if self._target is not None:
            tps = list(self._target)
        for attempt in range(1, self.options.fetch_offset_retries + 1):
            latest = dict(consumer.end_offsets(tps))
            behind = {tp: (known[tp], end) for tp, end in latest.items() if tp in known and end < known[tp]}
            if not behind or attempt == self.options.fetch_offset_retries:
                break
            log.warning("spark.latest_offsets_behind", partitions=str(behind), attempt=attempt)
            time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        if self._target is not None:
            latest = {tp: min(latest.get(tp, end), end) for tp, end in self._target.items()}
        begin = dict(known)
        new = [tp for tp in tps if tp not in begin]
        if new:  # new partitions are read from their start
            begin.update(consumer.beginning_offsets(new))
        return begin, latest

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The progress's ``latestOffset``, as Spark's Kafka source reports it: the log ends ``latestOffset`` saw,
        whatever ``maxOffsetsPerTrigger`` let the batch take (``offsets_behind_latest`` turns the two into Spark's
        source metrics, which a Python source cannot report itself)."""
        return plan.to_json(self._reported) if self._reported else None

    def getDefaultReadLimit(self) -> ReadLimit:
        """The maximum when one is set (the minimum is kept by ``latestOffset`` itself: the Python data source API
        carries one limit, not Spark's composite one); else the minimum; else everything."""
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return self.ranges(plan.from_json(start), plan.from_json(end))

    def commit(self, end: dict[str, Any]) -> None:
        """The checkpoint is the source of truth; group offsets are committed by ``commit_batch`` if wanted."""

    def stop(self) -> None:
        self.close()
