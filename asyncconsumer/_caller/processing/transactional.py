"""``process_transactionally``: exactly once into a database (issue 47), on the processing core's seams.

Each unit is a run of one partition's records (``ProcessingOptions.runs``, ``ordering="partition"``), handed to the
handler with an open transaction of the offset store (``asyncconsumer.stores``); in that same transaction the
library writes the partition's next offset, guarded by the partition's lease epoch, and commits. The store, not
Kafka, says where each partition starts: the rebalance hook (``TransactionalHook``) claims newly assigned
partitions (bumping their lease epochs) and seeks to the stored offsets before any record of them is fetched.

The core's ``CommitPolicy``/``OffsetSink`` seam then carries only the optional mirror (``MirrorOffsets``): every
``commit_interval_ms`` the finished prefixes go to the group's committed offsets for lag tools, and are never
read back (``load`` reports nothing stored).

The store's errors are ``fatal`` for the core (never retried nor skipped): a fenced write means another member
claimed the partition, so a member that still thinks it holds it is a zombie and stops with the error; one that
already heard the partition go (revoked, lost) drops the unit quietly. A database that cannot be reached is
retried with backoff, reconnecting, up to ``store_timeout_ms``: processing pauses and resumes, and an ambiguous
``COMMIT`` is recognised on the retry (``OffsetAlreadyStored``), so nothing lands twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from concurrent.futures import Executor
from typing import Any

from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.processing.commits import IntervalCommits, NoCommits
from asyncconsumer._caller.processing.core import OnSkip, ProcessingCore, ProcessingOptions
from asyncconsumer._caller.processing.driver import ProcessingDriver
from asyncconsumer._caller.processing.port import ConsumerPort, GroupOffsets, _wait, run_process
from asyncconsumer._caller.processing.scheduler import Ordering
from asyncconsumer._clock import Clock
from asyncconsumer._logs import get_logger
from asyncconsumer.errors import (
    ConfigError,
    IllegalStateError,
    OffsetStoreError,
    OffsetStoreFencedError,
    OffsetStoreUnavailableError,
)
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.records import ConsumerRecord, OffsetAndMetadata, TopicPartition
from asyncconsumer.stores.base import BlockingOffsetStore, Lease, OffsetAlreadyStored, OffsetStore, backoffs

log = get_logger("asyncconsumer.eos")

AsyncTxHandler = Callable[[list[ConsumerRecord], Any], Awaitable[Any]]
"""``await handler(records, tx)``: one partition's records, in offset order, and the store's open transaction."""
BlockingTxHandler = Callable[[list[ConsumerRecord], Any], Any]

BACKOFF_MS = (100, 2_000)
"""A database that cannot be reached is tried again after 100 ms, doubling up to 2 s."""


def transactional_options(
    core: ConsumerCore,
    *,
    concurrency: int,
    batch_size: int,
    max_in_flight_per_partition: int,
    mirror_interval_ms: int | None,
    revoke_timeout_ms: int,
    retries: int,
    retry_backoff_ms: int,
    on_error: str,
    on_skip: OnSkip | None,
) -> ProcessingOptions:
    """``process``'s options for one transactional run: runs of one partition, the store's errors fatal, commits
    (the mirror) only with a group and a ``mirror_interval_ms``."""
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ConfigError("batch_size", f"must be at least 1, got {batch_size!r}")
    if mirror_interval_ms is not None and mirror_interval_ms < 1:
        raise ConfigError("mirror_interval_ms", f"must be at least 1 (or None: no mirror), got {mirror_interval_ms!r}")
    return ProcessingOptions(
        concurrency=concurrency,
        ordering=Ordering.PARTITION,
        batch_size=batch_size,
        max_in_flight_per_partition=max_in_flight_per_partition,
        commit_interval_ms=mirror_interval_ms or 5_000,
        revoke_timeout_ms=revoke_timeout_ms,
        retries=retries,
        retry_backoff_ms=retry_backoff_ms,
        on_error=on_error,  # type: ignore[arg-type]  # checked by ProcessingOptions
        on_skip=on_skip,
        commits=core.config.group_id is not None and mirror_interval_ms is not None,
        runs=True,
        fatal=(OffsetStoreError,),
    )


class Leases:
    """The leases this member holds, by partition. Read and replaced whole by the loop and, in ``Consumer``, by the
    worker threads (single dict operations: no lock needed)."""

    def __init__(self) -> None:
        self._held: dict[TopicPartition, Lease] = {}

    def get(self, tp: TopicPartition) -> Lease | None:
        return self._held.get(tp)

    def holds(self, lease: Lease) -> bool:
        """Whether ``lease`` is still the one this member holds for its partition (not dropped nor claimed again)."""
        current = self._held.get(lease.partition)
        return current is not None and current.epoch == lease.epoch

    def update(self, leases: Mapping[TopicPartition, Lease]) -> None:
        self._held.update(leases)

    def advance(self, lease: Lease, next_offset: int) -> None:
        """The store now has ``next_offset`` under ``lease``: the next write expects it."""
        if self.holds(lease):
            self._held[lease.partition] = Lease(lease.group, lease.partition, lease.epoch, next_offset)

    def drop(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._held.pop(tp, None)


class MirrorOffsets:
    """The sink of the mirror: the group's committed offsets, written for lag tools; never read back."""

    def __init__(self, core: ConsumerCore) -> None:
        self._group = GroupOffsets(core)

    async def load(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, OffsetAndMetadata | None]:
        return dict.fromkeys(partitions)

    async def store(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        await self._group.store({tp: OffsetAndMetadata(o.offset, "") for tp, o in offsets.items()})


def _unit_of(records: list[ConsumerRecord], leases: Leases) -> tuple[Lease, int]:
    tp = TopicPartition(records[0].topic, records[0].partition)
    lease = leases.get(tp)
    if lease is None:
        raise IllegalStateError(f"{tp.topic}-{tp.partition}: records of a partition this member holds no lease for")
    return lease, records[-1].offset + 1


def _fenced(error: OffsetStoreFencedError, leases: Leases, lease: Lease) -> bool:
    """Logs the fence; True when this member still believed it held the partition (then it is a zombie)."""
    held = leases.holds(lease)
    tp = error.partition
    log.warning(
        "eos.fenced",
        partition=f"{tp.topic}-{tp.partition}",
        held_epoch=error.held_epoch,
        current_epoch=error.current_epoch,
        still_held=held,
    )
    return held


class _Unreachable:
    """A store's bound on being unreachable, for one claim or unit: a failed attempt the store calls unavailable
    waits the next backoff, until ``timeout_ms`` from the first attempt, then ``OffsetStoreUnavailableError``; any
    other error is raised as it is."""

    def __init__(self, name: str, unavailable: Callable[[BaseException], bool], clock: Clock, timeout_ms: int) -> None:
        self._name = name
        self._unavailable = unavailable
        self._clock = clock
        self._timeout_ms = timeout_ms
        self._started = clock.now_ms()
        self._waits = backoffs(*BACKOFF_MS)

    def wait_after(self, error: Exception) -> float:
        """The seconds to wait before the next attempt, or raises."""
        if not self._unavailable(error):
            raise error
        waited = self._clock.now_ms() - self._started
        if waited >= self._timeout_ms:
            raise OffsetStoreUnavailableError(self._name, f"unreachable for {waited} ms: {error}") from error
        log.warning("eos.store_unavailable", store=self._name, waited_ms=waited, error=repr(error))
        return next(self._waits)


class AsyncUnits:
    """``AsyncConsumer``'s units: each run of records in one transaction with its offset, retried while the
    database cannot be reached."""

    def __init__(
        self,
        store: OffsetStore,
        leases: Leases,
        handler: AsyncTxHandler,
        on_skip: OnSkip | None,
        clock: Clock,
        store_timeout_ms: int,
    ) -> None:
        self._store = store
        self._leases = leases
        self._handler = handler
        self._on_skip = on_skip
        self._clock = clock
        self._timeout_ms = store_timeout_ms

    async def handle(self, records: list[ConsumerRecord]) -> None:
        """The driver's handler: ``records`` and their offset, one transaction."""
        await self._transact(records, self._handler)

    async def skip(self, records: list[ConsumerRecord], error: BaseException) -> None:
        """``on_error="skip"``: the user's ``on_skip``, then the offset past the run alone, in its own transaction."""
        if self._on_skip is not None:
            result = self._on_skip(records, error)
            if inspect.isawaitable(result):
                await result
        await self._transact(records, None)

    async def _transact(self, records: list[ConsumerRecord], body: AsyncTxHandler | None) -> None:
        store, leases = self._store, self._leases
        lease, next_offset = _unit_of(records, leases)
        unreachable = _Unreachable(store.name, store.unavailable, self._clock, self._timeout_ms)
        while True:
            try:
                async with store.transaction() as tx:
                    if body is not None:
                        await body(records, tx)
                    await store.write(tx, lease, next_offset)
            except OffsetAlreadyStored:
                pass
            except OffsetStoreFencedError as exc:
                if _fenced(exc, leases, lease):
                    raise
                return
            except Exception as exc:
                await asyncio.sleep(unreachable.wait_after(exc))
                continue
            leases.advance(lease, next_offset)
            return


class BlockingUnits:
    """``Consumer``'s units: the same, run whole in one worker thread (the handler gets the sync connection)."""

    def __init__(
        self,
        store: BlockingOffsetStore,
        leases: Leases,
        handler: BlockingTxHandler,
        on_skip: OnSkip | None,
        store_timeout_ms: int,
        clock: Clock,
    ) -> None:
        self._store = store
        self._leases = leases
        self._handler = handler
        self._on_skip = on_skip
        self._timeout_ms = store_timeout_ms
        self._clock = clock

    def handle(self, records: list[ConsumerRecord]) -> None:
        self._transact(records, self._handler)

    def skip(self, records: list[ConsumerRecord], error: BaseException) -> None:
        if self._on_skip is not None:
            self._on_skip(records, error)
        self._transact(records, None)

    def _transact(self, records: list[ConsumerRecord], body: BlockingTxHandler | None) -> None:
        store, leases = self._store, self._leases
        lease, next_offset = _unit_of(records, leases)
        unreachable = _Unreachable(store.name, store.unavailable, self._clock, self._timeout_ms)
        while True:
            try:
                with store.transaction() as tx:
                    if body is not None:
                        body(records, tx)
                    store.write(tx, lease, next_offset)
            except OffsetAlreadyStored:
                pass
            except OffsetStoreFencedError as exc:
                if _fenced(exc, leases, lease):
                    raise
                return
            except Exception as exc:
                time.sleep(unreachable.wait_after(exc))
                continue
            leases.advance(lease, next_offset)
            return


class Claims:
    """What the hook asks of a store, on the loop: an ``OffsetStore`` as it is, a ``BlockingOffsetStore``'s calls
    in ``executor``."""

    def __init__(self, store: OffsetStore | BlockingOffsetStore, executor: Executor | None = None) -> None:
        self._store = store
        self._executor = executor
        self.name = store.name

    async def _call(self, method: str, *args: Any) -> Any:
        function = getattr(self._store, method)
        if self._executor is None:
            return await function(*args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    async def open(self) -> None:
        await self._call("open")

    async def claim(self, group: str, partitions: Collection[TopicPartition]) -> dict[TopicPartition, Lease]:
        return await self._call("claim", group, partitions)  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self._call("close")

    def unavailable(self, error: BaseException) -> bool:
        return self._store.unavailable(error)


class TransactionalHook(ConsumerRebalanceListener):
    """Runs inside ``poll`` before the user's listener: newly assigned partitions are claimed in the store and
    sought to its offsets (``auto_offset_reset`` where it has none) before a record of them is fetched; revoked
    and lost ones go through the driver and their leases are dropped."""

    def __init__(
        self, core: ConsumerCore, driver: ProcessingDriver, claims: Claims, leases: Leases, store_timeout_ms: int
    ) -> None:
        self._core = core
        self._driver = driver
        self.claims = claims
        self._leases = leases
        self._timeout_ms = store_timeout_ms
        self.group = core.config.group_id or ""

    async def claim(self, partitions: Collection[TopicPartition]) -> None:
        """Claims ``partitions`` (retrying while the store cannot be reached) and moves their positions."""
        if not partitions:
            return
        unreachable = _Unreachable(self.claims.name, self.claims.unavailable, self._core.clock, self._timeout_ms)
        while True:
            try:
                leases = await self.claims.claim(self.group, partitions)
                break
            except Exception as exc:
                await asyncio.sleep(unreachable.wait_after(exc))
        self._leases.update(leases)
        unset = []
        for tp, lease in leases.items():
            if lease.offset is None:
                unset.append(tp)
            else:
                await _wait(self._core.seek(tp, lease.offset))
        if unset:
            await _wait(self._core.reset_positions(unset, self._core.config.auto_offset_reset))
        log.info(
            "eos.claimed",
            partitions={f"{tp.topic}-{tp.partition}": [lease.epoch, lease.offset] for tp, lease in leases.items()},
        )

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        await self.claim(partitions)

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        try:
            await self._driver.revoked(partitions)
        finally:
            self._leases.drop(partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._driver.lost(partitions)
        self._leases.drop(partitions)


def transactional_driver(
    core: ConsumerCore,
    handler: Callable[[Any], Awaitable[Any]],
    options: ProcessingOptions,
    claims: Claims,
    leases: Leases,
    store_timeout_ms: int,
    *,
    interruptible: bool = False,
) -> tuple[ProcessingDriver, TransactionalHook]:
    """A driver whose units are ``handler``'s transactions, committing only the mirror (if any), and its hook."""
    policy = IntervalCommits(options.commit_interval_ms) if options.commits else NoCommits()
    driver = ProcessingDriver(
        ConsumerPort(core, interruptible=interruptible),
        handler,
        options,
        core.clock,
        MirrorOffsets(core) if options.commits else None,
        ProcessingCore(options, policy),
    )
    return driver, TransactionalHook(core, driver, claims, leases, store_timeout_ms)


async def run_transactionally(core: ConsumerCore, driver: ProcessingDriver, hook: TransactionalHook) -> None:
    """Opens the store, then runs ``driver`` as ``process`` runs (``run_process``) with ``hook``, claiming what is
    assigned already (``assign()``, or a subscription polled or joined before) once the hook is installed: an
    assignment made before that went by no hook, and one made after comes through it; closes the store after."""
    claims = hook.claims
    await claims.open()
    try:
        if core.subscriptions.subscription is None and not core.subscriptions.assigned():
            raise IllegalStateError(
                "process_transactionally() needs a subscription or an assignment: call subscribe() or assign() first"
            )

        async def claim_assigned() -> None:
            await hook.claim(set(core.subscriptions.assigned()))

        await run_process(core, driver, hook, claim_assigned)
    finally:
        with contextlib.suppress(Exception):
            await claims.close()
