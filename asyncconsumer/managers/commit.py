"""OffsetFetch and OffsetCommit to the group coordinator, retried until each job's deadline.

Retriable errors (coordinator loading, moved or unreachable) back off and retry, forgetting the coordinator when it
moved; a commit the group no longer accepts (rebalanced, fenced, unknown member) fails at once with
``CommitFailedError``, and an answer that says the member itself is gone fences it (``on_fenced``). A group member's
commit is made under its membership and the partitions it holds: it is sent, first or again, only while the member
is still in the group and has held those partitions without a gap, so a fenced member's commit never lands.
Auto-commit (every interval, before a revocation through the group, and on close) commits the positions;
``set_auto_commit`` turns it off or on while the consumer runs, and switching it off drops every auto-commit not yet
sent and never retries one already out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import (
    CommitFailedError,
    ErrorCode,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    for_code,
)
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.metrics import LatencyWindow
from asyncconsumer.protocol.layouts import offsets_for_group
from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from asyncconsumer.records import OffsetAndMetadata, TopicPartition

log = get_logger("asyncconsumer.commit")

_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
_GROUP_MOVED_ON = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.FENCED_MEMBER_EPOCH,
    }
)
"""The group moved on without this member: a commit answered so is a ``CommitFailedError``, not retried.
(STALE_MEMBER_EPOCH is not here: on KIP-848 the retry carries the member's current epoch.)"""
_MEMBER_GONE = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})
"""The coordinator no longer knows the generation (or epoch) the commit carried: if that is still the member's, the
member is fenced at once (Java's ``resetGenerationOnResponseError``), not at its next heartbeat."""

Committed = dict[TopicPartition, OffsetAndMetadata | None]


@attrs.define(frozen=True, slots=True)
class Generation:
    """Who commits: a group member's generation and id, or ``NO_GENERATION`` for a consumer without membership."""

    generation_id: int
    member_id: str
    group_instance_id: str | None = None


NO_GENERATION = Generation(-1, "")


@attrs.define(slots=True, eq=False)
class _Job:
    kind: str  # "fetch" or "commit"
    partitions: tuple[TopicPartition, ...]
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    deadline_ms: int
    on_done: Callable[[Any], None]
    on_error: Callable[[KafkaError], None]
    attempts: int = 0
    sent: int = 0
    last_error: KafkaError | None = None
    retry_at_ms: int = 0
    sent_at_ms: int = 0
    in_flight: bool = False
    done: bool = False
    auto: bool = False
    """An auto-commit of the positions (dropped, or never retried, once auto-commit is switched off)."""
    abandoned: bool = False
    """Auto-commit was switched off while this auto-commit was in flight: its answer ends it, whatever it says."""
    made_by: Generation = attrs.field(factory=lambda: NO_GENERATION)
    """The membership the commit was made under (``NO_GENERATION``: a consumer outside any group's assignment)."""
    holdings: dict[TopicPartition, int] = attrs.field(factory=dict)
    """What the commit was made under: the assigned partitions it names, with when each was assigned."""
    sent_with: Generation = attrs.field(factory=lambda: NO_GENERATION)
    """The generation (or member epoch) the last attempt carried."""

    def finish(self, result: object) -> None:
        if not self.done:
            self.done = True
            self.on_done(result)

    def fail(self, error: KafkaError) -> None:
        if not self.done:
            self.done = True
            self.on_error(error)


class CommitManager:
    """Queues fetch/commit jobs and sends each to the coordinator when it is known."""

    def __init__(
        self,
        coordinator: CoordinatorManager,
        generation: Callable[[], Generation],
        backoff: ExponentialBackoff,
        *,
        require_stable: bool = False,
        subscriptions: SubscriptionState | None = None,
        auto_commit_interval_ms: int | None = None,
        request_timeout_ms: int = 30_000,
        member_epoch_in_fetch: bool = False,
        last_network_error: Callable[[], KafkaError | None] = lambda: None,
        on_fenced: Callable[[int], None] = lambda code: None,
    ) -> None:
        self._coordinator = coordinator
        self._on_fenced = on_fenced
        """The membership's ``fenced``: a commit answer said the member's generation (or epoch) is gone."""
        self._last_network_error = last_network_error
        """The delegate's last connection error: named when a job times out before the coordinator was found."""
        self._member_epoch_in_fetch = member_epoch_in_fetch
        """KIP-848 groups: OffsetFetch v9+ names the member and its epoch (classic groups send null and -1)."""
        self._generation = generation
        self._backoff = backoff
        self._require_stable = require_stable
        self._jobs: list[_Job] = []
        self._subs = subscriptions
        self._auto_commit_ms = auto_commit_interval_ms
        self._request_timeout_ms = request_timeout_ms
        self._next_auto_commit_ms: int | None = None
        self._looking_up: set[TopicPartition] = set()
        self._quiet_waiters: list[Callable[[], None]] = []
        """Called once no auto-commit is left in flight (``set_auto_commit(None, on_quiet=...)``)."""
        self.commit_latency = LatencyWindow()
        """OffsetCommit request to successful response, over the last 100 commits (Java's commit-latency)."""
        self.commits = 0
        """Commits the coordinator accepted, auto-commits included."""

    def fetch_committed(
        self,
        partitions: tuple[TopicPartition, ...],
        deadline_ms: int,
        on_done: Callable[[Committed], None],
        on_error: Callable[[KafkaError], None],
    ) -> None:
        self._jobs.append(_Job("fetch", partitions, {}, deadline_ms, on_done, on_error))

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        deadline_ms: int,
        on_done: Callable[[object], None],
        on_error: Callable[[KafkaError], None],
    ) -> None:
        self._add_commit(_Job("commit", tuple(offsets), dict(offsets), deadline_ms, on_done, on_error))

    def _add_commit(self, job: _Job) -> None:
        """Queues a commit made now: under the member's generation and the partitions it holds, or refused at once
        when the consumer's partitions come from a group it is not in (fenced, or not yet joined)."""
        job.made_by = self._generation()
        if self._subs is not None:
            job.holdings = self._subs.holdings(job.partitions)
        if job.made_by is NO_GENERATION and self._group_assigned():
            job.fail(CommitFailedError(_NOT_IN_GROUP))
            return
        self._jobs.append(job)

    def _group_assigned(self) -> bool:
        """Whether the partitions come from the group (``subscribe``), so only a member in it may commit."""
        return self._subs is not None and self._subs.subscription is not None

    def _stale(self, job: _Job) -> str | None:
        """Why a commit may no longer be sent, or None: the member left or was fenced since it was made, or no longer
        holds (without a gap) a partition it held then. A new generation alone is no reason: the partitions stayed."""
        if job.kind != "commit" or job.made_by is NO_GENERATION:
            return None
        current = self._generation()
        if current is NO_GENERATION or current.member_id != job.made_by.member_id:
            return _NOT_IN_GROUP
        if self._subs is not None and not self._subs.still_holds(job.holdings):
            return "the group gave a partition of this commit to another member since it was made"
        return None

    @property
    def pending(self) -> int:
        return sum(1 for job in self._jobs if not job.done)

    @property
    def auto_commit_enabled(self) -> bool:
        """Whether positions are auto-committed now: on the interval, before a revocation (read by the group) and on
        close."""
        return self._auto_commit_ms is not None

    def set_auto_commit(self, interval_ms: int | None, on_quiet: Callable[[], None] | None = None) -> None:
        """Auto-commits every ``interval_ms`` from now on, or, with None, never again until switched back on.

        Switching off drops every auto-commit not yet sent (a commit-before-revoke among them goes on to its
        callback, as if it had failed) and marks the ones in flight so that no retry follows their answer.
        ``on_quiet`` is called once no auto-commit is in flight any more (at once if none is): from then on no
        auto-commit of the positions reaches the coordinator, so a commit sent afterwards is not overwritten.
        """
        was = self._auto_commit_ms
        self._auto_commit_ms = interval_ms
        self._next_auto_commit_ms = None  # the first interval counts from the next poll
        if (was is None) != (interval_ms is None):
            log.info("commit.auto_commit_switched", enabled=interval_ms is not None, interval_ms=interval_ms)
        if interval_ms is None:
            off = IllegalStateError("auto-commit was switched off before this auto-commit was sent")
            for job in self._jobs:
                if job.auto and not job.done:
                    if job.in_flight:
                        job.abandoned = True
                    else:
                        job.fail(off)
        if on_quiet is not None:
            self._quiet_waiters.append(on_quiet)
        self._notify_quiet()

    def _notify_quiet(self) -> None:
        if not self._quiet_waiters or any(job.auto and not job.done for job in self._jobs):
            return
        waiters, self._quiet_waiters = self._quiet_waiters, []
        for waiter in waiters:
            waiter()

    # --- positions from committed offsets, and auto-commit ----------------------------------------------------
    def _initialize_positions(self, now_ms: int) -> None:
        """New group partitions start at their committed offset, or per ``auto_offset_reset`` when none."""
        subs = self._subs
        if subs is None:
            return
        awaiting = {
            tp: epoch for tp, epoch in subs.partitions_awaiting_committed().items() if tp not in self._looking_up
        }
        if not awaiting:
            return
        self._looking_up |= awaiting.keys()

        def found(committed: Committed) -> None:
            self._looking_up -= awaiting.keys()
            for tp, epoch in awaiting.items():
                offset = committed.get(tp)
                if offset is not None and subs.complete_reset(tp, epoch, offset.offset):
                    log.info("commit.position_from_committed", partition=str(tp), offset=offset.offset)
                elif offset is None:
                    subs.use_default_reset(tp, epoch)

        def failed(error: KafkaError) -> None:
            self._looking_up -= awaiting.keys()  # looked up again on the next poll
            log.info("commit.committed_lookup_failed", error=str(error))

        self.fetch_committed(tuple(awaiting), now_ms + self._request_timeout_ms, found, failed)

    def _auto_commit(self, now_ms: int) -> None:
        if self._auto_commit_ms is None or self._subs is None or self._generation() is NO_GENERATION:
            self._next_auto_commit_ms = None
            return
        if self._next_auto_commit_ms is None:
            self._next_auto_commit_ms = now_ms + self._auto_commit_ms
        if now_ms >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms + self._auto_commit_ms
            self.commit_positions(now_ms)

    def commit_positions(self, now_ms: int, on_done: Callable[[object], None] | None = None) -> bool:
        """Auto-commits every assigned partition's position; False when there is nothing to commit or auto-commit is
        off (then ``on_done`` is not called)."""
        positions = self._subs.consumed_positions() if self._subs is not None and self.auto_commit_enabled else {}
        if not positions:
            return False

        def done(result: object) -> None:
            if on_done is not None:
                on_done(result)

        def failed(error: KafkaError) -> None:
            if self.auto_commit_enabled:
                log.warning("commit.auto_commit_failed", error=str(error))
            else:
                log.info("commit.auto_commit_dropped", error=str(error))
            done(error)

        offsets = {tp: OffsetAndMetadata(offset) for tp, offset in positions.items()}
        deadline_ms = now_ms + self._request_timeout_ms
        self._add_commit(_Job("commit", tuple(offsets), offsets, deadline_ms, done, failed, auto=True))
        return True

    # --- the manager contract --------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        self._initialize_positions(now_ms)
        self._auto_commit(now_ms)
        return self._send_jobs(now_ms)

    def _send_jobs(self, now_ms: int) -> PollResult:
        requests: list[UnsentRequest] = []
        wait = MAX_POLL_WAIT_MS
        if self._next_auto_commit_ms is not None:
            wait = min(wait, max(0, self._next_auto_commit_ms - now_ms))
        coordinator = self._coordinator.coordinator
        for job in self._jobs:
            if job.done:
                continue
            if now_ms >= job.deadline_ms:  # in flight too: its late answer finds the job done and is dropped
                job.fail(self._timed_out(job))
                continue
            if job.in_flight:
                wait = min(wait, job.deadline_ms - now_ms)
                continue
            if now_ms < job.retry_at_ms:
                wait = min(wait, job.retry_at_ms - now_ms)
                continue
            stale = self._stale(job)
            if stale is not None:
                log.info("commit.stale", partitions=len(job.partitions), reason=stale, attempts=job.sent)
                job.fail(CommitFailedError(_stale_message(stale, job.last_error)))
                continue
            wait = min(wait, job.deadline_ms - now_ms)
            if coordinator is None:
                continue  # the coordinator manager is looking for it
            job.in_flight = True
            job.sent += 1
            job.sent_at_ms = now_ms
            requests.append(UnsentRequest(self._request(job), coordinator.node_id, self._callback(job)))
        self._jobs = [job for job in self._jobs if not job.done]
        self._notify_quiet()
        return PollResult(wait, tuple(requests))

    def poll_on_close(self, now_ms: int) -> PollResult:
        """A last auto-commit before the member leaves (sent ahead of the LeaveGroup on the same connection)."""
        if self.auto_commit_enabled and self._generation() is not NO_GENERATION:
            self.commit_positions(now_ms)
        self._jobs = [job for job in self._jobs if job.kind == "commit"]
        return self._send_jobs(now_ms)

    # --- requests and answers --------------------------------------------------------------------------------
    def _request(self, job: _Job) -> OffsetFetchRequest | OffsetCommitRequest:
        group_id = self._coordinator.group_id
        by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
        for tp in job.partitions:
            by_topic[tp.topic].append(tp)
        if job.kind == "fetch":
            topics = tuple(
                OffsetFetchRequestTopics(name=t, partition_indexes=tuple(tp.partition for tp in tps))
                for t, tps in by_topic.items()
            )
            member = self._generation() if self._member_epoch_in_fetch else NO_GENERATION
            group = OffsetFetchRequestGroup(
                group_id=group_id,
                member_id=member.member_id or None,
                member_epoch=member.generation_id,
                topics=topics,
            )
            return OffsetFetchRequest(groups=(group,), require_stable=self._require_stable)
        generation = job.sent_with = self._generation()
        return OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=generation.group_instance_id,
            topics=tuple(
                OffsetCommitRequestTopic(
                    name=t,
                    partitions=tuple(_commit_partition(tp.partition, job.offsets[tp]) for tp in tps),
                )
                for t, tps in by_topic.items()
            ),
        )

    def _callback(self, job: _Job) -> Callable[[object, int], None]:
        def on_response(result: object, now_ms: int) -> None:
            job.in_flight = False
            if isinstance(result, KafkaError):
                if not result.retriable:
                    job.fail(result)
                    return
                self._coordinator.mark_unknown(f"{job.kind} failed: {result}")  # lost connection or timed out
                self._retry(job, now_ms, result)
                return
            if isinstance(result, OffsetFetchResponse):
                self._on_fetched(job, result, now_ms)
            elif isinstance(result, OffsetCommitResponse):
                self._on_committed(job, result, now_ms)

        return on_response

    def _handle(self, job: _Job, code: int, now_ms: int, what: str) -> bool:
        """Deals with an error code; True when the job is over or will be retried (nothing more to read)."""
        if code == ErrorCode.NONE:
            return False
        error = for_code(code, what)
        if code in _COORDINATOR_MOVED:
            self._coordinator.mark_unknown(error.kafka_name)
            self._retry(job, now_ms, error)
        elif code == ErrorCode.STALE_MEMBER_EPOCH and self._generation() is not NO_GENERATION:
            self._retry(job, now_ms, error)
        elif job.kind == "commit" and code in _GROUP_MOVED_ON:
            if code in _MEMBER_GONE and job.sent_with is not NO_GENERATION and job.sent_with == self._generation():
                self._on_fenced(code)  # before the caller hears: its next poll hands out nothing of the lost partitions
            job.fail(CommitFailedError(f"the group rebalanced or fenced this member before the commit: {error}"))
        elif error.retriable:
            self._retry(job, now_ms, error)
        else:
            job.fail(error)
        return True

    def _on_fetched(self, job: _Job, response: OffsetFetchResponse, now_ms: int) -> None:
        group = offsets_for_group(response, self._coordinator.group_id)
        if self._handle(job, group.error_code, now_ms, f"OffsetFetch for group {self._coordinator.group_id!r}"):
            return
        wanted = set(job.partitions)
        committed: Committed = {}
        for topic in group.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if tp not in wanted:
                    continue
                if self._handle(job, p.error_code, now_ms, f"OffsetFetch for {tp}"):
                    return
                committed[tp] = (
                    None
                    if p.committed_offset < 0
                    else OffsetAndMetadata(
                        p.committed_offset,
                        p.metadata or "",
                        None if p.committed_leader_epoch < 0 else p.committed_leader_epoch,
                    )
                )
        for tp in wanted - committed.keys():
            committed[tp] = None
        job.finish(committed)

    def _on_committed(self, job: _Job, response: OffsetCommitResponse, now_ms: int) -> None:
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if self._handle(job, p.error_code, now_ms, f"OffsetCommit for {tp}"):
                    return
        log.debug("commit.completed", partitions=len(job.partitions))
        if not job.done:
            self.commits += 1
            self.commit_latency.add(max(0, now_ms - job.sent_at_ms))
        job.finish(None)

    def _timed_out(self, job: _Job) -> KafkaTimeoutError:
        """The error of a job past its deadline: what it was, how often it was sent, and why it did not succeed."""
        count = len(job.partitions)
        partitions = f"{count} partition{'s' if count != 1 else ''}"
        what = f"offset {job.kind} for {partitions} of group {self._coordinator.group_id!r}"
        if job.sent == 0:
            why = "never sent"
            if self._coordinator.coordinator is None:
                why = "the group coordinator was not found"
                last = self._coordinator.last_error or self._last_network_error()
                if last is not None:
                    why += f"; last error: {last}"
            return KafkaTimeoutError(f"{what} timed out before it was sent ({why})")
        detail = f"{job.sent} attempt(s)"
        if job.in_flight:
            detail += ", the last one unanswered"
        if job.last_error is not None:
            detail += f"; last error: {job.last_error}"
        return KafkaTimeoutError(f"{what} timed out after {detail}")

    def _retry(self, job: _Job, now_ms: int, error: KafkaError) -> None:
        if job.abandoned:  # auto-commit is off now: a retry could overwrite a commit made since
            job.fail(error)
            return
        job.last_error = error
        job.attempts += 1
        job.retry_at_ms = now_ms + self._backoff.backoff_ms(job.attempts)
        log.info("commit.retry", kind=job.kind, error=str(error), attempts=job.attempts)


_NOT_IN_GROUP = (
    "this consumer is not a member of its group now (fenced, timed out or rejoining): it may own none of the "
    "partitions; call poll(), which runs the lost-partitions callback and rejoins, and process them again"
)


def _stale_message(reason: str, last_error: KafkaError | None) -> str:
    detail = f" (an earlier attempt failed: {last_error})" if last_error is not None else ""
    return f"the commit was not sent: {reason}{detail}"


def _commit_partition(partition: int, committed: OffsetAndMetadata) -> OffsetCommitRequestPartition:
    return OffsetCommitRequestPartition(
        partition_index=partition,
        committed_offset=committed.offset,
        committed_leader_epoch=-1 if committed.leader_epoch is None else committed.leader_epoch,
        committed_metadata=committed.metadata,
    )
