"""What the async and the blocking share consumer share: argument checks, the records each ``poll`` handed out,
the acknowledgements made of them, and one event per call.

The caller's side keeps, per partition, the offsets the last ``poll`` returned that are not yet acknowledged
(``in_flight``) and the acknowledgements not yet sent (``acks``). In implicit mode a ``poll``, commit or close
accepts everything in flight; in explicit mode the caller acknowledges each record and ``poll`` refuses while one is
left. Acknowledgements leave with the next ``poll`` (riding on a ShareFetch) or at once with a commit.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future
from typing import Any

from asyncconsumer._background.builder import ShareComponents, build_share
from asyncconsumer._caller.lifecycle import ClientCore
from asyncconsumer._caller.share_collector import ShareCollector
from asyncconsumer._clock import Clock, SystemClock
from asyncconsumer._logs import get_logger
from asyncconsumer._state.snapshot import unreachable_nodes
from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.errors import ClientClosedError, IllegalStateError, KafkaError
from asyncconsumer.events.background import AcknowledgedEvent
from asyncconsumer.events.share import ShareAcknowledgeEvent, ShareSubscribeEvent, ShareUnsubscribeEvent
from asyncconsumer.metrics import RateMeter, ShareConsumerMetrics
from asyncconsumer.records import AcknowledgeType, ShareRecord, ShareRecords, TopicPartition

log = get_logger("asyncconsumer.share")

_GAP = 0
_RENEW = AcknowledgeType.RENEW
_NOTHING_WAITS: set[int] = set()
"""What waits of a partition no record of which does (never added to: ``remove`` from it raises first)."""

AcknowledgementCommitCallback = Callable[[dict[TopicPartition, set[int]], KafkaError | None], Any]
"""Called with the offsets of one partition's acknowledgements and ``None``, or the error that failed them; on the
caller's side, inside ``poll`` or a commit. An ``AsyncShareConsumer`` awaits what it returns if awaitable."""


class ShareCore(ClientCore[ShareComponents]):
    """One share consumer's parts and the calls both facades share."""

    NAME = "share consumer"

    def __init__(self, config: ShareConsumerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.settings = config.consumer
        self.clock: Clock = clock or SystemClock()
        self.parts = build_share(config, self.clock)
        self.collector = ShareCollector(self.settings, self.parts.buffer, self.parts.demand)
        self.meter = RateMeter()
        self.parts.metrics_reader.read = self.metrics  # for the background's KIP-714 pushes, before it starts
        self.explicit = config.share_acknowledgement_mode == "explicit"
        self.subscribed: frozenset[str] = frozenset()
        self._in_flight: dict[TopicPartition, set[int]] = {}
        self._acks: dict[TopicPartition, dict[int, int]] = {}
        self._last_acknowledged: tuple[str, int, set[int], dict[int, int]] | None = None
        """``acknowledge``'s last partition, its offsets in flight and its acknowledgements: records come in runs of
        one partition, so the next call usually skips both lookups. Reset whenever either mapping changes hands."""
        self.callback: AcknowledgementCommitCallback | None = None
        self.acknowledged = [0] * (max(AcknowledgeType) + 1)
        """Acknowledgements the caller made, by wire value (a list: indexed once per record in explicit mode)."""
        self.acknowledgement_errors = 0
        self._init_lifecycle()

    @property
    def in_flight(self) -> dict[TopicPartition, set[int]]:
        """Offsets the last ``poll`` returned that are not acknowledged yet (caller's thread only)."""
        return self._in_flight

    @in_flight.setter
    def in_flight(self, value: dict[TopicPartition, set[int]]) -> None:
        self._in_flight = value
        self._last_acknowledged = None

    @property
    def acks(self) -> dict[TopicPartition, dict[int, int]]:
        """Acknowledgements made and not sent yet: partition -> offset -> type (caller's thread only)."""
        return self._acks

    @acks.setter
    def acks(self, value: dict[TopicPartition, dict[int, int]]) -> None:
        self._acks = value
        self._last_acknowledged = None

    def _log_started(self) -> None:
        log.info("share.started", group=self.config.group_id, client_id=self.settings.client_id)

    def _log_closed(self, timed_out: float | None) -> None:
        if timed_out is not None:
            log.warning("share.close_timeout", timeout_s=timed_out)
        log.info("share.closed", group=self.config.group_id)

    def prepare_close(self) -> Future[dict[TopicPartition, KafkaError | None]] | None:
        """Before leaving: implicit mode accepts what is in flight, explicit mode releases what was not
        acknowledged (delivered again at once, rather than after the lock times out), and so are records decoded
        but never returned; the commit of it all, or None if nothing is owed."""
        if not self.running:
            return None
        self.parts.demand.leaving = True
        self._settle_in_flight(AcknowledgeType.ACCEPT if not self.explicit else AcknowledgeType.RELEASE)
        for tp, offsets in self.collector.drop_all().items():
            self._add(tp, offsets, AcknowledgeType.RELEASE)
        self._take_collector_acks()
        if not self.acks:
            return None
        return self._commit_event(self.deadline(None)).future

    # --- subscription ----------------------------------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str]) -> Future[None]:
        if isinstance(topics, str):
            raise TypeError("subscribe() takes a list of topic names, not one string")
        names = frozenset(topics)
        for name in names:
            if not isinstance(name, str) or not name:
                raise TypeError(f"topic names are non-empty strings, got {name!r}")
        self._check_open()
        if not names:
            return self.unsubscribe()
        self.subscribed = names
        self.parts.demand.leaving = False
        return self.submit(ShareSubscribeEvent(topics=names, deadline_ms=self.deadline(None)))

    def unsubscribe(self) -> Future[None]:
        self._check_open()
        self.subscribed = frozenset()
        if not self.started:
            done: Future[None] = Future()
            done.set_result(None)
            return done
        self.parts.demand.leaving = True
        self._settle_in_flight(AcknowledgeType.ACCEPT if not self.explicit else AcknowledgeType.RELEASE)
        self._send_acks()
        return self.submit(ShareUnsubscribeEvent(deadline_ms=self.deadline(None)))

    # --- poll ----------------------------------------------------------------------------------------------------
    def begin_poll(self, timeout_ms: float) -> int:
        """Checks a ``poll``'s argument and state, settles the last poll's records; returns the deadline."""
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)):
            raise TypeError(f"timeout_ms must be a number of milliseconds, got {timeout_ms!r}")
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms!r}")
        self._check_open()
        if not self.subscribed:
            raise IllegalStateError("poll() needs a subscription: call subscribe() first")
        if self.explicit:
            left = sum(len(o) for o in self.in_flight.values())
            if left:
                raise IllegalStateError(
                    f"{left} record(s) from the last poll() are not acknowledged: with "
                    "share.acknowledgement.mode=explicit, acknowledge every record before polling again"
                )
        else:
            self._settle_in_flight(AcknowledgeType.ACCEPT)
        self.start()
        deadline = self.clock.now_ms() + int(timeout_ms)
        # The acknowledgements first, marked with this poll: the fetch it allows must carry them. A fetch sent
        # without them, for a partition whose locks they would free, finds records the broker cannot hand out; and
        # if the background saw them before the poll counted itself, they would go alone (one more round trip).
        demand = self.parts.demand
        poll = demand.polls + 1
        # While the caller still holds records it decoded, its polls hand out what is held and no fetch is due for
        # them (one is, once it has returned them all): their acknowledgements wait for the background's next turn
        # rather than waking it (a wake-up, and a turn for the GIL, per max_poll_records returned). The share
        # consume manager turns at least every ACK_RIDE_MS while records are held.
        wake = demand.held == 0
        sent = self._send_acks(poll, wake=wake)
        demand.waiting_until_ms = deadline
        demand.polls = poll
        if wake and not sent:
            self.parts.thread.wakeup()
        return deadline

    def end_poll(self) -> None:
        """The caller left ``poll``: fetch no more for it until the next."""
        self.parts.demand.waiting_until_ms = 0

    def poll_step(self, deadline_ms: int) -> tuple[ShareRecords, int, float]:
        seen = self.parts.signal.seq
        records = self.poll_once()
        return records, seen, (deadline_ms - self.clock.now_ms()) / 1000

    def poll_once(self) -> ShareRecords:
        """Raises what decoding or the background reported, else returns what is buffered (possibly nothing)."""
        self._check_open()
        if self.collector.errors:
            raise self.collector.errors.pop(0)
        by_partition = self.collector.collect(self.settings.max_poll_records)
        self._take_collector_acks()
        for tp, records in by_partition.items():
            self.in_flight.setdefault(tp, set()).update([r[2] for r in records])
        self.meter.sample(self.clock.now_ms(), self.collector.records_returned, self.collector.bytes_returned)
        if not by_partition and self.collector.errors:
            raise self.collector.errors.pop(0)
        return ShareRecords(by_partition)

    def take_background_events(self) -> list[AcknowledgedEvent]:
        """Acknowledgement results to report, up to the first error, which is raised (the rest wait)."""
        results = [e for e in self.events_until_error() if isinstance(e, AcknowledgedEvent)]
        self.acknowledgement_errors += sum(1 for e in results if e.error is not None)
        return results

    def callback_for(self, event: AcknowledgedEvent) -> Callable[[], Any] | None:
        callback = self.callback
        if callback is None:
            return None
        return lambda: callback({event.tp: set(event.offsets)}, event.error)

    # --- acknowledgements ------------------------------------------------------------------------------------------
    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Records one acknowledgement on the caller's side (the next ``poll`` or commit sends it): called once per
        record, so it checks only that the consumer is not closed, not the background thread (``poll`` does), and
        takes the common path (the record is waiting) without a lookup more than it needs. The faces bind it as
        their ``acknowledge``, so it keeps their signature (``type``, the wire's name)."""
        if self.closed:
            raise ClientClosedError(f"the {self.NAME} is closed")
        if not self.explicit:
            raise IllegalStateError(
                "acknowledge() needs share.acknowledgement.mode=explicit; in implicit mode each poll() accepts "
                "the records the last one returned"
            )
        if not isinstance(record, ShareRecord):
            raise TypeError(f"acknowledge() takes a ShareRecord from poll(), got {record.__class__.__name__}")
        if not isinstance(type, AcknowledgeType):
            raise TypeError(f"type must be an AcknowledgeType, got {type!r}")
        offset = record[2]
        last = self._last_acknowledged
        acks: dict[int, int] | None
        if last is not None and last[1] == record[1] and last[0] == record[0]:
            waiting, acks = last[2], last[3]
        else:
            # a tuple looks up as the TopicPartition it equals, without making one per record
            waiting, acks = self._in_flight.get((record[0], record[1]), _NOTHING_WAITS), None  # type: ignore[call-overload]
        try:
            if type is _RENEW:  # a renewed record still waits for its acknowledgement
                if offset not in waiting:
                    raise KeyError(offset)
            else:
                waiting.remove(offset)
        except KeyError:
            raise IllegalStateError(
                f"record {TopicPartition(record[0], record[1])} offset {offset} is not waiting for an "
                "acknowledgement: it was acknowledged already, or the last poll() did not return it to this consumer"
            ) from None
        if acks is None:
            key = (record[0], record[1])
            acks = self._acks.get(key)  # type: ignore[call-overload]
            if acks is None:
                acks = self._acks[TopicPartition(*key)] = {}
            self._last_acknowledged = (record[0], record[1], waiting, acks)
        if not waiting:
            del self._in_flight[(record[0], record[1])]  # type: ignore[arg-type]
            self._last_acknowledged = None
        acks[offset] = value = type._value_
        self.acknowledged[value] += 1

    def commit(self, timeout_ms: int | None) -> Future[dict[TopicPartition, KafkaError | None]]:
        """Sends every acknowledgement made (in implicit mode, of everything in flight) and completes with each
        partition's result."""
        self._check_open()
        if not self.explicit:
            self._settle_in_flight(AcknowledgeType.ACCEPT)
        self._take_collector_acks()
        if not self.acks:
            done: Future[dict[TopicPartition, KafkaError | None]] = Future()
            done.set_result({})
            return done
        return self._commit_event(self.deadline(timeout_ms)).future

    def _commit_event(self, deadline_ms: int) -> ShareAcknowledgeEvent:
        acks, self.acks = self.acks, {}
        event = ShareAcknowledgeEvent(acks=acks, commit=True, deadline_ms=deadline_ms)
        self.submit(event)
        return event

    def _settle_in_flight(self, ack_type: AcknowledgeType) -> None:
        for tp, offsets in self.in_flight.items():
            self._add(tp, offsets, ack_type)
        self.in_flight = {}

    def _add(self, tp: TopicPartition, offsets: Collection[int], ack_type: AcknowledgeType) -> None:
        if not offsets:
            return
        self.acks.setdefault(tp, {}).update(dict.fromkeys(offsets, int(ack_type)))
        self.acknowledged[ack_type] += len(offsets)

    def _take_collector_acks(self) -> None:
        collector = self.collector
        if collector.gaps:
            for tp, offsets in collector.gaps.items():
                acks = self.acks.setdefault(tp, {})
                for offset in offsets:
                    acks[offset] = _GAP
            collector.gaps = {}
        if collector.released:
            for tp, offsets in collector.released.items():
                self._add(tp, offsets, AcknowledgeType.RELEASE)
            collector.released = {}

    def _send_acks(self, poll: int = 0, *, wake: bool = True) -> bool:
        """Sends the acknowledgements made (they ride on the next fetch: ``poll``'s, from ``begin_poll``), waking
        the background only with ``wake``; True if there were some."""
        self._take_collector_acks()
        if not self.acks or not self.running:
            return False
        acks, self.acks = self.acks, {}
        if poll:
            self.parts.demand.acks_poll = poll  # before the event: the background must not fetch for poll without it
        event = ShareAcknowledgeEvent(acks=acks, commit=False, poll=poll, deadline_ms=self.deadline(None))
        self.parts.app_events.put(event, wake=wake)
        return True

    # --- observability -----------------------------------------------------------------------------------------------
    def acquisition_lock_timeout_ms(self) -> int | None:
        return self.parts.published.current.acquisition_lock_timeout_ms

    def metrics(self) -> ShareConsumerMetrics:
        now = self.clock.now_ms()
        collector = self.collector
        records_rate, bytes_rate = self.meter.rates(now, collector.records_returned, collector.bytes_returned)
        b = self.parts.published.current
        return ShareConsumerMetrics(
            records_consumed_total=collector.records_returned,
            bytes_consumed_total=collector.bytes_returned,
            records_consumed_rate=records_rate,
            bytes_consumed_rate=bytes_rate,
            acknowledgements={t.name.lower(): self.acknowledged[t] for t in AcknowledgeType},
            acknowledgement_errors=self.acknowledgement_errors,
            records_in_flight=sum(map(len, list(self.in_flight.values()))),  # a copy: read from any thread
            records_held=collector.held,
            member_id=b.member_id,
            member_epoch=b.member_epoch,
            member_state=b.member_state,
            assignment=frozenset(b.assignment),
            coordinator_id=b.coordinator_id,
            last_heartbeat_age_ms=None if b.last_heartbeat_ms is None else now - b.last_heartbeat_ms,
            acquisition_lock_timeout_ms=b.acquisition_lock_timeout_ms,
            share_fetches=b.share_fetches,
            records_acquired=b.records_acquired,
            connection_count=b.connection_count,
            last_connection_error=b.last_connection_error,
            acknowledgements_sent=b.acknowledgements_sent,
            connections_created=b.connections_created,
            buffered_bytes=self.parts.buffer.buffered_bytes,
            fetch_buffer_limit_bytes=self.parts.buffer.limit,
            unreachable_nodes=unreachable_nodes(b.unreachable_nodes, now, self.wall_clock()),
        )
