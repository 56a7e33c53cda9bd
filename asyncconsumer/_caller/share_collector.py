"""Caller side of a share consumer's record path: acquired ranges decoded into ``ShareRecord``s.

A share fetch brings whole batches, but only the offsets the broker acquired for this member are its to deliver,
each with the delivery count of its range. Decoding runs in the caller's ``poll`` with the consumer's decoder (CRC
checks, decompression, the C record builder); what one poll does not take waits, still acquired, for the next.
Acquired offsets that hold no record (a transaction's markers, compacted records) come back as ``gaps``: the broker
must hear of them too (acknowledge type GAP), or it would deliver them again.
"""

from __future__ import annotations

import gc
from bisect import bisect_left, bisect_right
from collections import deque

from asyncconsumer._state.fetch_buffer import CompletedFetch, FetchBuffer
from asyncconsumer._state.snapshot import ShareDemand
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import CorruptRecordError, KafkaError, RecordDeserializationError
from asyncconsumer.protocol.records import BatchError, iter_batches
from asyncconsumer.protocol.v2decode import DecodeError, fill_records
from asyncconsumer.records import ConsumerRecord, ShareRecord, TopicPartition

_ALL = 1 << 62


class ShareCollector:
    """Turns buffered share fetches into ``ShareRecord``s, at most ``max_records`` per ``collect``."""

    def __init__(self, config: ConsumerConfig, buffer: FetchBuffer, demand: ShareDemand | None = None) -> None:
        self._buffer = buffer
        self._demand = demand if demand is not None else ShareDemand()
        """Told how many decoded records wait (``held``) before a fetch's bytes are released: the release wakes the
        background, which must not take an empty buffer for a caller with nothing left."""
        self._check_crcs = config.check_crcs
        self._max_batch_bytes = config.receive_message_max_bytes
        self._kd = config.key_deserializer
        self._vd = config.value_deserializer
        self._pause_gc = config.pause_gc_during_poll
        self._ready: deque[tuple[TopicPartition, list[ShareRecord]]] = deque()
        """Decoded records not yet returned, by partition, in arrival order (each list in offset order)."""
        self.gaps: dict[TopicPartition, list[int]] = {}
        """Acquired offsets without a record, for the caller to acknowledge as GAP: filled by ``collect``."""
        self.released: dict[TopicPartition, list[int]] = {}
        """Acquired offsets whose record could not be decoded or deserialized: to be released (they come back
        with a higher delivery count, and the broker archives them at its delivery limit)."""
        self.errors: list[KafkaError] = []
        """What decoding met, for the caller to raise (one per ``poll``)."""
        self.records_returned = 0
        self.bytes_returned = 0

    @property
    def held(self) -> int:
        """Records decoded and waiting for a later ``poll``; read from a copy, so ``metrics()`` is safe from any
        thread (KIP-714 pushes read it on the background's)."""
        return sum(len(records) for _, records in list(self._ready))

    def collect(self, max_records: int) -> dict[TopicPartition, list[ShareRecord]]:
        paused = self._pause_gc and gc.isenabled()
        if paused:
            gc.disable()
        try:
            return self._collect(max_records)
        finally:
            if paused:
                gc.enable()

    def _collect(self, max_records: int) -> dict[TopicPartition, list[ShareRecord]]:
        out: dict[TopicPartition, list[ShareRecord]] = {}
        left = max_records
        while left > 0:
            if not self._ready:
                # everything buffered is decoded at once: a response's partitions arrive together, and the buffer
                # must be empty for the background to send the fetch ahead while the caller works through them
                fetch = self._buffer.take()
                if fetch is None:
                    break
                while fetch is not None:
                    try:
                        self._decode(fetch)
                    finally:
                        self._demand.held = self.held
                        self._buffer.release(fetch)
                        self.bytes_returned += fetch.size
                    fetch = self._buffer.take()
                continue
            tp, records = self._ready[0]
            if len(records) <= left:
                self._ready.popleft()
                taken = records
            else:
                taken, self._ready[0] = records[:left], (tp, records[left:])
            out.setdefault(tp, []).extend(taken)
            left -= len(taken)
        self._demand.held = self.held
        self.records_returned += max_records - left
        self._buffer.poll_done(max_records - left, left > 0)
        return out

    def _decode(self, fetch: CompletedFetch) -> None:
        tp = fetch.tp
        topic, partition = tp
        ranges = sorted((a.first_offset, a.last_offset, a.delivery_count) for a in fetch.acquired)
        if not ranges:
            return
        kd, vd = self._kd, self._vd
        # the usual case -- raw values, every range delivered as often -- makes the ShareRecords in the decoder
        count = ranges[0][2]
        made = kd is None and vd is None and all(r[2] == count for r in ranges)
        record_type, extra = (ShareRecord, count) if made else (ConsumerRecord, None)
        raw: list[ConsumerRecord] = []
        try:
            for batch in iter_batches(fetch.records):
                if batch.next_offset <= ranges[0][0] or batch.is_control:
                    continue
                if batch.magic < 2:
                    raise BatchError(batch.base_offset, "message format v0/v1 is not supported by share consumers")
                data = batch.plain(self._check_crcs, self._max_batch_bytes)
                fill_records(
                    data, -1, 0, ranges[0][0], _ALL, raw, record_type, topic, partition, batch.leader_epoch, extra
                )
        except (BatchError, DecodeError) as exc:
            # from the first offset not decoded: a legacy wrapper's error names its last inner offset, not its first
            resume = raw[-1].offset + 1 if raw else ranges[0][0]
            offset = min(exc.offset, resume)
            self.errors.append(CorruptRecordError(topic, partition, offset, getattr(exc, "reason", str(exc))))
            # what was not decoded is released: delivered again, and archived by the broker at its delivery limit
            decoded = {r.offset for r in raw}
            self.released.setdefault(tp, []).extend(
                o for first, last, _ in ranges for o in range(first, last + 1) if o not in decoded and o >= offset
            )
            ranges_end = offset
        else:
            ranges_end = ranges[-1][1] + 1
        if kd is None and vd is None:
            self._take_raw(tp, raw, ranges, ranges_end, made)
            return
        records: list[ShareRecord] = []
        seen: set[int] = set()
        i = 0
        for rec in raw:
            offset = rec.offset
            while i < len(ranges) and ranges[i][1] < offset:
                i += 1
            if i == len(ranges):
                break
            first, _, count = ranges[i]
            if offset < first or offset >= ranges_end:
                continue
            seen.add(offset)
            if kd is not None or vd is not None:
                part = "key"
                try:
                    key = kd(rec.key) if kd is not None else rec.key
                    part = "value"
                    value = vd(rec.value) if vd is not None else rec.value
                except Exception as exc:
                    error = RecordDeserializationError(topic, partition, offset, part, exc)
                    error.__cause__ = exc
                    self.errors.append(error)
                    self.released.setdefault(tp, []).append(offset)
                    continue
                rec = rec._replace(key=key, value=value)
            records.append(ShareRecord(*rec, count))
        gaps = [o for first, last, _ in ranges for o in range(first, min(last + 1, ranges_end)) if o not in seen]
        released = set(self.released.get(tp, ()))
        gaps = [o for o in gaps if o not in released]
        if gaps:
            self.gaps.setdefault(tp, []).extend(gaps)
        if records:
            self._ready.append((tp, records))

    def _take_raw(
        self, tp: TopicPartition, raw: list[ConsumerRecord], ranges: list[tuple[int, int, int]], end: int, made: bool
    ) -> None:
        """The records of each acquired range as they were decoded (no deserializers): a slice of ``raw`` per range
        (``made``: ShareRecords already, else given their range's delivery count), and a range's gaps looked for
        only when it holds fewer records than offsets."""
        offsets = [r[2] for r in raw]
        records: list[ShareRecord] = []
        gaps: list[int] = []
        released = self.released.get(tp)
        make = tuple.__new__
        for first, last, count in ranges:
            last = min(last, end - 1)
            if last < first:
                continue
            lo, hi = bisect_left(offsets, first), bisect_right(offsets, last)
            if made:
                records += raw[lo:hi]  # type: ignore[arg-type]
            else:
                suffix = (count,)
                records += [make(ShareRecord, r + suffix) for r in raw[lo:hi]]
            if hi - lo != last - first + 1:
                present = set(offsets[lo:hi])
                if released:
                    present.update(released)
                gaps += [o for o in range(first, last + 1) if o not in present]
        if gaps:
            self.gaps.setdefault(tp, []).extend(gaps)
        if records:
            self._ready.append((tp, records))

    def drop_all(self) -> dict[TopicPartition, list[int]]:
        """Records decoded but never returned (the consumer is closing): their offsets, to be released."""
        dropped: dict[TopicPartition, list[int]] = {}
        while self._ready:
            tp, records = self._ready.popleft()
            dropped.setdefault(tp, []).extend(r.offset for r in records)
        while (fetch := self._buffer.take()) is not None:
            self._buffer.release(fetch)
            for a in fetch.acquired:
                dropped.setdefault(fetch.tp, []).extend(range(a.first_offset, a.last_offset + 1))
        return dropped
