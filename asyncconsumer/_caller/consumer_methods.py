"""The consumer's methods, declared once for ``AsyncConsumer`` and ``Consumer`` (as Java's ``Consumer`` interface
declares ``KafkaConsumer``'s): each signature, docstring and body is written here, and ``faces.py`` makes the
asyncio and the blocking form of it. The work itself is ``ConsumerCore``'s; a method here checks nothing and
decides nothing of its own, it only waits as its face waits."""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from asyncconsumer._caller import arrow_table
from asyncconsumer._caller.core import ConsumerCore, to_partition
from asyncconsumer._caller.faces import FaceMethods, both_faces
from asyncconsumer.config import ConsumerConfig, ConsumerSettings, Settings
from asyncconsumer.errors import KafkaError
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.metrics import ConsumerMetrics
from asyncconsumer.records import (
    ConsumerRecords,
    GroupMembershipOperation,
    GroupMetadata,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    TopicPartition,
)

if TYPE_CHECKING:
    import pyarrow

T = TypeVar("T")


class ConsumerMethods(FaceMethods):
    """What ``AsyncConsumer`` and ``Consumer`` both are: the calls a ``@both_faces`` coroutine declares are awaited
    on the one and blocking on the other; the rest read the caller's side's state and are plain on both."""

    _core: ConsumerCore

    def __init__(self, config: Settings = None, /, **settings: Unpack[ConsumerSettings]) -> None:
        """``AsyncConsumer("host:9092", group_id="g")`` (or ``Consumer(...)``), or a settings mapping with Java keys
        as confluent-kafka takes them (``{"bootstrap.servers": "host:9092", "group.id": "g"}``). Usable at once,
        even outside a running event loop: the background thread starts with the first call that needs it."""
        self._core = ConsumerCore(ConsumerConfig.from_settings(config, **settings))
        self._pending = []

    @property
    def config(self) -> ConsumerConfig:
        """The settings it was made with, checked and complete (defaults filled in)."""
        return self._core.config

    # --- lifecycle -------------------------------------------------------------------------------------------
    @both_faces
    async def close(
        self,
        timeout_ms: int | None = None,
        *,
        group_membership: GroupMembershipOperation | str = GroupMembershipOperation.DEFAULT,
    ) -> None:
        """Leaves the group (after the revoke callback and an auto-commit) and stops the background thread, within
        ``timeout_ms`` (default 30 s) even if the brokers are gone. A no-op on a consumer never used or closed.

        ``group_membership`` (KIP-1092): ``"default"`` leaves unless the member is static (``group_instance_id``),
        ``"leave_group"`` leaves in any case, ``"remain_in_group"`` sends no leave (the group keeps the member, and
        its partitions, until ``session_timeout_ms``); the revoke callback and the auto-commit run in every case."""
        membership = GroupMembershipOperation.parse(group_membership)
        core = self._core
        timeout = 30_000 if timeout_ms is None else timeout_ms
        deadline = core.clock.now_ms() + timeout
        if core.running:
            await self._before_leaving()
        future = core.close(timeout, membership)
        if future is not None:
            with contextlib.suppress(TimeoutError):  # the close deadline passed: the join below still waits
                await self._wait_at_most(future, timeout / 1000 + 0.5)
        await self._join((deadline - core.clock.now_ms()) / 1000 + 0.5)

    # --- assignment ------------------------------------------------------------------------------------------
    @both_faces
    async def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Replaces the manual assignment; new partitions start per ``auto_offset_reset`` unless sought."""
        await self._wait(self._core.assign(partitions))

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned to this consumer now, by ``assign`` or by its group."""
        return self._core.subscriptions.assigned()

    # --- positions -------------------------------------------------------------------------------------------
    @both_faces
    async def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """The next ``poll`` returns ``partition`` from ``offset``."""
        await self._wait(self._core.seek(partition, offset))

    @both_faces
    async def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Evaluated lazily, like Java: the position is looked up on the next ``poll`` or ``position``."""
        await self._wait(self._core.reset_positions(partitions, "earliest"))

    @both_faces
    async def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Evaluated lazily, like Java: the next ``poll`` starts after the last record (the high watermark, or the last
        stable offset under ``read_committed``)."""
        await self._wait(self._core.reset_positions(partitions, "latest"))

    @both_faces
    async def position(self, partition: TopicPartition | tuple[str, int], timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll`` will return for ``partition``."""
        return await self._wait(self._core.position(partition, timeout_ms), timeout_ms)

    @both_faces
    async def pause(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Stops fetching ``partitions`` until ``resume``; their positions and anything buffered for them are kept."""
        await self._wait(self._core.set_paused(partitions, True))

    @both_faces
    async def resume(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Fetches ``partitions`` again after ``pause``."""
        await self._wait(self._core.set_paused(partitions, False))

    def paused(self) -> set[TopicPartition]:
        """The partitions paused now."""
        return self._core.subscriptions.paused()

    def metrics(self) -> ConsumerMetrics:
        """A snapshot: records and bytes consumed (totals, rates), fetch latency, buffered bytes, per-partition
        position and lag, rebalances, heartbeat age, coordinator, connections. Cheap; safe to call any time. What the
        background knows is as of its last loop iteration, never older than the records a ``poll`` returned."""
        return self._core.metrics()

    def highwater(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        """The high watermark seen in the last fetch of ``partition`` (None before any)."""
        return self._core.subscriptions.high_watermark(to_partition(partition))

    # --- offsets and metadata --------------------------------------------------------------------------------
    @both_faces
    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition (ListOffsets ``earliest``)."""
        return await self._wait(self._core.edge_offsets(partitions, latest=False, timeout_ms=timeout_ms), timeout_ms)

    @both_faces
    async def end_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (ListOffsets ``latest``; the last stable offset under
        ``read_committed``)."""
        return await self._wait(self._core.edge_offsets(partitions, latest=True, timeout_ms=timeout_ms), timeout_ms)

    @both_faces
    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given one, per partition (None if there is none)."""
        return await self._wait(self._core.offsets_for_times(timestamps, timeout_ms), timeout_ms)

    @both_faces
    async def topics(self, timeout_ms: int | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the cluster has, with its partitions."""
        return await self._wait(self._core.topic_metadata(None, timeout_ms), timeout_ms)

    @both_faces
    async def partitions_for(self, topic: str, timeout_ms: int | None = None) -> list[PartitionInfo]:
        """The partitions of ``topic``; empty when the topic does not exist."""
        result = await self._wait(self._core.topic_metadata(topic, timeout_ms), timeout_ms)
        return result.get(topic, [])

    # --- consuming -------------------------------------------------------------------------------------------
    @both_faces
    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords:
        """Records that have arrived, waiting up to ``timeout_ms`` for the first; raises what the background hit.

        Rebalance listener callbacks run here, before records are returned. Raises ``IllegalStateError`` when
        nothing is subscribed or assigned. Nothing consumed is lost when it is interrupted: on ``AsyncConsumer`` by
        cancelling the task, on ``Consumer`` by ``wakeup()`` (``WakeupError``).
        """
        core = self._core
        deadline = core.begin_poll(timeout_ms, max_records)
        return await self._poll_until(deadline, lambda d: core.poll_step(max_records, d), bool)

    @both_faces
    async def poll_arrow(
        self, timeout_ms: float = 0, max_records: int | None = None, include_headers: bool = False
    ) -> pyarrow.Table:
        """``poll`` as one ``pyarrow.Table``, decoded with no Python object per record.

        Columns: ``topic`` (dictionary-encoded), ``partition``, ``offset``, ``timestamp`` (ms, UTC),
        ``timestamp_type``, ``key`` and ``value`` (binary, nulls kept), and with ``include_headers`` ``headers`` (a list
        of ``{key, value}``). Same semantics as ``poll``: positions move past the rows returned, so ``commit()``
        commits exactly them; seeks, pauses, rebalances, ``read_committed`` and errors behave alike (a corrupt record
        raises at its offset after the rows before it were returned). Deserializers do not apply: keys and values stay
        bytes. A call takes at most the fetches buffered when it starts (up to ``max_records`` rows), so a table
        stays within about ``fetch_buffer_bytes``. Needs pyarrow (the ``arrow`` extra): ``ImportError`` naming it
        otherwise, before anything is consumed.
        """
        arrow_table.require_pyarrow()
        core = self._core
        deadline = core.begin_poll(timeout_ms, max_records)
        return await self._poll_until(
            deadline, lambda d: core.poll_arrow_step(max_records, include_headers, d), lambda t: t.num_rows > 0
        )

    async def _poll_until(
        self, deadline: int, step: Callable[[int], tuple[T, int, float]], got: Callable[[T], bool]
    ) -> T:
        """``step`` (with the callbacks run first) until it gets something or ``deadline`` passes, waiting for the
        background's signal in between: the loop of ``poll`` and ``poll_arrow``."""
        core = self._core
        while True:
            core.check_wakeup()  # only a blocking face has wakeup()
            await self._run_callbacks()
            result, seen, wait_s = step(deadline)
            if got(result) or wait_s <= 0:
                return result
            await self._wait_signal(seen, wait_s)

    async def _run_callbacks(self) -> None:
        for event in self._core.take_background_events():
            try:
                for callback in self._core.callbacks_for(event):
                    result = callback()
                    if inspect.isawaitable(result):
                        await self._settle(result)
            finally:
                self._core.callback_done(event)

    # --- groups ----------------------------------------------------------------------------------------------
    @both_faces
    async def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join ``group_id`` for ``topics`` (or every topic whose name matches ``pattern``, checked at each metadata
        refresh); partitions are assigned in the background and show up in ``poll``."""
        await self._wait(self._core.subscribe(topics, pattern, listener))

    @both_faces
    async def unsubscribe(self) -> None:
        """Leaves the group; the listener's ``on_partitions_revoked`` runs first, after an auto-commit."""
        await self._before_leaving()
        await self._wait(self._core.unsubscribe())

    async def _before_leaving(self) -> None:
        callbacks = self._core.revoke_callbacks_before_leaving()
        if not callbacks:
            return
        if self._core.auto_commit:
            with contextlib.suppress(KafkaError):
                await self._wait(self._core.commit(None, None))
        for callback in callbacks:
            result = callback()
            if inspect.isawaitable(result):
                await self._settle(result)

    def subscription(self) -> set[str]:
        """The topics subscribed to; empty when the consumer is not subscribed."""
        return set(self._core.subscriptions.subscription or ())

    @both_faces
    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None, timeout_ms: int | None = None
    ) -> None:
        """Commits ``offsets`` (default: the current positions) and waits for the coordinator's answer."""
        await self._wait(self._core.commit(offsets, timeout_ms), timeout_ms)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: Callable[[Mapping[TopicPartition, Any] | None, BaseException | None], Any] | None = None,
    ) -> None:
        """Starts a commit and returns at once; ``callback(offsets, error)`` runs inside a later ``poll``."""
        self._core.commit_async(offsets, callback)

    @both_faces
    async def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offset of each partition (None where nothing was committed)."""
        return await self._wait(self._core.committed(partitions, timeout_ms), timeout_ms)

    def group_metadata(self) -> GroupMetadata:
        """The member's group id, generation (or epoch) and member id, as a transactional producer needs them."""
        return self._core.group_metadata()

    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Rejoins the group at once (classic protocol; ignored, with a warning, under ``group_protocol="consumer"``,
        as Java does); returns without waiting."""
        self._core.enforce_rebalance(reason)

    def current_lag(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        """Records between the position and the partition's end as last fetched; None while unknown."""
        return self._core.current_lag(partition)
