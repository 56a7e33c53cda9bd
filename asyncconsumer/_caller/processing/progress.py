"""What of one partition was handled, and what may be committed: the end of the contiguous prefix of finished
records, plus the finished offsets past it, remembered in the commit's metadata.

Offsets are tracked as received, not assumed contiguous: compaction and transaction markers leave gaps, and a gap
is no unfinished record. With key ordering one slow key holds the prefix back while later records finish; the
metadata keeps those (as Confluent's parallel-consumer does), so a restarted member skips them and only the records
in flight, or finished since the last commit, are handled again. The metadata is bounded (Kafka's
``offset.metadata.max.bytes`` is 4096 by default): what does not fit is dropped from the high end, which only
costs duplicates, never a loss.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

METADATA_PREFIX = "ac1:"
"""Marks metadata this module wrote; other metadata (a user's, another tool's) is left alone and means nothing."""

METADATA_LIMIT = 4_000
"""Bytes of metadata written at most: below the broker's default ``offset.metadata.max.bytes`` (4096)."""


def encode_done(base: int, done: Iterable[int], limit: int = METADATA_LIMIT) -> str:
    """``done`` offsets (all > ``base``) as ranges relative to ``base``: ``ac1:2-4,10``; ranges that would take the
    text past ``limit`` characters are left out, from the highest down. Empty when nothing is done."""
    parts: list[str] = []
    size = len(METADATA_PREFIX)
    for start, end in _ranges(sorted(done)):
        if start <= base:
            raise ValueError(f"offset {start} is not past the committed offset {base}")
        part = f"{start - base}" if start == end else f"{start - base}-{end - base}"
        size += len(part) + (1 if parts else 0)
        if size > limit:
            break
        parts.append(part)
    return METADATA_PREFIX + ",".join(parts) if parts else ""


def decode_done(base: int, metadata: str | None) -> frozenset[int]:
    """The offsets ``encode_done`` wrote into ``metadata`` for a commit at ``base``; empty for any other metadata
    (nothing of ours, or not well formed: then nothing is skipped, which is safe)."""
    if not metadata or not metadata.startswith(METADATA_PREFIX):
        return frozenset()
    found: set[int] = set()
    try:
        for part in metadata[len(METADATA_PREFIX) :].split(","):
            start, _, end = part.partition("-")
            first, last = int(start), int(end or start)
            if first < 1 or last < first:
                return frozenset()
            found.update(range(base + first, base + last + 1))
    except ValueError:
        return frozenset()
    return frozenset(found)


def _ranges(offsets: list[int]) -> Iterator[tuple[int, int]]:
    """Sorted offsets as (first, last) runs of consecutive ones."""
    if not offsets:
        return
    first = last = offsets[0]
    for offset in offsets[1:]:
        if offset == last + 1:
            last = offset
            continue
        yield first, last
        first = last = offset
    yield first, last


class PartitionProgress:
    """One partition's handled offsets since ``committed`` (the offset the group had when it was assigned).

    The caller hands it every record's offset as it arrives (``receive``, in offset order) and each one that
    finished: ``finished.append(offset)`` on the path of every record (no call of ours: the offsets are folded in,
    checked, at the next ``receive``, ``complete`` or read), or ``complete``. ``committable`` and ``metadata`` are
    what to commit now.
    """

    __slots__ = ("_done", "_last_received", "_pending", "_prefix_end", "_skip", "finished")

    def __init__(self, committed: int, metadata: str | None = None) -> None:
        self._prefix_end = committed
        """Every offset below it is finished (or never existed), once ``finished`` is folded in."""
        self._pending: list[int] = []
        """Offsets received and not yet in the prefix, in offset order (a list: the prefix moves by one deletion of
        its head, at each fold)."""
        self._done: set[int] = set()
        """Offsets of ``_pending`` that finished."""
        self.finished: list[int] = []
        """Offsets finished and not folded in yet, in the order they finished."""
        self._skip = set(decode_done(committed, metadata))
        """Offsets a previous owner finished past its committed offset (from the metadata): not handled again."""
        self._last_received = committed - 1

    @property
    def committable(self) -> int:
        """The offset to commit: the first received record not finished yet, else the one after the last received."""
        self.fold()
        return self._prefix_end

    @property
    def pending(self) -> int:
        """Records received and not yet inside the committable prefix (finished past it or not), as of the last
        ``fold`` (the core folds at each tick): it reads without changing anything, so from any thread."""
        return len(self._pending)

    def receive(self, offset: int) -> bool:
        """Records ``offset`` as received; False when a previous owner already finished it (do not handle it)."""
        self.fold()
        if offset <= self._last_received:
            raise ValueError(f"offset {offset} received after {self._last_received}: records arrive in offset order")
        self._last_received = offset
        pending = self._pending
        if offset in self._skip:
            self._skip.discard(offset)
            pending.append(offset)
            self._done.add(offset)
            self._advance()
            return False
        pending.append(offset)
        if len(pending) == 1:
            self._prefix_end = offset
        return True

    def receive_all(self, offsets: list[int]) -> list[int] | None:
        """``receive`` for each of ``offsets`` (ascending); None when every one is to be handled, else the list of
        those to handle (a previous owner finished the others)."""
        if not offsets:
            return None
        self.fold()
        if self._skip:
            return [offset for offset in offsets if self.receive(offset)]
        if offsets[0] <= self._last_received or offsets[-1] < offsets[0]:
            raise ValueError(
                f"offsets {offsets[0]}..{offsets[-1]} received after {self._last_received}: records arrive in offset"
                " order"
            )
        if not self._pending:
            self._prefix_end = offsets[0]
        self._pending.extend(offsets)
        self._last_received = offsets[-1]
        return None

    def complete(self, offset: int) -> None:
        """Records that the record at ``offset`` (received, not finished before) finished."""
        self.finished.append(offset)
        self.fold()

    def metadata(self, limit: int = METADATA_LIMIT) -> str:
        """The finished offsets past ``committable`` (this member's and those a previous owner left), encoded."""
        self.fold()
        base = self._prefix_end
        done = [o for o in self._done if o > base]
        done.extend(o for o in self._skip if o > base)
        return encode_done(base, done, limit)

    def fold(self) -> None:
        """Takes ``finished`` in: each must be received, past the prefix and not finished before (``ValueError``
        naming the first that is not)."""
        finished = self.finished
        if not finished:
            return
        done = self._done
        fresh = set(finished)
        if (
            len(fresh) != len(finished)
            or min(finished) < self._prefix_end
            or max(finished) > self._last_received
            or not done.isdisjoint(fresh)
        ):
            self._refuse()
        done |= fresh
        finished.clear()
        self._advance()

    def _refuse(self) -> None:
        """Names the first of ``finished`` not awaiting completion; the others are dropped with it (a bug upstream)."""
        seen: set[int] = set()
        offset = self.finished[0]
        for offset in self.finished:
            if offset in seen or offset in self._done or not self._prefix_end <= offset <= self._last_received:
                break
            seen.add(offset)
        self.finished.clear()
        raise ValueError(f"offset {offset} was not awaiting completion")

    def _advance(self) -> None:
        pending, done = self._pending, self._done
        moved = len(list(itertools.takewhile(done.__contains__, pending)))
        if moved:
            done.difference_update(pending[:moved])
            del pending[:moved]
        self._prefix_end = pending[0] if pending else self._last_received + 1
        if self._skip:
            self._skip = {o for o in self._skip if o >= self._prefix_end}
