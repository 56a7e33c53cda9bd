"""Fetched record sets on their way from the background thread to the caller, bounded by bytes.

The background adds ``CompletedFetch``es; the caller takes them in arrival order and decodes them. The buffer
counts what is held: a whole response's record bytes until the last of its partitions is released (their
memoryviews keep the response alive), plus what fetches in flight may bring (their request ``max_bytes``). The
fetch manager sends only within what is left of the buffer's limit.

The limit starts at half of ``fetch_buffer_bytes`` and doubles, up to it, when polls keep running the buffer dry
while the background was held back by the limit: the caller could take more than the limit lets the background
fetch ahead (a slow caller taking big polls, say). A caller that polls less than the limit holds never pays for
the larger buffer. The limit never shrinks, but with ``fetch_buffer_bytes=None`` the bound follows the partitions
assigned (``fit_partitions``), and the limit with it.

What the background adds reaches the caller at the end of the loop iteration that added it (``deliver``), after the
snapshot of that iteration is published: a caller that sees records also sees the fetch that brought them in
``metrics()``.

A fetch that failed with an error reported to the caller is queued too, as a completed fetch without records:
until the caller's ``poll`` has passed it, that partition is not fetched again (``error_pending``), so a broker that
keeps failing it costs one fetch and one error per ``poll``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Self

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer.errors import KafkaError
from asyncconsumer.protocol.messages.fetch import AbortedTransaction
from asyncconsumer.protocol.messages.share_fetch import AcquiredRecords
from asyncconsumer.records import TopicPartition

log = get_logger("asyncconsumer.fetch")


@attrs.define(slots=True)
class ResponseShare:
    """One fetch response's bytes, shared by its completed fetches: freed when the last of them is released."""

    size: int
    parts: int = 0


@attrs.define(frozen=True, slots=True)
class CompletedFetch:
    """The complete batches fetched for one partition, starting at ``fetch_offset``."""

    tp: TopicPartition
    epoch: int
    fetch_offset: int
    next_fetch_offset: int
    records: memoryview
    high_watermark: int
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    share: ResponseShare | None = attrs.field(default=None, eq=False, repr=False)
    """The response this came from; ``None`` counts ``size`` alone."""
    error: KafkaError | None = attrs.field(default=None, eq=False)
    """Set for a failed fetch (no records) whose error was reported to the caller; it holds back the next fetch of
    the partition until the caller's ``poll`` reaches it."""
    acquired: tuple[AcquiredRecords, ...] = attrs.field(default=(), eq=False, repr=False)
    """A share fetch's acquired ranges (with their delivery counts): only records in them are delivered."""

    @property
    def size(self) -> int:
        return len(self.records)


AUTO_BOUND_BYTES = 8 << 20
"""The bound of a buffer sized to its assignment (``fetch_buffer_bytes=None``) up to ``AUTO_BOUND_BYTES //
AUTO_BYTES_PER_PARTITION`` partitions."""
AUTO_BYTES_PER_PARTITION = 64 << 10
"""Above that, its bound per partition assigned: a fetch round costs the broker and the consumer per partition,
so with thousands of partitions the bytes a round may bring bound the rate (``docs/performance.md``)."""
AUTO_MAX_BYTES = 64 << 20
"""The most a buffer sized to its assignment is bounded by."""

GROW_AFTER_DRY_POLLS = 3
"""Dry polls in a row, each with the background held back by the limit since the one before, before the limit
doubles: one could be the start-up transient or a hiccup."""


class FetchBuffer:
    """A FIFO of completed fetches, thread-safe, that wakes the caller when the background delivers some."""

    def __init__(
        self,
        max_bytes: int,
        signal: CallerSignal,
        initial_bytes: int | None = None,
        *,
        sized_to_assignment: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        """Guards every field below but ``_signal`` and ``_space_waiter`` (set once, before the thread starts);
        both threads take it for a few lines only."""
        self._fetches: deque[CompletedFetch] = deque()
        """Background appends (``deliver``), caller pops."""
        self._staged: list[CompletedFetch] = []
        """Added by the background, not yet delivered to the caller: background only."""
        self._bytes = 0
        """Held bytes: background adds, caller releases; read without the lock for metrics (an int, atomic)."""
        self._responses = 0
        """Responses added with a ``ResponseShare`` whose last part is not yet released."""
        self._reserved = 0
        """Bytes fetches in flight may bring: background only (reserve on send, settle on answer)."""
        self._bound = max_bytes
        self._sized_to_assignment = sized_to_assignment
        """``fetch_buffer_bytes=None``: ``fit_partitions`` moves the bound."""
        self._limit = max_bytes if initial_bytes is None else max(1, min(initial_bytes, max_bytes))
        """Grown by the caller's dry polls, read by the background's ``room``."""
        self._held = False
        """The background was refused room since the caller's last dry poll: background sets, caller clears."""
        self._dry_polls = 0
        """Caller only."""
        self._signal = signal
        self._space_waiter: Callable[[], None] | None = None
        self._background_waiting = False
        """Background sets when refused room; the caller clears it and wakes the background when it frees enough."""
        self._wanted = 0
        """The free bytes the refused ``room`` asked for: a release that leaves less free wakes nobody (with thousands
        of partitions a response is released part by part, and a wake per part had the background walk every
        partition each time for nothing)."""
        self._errors: dict[TopicPartition, int] = {}
        """Partition -> subscription epoch of its failed fetch that the caller has not taken yet: background adds,
        caller removes; the background reads it without the lock only to see that it is empty."""

    @classmethod
    def starting_at_half(cls, max_bytes: int | None, signal: CallerSignal) -> Self:
        """A buffer bounded by ``max_bytes`` (``fetch_buffer_bytes``; None: sized to the assignment, see
        ``fit_partitions``) whose limit starts at half of it, as every kind of consumer's does: a caller that never
        takes more than half never pays for the rest."""
        bound = AUTO_BOUND_BYTES if max_bytes is None else max_bytes
        return cls(bound, signal, bound // 2, sized_to_assignment=max_bytes is None)

    def fit_partitions(self, partitions: int) -> None:
        """Background side, as the assignment changes: a buffer sized to its assignment takes the bound of
        ``partitions`` (its limit at least half of it, at most all of it); a fixed one stays as it is."""
        if not self._sized_to_assignment:
            return
        bound = min(AUTO_MAX_BYTES, max(AUTO_BOUND_BYTES, partitions * AUTO_BYTES_PER_PARTITION))
        with self._lock:
            if bound == self._bound:
                return
            self._bound = bound
            self._limit = max(min(self._limit, bound), bound // 2)
        log.info("fetch.buffer_sized", partitions=partitions, bound=bound, limit=self._limit)

    def set_space_waiter(self, wake_background: Callable[[], None]) -> None:
        """How to wake the background when the caller frees space it was waiting for."""
        self._space_waiter = wake_background

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    @property
    def reserved_bytes(self) -> int:
        return self._reserved

    @property
    def bound(self) -> int:
        """What the limit may grow to: ``fetch_buffer_bytes``, or the assignment's bound (``fit_partitions``)."""
        return self._bound

    @property
    def limit(self) -> int:
        """What buffered plus in-flight bytes may reach now: between half of the bound and the bound."""
        return self._limit

    @property
    def errors_pending(self) -> bool:
        """Background side, once per fetch round: whether any failed fetch waits for the caller. Only the background
        adds one, so a round that starts with none sees none (the caller may only remove them meanwhile)."""
        return bool(self._errors)

    def error_pending(self, tp: TopicPartition, epoch: int) -> bool:
        """Background side: a failed fetch of ``tp`` at ``epoch`` waits for the caller (do not fetch ``tp``)."""
        if not self._errors:  # the usual case, asked per partition per fetch round: no lock
            return False
        with self._lock:
            return self._errors.get(tp) == epoch

    def room(self, floor: int) -> int:
        """Background side: bytes a new fetch may bring, or 0 (then the caller wakes it when it frees space).

        At least ``floor`` must be free, unless nothing at all is held or in flight: then the whole bound is offered,
        so a consumer whose bound is below one batch still makes progress.
        """
        with self._lock:
            free = self._limit - self._bytes - self._reserved
            if free >= floor or (self._bytes == 0 and self._reserved == 0):
                return max(free, 1)
            self._background_waiting = True
            self._wanted = floor
            self._held = True
            return 0

    def reserve(self, size: int) -> None:
        """Background side: a fetch that may bring ``size`` bytes was sent."""
        with self._lock:
            self._reserved += size

    def unreserve(self, size: int) -> None:
        """Background side: that fetch answered (its bytes, if any, were added) or failed."""
        with self._lock:
            self._reserved -= size

    def add_all(self, fetches: Iterable[CompletedFetch], share: ResponseShare | None = None) -> None:
        """Background side: adds fetches, counted at once and delivered to the caller by the next ``deliver``;
        with ``share``, they are all of one response and it is counted once, whole."""
        added = False
        with self._lock:
            for fetch in fetches:
                self._staged.append(fetch)
                if fetch.error is not None:
                    self._errors[fetch.tp] = fetch.epoch
                if share is None:
                    self._bytes += fetch.size
                else:
                    share.parts += 1
                added = True
            if share is not None and added:
                self._bytes += share.size
                self._responses += 1

    def deliver(self) -> bool:
        """Background side, at the end of a loop iteration: hands what was added to the caller and wakes it."""
        if not self._staged:
            return False
        with self._lock:
            self._fetches.extend(self._staged)
            self._staged.clear()
        self._signal.notify()
        return True

    def take(self) -> CompletedFetch | None:
        with self._lock:
            if not self._fetches:
                return None
            return self._fetches.popleft()

    def put_back(self, fetches: Iterable[CompletedFetch]) -> None:
        """Caller side: returns fetches it set aside (paused partitions) to the front, in order."""
        with self._lock:
            self._fetches.extendleft(reversed(list(fetches)))

    def release(self, fetch: CompletedFetch) -> None:
        """Caller side: ``fetch`` was consumed or dropped; its response is freed with its last part."""
        wake = False
        with self._lock:
            share = fetch.share
            if share is None:
                self._bytes -= fetch.size
            else:
                share.parts -= 1
                if share.parts == 0:
                    self._bytes -= share.size
                    self._responses -= 1
            if self._background_waiting and (
                self._limit - self._bytes - self._reserved >= self._wanted or (self._bytes == 0 and self._reserved == 0)
            ):
                self._background_waiting = False
                wake = True
            if fetch.error is not None and self._errors.get(fetch.tp) == fetch.epoch:
                del self._errors[fetch.tp]
                wake = True  # the partition may be fetched again
        if wake and self._space_waiter is not None:
            self._space_waiter()

    def poll_done(self, returned: int, ran_dry: bool) -> None:
        """Caller side, after each poll: ``ran_dry`` when the buffer emptied before the poll had all it asked for.

        The limit doubles after ``GROW_AFTER_DRY_POLLS`` polls in a row that returned records and ran dry, each
        with the background held back by the limit since the one before: polls that are not dry can fall between
        them (a poll may take one whole response and part of the next).
        """
        if not (returned and ran_dry):
            return
        grown = wake = False
        with self._lock:
            if not self._held:
                self._dry_polls = 0
            else:
                self._held = False
                self._dry_polls += 1
                if self._dry_polls >= GROW_AFTER_DRY_POLLS and self._limit < self._bound:
                    self._limit = min(self._bound, self._limit * 2)
                    self._dry_polls = 0
                    grown = True
                    wake = self._background_waiting
                    self._background_waiting = False
        if grown:
            log.info("fetch.buffer_grown", limit=self._limit, bound=self._bound)
        if wake and self._space_waiter is not None:
            self._space_waiter()

    def __len__(self) -> int:
        return len(self._fetches)
