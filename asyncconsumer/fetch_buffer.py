"""Fetched record sets on their way from the background thread to the caller, bounded by bytes.

The background adds ``CompletedFetch``es; the caller takes them in arrival order and decodes them. The buffer
counts raw record-set bytes so the fetch manager stops fetching while the caller is behind.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

import attrs

from asyncconsumer.protocol.fetch import AbortedTransaction
from asyncconsumer.records import TopicPartition
from asyncconsumer.signal import CallerSignal


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

    @property
    def size(self) -> int:
        return len(self.records)


class FetchBuffer:
    """A FIFO of completed fetches, thread-safe, that wakes the caller on arrival."""

    def __init__(self, max_bytes: int, signal: CallerSignal) -> None:
        self._lock = threading.Lock()
        self._fetches: deque[CompletedFetch] = deque()
        self._bytes = 0
        self._max_bytes = max_bytes
        self._signal = signal
        self._space_waiter: Callable[[], None] | None = None
        self._background_waiting = False

    def set_space_waiter(self, wake_background: Callable[[], None]) -> None:
        """How to wake the background when the caller frees space it was waiting for."""
        self._space_waiter = wake_background

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def has_space(self) -> bool:
        """Background side: may another fetch be sent? If not, the caller will wake it when it drains."""
        with self._lock:
            if self._bytes < self._max_bytes:
                return True
            self._background_waiting = True
            return False

    def add_all(self, fetches: Iterable[CompletedFetch]) -> None:
        added = False
        with self._lock:
            for fetch in fetches:
                self._fetches.append(fetch)
                self._bytes += fetch.size
                added = True
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

    def release(self, size: int) -> None:
        """Caller side: ``size`` bytes were consumed or dropped."""
        wake = False
        with self._lock:
            self._bytes -= size
            if self._background_waiting and self._bytes < self._max_bytes:
                self._background_waiting = False
                wake = True
        if wake and self._space_waiter is not None:
            self._space_waiter()

    def __len__(self) -> int:
        return len(self._fetches)
