"""What the async and the blocking consumer share: argument checks, one event per call, and the caller's side of
``poll``.

Every method that needs the background returns a ``concurrent.futures.Future``; ``AsyncConsumer`` awaits it with
``asyncio.wrap_future`` and ``Consumer`` calls ``result()``. Nothing here touches a socket or anything the
background thread owns (``parts.owned``): what the caller knows of the background is its published snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar, cast

from asyncconsumer._background.builder import Components, build
from asyncconsumer._caller import arrow_table
from asyncconsumer._caller.fetch_collector import FetchCollector
from asyncconsumer._caller.lifecycle import ClientCore
from asyncconsumer._clock import Clock, SystemClock
from asyncconsumer._logs import get_logger
from asyncconsumer._patterns import server_side_regex
from asyncconsumer._state.snapshot import unreachable_nodes
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import (
    ConfigError,
    IllegalStateError,
    InvalidOffsetError,
    NoOffsetForPartitionError,
)
from asyncconsumer.events.application import (
    AssignEvent,
    CommitEvent,
    CommittedEvent,
    EnforceRebalanceEvent,
    ListOffsetsEvent,
    PauseEvent,
    PolledEvent,
    ResetPositionsEvent,
    SeekEvent,
    SetAutoCommitEvent,
    SetRebalanceHookEvent,
    SubscribeEvent,
    TopicMetadataEvent,
    UnsubscribeEvent,
    UpdatePositionsEvent,
)
from asyncconsumer.events.background import CallbackEvent, RebalanceEvent
from asyncconsumer.listener import ConsumerRebalanceListener
from asyncconsumer.metrics import ConsumerMetrics, PartitionMetrics, RateMeter
from asyncconsumer.protocol.constants import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from asyncconsumer.records import (
    ConsumerRecords,
    GroupMetadata,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    TopicPartition,
)

if TYPE_CHECKING:
    pass

log = get_logger("asyncconsumer.consumer")

T = TypeVar("T")
U = TypeVar("U")


def _chain(future: Future[T], fn: Callable[[T], U]) -> Future[U]:
    out: Future[U] = Future()

    def done(f: Future[T]) -> None:
        error = f.exception()
        if error is not None:
            out.set_exception(error)
            return
        try:
            out.set_result(fn(f.result()))
        except BaseException as exc:
            out.set_exception(exc)

    future.add_done_callback(done)
    return out


def to_partition(value: Any) -> TopicPartition:
    """Accepts a ``TopicPartition`` or a ``(topic, partition)`` pair; anything else is a ``TypeError``."""
    if isinstance(value, TopicPartition):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int):
        return TopicPartition(value[0], value[1])
    raise TypeError(f"expected a TopicPartition or (topic, partition), got {value!r}")


def _rebalance_call(
    target: ConsumerRebalanceListener, kind: str, partitions: frozenset[TopicPartition]
) -> Callable[[], Any]:
    """``target.on_partitions_<kind>`` with a set of its own (each callback may change what it is given)."""
    method = cast(Callable[[set[TopicPartition]], Any], getattr(target, f"on_partitions_{kind}"))
    return lambda: method(set(partitions))


class ConsumerCore(ClientCore[Components]):
    """One consumer's parts (``parts``, from ``builder.build``) and the calls both facades share."""

    def __init__(self, config: ConsumerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.settings = config
        self.clock: Clock = clock or SystemClock()
        self.parts = build(config, self.clock)
        self.subscriptions = self.parts.subscriptions
        self.collector = FetchCollector(config, self.subscriptions, self.parts.buffer)
        self.meter = RateMeter()
        self.parts.metrics_reader.read = self.metrics  # for the background's KIP-714 pushes, before it starts
        self.listener: ConsumerRebalanceListener | None = None
        """Set by ``subscribe`` on the caller's thread; read there only (callbacks run inside the caller's poll)."""
        self.rebalance_hook: ConsumerRebalanceListener | None = None
        """Set by ``set_rebalance_hook`` on the caller's thread; read there only. Runs before ``listener``."""
        self.auto_commit = config.enable_auto_commit
        """Whether the caller's side commits positions before leaving (``unsubscribe``, ``close``): the config's
        ``enable_auto_commit`` until ``set_auto_commit``. The background keeps its own flag (the commit manager's)."""
        self._init_lifecycle()

    def _log_started(self) -> None:
        log.info("consumer.started", client_id=self.config.client_id, bootstrap=",".join(self.config.bootstrap_servers))

    def _log_closed(self, timed_out: float | None) -> None:
        if timed_out is not None:
            log.warning("consumer.close_timeout", timeout_s=timed_out)
        log.info("consumer.closed", client_id=self.config.client_id)

    # --- assignment and positions ----------------------------------------------------------------------------
    def assign(self, partitions: Iterable[Any]) -> Future[None]:
        tps = frozenset(to_partition(p) for p in partitions)
        for tp in tps:
            if not tp.topic or tp.partition < 0:
                raise IllegalStateError(f"invalid partition {tp!r}")
        return self.submit(AssignEvent(partitions=tps, deadline_ms=self.deadline(None)))

    def seek(self, partition: Any, offset: int) -> Future[None]:
        tp = to_partition(partition)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidOffsetError(f"seek offset for {tp} must be an integer >= 0, got {offset!r}")
        self.subscriptions.require_assigned([tp])
        return self.submit(SeekEvent(tp=tp, offset=offset, deadline_ms=self.deadline(None)))

    def reset_positions(self, partitions: Iterable[Any], strategy: str) -> Future[None]:
        tps = frozenset(to_partition(p) for p in partitions) or frozenset(self.subscriptions.assigned())
        self.subscriptions.require_assigned(tps)
        return self.submit(ResetPositionsEvent(partitions=tps, strategy=strategy, deadline_ms=self.deadline(None)))

    def position(self, partition: Any, timeout_ms: int | None) -> Future[int]:
        tp = to_partition(partition)
        known = self.subscriptions.position(tp)
        if known is not None:
            done: Future[int] = Future()
            done.set_result(known)
            return done
        event = UpdatePositionsEvent(partitions=frozenset([tp]), deadline_ms=self.deadline(timeout_ms))
        return _chain(self.submit(event), lambda _: self._known_position(tp))

    def _known_position(self, tp: TopicPartition) -> int:
        position = self.subscriptions.position(tp)
        if position is None:
            raise NoOffsetForPartitionError([tp])
        return position

    def set_paused(self, partitions: Iterable[Any], paused: bool) -> Future[None]:
        tps = frozenset(to_partition(p) for p in partitions)
        self.subscriptions.require_assigned(tps)
        done = self.submit(PauseEvent(partitions=tps, paused=paused, deadline_ms=self.deadline(None)))
        if not paused:
            # A poll waiting now hands out what the pause kept for these at once, not when the next fetch lands.
            done.add_done_callback(lambda _: self.parts.signal.notify())
        return done

    # --- offsets and metadata --------------------------------------------------------------------------------
    def list_offsets(
        self, timestamps: Mapping[Any, int], timeout_ms: int | None
    ) -> Future[dict[TopicPartition, OffsetAndTimestamp | None]]:
        checked: dict[TopicPartition, int] = {}
        for key, ts in timestamps.items():
            tp = to_partition(key)
            if not isinstance(ts, int) or isinstance(ts, bool) or ts < -2:
                raise InvalidOffsetError(f"timestamp for {tp} must be an integer >= 0, got {ts!r}")
            checked[tp] = ts
        return self.submit(ListOffsetsEvent(timestamps=checked, deadline_ms=self.deadline(timeout_ms)))

    def edge_offsets(
        self, partitions: Iterable[Any], latest: bool, timeout_ms: int | None
    ) -> Future[dict[TopicPartition, int]]:
        ts = LATEST_TIMESTAMP if latest else EARLIEST_TIMESTAMP
        future = self.list_offsets({to_partition(p): ts for p in partitions}, timeout_ms)
        return _chain(future, lambda result: {tp: (o.offset if o is not None else -1) for tp, o in result.items()})

    def offsets_for_times(
        self, timestamps: Mapping[Any, int], timeout_ms: int | None
    ) -> Future[dict[TopicPartition, OffsetAndTimestamp | None]]:
        for key, ts in timestamps.items():
            if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
                raise InvalidOffsetError(f"timestamp for {to_partition(key)} must be an integer >= 0, got {ts!r}")
        return self.list_offsets(timestamps, timeout_ms)

    def topic_metadata(self, topic: str | None, timeout_ms: int | None) -> Future[dict[str, list[PartitionInfo]]]:
        if topic is not None and (not isinstance(topic, str) or not topic):
            raise TypeError(f"topic must be a non-empty string, got {topic!r}")
        return self.submit(TopicMetadataEvent(topic=topic, deadline_ms=self.deadline(timeout_ms)))

    # --- polling ---------------------------------------------------------------------------------------------
    def take_background_events(self) -> list[RebalanceEvent | CallbackEvent]:
        """Callbacks to run, in order, up to the first error, which is raised (the rest wait)."""
        return [e for e in self.events_until_error() if isinstance(e, (RebalanceEvent, CallbackEvent))]

    def callbacks_for(self, event: RebalanceEvent | CallbackEvent) -> list[Callable[[], Any]]:
        """What to call on the caller's side for ``event``, in order (the facade awaits each one that returns an
        awaitable before it calls the next): for a rebalance, the rebalance hook's method, then the listener's."""
        if isinstance(event, CallbackEvent):
            return [event.call]
        listener = self.listener if self.listener is not None else ConsumerRebalanceListener()
        return [
            _rebalance_call(target, event.kind, event.partitions)
            for target in (self.rebalance_hook, listener)
            if target is not None
        ]

    def commit_async(
        self,
        offsets: Mapping[Any, Any] | None,
        callback: Callable[[Mapping[Any, Any] | None, BaseException | None], Any] | None,
    ) -> None:
        future = self.commit(offsets, None)
        if callback is None:
            return

        def done(f: Future[None]) -> None:
            error = f.exception()
            self.parts.background_events.put(CallbackEvent(lambda: callback(offsets, error)))

        future.add_done_callback(done)

    def callback_done(self, event: RebalanceEvent | CallbackEvent) -> None:
        if isinstance(event, RebalanceEvent):
            if not event.done.done():
                event.done.set_result(None)
            self.parts.thread.wakeup()

    def note_poll(self) -> None:
        if self.config.group_id is None:
            return
        self.parts.activity.last_poll_ms = self.clock.now_ms()
        if self.parts.published.current.rejoin_on_poll:
            self.parts.app_events.put(PolledEvent(deadline_ms=self.deadline(None)))

    # --- groups ----------------------------------------------------------------------------------------------
    def subscribe(
        self,
        topics: Iterable[str] | None,
        pattern: str | re.Pattern[str] | None,
        listener: ConsumerRebalanceListener | None,
    ) -> Future[None]:
        if (topics is None) == (pattern is None):
            raise TypeError("subscribe() takes topics or pattern (exactly one)")
        names: frozenset[str] = frozenset()
        compiled: re.Pattern[str] | None = None
        if topics is not None:
            names = frozenset(topics)
            if isinstance(topics, str) or not names or not all(isinstance(t, str) and t for t in names):
                raise TypeError(f"subscribe() takes a non-empty collection of topic names, got {topics!r}")
        else:
            try:
                compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
            except re.error as exc:
                raise ConfigError("pattern", f"not a regular expression: {exc}") from exc
        if self.config.group_id is None:
            raise IllegalStateError("subscribe() needs a consumer group: set group_id")
        if compiled is not None and self.config.group_protocol == "consumer":
            server_side_regex(compiled)  # a flag the coordinator cannot be told is a ConfigError now, not later
        self.listener = listener
        event = SubscribeEvent(
            topics=names, pattern=compiled, has_listener=listener is not None, deadline_ms=self.deadline(None)
        )
        return self.submit(event)

    def revoke_callbacks_before_leaving(self) -> list[Callable[[], Any]]:
        """Java runs ``on_partitions_revoked`` on the caller's thread in ``unsubscribe`` and ``close``: these are the
        rebalance hook's, then the listener's (none without either, or without partitions)."""
        if self.config.group_id is None or self.subscriptions.subscription is None:
            return []
        assigned = frozenset(self.subscriptions.assigned())
        if not assigned:
            return []
        return [
            _rebalance_call(target, "revoked", assigned)
            for target in (self.rebalance_hook, self.listener)
            if target is not None
        ]

    # --- internal calls for the caller's own engines (not public) ---------------------------------------------
    def set_auto_commit(self, enabled: bool) -> Future[None]:
        """Auto-commit of the positions on or off while the consumer runs, whatever ``enable_auto_commit`` said.

        Off means none of these commits the positions: the interval's auto-commit, the commit before a revocation,
        the commit before leaving (``unsubscribe``, ``close``: this side's flag, changed at once) and the background's
        last commit on close. The future completes once the background holds the change and, when switched off,
        once no auto-commit of the positions is in flight any more: a commit made after it is never overwritten by
        an auto-commit. On, the interval counts from then. Without a group there is nothing to auto-commit (the
        future completes at once). Starts the background, like every call that needs it.
        """
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, got {enabled!r}")
        self._check_open()
        self.auto_commit = enabled
        return self.submit(SetAutoCommitEvent(enabled=enabled, deadline_ms=self.deadline(None)))

    def set_rebalance_hook(self, hook: ConsumerRebalanceListener | None) -> Future[None]:
        """Installs (or, with None, removes) a rebalance hook: a listener whose callbacks run inside ``poll`` on the
        caller's side before the user's listener, for every assignment, revocation and loss, whether ``subscribe``
        was given a listener or not, and before a ``subscribe`` or after it alike.

        Installed at once on this side: a rebalance event already on its way is run with the hook too. The future
        completes once the background routes every later rebalance to the caller (from then on none goes by
        unheard). As for a listener, the group waits for the callbacks of a revocation before the partitions go,
        so the hook may commit from inside ``on_partitions_revoked`` (after the commit-before-revoke when
        auto-commit is on; none when it is off).
        """
        if hook is not None and not isinstance(hook, ConsumerRebalanceListener):
            raise TypeError(f"hook must be a ConsumerRebalanceListener or None, got {hook!r}")
        self._check_open()
        self.rebalance_hook = hook
        return self.submit(SetRebalanceHookEvent(installed=hook is not None, deadline_ms=self.deadline(None)))

    def unsubscribe(self) -> Future[None]:
        return self.submit(UnsubscribeEvent(deadline_ms=self.deadline(None)))

    def commit(self, offsets: Mapping[Any, Any] | None, timeout_ms: int | None) -> Future[None]:
        chosen: dict[TopicPartition, OffsetAndMetadata] | None = None
        if offsets is not None:
            chosen = {}
            for key, value in offsets.items():
                tp = to_partition(key)
                committed = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                if not isinstance(committed.offset, int) or committed.offset < 0:
                    raise InvalidOffsetError(
                        f"commit offset for {tp} must be an integer >= 0, got {committed.offset!r}"
                    )
                chosen[tp] = committed
        return self.submit(CommitEvent(offsets=chosen, deadline_ms=self.deadline(timeout_ms)))

    def committed(
        self, partitions: Iterable[Any], timeout_ms: int | None
    ) -> Future[dict[TopicPartition, OffsetAndMetadata | None]]:
        tps = frozenset(to_partition(p) for p in partitions)
        return self.submit(CommittedEvent(partitions=tps, deadline_ms=self.deadline(timeout_ms)))

    def enforce_rebalance(self, reason: str | None) -> None:
        """Asks the group for a rebalance (classic protocol) and returns at once, as Java's ``enforceRebalance``."""
        if self.config.group_id is None or self.subscriptions.subscription is None:
            raise IllegalStateError("enforce_rebalance() needs a group subscription: call subscribe() first")
        if self.config.group_protocol == "consumer":
            # Java's consumer ignores it there too: the coordinator decides every assignment.
            log.warning("consumer.enforce_rebalance_ignored", group_protocol="consumer")
            return
        why = f"enforce_rebalance(): {reason}" if reason else "enforce_rebalance() was called"
        self.submit(EnforceRebalanceEvent(reason=why, deadline_ms=self.deadline(None)))

    def current_lag(self, partition: Any) -> int | None:
        """Records between the position and the end the last fetch reported (the last stable offset under
        ``read_committed``); None while either is unknown. No request is made (Java's ``currentLag``)."""
        tp = to_partition(partition)
        self.subscriptions.require_assigned([tp])
        position = self.subscriptions.position(tp)
        if self.config.isolation_level == "read_committed":
            end = self.subscriptions.last_stable_offset(tp)
        else:
            end = self.subscriptions.high_watermark(tp)
        if position is None or end is None:
            return None
        return max(0, end - position)

    def group_metadata(self) -> GroupMetadata:
        if self.config.group_id is None:
            raise IllegalStateError("group_metadata() needs a consumer group: set group_id")
        snapshot = self.parts.published.current
        return GroupMetadata(
            self.config.group_id, snapshot.generation_id, snapshot.member_id, snapshot.group_instance_id
        )

    def begin_poll(self, timeout_ms: float, max_records: int | None) -> int:
        """Checks a ``poll``'s arguments and the consumer's state, starts it if need be; returns the deadline."""
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)):
            raise TypeError(f"timeout_ms must be a number of milliseconds, got {timeout_ms!r}")
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms!r}")
        if max_records is not None and (isinstance(max_records, bool) or not isinstance(max_records, int)):
            raise TypeError(f"max_records must be an integer, got {max_records!r}")
        self._check_open()
        if self.subscriptions.subscription is None and not self.subscriptions.assigned():
            raise IllegalStateError("poll() needs a subscription or an assignment: call subscribe() or assign() first")
        self.start()
        self.note_poll()
        return self.clock.now_ms() + int(timeout_ms)

    def poll_step(self, max_records: int | None, deadline_ms: int) -> tuple[ConsumerRecords, int, float]:
        """One ``poll`` attempt: the records (maybe none), the signal value seen before, and seconds left to wait."""
        seen = self.parts.signal.seq
        records = self.poll_once(max_records)
        return records, seen, (deadline_ms - self.clock.now_ms()) / 1000

    def poll_once(self, max_records: int | None) -> ConsumerRecords:
        """Raises what the background reported, then returns whatever is buffered (possibly nothing).

        Rebalance callbacks must have been run by the facade first (``take_background_events``).
        """
        records = ConsumerRecords(self.collector.collect(self._poll_limit(max_records)))
        self._sample()
        return records

    def poll_arrow_step(
        self, max_records: int | None, include_headers: bool, deadline_ms: int
    ) -> tuple[Any, int, float]:
        """``poll_step`` for ``poll_arrow``: a ``pyarrow.Table`` (maybe of no rows) instead of records."""
        seen = self.parts.signal.seq
        chunks, topics = self.collector.collect_columns(self._poll_limit(max_records), include_headers)
        self._sample()
        return arrow_table.to_table(chunks, topics, include_headers), seen, (deadline_ms - self.clock.now_ms()) / 1000

    def _poll_limit(self, max_records: int | None) -> int:
        self._check_open()
        missing = self.subscriptions.without_position_and_no_reset()
        if missing:
            raise NoOffsetForPartitionError(sorted(missing))
        limit = self.config.max_poll_records if max_records is None else max_records
        if limit <= 0:
            raise ValueError(f"max_records must be positive, got {limit}")
        return limit

    def _sample(self) -> None:
        collector = self.collector
        self.meter.sample(self.clock.now_ms(), collector.records_returned, collector.bytes_returned)

    # --- observability ---------------------------------------------------------------------------------------
    def metrics(self) -> ConsumerMetrics:
        """The caller's counters and the shared state, with the background's latest published snapshot."""
        now = self.clock.now_ms()
        collector = self.collector
        records_rate, bytes_rate = self.meter.rates(now, collector.records_returned, collector.bytes_returned)
        background = self.parts.published.current
        partitions: dict[TopicPartition, PartitionMetrics] = {}
        for tp in sorted(self.subscriptions.assigned()):
            position = self.subscriptions.position(tp)
            high = self.subscriptions.high_watermark(tp)
            lag = None if position is None or high is None else max(0, high - position)
            partitions[tp] = PartitionMetrics(
                position, high, lag, background.read_replicas.get(tp), background.fetched_from.get(tp)
            )
        last_heartbeat = background.last_heartbeat_ms
        return ConsumerMetrics(
            records_consumed_total=collector.records_returned,
            bytes_consumed_total=collector.bytes_returned,
            records_consumed_rate=records_rate,
            bytes_consumed_rate=bytes_rate,
            fetch_latency_avg_ms=background.fetch_latency_avg_ms,
            fetch_latency_max_ms=background.fetch_latency_max_ms,
            fetch_requests_in_flight=background.fetch_requests_in_flight,
            buffered_bytes=self.parts.buffer.buffered_bytes,
            fetch_buffer_limit_bytes=self.parts.buffer.limit,
            partitions=partitions,
            rebalances=background.rebalances,
            last_heartbeat_age_ms=None if last_heartbeat is None else now - last_heartbeat,
            coordinator_id=background.coordinator_id,
            connection_count=background.connection_count,
            last_connection_error=background.last_connection_error,
            connections_created=background.connections_created,
            connection_errors=background.connection_errors,
            commit_latency_avg_ms=background.commit_latency_avg_ms,
            commit_latency_max_ms=background.commit_latency_max_ms,
            commits=background.commits,
            rebootstraps=background.rebootstraps,
            rebootstrapping=background.rebootstrapping,
            fetch_requests_full=background.fetch_requests_full,
            fetch_requests_incremental=background.fetch_requests_incremental,
            fetch_session_errors=background.fetch_session_errors,
            plugins={name: store.snapshot() for name, store in self.parts.plugin_metrics.items()},
            unreachable_nodes=unreachable_nodes(background.unreachable_nodes, now, self.wall_clock()),
        )
