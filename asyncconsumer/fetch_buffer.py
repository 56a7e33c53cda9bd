"""Fetched record sets on their way from the background thread to the caller, bounded by bytes.

The background adds ``CompletedFetch``es; the caller takes them in arrival order and decodes them. The buffer
counts what is held: a whole response's record bytes until the last of its partitions is released (their
memoryviews keep the response alive), plus what fetches in flight may bring (their request ``max_bytes``). The
fetch manager sends only within what is left of ``fetch_buffer_bytes``.

A fetch that failed with an error reported to the caller is queued too, as a completed fetch without records:
until the caller's ``poll`` has passed it, that partition is not fetched again (``error_pending``), so a broker that
keeps failing it costs one fetch and one error per ``poll``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

import attrs

from asyncconsumer.errors import KafkaError
from asyncconsumer.protocol.fetch import AbortedTransaction
from asyncconsumer.records import TopicPartition
from asyncconsumer.signal import CallerSignal


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

    @property
    def size(self) -> int:
        return len(self.records)


class FetchBuffer:
    """A FIFO of completed fetches, thread-safe, that wakes the caller on arrival."""

    def __init__(self, max_bytes: int, signal: CallerSignal) -> None:
        self._lock = threading.Lock()
        self._fetches: deque[CompletedFetch] = deque()
        self._bytes = 0
        self._reserved = 0
        self._max_bytes = max_bytes
        self._signal = signal
        self._space_waiter: Callable[[], None] | None = None
        self._background_waiting = False
        self._errors: dict[TopicPartition, int] = {}
        """Partition -> subscription epoch of its failed fetch that the caller has not taken yet."""

    def set_space_waiter(self, wake_background: Callable[[], None]) -> None:
        """How to wake the background when the caller frees space it was waiting for."""
        self._space_waiter = wake_background

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    @property
    def reserved_bytes(self) -> int:
        return self._reserved

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
            free = self._max_bytes - self._bytes - self._reserved
            if free >= floor or (self._bytes == 0 and self._reserved == 0):
                return max(free, 1)
            self._background_waiting = True
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
        """Adds fetches; with ``share``, they are all of one response and it is counted once, whole."""
        added = False
        with self._lock:
            for fetch in fetches:
                self._fetches.append(fetch)
                if fetch.error is not None:
                    self._errors[fetch.tp] = fetch.epoch
                if share is None:
                    self._bytes += fetch.size
                else:
                    share.parts += 1
                added = True
            if share is not None and added:
                self._bytes += share.size
        if added:
            self._signal.notify()

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
            if self._background_waiting and self._bytes + self._reserved < self._max_bytes:
                self._background_waiting = False
                wake = True
            if fetch.error is not None and self._errors.get(fetch.tp) == fetch.epoch:
                del self._errors[fetch.tp]
                wake = True  # the partition may be fetched again
        if wake and self._space_waiter is not None:
            self._space_waiter()

    def __len__(self) -> int:
        return len(self._fetches)
