"""Caller side of the record path: takes completed fetches from the buffer, decodes them, advances positions.

Decoding runs in the caller's ``poll`` (never on the background thread), one batch at a time, so a fetch is
decoded only as far as ``max_records`` asks. Errors found while decoding (bad CRC, a deserializer that raises)
stop at the record concerned: records before it are returned, the error is raised by the next ``poll``, and the
position stays on the bad record so ``seek`` can skip it. A compressed batch that would decompress past
``receive_message_max_bytes`` is such an error too (``RecordBatchTooLargeError``, a ``CorruptRecordError``).
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Iterator
from typing import Any

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
from asyncconsumer.records import ConsumerRecord, TopicPartition

log = get_logger("asyncconsumer.fetch")

_new_record = tuple.__new__
_NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()
_ABORT_MARKER = 0


class _Drain:
    """Progress through one completed fetch."""

    __slots__ = ("aborted", "aborted_producers", "batch", "batches", "fetch", "max_bytes", "position", "records")

    def __init__(self, fetch: CompletedFetch, position: int, read_committed: bool, max_bytes: int) -> None:
        self.fetch = fetch
        self.max_bytes = max_bytes
        self.position = position
        self.batches: Iterator[RecordBatchView] = iter_batches(fetch.records)
        self.batch: RecordBatchView | None = None
        self.records: Iterator[Any] | None = None
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


class FetchCollector:
    """Turns buffered fetches into ``ConsumerRecord``s for ``poll``."""

    def __init__(self, config: ConsumerConfig, subscriptions: SubscriptionState, buffer: FetchBuffer) -> None:
        self._subs = subscriptions
        self._buffer = buffer
        self._check_crcs = config.check_crcs
        self._max_batch_bytes = config.receive_message_max_bytes
        self._read_committed = config.isolation_level == "read_committed"
        self._key_deserializer = config.key_deserializer
        self._value_deserializer = config.value_deserializer
        self._current: _Drain | None = None
        self._pause_gc = config.pause_gc_during_poll
        self.records_returned = 0
        self.bytes_returned = 0

    def collect(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to ``max_records`` records, with the cyclic GC paused meanwhile (see ``pause_gc_during_poll``)."""
        if not self._pause_gc or not gc.isenabled():
            return self._collect(max_records)
        gc.disable()
        try:
            return self._collect(max_records)
        finally:
            gc.enable()

    def _collect(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        remaining = max_records
        ran_dry = False
        while remaining > 0:
            drain = self._current
            if drain is not None and (
                self._subs.epoch(drain.fetch.tp) != drain.fetch.epoch or self._subs.is_paused(drain.fetch.tp)
            ):
                self._finish(drain)  # sought, reset, paused or unassigned since it was taken: stale
                drain = None
            if drain is None:
                drain = self._next_drain()
            if drain is None:
                ran_dry = True
                break
            tp = drain.fetch.tp
            records = out.get(tp)
            if records is None:
                records = out[tp] = []
            before = len(records)
            try:
                finished = self._take(drain, records, remaining)
            except KafkaError:
                self._advance(drain)
                if any(out.values()):
                    break  # return what we have; the next poll meets the same record and raises
                raise
            remaining -= len(records) - before
            self._advance(drain)
            if finished:
                self._finish(drain)
        self.records_returned += max_records - remaining
        self._buffer.poll_done(max_records - remaining, ran_dry)
        return {tp: recs for tp, recs in out.items() if recs}

    def _next_drain(self) -> _Drain | None:
        while True:
            fetch = self._buffer.take()
            if fetch is None:
                return None
            tp = fetch.tp
            if self._subs.epoch(tp) != fetch.epoch or self._subs.is_paused(tp):
                self._buffer.release(fetch)
                continue
            if fetch.error is not None:
                self._buffer.release(fetch)  # its error went to the caller already; the partition may be fetched again
                continue
            position = self._subs.position(tp)
            if position is None or position < fetch.fetch_offset:
                # Only a bug could open a gap here; fetch again from the caller's position rather than skip.
                log.warning("fetch.gap", partition=str(tp), position=position, fetch_offset=fetch.fetch_offset)
                self._buffer.release(fetch)
                if position is not None:
                    self._subs.seek(tp, position)
                continue
            self._current = _Drain(fetch, position, self._read_committed, self._max_batch_bytes)
            return self._current

    def _advance(self, drain: _Drain) -> None:
        if not self._subs.advance(drain.fetch.tp, drain.fetch.epoch, drain.position):
            self._finish(drain)  # sought meanwhile: what is left of this fetch is stale

    def _finish(self, drain: _Drain) -> None:
        if self._current is drain:
            self._current = None
            self._buffer.release(drain.fetch)
            self.bytes_returned += drain.fetch.size

    def _take(self, drain: _Drain, out: list[ConsumerRecord], limit: int) -> bool:
        """Appends up to ``limit`` records to ``out``; True when the fetch is used up."""
        fetch = drain.fetch
        topic, partition = fetch.tp
        wanted = len(out) + limit
        while len(out) < wanted:
            if drain.records is None:
                batch = drain.batch
                if batch is None:
                    try:
                        batch = next(drain.batches, None)
                    except BatchError as exc:
                        raise CorruptRecordError(topic, partition, max(exc.offset, drain.position), exc.reason) from exc
                    if batch is None:
                        drain.position = max(drain.position, fetch.next_fetch_offset)
                        return True
                    if batch.next_offset <= drain.position:
                        continue
                    if drain.skip_batch(batch):
                        drain.position = batch.next_offset
                        continue
                    drain.batch = batch
                try:
                    drain.records = batch.decode(self._check_crcs, self._max_batch_bytes)
                except BatchTooLargeError as exc:
                    raise RecordBatchTooLargeError(
                        topic, partition, max(exc.offset, drain.position), batch.next_offset, exc.limit, exc.reason
                    ) from exc
                except BatchError as exc:
                    raise CorruptRecordError(topic, partition, max(exc.offset, drain.position), exc.reason) from exc
            batch = drain.batch
            assert batch is not None
            taken = len(out)
            try:
                if self._key_deserializer is None and self._value_deserializer is None:
                    drain.position = _fill_raw(
                        drain.records, out, wanted, topic, partition, batch.leader_epoch, drain.position
                    )
                else:
                    self._fill_deserialized(drain, out, wanted, topic, partition, batch.leader_epoch)
            except RecordDeserializationError:
                drain.records = None  # decode the batch again next time, so the bad record is met again
                raise
            except (BatchError, ValueError, IndexError) as exc:
                drain.records = None
                if len(out) > taken:  # what was taken before the bad record is returned: the position passes it
                    drain.position = max(drain.position, out[-1].offset + 1)
                reason = exc.reason if isinstance(exc, BatchError) else f"{type(exc).__name__}: {exc}"
                raise CorruptRecordError(topic, partition, drain.position, reason) from exc
            if len(out) < wanted:
                # The fill stopped before the limit only because the batch ended.
                drain.position = max(drain.position, batch.next_offset)
                drain.records = None
                drain.batch = None
        return False

    def _fill_deserialized(
        self,
        drain: _Drain,
        out: list[ConsumerRecord],
        wanted: int,
        topic: str,
        partition: int,
        leader_epoch: int | None,
    ) -> None:
        """Like ``_fill_raw`` with deserializers; the position moves record by record so an error keeps it exact."""
        kd = self._key_deserializer
        vd = self._value_deserializer
        assert drain.records is not None
        for rec in drain.records:
            offset = rec.offset
            if offset < drain.position:
                continue
            raw_key = rec.key
            raw_value = rec.value
            try:
                key = kd(raw_key) if kd is not None else raw_key
            except Exception as exc:
                raise RecordDeserializationError(topic, partition, offset, "key", exc) from exc
            try:
                value = vd(raw_value) if vd is not None else raw_value
            except Exception as exc:
                raise RecordDeserializationError(topic, partition, offset, "value", exc) from exc
            out.append(
                _new_record(
                    ConsumerRecord,
                    (
                        topic,
                        partition,
                        offset,
                        rec.timestamp,
                        rec.timestamp_type,
                        key,
                        value,
                        tuple(rec.headers),
                        leader_epoch,
                        -1 if raw_key is None else len(raw_key),
                        -1 if raw_value is None else len(raw_value),
                    ),
                )
            )
            drain.position = offset + 1
            if len(out) >= wanted:
                break


def _fill_raw(
    records: Iterator[Any],
    out: list[ConsumerRecord],
    wanted: int,
    topic: str,
    partition: int,
    leader_epoch: int | None,
    position: int,
) -> int:
    """The hot loop: one tuple per record, nothing else. Returns the new position."""
    append = out.append
    record_type = ConsumerRecord
    for rec in records:
        offset = rec.offset
        if offset < position:
            continue
        key = rec.key
        value = rec.value
        headers = rec.headers
        append(
            _new_record(
                record_type,
                (
                    topic,
                    partition,
                    offset,
                    rec.timestamp,
                    rec.timestamp_type,
                    key,
                    value,
                    tuple(headers) if headers else _NO_HEADERS,
                    leader_epoch,
                    -1 if key is None else len(key),
                    -1 if value is None else len(value),
                ),
            )
        )
        position = offset + 1
        if len(out) >= wanted:
            break
    return position
