"""ListOffsets: answers ``beginning_offsets``/``end_offsets``/``offsets_for_times`` and resets positions.

Requests go to each partition's leader. Retriable errors refresh metadata and retry after a backoff until the
caller's deadline; an unknown topic fails a caller's lookup at once with an error naming it. A position reset reports
an assigned topic (or partition) the metadata does not know once it has stayed unknown for
``UNKNOWN_TOPIC_GRACE_MS``, and keeps retrying.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer._offset_reset import BY_DURATION, parse_duration_ms
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import (
    ErrorCode,
    KafkaError,
    NoOffsetForPartitionError,
    UnknownTopicOrPartitionError,
    for_code,
)
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.constants import CONSUMER_REPLICA_ID, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from asyncconsumer.records import OffsetAndTimestamp, TopicPartition

log = get_logger("asyncconsumer.offsets")

OffsetsResult = dict[TopicPartition, OffsetAndTimestamp | None]
UNKNOWN_TOPIC_GRACE_MS = 3_000
"""How long an assigned topic stays unknown to the metadata before a reset reports it to the caller: in a cluster,
a broker learns a new topic a moment after the controller created it and answers UNKNOWN_TOPIC_OR_PARTITION
meanwhile (seen on a busy 3-node cluster), which is no reason to raise from ``poll`` (Java's consumer never does)."""


def reset_timestamp(strategy: str, wall_ms: int) -> int | None:
    """The ListOffsets timestamp a reset by ``strategy`` asks for at ``wall_ms`` (Unix milliseconds); None for a
    strategy no lookup answers (``none``, or the consumer's own ``committed``)."""
    if strategy == "earliest":
        return EARLIEST_TIMESTAMP
    if strategy == "latest":
        return LATEST_TIMESTAMP
    if strategy.startswith(BY_DURATION):
        return max(0, wall_ms - parse_duration_ms(strategy[len(BY_DURATION) :]))
    return None


@attrs.define(slots=True)
class _Job:
    """One caller request for offsets, answered partition by partition."""

    timestamps: dict[TopicPartition, int]
    on_done: Callable[[OffsetsResult], None]
    on_error: Callable[[KafkaError], None]
    results: OffsetsResult = attrs.field(factory=dict)
    in_flight: set[TopicPartition] = attrs.field(factory=set)
    retry_at_ms: int = 0
    attempts: int = 0
    done: bool = False

    def pending(self) -> list[TopicPartition]:
        return [tp for tp in self.timestamps if tp not in self.results and tp not in self.in_flight]

    def fail(self, error: KafkaError) -> None:
        if not self.done:
            self.done = True
            self.on_error(error)


@attrs.define(slots=True)
class _PositionWaiter:
    partitions: frozenset[TopicPartition]
    on_done: Callable[[], None]
    on_error: Callable[[KafkaError], None]


class OffsetsManager:
    """Sends ListOffsets for caller jobs and for partitions that await a position reset."""

    def __init__(
        self,
        subscriptions: SubscriptionState,
        metadata: MetadataManager,
        isolation_level: str,
        backoff: ExponentialBackoff,
        emit: Callable[[ErrorEvent], None],
        unix_offset_ms: int = 0,
    ) -> None:
        self._subs = subscriptions
        self._unix_offset_ms = unix_offset_ms
        """``now_ms`` + this is Unix milliseconds: a ``by_duration`` reset asks for the first record since then less
        the duration."""
        self._metadata = metadata
        self._isolation = 1 if isolation_level == "read_committed" else 0
        self._backoff = backoff
        self._emit = emit
        self._jobs: list[_Job] = []
        self._resets_in_flight: set[TopicPartition] = set()
        self._reset_retry_at: dict[TopicPartition, int] = {}
        self._reset_attempts: dict[TopicPartition, int] = {}
        self._position_waiters: list[_PositionWaiter] = []
        self._reported_unknown: set[str] = set()
        self._unknown_since: dict[str, int] = {}
        """Assigned topic -> when a reset first found it unknown (since it was last known)."""
        self._assignment_version = -1

    # --- caller requests -----------------------------------------------------------------------------------
    def list_offsets(
        self,
        timestamps: dict[TopicPartition, int],
        on_done: Callable[[OffsetsResult], None],
        on_error: Callable[[KafkaError], None],
    ) -> None:
        if not timestamps:
            on_done({})
            return
        self._jobs.append(_Job(dict(timestamps), on_done, on_error))
        self._metadata.set_topics(self._subs.topics() | {tp.topic for tp in timestamps})

    def await_positions(
        self, partitions: frozenset[TopicPartition], on_done: Callable[[], None], on_error: Callable[[KafkaError], None]
    ) -> None:
        self._position_waiters.append(_PositionWaiter(partitions, on_done, on_error))
        self._check_position_waiters()

    # --- the manager contract -------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        if self._assignment_version != self._subs.assignment_version:
            self._assignment_version = self._subs.assignment_version
            self._reported_unknown.clear()
            self._unknown_since.clear()
        self._check_position_waiters()
        requests: list[UnsentRequest] = []
        wait = 5_000
        cluster = self._metadata.cluster

        # Caller jobs.
        for job in self._jobs:
            if job.done:
                continue
            if now_ms < job.retry_at_ms:
                wait = min(wait, job.retry_at_ms - now_ms)
                continue
            by_leader: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
            for tp in job.pending():
                leader = cluster.leader_for(tp)
                if leader is None:
                    unknown = self._unknown_error(tp)
                    if unknown is not None:
                        job.fail(unknown)
                        break
                    self._metadata.request_update()
                    continue
                by_leader[leader][tp] = job.timestamps[tp]
            if job.done:
                continue
            for leader, timestamps in by_leader.items():
                job.in_flight |= timestamps.keys()
                requests.append(self._request(leader, timestamps, self._job_callback(job, timestamps)))
        self._jobs = [job for job in self._jobs if not job.done]

        # Position resets.
        by_leader_reset: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        epochs: dict[TopicPartition, int] = {}
        for tp, (strategy, epoch) in self._subs.partitions_awaiting_reset().items():
            timestamp = reset_timestamp(strategy, now_ms + self._unix_offset_ms)
            if timestamp is None or tp in self._resets_in_flight:
                continue
            retry_at = self._reset_retry_at.get(tp, 0)
            if now_ms < retry_at:
                wait = min(wait, retry_at - now_ms)
                continue
            leader = cluster.leader_for(tp)
            if leader is None:
                unknown = self._unknown_error(tp)
                if unknown is not None and tp.topic not in self._reported_unknown:
                    since = self._unknown_since.setdefault(tp.topic, now_ms)
                    if now_ms - since >= UNKNOWN_TOPIC_GRACE_MS:
                        self._reported_unknown.add(tp.topic)
                        self._emit(ErrorEvent(unknown))
                    else:
                        wait = min(wait, since + UNKNOWN_TOPIC_GRACE_MS - now_ms)
                elif unknown is None:
                    self._unknown_since.pop(tp.topic, None)
                self._metadata.request_update()
                continue
            self._unknown_since.pop(tp.topic, None)
            by_leader_reset[leader][tp] = timestamp
            epochs[tp] = epoch
        for leader, timestamps in by_leader_reset.items():
            self._resets_in_flight |= timestamps.keys()
            requests.append(self._request(leader, timestamps, self._reset_callback(timestamps, epochs)))
        return PollResult(wait, tuple(requests))

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    def fail_all(self, error: KafkaError) -> None:
        for job in self._jobs:
            job.fail(error)
        self._jobs.clear()
        waiters, self._position_waiters = self._position_waiters, []
        for waiter in waiters:
            waiter.on_error(error)

    # --- helpers ---------------------------------------------------------------------------------------------
    def _unknown_error(self, tp: TopicPartition) -> KafkaError | None:
        cluster = self._metadata.cluster
        if tp.topic in cluster.unknown_topics:
            return UnknownTopicOrPartitionError(f"topic {tp.topic!r} does not exist")
        topic = cluster.topics.get(tp.topic)
        if topic is not None and topic.partitions and tp.partition not in topic.partitions:
            return UnknownTopicOrPartitionError(
                f"partition {tp.partition} of topic {tp.topic!r} does not exist "
                f"(it has {len(topic.partitions)} partitions)"
            )
        return None

    def _request(
        self, leader: int, timestamps: dict[TopicPartition, int], callback: Callable[[object, int], None]
    ) -> UnsentRequest:
        by_topic: dict[str, list[ListOffsetsPartition]] = defaultdict(list)
        cluster = self._metadata.cluster
        for tp, ts in timestamps.items():
            epoch = cluster.leader_epoch(tp)
            by_topic[tp.topic].append(
                ListOffsetsPartition(
                    partition_index=tp.partition, timestamp=ts, current_leader_epoch=-1 if epoch is None else epoch
                )
            )
        request = ListOffsetsRequest(
            replica_id=CONSUMER_REPLICA_ID,
            topics=tuple(ListOffsetsTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
            isolation_level=self._isolation,
        )
        return UnsentRequest(request, leader, callback)

    def _job_callback(self, job: _Job, sent: dict[TopicPartition, int]) -> Callable[[object, int], None]:
        def on_response(result: object, now_ms: int) -> None:
            job.in_flight -= sent.keys()
            if job.done:
                return
            if isinstance(result, KafkaError):
                self._retry_job(job, now_ms, result)
                return
            assert isinstance(result, ListOffsetsResponse)
            retry: KafkaError | None = None
            for topic in result.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if tp not in sent:
                        continue
                    if p.error_code == ErrorCode.NONE:
                        job.results[tp] = (
                            None
                            if p.offset < 0
                            else OffsetAndTimestamp(
                                p.offset, p.timestamp, None if p.leader_epoch < 0 else p.leader_epoch
                            )
                        )
                        continue
                    error = for_code(p.error_code, f"ListOffsets for {tp}")
                    if error.retriable:
                        retry = error
                    else:
                        job.fail(error)
                        return
            if retry is not None:
                self._retry_job(job, now_ms, retry)
            if len(job.results) == len(job.timestamps):
                job.done = True
                job.on_done(job.results)

        return on_response

    def _retry_job(self, job: _Job, now_ms: int, error: KafkaError) -> None:
        job.attempts += 1
        job.retry_at_ms = now_ms + self._backoff.backoff_ms(job.attempts)
        if error.invalid_metadata:
            self._metadata.request_update()
        log.debug("offsets.retry", error=str(error), attempts=job.attempts)

    def _reset_callback(
        self, sent: dict[TopicPartition, int], epochs: dict[TopicPartition, int]
    ) -> Callable[[object, int], None]:
        def on_response(result: object, now_ms: int) -> None:
            self._resets_in_flight -= sent.keys()
            if isinstance(result, KafkaError):
                for tp in sent:
                    self._reset_failed(tp, now_ms, result)
                return
            assert isinstance(result, ListOffsetsResponse)
            for topic in result.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if tp not in sent:
                        continue
                    if p.error_code == ErrorCode.NONE and p.offset >= 0:
                        self._reset_attempts.pop(tp, None)
                        self._reset_retry_at.pop(tp, None)
                        if self._subs.complete_reset(tp, epochs[tp], p.offset):
                            log.info("offsets.reset", partition=str(tp), offset=p.offset)
                        continue
                    if p.error_code == ErrorCode.NONE and sent[tp] >= 0:
                        # a by_duration lookup no record answers: every record is older; the log end, at once
                        if self._subs.reset_if_unchanged(tp, epochs[tp], "latest"):
                            log.info("offsets.reset_by_duration_found_none", partition=str(tp), since_ms=sent[tp])
                        continue
                    error = for_code(p.error_code, f"ListOffsets for {tp}") if p.error_code else None
                    if error is not None and not error.retriable:
                        self._emit(ErrorEvent(error))
                    self._reset_failed(tp, now_ms, error)
            self._check_position_waiters()

        return on_response

    def _reset_failed(self, tp: TopicPartition, now_ms: int, error: KafkaError | None) -> None:
        attempts = self._reset_attempts.get(tp, 0) + 1
        self._reset_attempts[tp] = attempts
        self._reset_retry_at[tp] = now_ms + self._backoff.backoff_ms(attempts)
        if error is None or error.invalid_metadata:
            self._metadata.request_update()
        log.debug("offsets.reset_retry", partition=str(tp), error=str(error), attempts=attempts)

    def _check_position_waiters(self) -> None:
        if not self._position_waiters:
            return
        remaining: list[_PositionWaiter] = []
        for waiter in self._position_waiters:
            try:
                missing = self._subs.missing_positions(waiter.partitions)
            except KafkaError as exc:  # unassigned meanwhile
                waiter.on_error(exc)
                continue
            if not missing:
                waiter.on_done()
                continue
            no_reset = set(self._subs.without_position_and_no_reset()) & set(missing)
            if no_reset:
                waiter.on_error(NoOffsetForPartitionError(sorted(no_reset)))
                continue
            unknown = next((e for e in map(self._unknown_error, missing) if e is not None), None)
            if unknown is not None:
                waiter.on_error(unknown)
                continue
            remaining.append(waiter)
        self._position_waiters = remaining
