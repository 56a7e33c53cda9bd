"""``Consumer``: the blocking face, for scripts and PySpark; it talks to the same background thread.

Heartbeats and fetches run on that thread, not on calls into this object, so a slow caller is not a dead one.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from types import TracebackType
from typing import Any, TypeVar

from asyncconsumer._clock import Clock
from asyncconsumer._runtime.core import ConsumerCore, to_partition
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaError, KafkaTimeoutError
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.metrics import ConsumerMetrics
from asyncconsumer.records import (
    ConsumerRecord,
    ConsumerRecords,
    GroupMetadata,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    TopicPartition,
)

T = TypeVar("T")


async def _awaited(awaitable: Awaitable[Any]) -> None:
    await awaitable


class Consumer:
    """A blocking Kafka consumer with the same methods as ``AsyncConsumer``."""

    def __init__(self, bootstrap_servers: Any = None, *, _clock: Clock | None = None, **config: Any) -> None:
        self._core = ConsumerCore(ConsumerConfig.from_kwargs(bootstrap_servers, **config), _clock)

    def _wait(self, future: Future[T], timeout_ms: int | None = None) -> T:
        try:
            return future.result(self._core.timeout_s(timeout_ms))
        except FutureTimeout as exc:
            raise KafkaTimeoutError("the background thread did not answer in time") from exc

    @property
    def config(self) -> ConsumerConfig:
        return self._core.config

    def start(self) -> None:
        self._core.start()

    def close(self, timeout_ms: int | None = None) -> None:
        timeout = 30_000 if timeout_ms is None else timeout_ms
        deadline = self._core.clock.now_ms() + timeout
        if not self._core.closed and self._core.started and self._core.parts.thread.alive:
            self._before_leaving()
        future = self._core.close(timeout)
        if future is not None:
            with contextlib.suppress(FutureTimeout):
                future.result(timeout / 1000 + 0.5)
        self._core.finish_close((deadline - self._core.clock.now_ms()) / 1000 + 0.5)

    def __enter__(self) -> Consumer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        self._wait(self._core.assign(partitions))

    def assignment(self) -> set[TopicPartition]:
        return self._core.subscriptions.assigned()

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        self._wait(self._core.seek(partition, offset))

    def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._wait(self._core.reset_positions(partitions, "earliest"))

    def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._wait(self._core.reset_positions(partitions, "latest"))

    def position(self, partition: TopicPartition | tuple[str, int], timeout_ms: int | None = None) -> int:
        return self._wait(self._core.position(partition, timeout_ms), timeout_ms)

    def pause(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._wait(self._core.set_paused(partitions, True))

    def resume(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._wait(self._core.set_paused(partitions, False))

    def paused(self) -> set[TopicPartition]:
        return self._core.subscriptions.paused()

    def metrics(self) -> ConsumerMetrics:
        """A snapshot: records and bytes consumed (totals, rates), fetch latency, buffered bytes, per-partition
        position and lag, rebalances, heartbeat age, coordinator, connections. Cheap; safe to call any time."""
        return self._core.metrics()

    def highwater(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        return self._core.subscriptions.high_watermark(to_partition(partition))

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        return self._wait(self._core.edge_offsets(partitions, latest=False, timeout_ms=timeout_ms), timeout_ms)

    def end_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        return self._wait(self._core.edge_offsets(partitions, latest=True, timeout_ms=timeout_ms), timeout_ms)

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return self._wait(self._core.offsets_for_times(timestamps, timeout_ms), timeout_ms)

    def topics(self, timeout_ms: int | None = None) -> dict[str, list[PartitionInfo]]:
        return self._wait(self._core.topic_metadata(None, timeout_ms), timeout_ms)

    def partitions_for(self, topic: str, timeout_ms: int | None = None) -> list[PartitionInfo]:
        return self._wait(self._core.topic_metadata(topic, timeout_ms), timeout_ms).get(topic, [])

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> ConsumerRecords:
        core = self._core
        deadline = core.clock.now_ms() + timeout_ms
        core.note_poll()
        while True:
            self._run_callbacks()
            records, seen, wait_s = core.poll_step(max_records, deadline)
            if records or wait_s <= 0:
                return records
            core.parts.signal.wait(seen, wait_s)

    def _run_callbacks(self) -> None:
        for event in self._core.take_background_events():
            try:
                result = self._core.callback_for(event)()
                if inspect.isawaitable(result):
                    asyncio.run(_awaited(result))
            finally:
                self._core.callback_done(event)

    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        self._wait(self._core.subscribe(topics, pattern, listener))

    def unsubscribe(self) -> None:
        """Leaves the group; the listener's ``on_partitions_revoked`` runs first, after an auto-commit."""
        self._before_leaving()
        self._wait(self._core.unsubscribe())

    def _before_leaving(self) -> None:
        callback = self._core.revoke_callback_before_leaving()
        if callback is None:
            return
        if self._core.config.enable_auto_commit:
            with contextlib.suppress(KafkaError):
                self.commit()
        result = callback()
        if inspect.isawaitable(result):
            asyncio.run(_awaited(result))

    def subscription(self) -> set[str]:
        return set(self._core.subscriptions.subscription or ())

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout_ms: int | None = None
    ) -> None:
        self._wait(self._core.commit(offsets, timeout_ms), timeout_ms)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: Callable[[Mapping[TopicPartition, Any] | None, BaseException | None], Any] | None = None,
    ) -> None:
        """Starts a commit and returns at once; ``callback(offsets, error)`` runs inside a later ``poll``."""
        self._core.commit_async(offsets, callback)

    def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return self._wait(self._core.committed(partitions, timeout_ms), timeout_ms)

    def group_metadata(self) -> GroupMetadata:
        return self._core.group_metadata()

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while not self._core.closed:
            yield from self.poll(timeout_ms=1_000).records()
