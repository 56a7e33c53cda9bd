"""``process`` over a consumer's core, for both faces: the consumer calls the driver makes (``ConsumerPort``), the
group's committed offsets as its sink (``GroupOffsets``), and one run with auto-commit off and the rebalance hook
installed (``run_process``). No face object is needed, so the blocking ``Consumer`` runs it over its own core."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from concurrent.futures import Future
from typing import TypeVar

import attrs

from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.processing.core import ProcessingOptions
from asyncconsumer._caller.processing.driver import Handler, ProcessingDriver
from asyncconsumer.errors import KafkaError
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.records import ConsumerRecords, OffsetAndMetadata, TopicPartition

T = TypeVar("T")


async def _wait(future: Future[T]) -> T:
    return await asyncio.wrap_future(future)


class ConsumerPort:
    """The driver's consumer calls, made on ``core`` as ``AsyncConsumer`` makes them. ``interruptible``: ``poll``
    raises ``WakeupError`` after ``wakeup()``, as the blocking face's calls do."""

    def __init__(self, core: ConsumerCore, *, interruptible: bool = False) -> None:
        self._core = core
        self._interruptible = interruptible

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords:
        """``AsyncConsumer.poll``: the rebalance callbacks (the hook's first) run here, before records return."""
        core = self._core
        deadline = core.begin_poll(timeout_ms, max_records)
        while True:
            if self._interruptible:
                core.check_wakeup()
            for event in core.take_background_events():
                try:
                    for callback in core.callbacks_for(event):
                        result = callback()
                        if inspect.isawaitable(result):
                            await result
                finally:
                    core.callback_done(event)
            records, seen, wait_s = core.poll_step(max_records, deadline)
            if records or wait_s <= 0:
                return records
            await core.parts.signal.wait_async(seen, wait_s)

    async def seek(self, partition: TopicPartition, offset: int) -> None:
        await _wait(self._core.seek(partition, offset))

    async def pause(self, *partitions: TopicPartition) -> None:
        await _wait(self._core.set_paused(partitions, True))

    async def resume(self, *partitions: TopicPartition) -> None:
        await _wait(self._core.set_paused(partitions, False))


class GroupOffsets:
    """The sink of ``process``: the group's committed offsets, with their metadata."""

    def __init__(self, core: ConsumerCore) -> None:
        self._core = core

    async def load(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, OffsetAndMetadata | None]:
        return await _wait(self._core.committed(partitions, None))

    async def store(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        await _wait(self._core.commit(offsets, None))


def driver_over(
    core: ConsumerCore, handler: Handler, options: ProcessingOptions, *, interruptible: bool = False
) -> ProcessingDriver:
    """A driver for one ``process`` on ``core``, on its clock, committing to its group (if it has one)."""
    commits = core.config.group_id is not None
    return ProcessingDriver(
        ConsumerPort(core, interruptible=interruptible),
        handler,
        attrs.evolve(options, commits=commits),
        core.clock,
        GroupOffsets(core) if commits else None,
    )


async def run_process(
    core: ConsumerCore,
    driver: ProcessingDriver,
    hook: ConsumerRebalanceListener | None = None,
    ready: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Runs ``driver`` with auto-commit of positions off and its rebalance hook (or ``hook``, which calls the
    driver's) installed, both undone after. ``ready`` runs once the hook is installed, before the driver: from
    then on every assignment goes through the hook, so what ``ready`` reads as assigned is all it must see to."""
    try:
        await _wait(core.set_auto_commit(False))
        await _wait(core.set_rebalance_hook(hook if hook is not None else driver.rebalance_hook))
        if ready is not None:
            await ready()
        await driver.run()
    finally:
        if not core.closed:
            with contextlib.suppress(KafkaError):
                await _wait(core.set_rebalance_hook(None))
                await _wait(core.set_auto_commit(core.config.enable_auto_commit))
