"""Caller side of the record path: takes completed fetches from the buffer, decodes them, advances positions.

Decoding runs in the caller's ``poll`` (never on the background thread), one batch at a time, so a fetch is
decoded only as far as ``max_records`` asks, by ``v2decode`` into ``ConsumerRecord``s (``poll``) or into Arrow column
buffers (``poll_arrow``): the two differ only in their ``_Target``, so positions, filtering and errors are one code.
Errors found while decoding (bad CRC, a deserializer that raises)
stop at the record concerned: records before it are returned, the error is raised by the next ``poll``, and the
position stays on the bad record so ``seek`` can skip it. A compressed batch that would decompress past
``receive_message_max_bytes`` is such an error too (``RecordBatchTooLargeError``, a ``CorruptRecordError``).

A pause keeps what was fetched for the partition (as Java's consumer does since KAFKA-7548): its fetches, and the
one begun, are parked here and taken up where they stopped on resume, with no fetch again. Without that, a
partition resumed while a fetch waited at the broker for new records on the others (``fetch_max_wait_ms``) had
nothing to hand out until that fetch came back (``process()``'s backpressure pauses and resumes partitions all the
time: the exactly-once bench stalled 0.5 s per resume). What is parked stays within a budget, the buffer's limit
less one partition's fetch, so the partitions not paused can always be fetched; past it, a paused partition's
fetches are dropped and it is sought back to its position, to be fetched again on resume.
"""

from __future__ import annotations

import gc
import heapq
from collections import deque
from collections.abc import Iterator
from typing import Any, Protocol

from asyncconsumer._logs import get_logger
from asyncconsumer._state.fetch_buffer import CompletedFetch, FetchBuffer
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import (
    CorruptRecordError,
    KafkaError,
    RecordBatchTooLargeError,
    RecordDeserializationError,
)
from asyncconsumer.protocol.records import BatchError, BatchTooLargeError, RecordBatchView, iter_batches
from asyncconsumer.protocol.v2decode import ColumnSink, DecodeError, fill_records, raw_record
from asyncconsumer.records import ConsumerRecord, TopicPartition

log = get_logger("asyncconsumer.fetch")

_NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()
_ABORT_MARKER = 0


class _Drain:
    """Progress through one completed fetch."""

    __slots__ = (
        "aborted",
        "aborted_producers",
        "batch",
        "batches",
        "data",
        "fetch",
        "left",
        "max_bytes",
        "pos",
        "position",
    )

    def __init__(self, fetch: CompletedFetch, position: int, read_committed: bool, max_bytes: int) -> None:
        self.fetch = fetch
        self.max_bytes = max_bytes
        self.position = position
        self.batches: Iterator[RecordBatchView] = iter_batches(fetch.records)
        self.batch: RecordBatchView | None = None
        self.data: memoryview | list[Any] | None = None
        """The batch being taken: uncompressed v2 bytes (read from byte ``pos``, ``left`` records to go), or a
        magic 0/1 message's records (from index ``pos``); ``None`` between batches."""
        self.pos = -1
        self.left = 0
        self.aborted: list[tuple[int, int]] | None = None
        self.aborted_producers: set[int] = set()
        if read_committed and fetch.aborted_transactions:
            self.aborted = [(a.first_offset, a.producer_id) for a in fetch.aborted_transactions]
            heapq.heapify(self.aborted)

    def skip_batch(self, batch: RecordBatchView) -> bool:
        """Transaction filtering for read_committed: control batches and aborted data are never returned.

        As Kafka's consumer does, the aborted transactions that begin up to a batch's last offset are taken in
        before the batch is judged, markers included: a fetch that starts at an ABORT marker lists that
        transaction, and its marker must end it before the producer's next (committed) transaction.
        """
        if self.aborted is not None and batch.is_transactional:
            last_offset = batch.next_offset - 1
            while self.aborted and self.aborted[0][0] <= last_offset:
                self.aborted_producers.add(heapq.heappop(self.aborted)[1])
            if batch.is_control:
                if batch.control_type(self.max_bytes) == _ABORT_MARKER:
                    self.aborted_producers.discard(batch.producer_id)
                return True
            return batch.producer_id in self.aborted_producers
        return batch.is_control


def _fetch_of(item: _Drain | CompletedFetch) -> CompletedFetch:
    """The fetch a parked item holds: a drain's (begun) or the fetch itself (not begun)."""
    return item.fetch if isinstance(item, _Drain) else item


class _Target(Protocol):
    """Where taken records go: a list of ``ConsumerRecord`` per partition, or Arrow column buffers."""

    def begin(self, tp: TopicPartition) -> None:
        """The records that follow are ``tp``'s."""

    def count(self) -> int:
        """Records taken since ``begin`` went into a place that still holds them (for the count after an error)."""

    def fill(self, drain: _Drain, limit: int) -> int:
        """Takes up to ``limit`` records of ``drain.data`` from ``drain.pos``, moving ``drain``'s cursor and position;
        returns how many. Raises ``DecodeError`` (records before it taken, the cursor and position not moved) or,
        for deserialized records, ``_Stopped`` with a ``RecordDeserializationError`` (position on the bad record)."""
        ...


class _Records:
    """``poll``'s target: ``ConsumerRecord`` tuples, built in C by ``fill_records`` when it is compiled."""

    def __init__(self, key_deserializer: Any, value_deserializer: Any) -> None:
        self.out: dict[TopicPartition, list[ConsumerRecord]] = {}
        self._records: list[ConsumerRecord] = []
        self._topic = ""
        self._partition = 0
        self._kd = key_deserializer
        self._vd = value_deserializer

    def begin(self, tp: TopicPartition) -> None:
        records = self.out.get(tp)
        if records is None:
            records = self.out[tp] = []
        self._records = records
        self._topic, self._partition = tp

    def count(self) -> int:
        return len(self._records)

    def fill(self, drain: _Drain, limit: int) -> int:
        if self._kd is not None or self._vd is not None:
            return self._fill_deserialized(drain, limit)
        out = self._records
        before = len(out)
        drain.pos, drain.left, drain.position = self._decode(drain, limit, out)
        return len(out) - before

    def _decode(self, drain: _Drain, limit: int, out: list[ConsumerRecord]) -> tuple[int, int, int]:
        """Up to ``limit`` raw records of the batch appended to ``out``; the cursor and position after them."""
        data, batch = drain.data, drain.batch
        assert data is not None and batch is not None
        if isinstance(data, list):
            index, position = _take_legacy(data, drain.pos, drain.position, limit, out, self._topic, self._partition)
            return index, drain.left, position
        return fill_records(
            data, drain.pos, drain.left, drain.position, limit, out, ConsumerRecord, self._topic, self._partition,
            batch.leader_epoch,
        )  # fmt: skip

    def _fill_deserialized(self, drain: _Drain, limit: int) -> int:
        """Raw records first, then the deserializers; one that raises leaves the position on its record and the
        batch to be decoded again from its start (records before the position are skipped)."""
        raw: list[ConsumerRecord] = []
        pos, left, position = self._decode(drain, limit, raw)
        index = drain.pos
        drain.pos, drain.left, drain.position = pos, left, position
        kd, vd, out = self._kd, self._vd, self._records
        for i, rec in enumerate(raw):
            part = "key"
            try:
                key = kd(rec.key) if kd is not None else rec.key
                part = "value"
                value = vd(rec.value) if vd is not None else rec.value
            except Exception as exc:
                self._stop_at(drain, rec, index)
                error = RecordDeserializationError(rec.topic, rec.partition, rec.offset, part, exc)
                raise _Stopped(error, i) from exc
            out.append(rec._replace(key=key, value=value))
        return len(raw)

    @staticmethod
    def _stop_at(drain: _Drain, rec: ConsumerRecord, index: int) -> None:
        """The position back on ``rec``; a v2 batch is decoded again from its start (records before the position
        are skipped), a magic 0/1 message's records are taken again from ``index``."""
        drain.position = rec.offset
        if isinstance(drain.data, list):
            drain.pos = index
        else:
            drain.pos, drain.left = -1, 0


def _take_legacy(
    records: list[Any],
    index: int,
    position: int,
    limit: int,
    out: list[ConsumerRecord],
    topic: str,
    partition: int,
) -> tuple[int, int]:
    """A magic 0/1 message's records from ``index``: the new index and position."""
    taken = 0
    index = max(index, 0)
    while index < len(records) and taken < limit:
        rec = records[index]
        index += 1
        if rec.offset < position:
            continue
        out.append(
            raw_record(
                ConsumerRecord, topic, partition, rec.offset, rec.timestamp, rec.timestamp_type, rec.key, rec.value,
                _NO_HEADERS, None,
            )
        )  # fmt: skip
        position = rec.offset + 1
        taken += 1
    return index, position


class _Columns:
    """``poll_arrow``'s target: rows in a ``ColumnSink``, chunked before a column's data reaches 2 GiB."""

    CHUNK_BYTES = 1 << 30

    def __init__(self, include_headers: bool, expected_bytes: int) -> None:
        self.sink = ColumnSink(include_headers, expected_bytes)
        self.chunks: list[dict[str, Any]] = []
        self.topics: dict[str, int] = {}
        self._topic = 0
        self._partition = 0

    def begin(self, tp: TopicPartition) -> None:
        self._topic = self.topics.setdefault(tp.topic, len(self.topics))
        self._partition = tp.partition
        if self.sink.data_bytes >= self.CHUNK_BYTES:
            self.chunks.append(self.sink.finish())

    def count(self) -> int:
        return self.sink.rows

    def fill(self, drain: _Drain, limit: int) -> int:
        data = drain.data
        assert data is not None
        sink = self.sink
        before = sink.rows
        if isinstance(data, list):
            taken: list[ConsumerRecord] = []
            drain.pos, drain.position = _take_legacy(data, drain.pos, drain.position, limit, taken, "", 0)
            for rec in taken:
                timestamp, timestamp_type = (-1, -1) if rec.timestamp is None else (rec.timestamp, rec.timestamp_type)
                sink.append(self._topic, self._partition, rec.offset, timestamp, timestamp_type, rec.key, rec.value, ())
        else:
            drain.pos, drain.left, drain.position = sink.fill(
                data, drain.pos, drain.left, drain.position, limit, self._topic, self._partition
            )
        return sink.rows - before

    def finish(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The chunks' buffers and the topic names their topic numbers stand for."""
        return [*self.chunks, self.sink.finish()], list(self.topics)


class FetchCollector:
    """Turns buffered fetches into ``ConsumerRecord``s for ``poll``, or Arrow column buffers for ``poll_arrow``."""

    def __init__(self, config: ConsumerConfig, subscriptions: SubscriptionState, buffer: FetchBuffer) -> None:
        self._subs = subscriptions
        self._buffer = buffer
        self._check_crcs = config.check_crcs
        self._max_batch_bytes = config.receive_message_max_bytes
        self._read_committed = config.isolation_level == "read_committed"
        self._key_deserializer = config.key_deserializer
        self._value_deserializer = config.value_deserializer
        self._current: _Drain | None = None
        self._parked: dict[TopicPartition, deque[_Drain | CompletedFetch]] = {}
        """Per paused partition, in offset order: the fetch begun when it was paused, then those not begun."""
        self._parked_bytes = 0
        self._max_partition_fetch_bytes = config.max_partition_fetch_bytes
        self._pause_gc = config.pause_gc_during_poll
        self.records_returned = 0
        self.bytes_returned = 0

    def collect(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to ``max_records`` records, with the cyclic GC paused meanwhile (see ``pause_gc_during_poll``)."""
        target = _Records(self._key_deserializer, self._value_deserializer)
        if not self._pause_gc or not gc.isenabled():
            self._collect(max_records, target)
        else:
            gc.disable()
            try:
                self._collect(max_records, target)
            finally:
                gc.enable()
        return {tp: recs for tp, recs in target.out.items() if recs}

    def collect_columns(self, max_records: int, include_headers: bool) -> tuple[list[dict[str, Any]], list[str]]:
        """Up to ``max_records`` records as ``ColumnSink`` buffers (no deserializers), and the topics they name.

        Only the fetches buffered now are taken (and the rest of one begun before): the background keeps fetching
        while the compiled sink decodes without the GIL, and a poll that followed it would build ever larger tables
        instead of staying within the fetch buffer (200k x 1 KB from Kafka, medians of 12: tables of up to 23 MB,
        peak RSS 172 MB against 91, 8% slower). The sink sizes its buffers for those bytes."""
        buffered = self._buffer.buffered_bytes
        target = _Columns(include_headers, buffered)
        self._collect(max_records, target, buffered)
        return target.finish()

    def _collect(self, max_records: int, target: _Target, max_bytes: int | None = None) -> None:
        """Takes records into ``target``; with ``max_bytes``, no fetch is begun once fetches of that many bytes
        were (the poll then counts as dry: it took all it was allowed)."""
        remaining = max_records
        ran_dry = False
        taken_any = False
        begun = 0
        while remaining > 0:
            drain = self._current
            if drain is not None and (
                self._subs.epoch(drain.fetch.tp) != drain.fetch.epoch or self._subs.is_withheld(drain.fetch.tp)
            ):
                if self._park(drain):
                    self._current = None  # paused: taken up where it stopped on resume
                else:
                    self._finish(drain)  # sought, reset, revoked or unassigned since it was taken: stale
                drain = None
            if drain is None:
                if max_bytes is not None and taken_any and begun >= max_bytes:
                    ran_dry = True
                    break
                drain = self._next_drain()
                if drain is not None:
                    begun += drain.fetch.size
            if drain is None:
                ran_dry = True
                break
            target.begin(drain.fetch.tp)
            try:
                finished, taken = self._take(drain, target, remaining)
            except _Stopped as stop:
                remaining -= stop.taken
                self._advance(drain)
                if taken_any or stop.taken:
                    break  # return what we have; the next poll meets the same record and raises
                raise stop.error from stop.__cause__
            remaining -= taken
            taken_any = taken_any or taken > 0
            self._advance(drain)
            if finished:
                self._finish(drain)
        self.records_returned += max_records - remaining
        self._buffer.poll_done(max_records - remaining, ran_dry)

    def _next_drain(self) -> _Drain | None:
        if self._parked:
            drain = self._unpark()
            if drain is not None:
                return drain
        while True:
            fetch = self._buffer.take()
            if fetch is None:
                return None
            tp = fetch.tp
            if tp in self._parked or self._subs.epoch(tp) != fetch.epoch or self._subs.is_withheld(tp):
                if not self._park(fetch):
                    self._buffer.release(fetch)
                continue
            drain = self._start(fetch)
            if drain is not None:
                return drain

    def _start(self, fetch: CompletedFetch) -> _Drain | None:
        """``fetch`` as the drain under way, or None (released) if it holds nothing to hand out."""
        tp = fetch.tp
        if fetch.error is not None:
            self._buffer.release(fetch)  # its error went to the caller already; the partition may be fetched again
            return None
        position = self._subs.position(tp)
        if position is None or position < fetch.fetch_offset:
            # Only a bug could open a gap here; fetch again from the caller's position rather than skip.
            log.warning("fetch.gap", partition=str(tp), position=position, fetch_offset=fetch.fetch_offset)
            self._buffer.release(fetch)
            if position is not None:
                self._subs.seek(tp, position)
            return None
        self._current = _Drain(fetch, position, self._read_committed, self._max_batch_bytes)
        return self._current

    # --- paused partitions --------------------------------------------------------------------------------------
    def _park(self, item: _Drain | CompletedFetch) -> bool:
        """Keeps a paused partition's fetch (or the drain begun) for its resume; False if it is stale, or over the
        budget (then the partition's parked fetches are dropped too, and it is sought back to its position)."""
        fetch = _fetch_of(item)
        tp = fetch.tp
        if self._subs.epoch(tp) != fetch.epoch or not self._subs.is_paused(tp):
            return False
        limit = self._buffer.limit
        budget = limit - min(self._max_partition_fetch_bytes, limit)  # one partition's fetch stays free
        if self._parked_bytes + fetch.size > budget:
            self._drop_parked(tp)
            position = self._subs.position(tp)
            if position is not None:
                self._subs.seek(tp, position)  # what was fetched ahead of the position is fetched again on resume
            log.debug("fetch.pause_dropped", partition=str(tp), bytes=fetch.size, parked_bytes=self._parked_bytes)
            return False
        parked = self._parked.setdefault(tp, deque())
        if isinstance(item, _Drain):
            parked.appendleft(item)  # the fetch under way comes before any parked behind it
        else:
            parked.append(item)
        self._parked_bytes += fetch.size
        return True

    def _unpark(self) -> _Drain | None:
        """The first parked fetch of a resumed partition as the drain under way; drops those gone stale."""
        for tp in list(self._parked):
            items = self._parked[tp]
            epoch = self._subs.epoch(tp)
            if any(_fetch_of(i).epoch != epoch for i in items) or (
                self._subs.is_withheld(tp) and not self._subs.is_paused(tp)
            ):
                self._drop_parked(tp)  # sought, reset, revoked or unassigned while paused
                continue
            if self._subs.is_paused(tp):
                continue
            while items:
                item = items.popleft()
                fetch = _fetch_of(item)
                self._parked_bytes -= fetch.size
                if not items:
                    del self._parked[tp]
                if isinstance(item, _Drain):
                    self._current = item
                    return item
                drain = self._start(item)
                if drain is not None:
                    return drain
        return None

    def _drop_parked(self, tp: TopicPartition) -> None:
        for item in self._parked.pop(tp, ()):
            fetch = _fetch_of(item)
            self._parked_bytes -= fetch.size
            self._buffer.release(fetch)

    def _advance(self, drain: _Drain) -> None:
        if not self._subs.advance(drain.fetch.tp, drain.fetch.epoch, drain.position):
            self._finish(drain)  # sought meanwhile: what is left of this fetch is stale

    def _finish(self, drain: _Drain) -> None:
        if self._current is drain:
            self._current = None
            self._buffer.release(drain.fetch)
            self.bytes_returned += drain.fetch.size

    def _take(self, drain: _Drain, target: _Target, limit: int) -> tuple[bool, int]:
        """Gives ``target`` up to ``limit`` records: (whether the fetch is used up, how many). An error stops it as
        ``_Stopped``, carrying what was taken before the bad record."""
        fetch = drain.fetch
        topic, partition = fetch.tp
        taken = 0
        while taken < limit:
            if drain.data is None:
                batch = drain.batch
                if batch is None:
                    try:
                        batch = next(drain.batches, None)
                    except BatchError as exc:
                        error = CorruptRecordError(topic, partition, max(exc.offset, drain.position), exc.reason)
                        raise _Stopped(error, taken) from exc
                    if batch is None:
                        drain.position = max(drain.position, fetch.next_fetch_offset)
                        return True, taken
                    if batch.next_offset <= drain.position:
                        continue
                    if drain.skip_batch(batch):
                        drain.position = batch.next_offset
                        continue
                    drain.batch = batch
                try:
                    if batch.magic >= 2:
                        drain.data = batch.plain(self._check_crcs, self._max_batch_bytes)
                    else:
                        drain.data = batch.legacy_records(self._check_crcs, self._max_batch_bytes)
                except BatchTooLargeError as exc:
                    error = RecordBatchTooLargeError(
                        topic, partition, max(exc.offset, drain.position), batch.next_offset, exc.limit, exc.reason
                    )
                    raise _Stopped(error, taken) from exc
                except BatchError as exc:
                    error = CorruptRecordError(topic, partition, max(exc.offset, drain.position), exc.reason)
                    raise _Stopped(error, taken) from exc
                drain.pos, drain.left = -1, 0
            batch = drain.batch
            assert batch is not None
            before = target.count()
            try:
                taken += target.fill(drain, limit - taken)
            except DecodeError as exc:
                taken += target.count() - before
                # The records before the bad one were taken: the position passes them, and stays on the bad one.
                drain.data = None
                drain.position = max(drain.position, exc.offset)
                raise _Stopped(CorruptRecordError(topic, partition, drain.position, exc.reason), taken) from exc
            except _Stopped as stop:  # a deserializer raised, after ``stop.taken`` records
                raise _Stopped(stop.error, taken + stop.taken) from stop.__cause__
            if self._batch_done(drain):
                drain.position = max(drain.position, batch.next_offset)
                drain.data = None
                drain.batch = None
        # the limit met the fetch's end: it is used up now, so its bytes are freed by this poll, not the next one
        # (until then the background may have no room to fetch while the caller works)
        return drain.data is None and drain.position >= fetch.next_fetch_offset, taken

    @staticmethod
    def _batch_done(drain: _Drain) -> bool:
        data = drain.data
        if data is None:
            return True
        if isinstance(data, list):
            return drain.pos >= len(data)
        return drain.pos >= 0 and drain.left == 0


class _Stopped(Exception):
    """An error met while taking records, with how many were taken before it."""

    def __init__(self, error: KafkaError, taken: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.taken = taken
