"""The share consumer's methods, declared once for ``AsyncShareConsumer`` and ``ShareConsumer`` (as Java's
``ShareConsumer`` interface declares ``KafkaShareConsumer``'s); ``faces.py`` makes each face's form of them and
``ShareCore`` does the work."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterable
from typing import Any, Unpack

from asyncconsumer._caller.faces import FaceMethods, both_faces
from asyncconsumer._caller.share_core import AcknowledgementCommitCallback, ShareCore
from asyncconsumer.config import ShareConsumerConfig, ShareConsumerSettings
from asyncconsumer.errors import KafkaError
from asyncconsumer.metrics import ShareConsumerMetrics
from asyncconsumer.records import AcknowledgeType, GroupMembershipOperation, ShareRecord, ShareRecords, TopicPartition

CommitResults = dict[TopicPartition, KafkaError | None]
"""Each partition's acknowledgements: ``None`` when they took effect, else the error that refused them."""


class ShareConsumerMethods(FaceMethods):
    """What ``AsyncShareConsumer`` and ``ShareConsumer`` both are (awaited calls on the one, blocking on the other)."""

    _core: ShareCore

    def __init__(self, config: Any = None, /, **settings: Unpack[ShareConsumerSettings]) -> None:
        """``AsyncShareConsumer("host:9092", group_id="jobs")`` (or ``ShareConsumer(...)``), or a mapping with Java
        keys (``{"bootstrap.servers": ..., "group.id": ..., "share.acknowledgement.mode": "explicit"}``). Usable at
        once, even outside a running event loop: the background thread starts with the first call that needs it."""
        self._core = ShareCore(ShareConsumerConfig.from_settings(config, **settings))
        # called once per record in explicit mode: the core's method itself, without a frame of ours around it
        self.acknowledge = self._core.acknowledge  # type: ignore[method-assign]
        self._pending = []

    @property
    def config(self) -> ShareConsumerConfig:
        """The settings it was made with, checked and complete (defaults filled in)."""
        return self._core.config

    @both_faces
    async def close(
        self,
        timeout_ms: int | None = None,
        *,
        group_membership: GroupMembershipOperation | str = GroupMembershipOperation.DEFAULT,
    ) -> None:
        """Sends what is owed (implicit mode: accepts what the last ``poll`` returned; explicit: releases what was
        not acknowledged), leaves the group and stops, within ``timeout_ms`` (default 30 s).

        ``group_membership`` (KIP-1092): ``"default"`` and ``"leave_group"`` leave (share groups have no static
        members); ``"remain_in_group"`` sends no leave heartbeat, so the group keeps the member until
        ``session_timeout_ms``. What is owed is sent in every case."""
        membership = GroupMembershipOperation.parse(group_membership)
        core = self._core
        timeout = 30_000 if timeout_ms is None else timeout_ms
        deadline = core.clock.now_ms() + timeout
        owed = core.prepare_close()
        if owed is not None:
            with contextlib.suppress(KafkaError, TimeoutError):
                await self._wait_at_most(owed, timeout / 1000)
            await self._report()
        future = core.close(max(0, deadline - core.clock.now_ms()), membership)
        if future is not None:
            with contextlib.suppress(TimeoutError):
                await self._wait_at_most(future, max(0.0, (deadline - core.clock.now_ms()) / 1000) + 0.5)
        await self._join((deadline - core.clock.now_ms()) / 1000 + 0.5)

    @both_faces
    async def subscribe(self, topics: Iterable[str]) -> None:
        """Joins ``group_id`` for ``topics`` (replacing the subscription); partitions are assigned in the background."""
        await self._wait(self._core.subscribe(topics))

    @both_faces
    async def unsubscribe(self) -> None:
        """Sends what is owed and leaves the group."""
        await self._wait(self._core.unsubscribe())

    def subscription(self) -> set[str]:
        """The topics subscribed to; empty when the consumer is not subscribed."""
        return set(self._core.subscribed)

    @both_faces
    async def poll(self, timeout_ms: float = 0) -> ShareRecords:
        """Records acquired for this member, waiting up to ``timeout_ms`` for the first; each has its
        ``delivery_count``. In implicit mode it first accepts what the last ``poll`` returned; in explicit mode it
        raises ``IllegalStateError`` while a record of the last one is not acknowledged. On ``ShareConsumer``,
        ``wakeup()`` interrupts it with ``WakeupError``."""
        core = self._core
        deadline = core.begin_poll(timeout_ms)
        try:
            while True:
                core.check_wakeup()  # only a blocking face has wakeup()
                await self._report()
                records, seen, wait_s = core.poll_step(deadline)
                if records or wait_s <= 0:
                    return records
                await self._wait_signal(seen, wait_s)
        finally:
            core.end_poll()

    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Acknowledges one record the last ``poll`` returned (explicit mode). It is sent with the next ``poll`` or
        commit. ``RENEW`` extends the record's lock; it must still be acknowledged with another type."""
        self._core.acknowledge(record, type)

    @both_faces
    async def commit_sync(self, timeout_ms: int | None = None) -> CommitResults:
        """Sends the acknowledgements made (implicit mode: of everything the last ``poll`` returned) and waits for
        the broker: each partition's result."""
        results = await self._wait(self._core.commit(timeout_ms), timeout_ms)
        await self._report()
        return results

    @both_faces
    async def commit_async(self) -> None:
        """Sends the acknowledgements now; the results reach the acknowledgement commit callback."""
        self._core.commit(None)

    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        """Called with ``({partition: offsets}, error or None)`` as the broker answers acknowledgements, inside
        ``poll`` and the commits; what it returns is awaited when awaitable."""
        self._core.callback = callback

    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker locks acquired records, as its last answer said (None before one)."""
        return self._core.acquisition_lock_timeout_ms()

    def metrics(self) -> ShareConsumerMetrics:
        """A snapshot: records and bytes consumed, acknowledgements by type and those refused, records in flight and
        held, and the member's state as the background last published it. Cheap; safe to call any time."""
        return self._core.metrics()

    async def _report(self) -> None:
        for event in self._core.take_background_events():
            call = self._core.callback_for(event)
            if call is not None:
                result = call()
                if inspect.isawaitable(result):
                    await self._settle(result)
