"""Fetch sessions (KIP-227): what each fetch to a broker carries, and what the broker's answer means for the next.

A broker keeps a fetch session per fetcher: each partition with the fetch offset, size limit and leader epoch last
sent for it. A full fetch (epoch 0) names every partition and opens a session; the answer carries its id. Each
later fetch in that session (epochs 1, 2, ... wrapping back to 1) names only the partitions added or altered since
the last one (a new fetch offset, size limit or leader epoch) and lists the ones to drop as forgotten. The broker
then fetches *every* partition in the session and answers only those with something new: records, a changed high
watermark or log start offset, or an error. With 1,000 caught-up partitions a fetch and its answer shrink from 33
and 37 KB to a few dozen bytes (``benchmarks/bench_fetch_sessions.py``).

Two rules follow for the fetch manager. A session holds exactly the partitions of its latest fetch: one the manager
does not fetch now (paused, backing off, waiting for the caller, in another fetch, no room for it) is forgotten, or
the broker would fetch it anyway. And the answer to an incremental fetch leaves out the partitions with nothing new,
which are still done with.

One session per broker and in-flight slot (``FetchSessions``): the manager may have two fetches in flight to a
broker over disjoint partitions, and a session's next fetch may go only once the broker answered its last one (each
answer moves the epoch). A partition moving from one slot's fetches to the other's is forgotten in the one and added
in the other; a slot not in use costs the broker a cached session until it is used again or evicted.

Falling back, as Java's ``FetchSessionHandler`` does: FETCH_SESSION_ID_NOT_FOUND (the broker evicted the session or
restarted) starts a new session; INVALID_FETCH_SESSION_EPOCH, any other top-level error and a failed request
(connection lost, timed out: the broker may or may not have moved the epoch) close the old session and start a new
one, in the same full fetch. The fetch after a session error goes at once, since the broker fetched nothing for it.
A full fetch answered with session id 0 means the broker gave no session (its cache is full, or it has no sessions):
fetches then go sessionless (epoch -1, so the broker is not asked to evict another client's session for us) and a
session is tried again after ``SESSION_RETRY_MS``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ErrorCode
from asyncconsumer.protocol.messages.fetch import FetchPartition, FetchResponse, FetchTopic, ForgottenTopic
from asyncconsumer.records import TopicPartition

log = get_logger("asyncconsumer.fetch")

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
"""A full fetch that opens a session (and closes the one named, if any)."""
FINAL_EPOCH = -1
"""A full fetch without a session (and closing the one named, if any)."""
MAX_EPOCH = 2**31 - 1
SESSION_RETRY_MS = 120_000
"""After a broker gave no session, how long fetches to it go sessionless before one is asked for again (Kafka's
``min.incremental.fetch.session.eviction.ms``: sooner, the cache would most likely still be full)."""


PartitionFetch = tuple[int, int, int]
"""What a fetch asks of one partition, as a session compares it: (fetch offset, max bytes, current leader epoch).
Plain tuples: a session compares every partition of every fetch, so this runs a thousand times per fetch."""


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` in a session: 1, 2, ... up to 2^31-1, then 1 again (0 means a new session)."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@attrs.define(frozen=True, slots=True)
class SessionFetch:
    """What one fetch request carries for its session: its id and epoch, the partitions to name and to forget."""

    session_id: int
    epoch: int
    topics: tuple[FetchTopic, ...]
    forgotten: tuple[ForgottenTopic, ...]

    @property
    def full(self) -> bool:
        """A full fetch names every partition it fetches; an incremental one only what changed."""
        return self.epoch <= INITIAL_EPOCH


def _topics(partitions: Mapping[TopicPartition, PartitionFetch]) -> tuple[FetchTopic, ...]:
    by_topic: dict[str, list[FetchPartition]] = defaultdict(list)
    for tp, (offset, max_bytes, leader_epoch) in partitions.items():
        by_topic[tp.topic].append(
            FetchPartition(
                partition=tp.partition,
                fetch_offset=offset,
                partition_max_bytes=max_bytes,
                current_leader_epoch=leader_epoch,
            )
        )
    return tuple(FetchTopic(topic=topic, partitions=tuple(parts)) for topic, parts in by_topic.items())


def _forgotten(partitions: list[TopicPartition]) -> tuple[ForgottenTopic, ...]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    return tuple(ForgottenTopic(topic=topic, partitions=tuple(parts)) for topic, parts in by_topic.items())


class FetchSession:
    """One fetch session with one broker: builds each fetch's session fields and learns from each answer.

    ``prepare`` and then exactly one of ``answered`` or ``failed`` per fetch, never two fetches at once.
    """

    __slots__ = (
        "_enabled",
        "_epoch",
        "_partitions",
        "_sent_epoch",
        "_session_id",
        "_sessionless_until",
        "in_flight",
        "node",
        "slot",
    )

    def __init__(self, node: int, slot: int, enabled: bool = True) -> None:
        self.node = node
        self.slot = slot
        self._enabled = enabled
        self._session_id = INVALID_SESSION_ID
        self._epoch = INITIAL_EPOCH
        """The next fetch's epoch: 0 (full, opening a session), -1 (full, sessionless) or 1, 2, ... (incremental)."""
        self._partitions: dict[TopicPartition, PartitionFetch] = {}
        """The session's partitions as the broker holds them: what was last sent for each."""
        self._sessionless_until = 0
        self._sent_epoch = INITIAL_EPOCH
        self.in_flight = False

    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def epoch(self) -> int:
        """The epoch the next fetch will carry."""
        return self._epoch

    @property
    def partitions(self) -> Mapping[TopicPartition, PartitionFetch]:
        """The partitions in the session, as last sent."""
        return self._partitions

    def prepare(self, wanted: Mapping[TopicPartition, PartitionFetch], now_ms: int) -> SessionFetch:
        """The session fields of a fetch of exactly ``wanted`` (in the order a full fetch names them)."""
        assert not self.in_flight, "a session's next fetch waits for the answer to its last"
        self.in_flight = True
        if not self._enabled:
            self._sent_epoch = FINAL_EPOCH
            return SessionFetch(INVALID_SESSION_ID, FINAL_EPOCH, _topics(wanted), ())
        epoch = self._epoch
        if epoch == INITIAL_EPOCH and now_ms < self._sessionless_until:
            epoch = FINAL_EPOCH
        self._sent_epoch = epoch
        if epoch <= INITIAL_EPOCH:
            self._partitions = dict(wanted)
            return SessionFetch(self._session_id, epoch, _topics(wanted), ())
        session = self._partitions
        forgotten = [tp for tp in session if tp not in wanted]
        for tp in forgotten:
            del session[tp]
        changed: dict[TopicPartition, PartitionFetch] = {}
        for tp, partition in wanted.items():
            if session.get(tp) != partition:
                changed[tp] = partition
                session[tp] = partition
        return SessionFetch(self._session_id, epoch, _topics(changed), _forgotten(forgotten))

    def answered(self, response: FetchResponse, now_ms: int) -> bool:
        """Learns from the broker's answer; False for a session error on an incremental fetch, whose answer holds
        no partitions: the next fetch, a full one, may go at once."""
        self.in_flight = False
        if not self._enabled:
            return True
        sent = self._sent_epoch
        code = response.error_code
        if code:
            if code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self._session_id = INVALID_SESSION_ID  # nothing left to close
            self._restart()
            if code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
                log.info(
                    "fetch.session_error",
                    node=self.node,
                    slot=self.slot,
                    epoch=sent,
                    error=ErrorCode(code).name,
                )
                return sent <= INITIAL_EPOCH  # after a full fetch: a broker misbehaving, handled as any error
            return True
        if response.session_id == INVALID_SESSION_ID:
            if sent == INITIAL_EPOCH and not (response.throttle_time_ms and not response.responses):
                # asked for a session and got none: the broker's cache is full, or it has no sessions (a throttled
                # broker answers a full fetch with nothing at all: that says nothing about sessions, KIP-219)
                self._sessionless_until = now_ms + SESSION_RETRY_MS
                log.debug("fetch.session_refused", node=self.node, slot=self.slot, retry_ms=SESSION_RETRY_MS)
            self._session_id = INVALID_SESSION_ID  # an incremental fetch answered so: the broker closed the session
            self._epoch = INITIAL_EPOCH
            if sent > INITIAL_EPOCH:
                self._partitions = {}
        elif sent > INITIAL_EPOCH and response.session_id == self._session_id:
            self._epoch = next_epoch(sent)
            self._check(response, full=False)
        elif sent == INITIAL_EPOCH:
            self._session_id = response.session_id
            self._epoch = 1
            self._check(response, full=True)
        else:
            # a session id we did not ask for (or after a sessionless fetch): close it, start afresh
            self._session_id = response.session_id
            self._restart()
        return True

    def _check(self, response: FetchResponse, full: bool) -> None:
        """Restarts the session when the broker's answer does not fit it (as Java's handler checks): a full answer
        must hold every partition asked for, an incremental one only partitions in the session. Its partitions are
        still good; the session is what cannot be trusted."""
        session = self._partitions
        if full:
            fits = sum(len(t.partitions) for t in response.responses) == len(session)
        else:
            fits = all(
                TopicPartition(t.topic, p.partition_index) in session for t in response.responses for p in t.partitions
            )
        if not fits:
            log.info(
                "fetch.session_error",
                node=self.node,
                slot=self.slot,
                epoch=self._epoch,
                error="answer does not fit the session",
            )
            self._restart()

    def failed(self) -> None:
        """The fetch got no answer (connection lost, timed out): whether the broker moved the epoch is unknown,
        so the next fetch closes the session and opens a new one."""
        self.in_flight = False
        self._restart()

    def _restart(self) -> None:
        self._epoch = INITIAL_EPOCH
        self._partitions = {}


class FetchSessions:
    """Every broker's fetch sessions, one per in-flight slot, and how many fetches of each kind went out."""

    def __init__(self, slots: int, enabled: bool = True) -> None:
        self._slots = slots
        self._enabled = enabled
        self._sessions: dict[int, tuple[FetchSession, ...]] = {}
        self.full_fetches = 0
        self.incremental_fetches = 0
        self.session_errors = 0

    def of_node(self, node: int) -> tuple[FetchSession, ...]:
        """A broker's sessions, one per slot (none before the first fetch from it)."""
        return self._sessions.get(node, ())

    def prepare(
        self, node: int, wanted: Mapping[TopicPartition, PartitionFetch], now_ms: int
    ) -> tuple[FetchSession, SessionFetch]:
        """The session a fetch of ``wanted`` from ``node`` goes in (of those not awaiting an answer, the one that
        holds most of ``wanted`` already, so the fetch names the fewest) and that fetch's session fields."""
        sessions = self._sessions.get(node)
        if sessions is None:
            sessions = self._sessions[node] = tuple(
                FetchSession(node, slot, self._enabled) for slot in range(self._slots)
            )
        free = [s for s in sessions if not s.in_flight]
        assert free, f"more than {self._slots} fetches in flight to node {node}"
        session = max(free, key=lambda s: len(s.partitions.keys() & wanted.keys())) if len(free) > 1 else free[0]
        fetch = session.prepare(wanted, now_ms)
        if fetch.full:
            self.full_fetches += 1
        else:
            self.incremental_fetches += 1
        return session, fetch

    def answered(self, session: FetchSession, response: FetchResponse, now_ms: int) -> bool:
        """``FetchSession.answered``, counting session errors."""
        if response.error_code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
            self.session_errors += 1
        return session.answered(response, now_ms)
