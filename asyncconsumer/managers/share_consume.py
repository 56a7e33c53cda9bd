"""ShareFetch and ShareAcknowledge (KIP-932): a share consumer's records and acknowledgements, one session per broker.

Each broker that leads an assigned partition gets a ``ShareSession`` and at most one request in flight (both APIs
share the session's epoch). A ShareFetch is sent only for a caller that polls (``ShareDemand``: one per ``poll``,
more while it waits in one), so the consumer never takes records while its caller is busy elsewhere. With
record_limit acquisition it goes only once the buffer is empty and the caller holds no decoded record. With
batch_optimized it goes one response ahead of the caller: as an answer arrives for a caller that holds nothing
(before the caller decodes it, so the fetch does not wait for the GIL the decoding caller holds), or once the
caller has decoded what was buffered, and only while the records ahead of the caller leave the broker locks to
hand out (``AHEAD_LOCKS_PER_PARTITION``). Only a fetch with nothing else to wait for long-polls: one ahead of records
asks the broker not to wait, so the next acknowledgements are never held up behind a wait for records, and one
carrying acknowledgements waits ``ACK_FETCH_WAIT_MS`` at most. The acknowledgements the caller's ``poll`` made ride
on that poll's fetch, as Kafka's share consumer sends them; they go alone when no fetch is asked for, or when the
one asked for has not gone within ``ACK_RIDE_MS``. A caller's polls while it holds records do not wake the
background, which turns within ``ACK_RIDE_MS`` meanwhile. A commit
(``commit_sync``, ``commit_async``, the acknowledgements before ``close``) goes at once as a ShareAcknowledge, with
whatever else waits for that broker.
Every acknowledgement is answered once, per partition, as an ``AcknowledgedEvent``; a commit's callback gets the
results of all its partitions together. A lost session or connection fails the acknowledgements it carried (their
records come back after the lock times out, with a higher delivery count) and starts the session over.
An acknowledgement goes only in the share session whose fetch acquired its records: a session that ends releases
them (KIP-932; Kafka 4.4 as the connection closes), and the broker may hand them to this member again in its next
one, where an acknowledgement of the first delivery would be taken for the second. Those fail instead
(``INVALID_RECORD_STATE``, as the broker answers for records a member no longer holds).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer._state.fetch_buffer import CompletedFetch, ResponseShare
from asyncconsumer._state.share_fetch_buffer import ShareFetchBuffer
from asyncconsumer._state.snapshot import ShareDemand
from asyncconsumer.errors import ErrorCode, KafkaConnectionError, KafkaError, UnsupportedVersionError, for_code
from asyncconsumer.events.background import AcknowledgedEvent, BackgroundEvent, ErrorEvent
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff, RequestState
from asyncconsumer.managers.share_acks import Acknowledgements, PendingAcknowledgements
from asyncconsumer.managers.share_membership import ShareMembershipManager
from asyncconsumer.managers.share_session import ShareSession
from asyncconsumer.protocol.messages import share_acknowledge as ack_api
from asyncconsumer.protocol.messages import share_fetch as fetch_api
from asyncconsumer.records import TopicPartition

log = get_logger("asyncconsumer.share")

_SESSION_ERRORS = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})
_LEADER_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.LEADER_NOT_AVAILABLE,
    }
)
_FATAL = frozenset(
    {ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNSUPPORTED_VERSION}
)
_RENEW = 4
BATCH_OPTIMIZED = 0
"""``share.acquire.mode`` batch_optimized: the member may hold one fetch ahead of its caller. record_limit asks
for no more than ``max.poll.records`` locked at a time, so a fetch waits until the caller holds none."""
AHEAD_LOCKS_PER_PARTITION = 1000
"""A fetch goes ahead of records the caller has not finished only while they are under this many per assigned
partition: half of Kafka's default ``share.partition.max.record.locks`` (2,000), so the fetch ahead still finds locks
to take (above it, a one-partition member's fetches came back with a few hundred records each)."""
ACK_RIDE_MS = 100
"""How long acknowledgements wait for the fetch asked for to carry them (it goes once the caller has decoded what is
buffered, within one response's processing); a caller slower than that has them sent alone, so its locks are not
held on records it has finished."""
ACK_FETCH_WAIT_MS = 25
"""MaxWaitMs of a fetch that carries acknowledgements for a caller holding nothing (at most ``fetch.max.wait.ms``):
Kafka answers it as soon as their locks are freed, which takes a few milliseconds after they arrive (they are
persisted first); one that asks the broker not to wait comes back empty. It also bounds how long the acknowledgements'
confirmation waits when no record comes."""

CommitDone = Callable[[dict[TopicPartition, KafkaError | None]], None]
"""Called (background thread) with every partition's result of one commit."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareFetchSettings:
    group_id: str
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    """``fetch_max_bytes``: what one ShareFetch asks for at most, within the buffer's room."""
    partition_max_bytes: int
    """``max_partition_fetch_bytes``: the room a ShareFetch needs before it goes (the consumer's rule too)."""
    max_records: int
    acquire_mode: int
    """0: batch-optimized (the broker may return more than ``max_records`` to keep batches whole); 1: record-limit."""
    request_timeout_ms: int


@attrs.define(slots=True)
class _Commit:
    waiting: set[TopicPartition]
    results: dict[TopicPartition, KafkaError | None]
    done: CommitDone


@attrs.define(slots=True)
class _Node:
    session: ShareSession
    requests: RequestState
    """One request in flight, and the backoff while its requests fail (a lost connection, a request or partition
    error; a lost session is opened again at once)."""
    served_poll: int = 0
    """The caller's poll (``ShareDemand.polls``) this broker's last fetch was for."""
    session_id: int = 0
    """Which of the consumer's share sessions this broker's is (a new number each time it starts over)."""


class ShareConsumeManager:
    """Share sessions, fetches and acknowledgements of one share consumer (background thread)."""

    def __init__(
        self,
        settings: ShareFetchSettings,
        membership: ShareMembershipManager,
        metadata: MetadataManager,
        buffer: ShareFetchBuffer,
        emit: Callable[[BackgroundEvent], None],
        backoff: ExponentialBackoff,
        demand: ShareDemand,
    ) -> None:
        self._settings = settings
        self._backoff = backoff
        self._membership = membership
        self._metadata = metadata
        self._buffer = buffer
        self._emit = emit
        self._demand = demand
        self._nodes: dict[int, _Node] = {}
        self._pending = PendingAcknowledgements()
        """Acknowledgements from the caller's polls: they ride on the next fetch (or go alone if none is due)."""
        self._pending_since_ms: int | None = None
        """When the acknowledgements now pending began to wait (``ACK_RIDE_MS``)."""
        self._acked_poll = 0
        """The last caller's ``poll`` whose acknowledgements arrived: it counts as asked for even if the background
        sees them before the poll counts itself (``ShareDemand.acks_poll``)."""
        self._committing = PendingAcknowledgements()
        """Acknowledgements of a commit: sent at once."""
        self._commits: list[_Commit] = []
        self._sessions = 0
        """Share sessions numbered so far (``_Node.session_id``)."""
        self._held: dict[TopicPartition, dict[int, set[int]]] = {}
        """Offsets acquired in each live share session (by number) and not acknowledged in it yet."""
        self._lost: dict[TopicPartition, set[int]] = {}
        """Offsets acquired in a share session that ended before they were acknowledged: the broker released them,
        so their acknowledgement fails. They come first in the buffer, before any delivery of the same offsets in
        a later session, so the caller's next acknowledgement of such an offset is of the lost delivery."""
        self.acquisition_lock_timeout_ms: int | None = None
        """What the last ShareFetch answer said (None before one)."""
        self.fetches = 0
        self._unread_acquired = 0
        """Records the last answer acquired, while it waits in the buffer undecoded (``AHEAD_LOCKS_PER_PARTITION``)."""
        self.records_acquired = 0
        self.acknowledgements_sent = 0
        self.acknowledgement_errors = 0

    # --- what the caller asks ------------------------------------------------------------------------------------
    def acknowledge(
        self, acks: Mapping[TopicPartition, Mapping[int, int]], commit: CommitDone | None = None, *, poll: int = 0
    ) -> None:
        """Queues acknowledgements (made before the caller's ``poll``, if not 0: that poll's fetch carries them); with
        ``commit``, sends them (and all that wait) at once and calls it with every partition's result."""
        if commit is None:
            self._pending.add_all(acks)
            self._acked_poll = max(self._acked_poll, poll)
            return
        for tp, waiting in self._pending.take(self._pending.partitions()).items():
            self._committing.merge(tp, waiting)
        self._committing.add_all(acks)
        partitions = set(self._committing)
        if not partitions:
            commit({})
            return
        self._commits.append(_Commit(partitions, {}, commit))

    # --- the manager contract ------------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        if not self._membership.joined:
            return PollResult()
        if self._lost:
            self._fail_lost()
        cluster = self._metadata.cluster
        wanted: dict[int, list[TopicPartition]] = defaultdict(list)
        missing_leader = False
        for tp in self._membership.assignment:
            leader = cluster.leader_for(tp)
            if leader is None:
                missing_leader = True
            else:
                wanted[leader].append(tp)
        committing: dict[int, list[TopicPartition]] = defaultdict(list)
        orphans: list[TopicPartition] = []
        for tp in self._committing:
            leader = cluster.leader_for(tp)
            (committing[leader] if leader is not None else orphans).append(tp)
        pending: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in self._pending:
            leader = cluster.leader_for(tp)
            if leader is not None:
                pending[leader].append(tp)
        if missing_leader or orphans:
            self._metadata.request_update()
        requests: list[UnsentRequest] = []
        # a caller holding records sends its polls' acknowledgements without waking the background: take them
        # within ACK_RIDE_MS
        wait = ACK_RIDE_MS if self._demand.held else MAX_POLL_WAIT_MS
        may_fetch: bool | None = None
        per_fetch: int | None = None
        if not self._pending:
            self._pending_since_ms = None
        elif self._pending_since_ms is None:
            self._pending_since_ms = now_ms
        ride_left = ACK_RIDE_MS - (now_ms - self._pending_since_ms) if self._pending_since_ms is not None else 0
        for node_id in sorted({*wanted, *committing, *pending}):
            node = self._nodes.get(node_id)
            if node is None:
                node = _Node(ShareSession(), RequestState(self._backoff), session_id=self._new_session())
                self._nodes[node_id] = node
            if not node.requests.can_send_request(now_ms):
                if not node.requests.in_flight:
                    wait = min(wait, node.requests.remaining_backoff_ms(now_ms))
                continue
            session = node.session
            if session.is_open and committing.get(node_id):
                acks = self._committing.take(committing[node_id])
                for tp, waiting in self._pending.take(pending.get(node_id, ())).items():
                    # both, not one instead of the other: what waits of the polls after the commit is the later
                    if tp in acks:
                        acks[tp].merge(waiting)
                    else:
                        acks[tp] = waiting
                requests.append(self._acknowledge(node_id, node, acks, now_ms))
                continue
            if not wanted.get(node_id):
                if session.is_open and pending.get(node_id):
                    requests.append(self._acknowledge(node_id, node, self._pending.take(pending[node_id]), now_ms))
                elif not session.is_open:
                    self._strand(node_id, pending.get(node_id, []), committing.get(node_id, []))
                continue
            demand = self._demand
            # a poll sends its acknowledgements, then counts itself: seen in either order, its fetch carries them
            polls = max(demand.polls, self._acked_poll)
            held = demand.held
            asked = (
                not demand.leaving
                and demand.acks_poll <= self._acked_poll
                and (held == 0 or self._settings.acquire_mode == BATCH_OPTIMIZED)
                and (node.served_poll < polls or now_ms < demand.waiting_until_ms)
            )
            if may_fetch is None:
                if self._settings.acquire_mode == BATCH_OPTIMIZED:
                    ahead = held + (self._unread_acquired if self._buffer.buffered_bytes else 0)
                    roomy = ahead < AHEAD_LOCKS_PER_PARTITION * max(1, len(self._membership.assignment))
                    may_fetch = self._buffer.one_response_ahead(held > 0) and (roomy or not ahead)
                else:
                    may_fetch = self._buffer.empty_or_wait()
            fetch = may_fetch and asked
            if fetch and per_fetch is None:
                # the buffer's room, shared evenly by the brokers this pass may fetch from (as the consumer's fetches)
                room = self._buffer.room(min(self._settings.partition_max_bytes, self._buffer.limit))
                per_fetch = max(1, room // len(wanted)) if room else 0
            if fetch and per_fetch:
                node.served_poll = polls
                acks = self._pending.take(pending.get(node_id, ())) if session.is_open else {}
                # only a fetch with nothing else to wait for long-polls: one ahead of records the caller holds or
                # has yet to decode must not keep the next acknowledgements (one request per broker) behind a wait
                # for records the broker may not lock. One carrying acknowledgements waits ACK_FETCH_WAIT_MS at
                # most: the broker answers it as their locks are freed (after it has persisted them), where one that
                # did not wait would come back empty and cost a round trip more; and they are confirmed soon even
                # when no record comes
                wait_ms = 0
                if held == 0 and not self._buffer.buffered_bytes:
                    wait_ms = min(self._settings.max_wait_ms, ACK_FETCH_WAIT_MS) if acks else self._settings.max_wait_ms
                requests.append(
                    self._fetch(node_id, node, wanted[node_id], acks, now_ms, wait_ms=wait_ms, max_bytes=per_fetch)
                )
            elif asked and session.is_open and pending.get(node_id) and ride_left > 0:
                # the fetch asked for goes once the caller has decoded what is buffered (its release wakes the
                # background): the acknowledgements ride on it, and do not take the broker's one request in flight
                # from it just before
                wait = min(wait, ride_left)
                continue
            elif session.is_open and pending.get(node_id):
                # no fetch is due: the acknowledgements go alone, at once, so the records' locks are freed for the
                # other members (a partition holds at most group.share.partition.max.record.locks)
                requests.append(self._acknowledge(node_id, node, self._pending.take(pending[node_id]), now_ms))
            elif not session.is_open and (committing.get(node_id) or pending.get(node_id)):
                # an unopened session with acknowledgements waiting opens with a minimal fetch
                requests.append(self._fetch(node_id, node, wanted[node_id], {}, now_ms, wait_ms=0, minimal=True))
        return PollResult(wait, tuple(requests))

    def _strand(self, node_id: int, pending: list[TopicPartition], committing: list[TopicPartition]) -> None:
        """Fails acknowledgements for a broker with no session and nothing to fetch from it (their partitions
        were unassigned after its session was lost): no request can carry them (and a commit would wait for them
        until its deadline). Their records come back after the acquisition lock times out."""
        stranded = {**self._pending.take(pending), **self._committing.take(committing)}
        if stranded:
            error = for_code(
                ErrorCode.SHARE_SESSION_NOT_FOUND,
                f"no share session with node {node_id} to carry the acknowledgements, and nothing to fetch there",
            )
            self._answer(stranded, dict.fromkeys(stranded, error))

    def _new_session(self) -> int:
        self._sessions += 1
        return self._sessions

    def _session_over(self, node: _Node) -> None:
        """``node``'s share session ended (lost, or the connection closed): the broker released what it acquired that
        was not acknowledged yet, and the next request opens a new one."""
        node.session.reset()
        ended, node.session_id = node.session_id, self._new_session()
        for tp, sessions in list(self._held.items()):
            offsets = sessions.pop(ended, None)
            if offsets:
                self._lost.setdefault(tp, set()).update(offsets)
            if not sessions:
                del self._held[tp]

    def _fail_lost(self) -> None:
        """Fails the acknowledgements waiting to be sent whose records were acquired in a session that has ended."""
        for waiting in (self._pending, self._committing):
            stale: dict[TopicPartition, Acknowledgements] = {}
            for tp in [tp for tp in waiting.partitions() if tp in self._lost]:
                lost = self._lost[tp]
                acks = waiting.peek(tp)
                of_lost = acks.split(lost.intersection(acks.types()))
                if of_lost:
                    lost.difference_update(of_lost.settled())
                    if not lost:
                        del self._lost[tp]
                    stale[tp] = of_lost
                if not acks:
                    waiting.take((tp,))
            if stale:
                error = for_code(
                    ErrorCode.INVALID_RECORD_STATE,
                    "the share session that acquired these records ended before their acknowledgement was sent: "
                    "the broker released them, to deliver them again",
                )
                self._answer(stale, dict.fromkeys(stale, error))

    def _settle(self, acks: Mapping[TopicPartition, Acknowledgements]) -> None:
        """``acks`` go in a request: their records are no longer waiting in the session that acquired them."""
        for tp, sent in acks.items():
            sessions = self._held.get(tp)
            if sessions:
                settled = sent.settled()
                for offsets in sessions.values():
                    offsets.difference_update(settled)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    # --- requests ------------------------------------------------------------------------------------------------
    def _fetch(
        self,
        node_id: int,
        node: _Node,
        partitions: list[TopicPartition],
        acks: dict[TopicPartition, Acknowledgements],
        now_ms: int,
        *,
        wait_ms: int,
        max_bytes: int = 1,
        minimal: bool = False,
    ) -> UnsentRequest:
        """A ShareFetch that long-polls for ``wait_ms`` (MaxWaitMs) for up to ``max_bytes`` (at most
        ``fetch_max_bytes``), reserved in the buffer until it is answered; a ``minimal`` one acquires at most one
        record (it opens a session for the acknowledgements waiting)."""
        s = self._settings
        max_bytes = 1 if minimal else min(s.max_bytes, max_bytes)
        plan = node.session.next_request(partitions, acks)
        ids = self._topic_ids()
        by_topic: dict[str, list[fetch_api.FetchPartition]] = defaultdict(list)
        for tp in sorted(set(plan.fetch) | set(acks)):
            batches = (
                tuple(fetch_api.AcknowledgementBatch(run.first, run.last, run.types) for run in acks[tp].runs())
                if tp in acks
                else ()
            )
            by_topic[tp.topic].append(fetch_api.FetchPartition(tp.partition, batches))
        forgotten: dict[str, list[int]] = defaultdict(list)
        for tp in plan.forget:
            forgotten[tp.topic].append(tp.partition)
        request = fetch_api.ShareFetchRequest(
            group_id=s.group_id,
            member_id=self._membership.member_id,
            share_session_epoch=plan.epoch,
            max_wait_ms=wait_ms,
            min_bytes=s.min_bytes,
            max_bytes=max_bytes,
            max_records=1 if minimal else s.max_records,
            batch_size=s.max_records,
            share_acquire_mode=s.acquire_mode,
            is_renew_ack=any(a.has_renew() for a in acks.values()),
            topics=tuple(fetch_api.FetchTopic(ids[t], tuple(ps)) for t, ps in by_topic.items() if t in ids),
            forgotten_topics_data=tuple(
                fetch_api.ForgottenTopic(ids[t], tuple(ps)) for t, ps in forgotten.items() if t in ids
            ),
        )
        node.requests.on_send_attempt(now_ms)
        self._settle(acks)
        self.fetches += 1
        self.acknowledgements_sent += sum(len(a) for a in acks.values())
        names = {v: k for k, v in ids.items()}
        self._buffer.reserve(max_bytes)

        def on_response(result: object, now: int) -> None:
            self._buffer.unreserve(max_bytes)  # before its records are added: counted once, as what they are
            self._on_fetch(node_id, node, names, acks, result, now)

        return UnsentRequest(request, node_id, on_response, s.request_timeout_ms + s.max_wait_ms)

    def _acknowledge(
        self, node_id: int, node: _Node, acks: dict[TopicPartition, Acknowledgements], now_ms: int
    ) -> UnsentRequest:
        ids = self._topic_ids()
        by_topic: dict[str, list[ack_api.AcknowledgePartition]] = defaultdict(list)
        for tp, waiting in sorted(acks.items()):
            batches = tuple(ack_api.AcknowledgementBatch(r.first, r.last, r.types) for r in waiting.runs())
            by_topic[tp.topic].append(ack_api.AcknowledgePartition(tp.partition, batches))
        request = ack_api.ShareAcknowledgeRequest(
            group_id=self._settings.group_id,
            member_id=self._membership.member_id,
            share_session_epoch=node.session.acknowledge_epoch(),
            is_renew_ack=any(a.has_renew() for a in acks.values()),
            topics=tuple(ack_api.AcknowledgeTopic(ids[t], tuple(ps)) for t, ps in by_topic.items() if t in ids),
        )
        node.requests.on_send_attempt(now_ms)
        self._settle(acks)
        self.acknowledgements_sent += sum(len(a) for a in acks.values())
        names = {v: k for k, v in ids.items()}

        def on_response(result: object, now: int) -> None:
            self._on_acknowledge(node_id, node, names, acks, result, now)

        return UnsentRequest(request, node_id, on_response)

    def _topic_ids(self) -> dict[str, uuid.UUID]:
        return {
            name: info.topic_id for name, info in self._metadata.cluster.topics.items() if info.topic_id is not None
        }

    # --- answers -------------------------------------------------------------------------------------------------
    def _on_fetch(
        self,
        node_id: int,
        node: _Node,
        names: Mapping[uuid.UUID, str],
        acks: dict[TopicPartition, Acknowledgements],
        result: object,
        now_ms: int,
    ) -> None:
        error = self._request_error(node_id, node, result, "ShareFetch", now_ms)
        if error is not None:
            self._answer(acks, {tp: error for tp in acks})
            return
        assert isinstance(result, fetch_api.ShareFetchResponse)
        node.session.succeeded()
        if result.acquisition_lock_timeout_ms > 0:
            self.acquisition_lock_timeout_ms = result.acquisition_lock_timeout_ms
        fetched: list[CompletedFetch] = []
        ack_errors: dict[TopicPartition, KafkaError | None] = {}
        share = ResponseShare(0)
        """The response's bytes, freed (and counted as one response) when the caller has taken its last part."""
        partition_failed = False
        acquired = 0
        for topic in result.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for part in topic.partitions:
                tp = TopicPartition(name, part.partition_index)
                if tp in acks:
                    ack_errors[tp] = (
                        for_code(part.acknowledge_error_code, part.acknowledge_error_message or f"acknowledging {tp}")
                        if part.acknowledge_error_code
                        else None
                    )
                if part.error_code:
                    self._partition_error(tp, part.error_code, part.error_message)
                    partition_failed = True
                    continue
                if part.acquired_records and len(part.records):
                    first = part.acquired_records[0].first_offset
                    last = part.acquired_records[-1].last_offset
                    fetched.append(
                        CompletedFetch(
                            tp, 0, first, last + 1, part.records, -1, acquired=part.acquired_records, share=share
                        )
                    )
                    share.size += len(part.records)
                    acquired += sum(a.last_offset - a.first_offset + 1 for a in part.acquired_records)
                    held = self._held.setdefault(tp, {}).setdefault(node.session_id, set())
                    for a in part.acquired_records:
                        held.update(range(a.first_offset, a.last_offset + 1))
        self.records_acquired += acquired
        if fetched:
            self._unread_acquired = acquired
            self._buffer.add_all(fetched, share)
        if partition_failed:
            node.requests.on_failed_attempt(now_ms)
        else:
            node.requests.on_successful_attempt(now_ms)
        self._answer(acks, ack_errors)

    def _on_acknowledge(
        self,
        node_id: int,
        node: _Node,
        names: Mapping[uuid.UUID, str],
        acks: dict[TopicPartition, Acknowledgements],
        result: object,
        now_ms: int,
    ) -> None:
        error = self._request_error(node_id, node, result, "ShareAcknowledge", now_ms)
        if error is not None:
            self._answer(acks, {tp: error for tp in acks})
            return
        assert isinstance(result, ack_api.ShareAcknowledgeResponse)
        node.session.succeeded()
        node.requests.on_successful_attempt(now_ms)
        errors: dict[TopicPartition, KafkaError | None] = {}
        for topic in result.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for part in topic.partitions:
                tp = TopicPartition(name, part.partition_index)
                if part.error_code:
                    errors[tp] = for_code(part.error_code, part.error_message or f"acknowledging {tp}")
                    if part.error_code in _LEADER_ERRORS:
                        self._metadata.request_update()
                else:
                    errors[tp] = None
        self._answer(acks, errors)

    def _request_error(self, node_id: int, node: _Node, result: object, api: str, now_ms: int) -> KafkaError | None:
        """The error that failed a whole request, after starting its session over (and, unless only the session
        was lost, backing off); None if it went through."""
        if isinstance(result, KafkaError):
            self._session_over(node)
            node.requests.on_failed_attempt(now_ms)
            if isinstance(result, UnsupportedVersionError):
                self._emit(ErrorEvent(result))
            elif isinstance(result, KafkaConnectionError):
                self._metadata.request_update()
            log.info("share.request_failed", api=api, node=node_id, error=str(result))
            return result
        code = getattr(result, "error_code", 0)
        if not code:
            return None
        error = for_code(code, getattr(result, "error_message", None) or f"{api} to node {node_id}")
        self._session_over(node)
        if code in _SESSION_ERRORS:
            node.requests.on_successful_attempt(now_ms)  # a lost session is opened again at once
        else:
            node.requests.on_failed_attempt(now_ms)
        if code in _FATAL:
            self._emit(ErrorEvent(error))
        elif code not in _SESSION_ERRORS:
            log.info("share.request_error", api=api, node=node_id, error=str(error))
        return error

    def _partition_error(self, tp: TopicPartition, code: int, message: str | None) -> None:
        error = for_code(code, message or f"ShareFetch of {tp}")
        if code in _LEADER_ERRORS:
            self._metadata.request_update()
            log.info("share.partition_moved", partition=str(tp), error=str(error))
        elif code in _FATAL:
            self._emit(ErrorEvent(error))
        else:
            log.info("share.partition_error", partition=str(tp), error=str(error))

    def _answer(
        self, acks: Mapping[TopicPartition, Acknowledgements], errors: Mapping[TopicPartition, KafkaError | None]
    ) -> None:
        """Reports every partition's acknowledgements once, and completes the commits waiting for them. A partition
        the answer left out (or the request could not name: its topic id unknown) failed: nothing says it took."""
        for tp, sent in acks.items():
            error = errors[tp] if tp in errors else KafkaError(f"the broker did not answer for {tp}'s acknowledgements")
            if error is not None:
                self.acknowledgement_errors += 1
                log.info("share.acknowledge_failed", partition=str(tp), offsets=len(sent), error=str(error))
            self._emit(AcknowledgedEvent(tp, sent.offsets(), error))
            for commit in self._commits:
                if tp in commit.waiting:
                    commit.waiting.discard(tp)
                    commit.results[tp] = error
        done = [c for c in self._commits if not c.waiting]
        if done:
            self._commits = [c for c in self._commits if c.waiting]
            for commit in done:
                commit.done(commit.results)

    def fail_all(self, error: KafkaError) -> None:
        """The consumer is closing: what waits is answered with ``error``."""
        waiting: dict[TopicPartition, Acknowledgements] = {
            **self._pending.take(self._pending.partitions()),
            **self._committing.take(self._committing.partitions()),
        }
        self._answer(waiting, dict.fromkeys(waiting, error))
        for commit in self._commits:
            commit.done({**commit.results, **dict.fromkeys(commit.waiting, error)})
        self._commits = []
