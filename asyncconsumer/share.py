"""Share consumers (KIP-932, "queues for Kafka"): ``AsyncShareConsumer`` and the blocking ``ShareConsumer``.

Members of a share group read the same partitions together. The broker hands each record to one member under a
time-limited acquisition lock; the member acknowledges it as accepted, released (delivered again, its delivery
count raised) or rejected (never delivered again). Built like the consumers: a background thread owns the network,
and heartbeats, fetches and acknowledgements go on while the caller works.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Iterable, Iterator
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar, Unpack

from asyncconsumer._caller.share_core import AcknowledgementCommitCallback, ShareCore
from asyncconsumer.config import ShareConsumerConfig, ShareConsumerSettings
from asyncconsumer.errors import KafkaError
from asyncconsumer.metrics import ShareConsumerMetrics
from asyncconsumer.records import AcknowledgeType, ShareRecord, ShareRecords, TopicPartition

__all__ = ["AcknowledgementCommitCallback", "AsyncShareConsumer", "ShareConsumer"]

T = TypeVar("T")

CommitResults = dict[TopicPartition, KafkaError | None]
"""Each partition's acknowledgements: ``None`` when they took effect, else the error that refused them."""


class AsyncShareConsumer:
    """A share-group member for asyncio code.

    ``AsyncShareConsumer("host:9092", group_id="jobs")``, or a mapping with Java keys (``{"bootstrap.servers": ...,
    "group.id": ..., "share.acknowledgement.mode": "explicit"}``). Safe to create outside a running loop.
    """

    def __init__(self, config: Any = None, /, **settings: Unpack[ShareConsumerSettings]) -> None:
        self._core = ShareCore(ShareConsumerConfig.from_settings(config, **settings))
        # called once per record in explicit mode: the core's method itself, without a frame of ours around it
        self.acknowledge = self._core.acknowledge  # type: ignore[method-assign]
        self._pending: list[ShareRecord] = []

    @property
    def config(self) -> ShareConsumerConfig:
        return self._core.config

    async def start(self) -> None:
        """Starts the background thread now; optional, as every call that needs it starts it."""
        self._core.start()

    async def close(self, timeout_ms: int | None = None) -> None:
        """Sends what is owed (implicit mode: accepts what the last ``poll`` returned; explicit: releases what was
        not acknowledged), leaves the group and stops, within ``timeout_ms`` (default 30 s)."""
        core = self._core
        timeout = 30_000 if timeout_ms is None else timeout_ms
        deadline = core.clock.now_ms() + timeout
        owed = core.prepare_close()
        if owed is not None:
            with contextlib.suppress(KafkaError, TimeoutError):
                async with asyncio.timeout(timeout / 1000):
                    await asyncio.wrap_future(owed)
            await self._report()
        future = core.close(max(0, deadline - core.clock.now_ms()))
        if future is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, (deadline - core.clock.now_ms()) / 1000) + 0.5):
                    await asyncio.wrap_future(future)
        await asyncio.to_thread(core.finish_close, (deadline - core.clock.now_ms()) / 1000 + 0.5)

    async def __aenter__(self) -> AsyncShareConsumer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def subscribe(self, topics: Iterable[str]) -> None:
        """Joins ``group_id`` for ``topics`` (replacing the subscription); partitions are assigned in the background."""
        await asyncio.wrap_future(self._core.subscribe(topics))

    async def unsubscribe(self) -> None:
        """Sends what is owed and leaves the group."""
        await asyncio.wrap_future(self._core.unsubscribe())

    def subscription(self) -> set[str]:
        return set(self._core.subscribed)

    async def poll(self, timeout_ms: float = 0) -> ShareRecords:
        """Records acquired for this member, waiting up to ``timeout_ms`` for the first; each has its
        ``delivery_count``. In implicit mode it first accepts what the last ``poll`` returned; in explicit mode it
        raises ``IllegalStateError`` while a record of the last one is not acknowledged."""
        core = self._core
        deadline = core.begin_poll(timeout_ms)
        try:
            while True:
                await self._report()
                records, seen, wait_s = core.poll_step(deadline)
                if records or wait_s <= 0:
                    return records
                await core.parts.signal.wait_async(seen, wait_s)
        finally:
            core.end_poll()

    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Acknowledges one record the last ``poll`` returned (explicit mode). It is sent with the next ``poll`` or
        commit. ``RENEW`` extends the record's lock; it must still be acknowledged with another type."""
        self._core.acknowledge(record, type)

    async def commit_sync(self, timeout_ms: int | None = None) -> CommitResults:
        """Sends the acknowledgements made (implicit mode: of everything the last ``poll`` returned) and waits for
        the broker: each partition's result."""
        results = await asyncio.wrap_future(self._core.commit(timeout_ms))
        await self._report()
        return results

    async def commit_async(self) -> None:
        """Sends the acknowledgements now; the results reach the acknowledgement commit callback."""
        self._core.commit(None)

    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        """Called with ``({partition: offsets}, error or None)`` as the broker answers acknowledgements, inside
        ``poll`` and the commits; awaited when it returns an awaitable."""
        self._core.callback = callback

    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker locks acquired records, as its last answer said (None before one)."""
        return self._core.acquisition_lock_timeout_ms()

    def metrics(self) -> ShareConsumerMetrics:
        return self._core.metrics()

    async def _report(self) -> None:
        for event in self._core.take_background_events():
            call = self._core.callback_for(event)
            if call is not None:
                result = call()
                if inspect.isawaitable(result):
                    await result

    def __aiter__(self) -> AsyncIterator[ShareRecord]:
        return self

    async def __anext__(self) -> ShareRecord:
        """Records one at a time; in implicit mode each poll's records are accepted when the next poll begins."""
        while not self._pending:
            if self._core.closed:
                raise StopAsyncIteration
            batch = await self.poll(timeout_ms=1_000)
            self._pending = list(batch.records())
            self._pending.reverse()
        return self._pending.pop()


class ShareConsumer:
    """A blocking share-group member with the same methods as ``AsyncShareConsumer``, plus ``wakeup()``."""

    def __init__(self, config: Any = None, /, **settings: Unpack[ShareConsumerSettings]) -> None:
        self._core = ShareCore(ShareConsumerConfig.from_settings(config, **settings))
        # called once per record in explicit mode: the core's method itself, without a frame of ours around it
        self.acknowledge = self._core.acknowledge  # type: ignore[method-assign]
        self._pending: list[ShareRecord] = []

    @property
    def config(self) -> ShareConsumerConfig:
        return self._core.config

    def _wait(self, future: Future[T], timeout_ms: int | None = None) -> T:
        return self._core.wait(future, timeout_ms)

    def start(self) -> None:
        self._core.start()

    def close(self, timeout_ms: int | None = None) -> None:
        """As ``AsyncShareConsumer.close``."""
        core = self._core
        timeout = 30_000 if timeout_ms is None else timeout_ms
        deadline = core.clock.now_ms() + timeout
        owed = core.prepare_close()
        if owed is not None:
            with contextlib.suppress(KafkaError, TimeoutError):
                owed.result(timeout / 1000)
            self._report()
        future = core.close(max(0, deadline - core.clock.now_ms()))
        if future is not None:
            with contextlib.suppress(TimeoutError):
                future.result(max(0.0, (deadline - core.clock.now_ms()) / 1000) + 0.5)
        core.finish_close((deadline - core.clock.now_ms()) / 1000 + 0.5)

    def __enter__(self) -> ShareConsumer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def subscribe(self, topics: Iterable[str]) -> None:
        self._wait(self._core.subscribe(topics))

    def unsubscribe(self) -> None:
        self._wait(self._core.unsubscribe())

    def subscription(self) -> set[str]:
        return set(self._core.subscribed)

    def poll(self, timeout_ms: float = 0) -> ShareRecords:
        """As ``AsyncShareConsumer.poll``; ``WakeupError`` after ``wakeup()``."""
        core = self._core
        deadline = core.begin_poll(timeout_ms)
        try:
            while True:
                core.check_wakeup()
                self._report()
                records, seen, wait_s = core.poll_step(deadline)
                if records or wait_s <= 0:
                    return records
                core.parts.signal.wait(seen, wait_s)
        finally:
            core.end_poll()

    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        self._core.acknowledge(record, type)

    def commit_sync(self, timeout_ms: int | None = None) -> CommitResults:
        results = self._wait(self._core.commit(timeout_ms), timeout_ms)
        self._report()
        return results

    def commit_async(self) -> None:
        self._core.commit(None)

    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        self._core.callback = callback

    def acquisition_lock_timeout_ms(self) -> int | None:
        return self._core.acquisition_lock_timeout_ms()

    def metrics(self) -> ShareConsumerMetrics:
        return self._core.metrics()

    def wakeup(self) -> None:
        """Makes the blocking call in progress, or the next one, raise ``WakeupError``; from any thread."""
        self._core.wakeup()

    def _report(self) -> None:
        for event in self._core.take_background_events():
            call = self._core.callback_for(event)
            if call is not None:
                call()

    def __iter__(self) -> Iterator[ShareRecord]:
        while not self._core.closed:
            batch = self.poll(timeout_ms=1_000)
            yield from batch.records()
