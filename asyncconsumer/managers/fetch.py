"""Fetch: a request in flight per leader, two while records wait there, sent again as soon as one answers.

What is buffered plus what fetches in flight may bring stays within the buffer's limit (at most
``fetch_buffer_bytes``; see ``fetch_buffer``): each request asks the broker for at most the room left
(``max_bytes``), so memory is bounded whatever the topics hold.

Each partition is fetched from its ``fetch_position``, which runs ahead of the caller's position, so the broker
works on the next fetch while the caller decodes the previous one. Responses are cut to their complete batches
(walking batch headers only) and handed to the fetch buffer; no record is decoded here.

While a broker holds records beyond the fetch positions of two or more of its partitions (as its last responses
said), it gets two fetches over disjoint partitions, so it works on one while the background handles the other.
Each such pipelined fetch names a partition with records waiting, so the broker answers it at once: a broker
serves one connection's requests in order, and a fetch parked there waiting for new records would hold up the
other. Once the partitions are caught up, a broker gets one fetch at a time again. Pipelining is off when
``fetch_min_bytes`` is above 1 (the broker may then wait even with records there) or when
``max_in_flight_requests_per_connection`` is 1.

Fetches go in fetch sessions (KIP-227, see ``fetch_session``), one per broker and in-flight slot: after the first,
full fetch, a fetch names only the partitions whose offset, size limit or leader epoch changed, and the broker
answers only those with something new. The broker fetches every partition in a session, so a partition not fetched
now (paused, backing off, waiting for the caller, in the other fetch) is forgotten from it; partitions an answer
leaves out are done with all the same, and what was known of their records waiting stays. A broker that lost the
session or finds it out of step gets a full fetch at once.

A partition error is retried after a backoff that grows while it repeats: retriable errors silently (after a
metadata refresh when the leader may have moved), other errors after reporting them to the caller, once per failed
fetch; such a partition is not fetched again until the caller's ``poll`` has passed the failed fetch in the buffer,
so a broker that keeps failing a partition costs one fetch and one error per ``poll``, never a flood.

With ``client_rack`` set, a partition whose leader named a replica in the consumer's rack is fetched from that
replica instead (KIP-392; ``read_replica.py`` says for how long and when it falls back to the leader).

A fetch still out when the consumer closes is abandoned, not failed: from ``poll_on_close`` on, and for any fetch
failed with ``ClientClosedError`` (unsent when the close began), its end is the debug event ``fetch.cancelled``
rather than ``fetch.failed``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import NamedTuple

from asyncconsumer._logs import get_logger
from asyncconsumer._state.fetch_buffer import CompletedFetch, FetchBuffer, ResponseShare
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import (
    ClientClosedError,
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    OffsetOutOfRangeError,
    for_code,
)
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.fetch_session import FetchSession, FetchSessions, PartitionFetch
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.read_replica import ReadReplicas
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.metrics import LatencyWindow
from asyncconsumer.protocol.messages.fetch import FetchRequest, FetchResponse
from asyncconsumer.protocol.records import complete_batches
from asyncconsumer.records import TopicPartition

log = get_logger("asyncconsumer.fetch")


FETCHES_PER_NODE = 2
"""Fetches in flight to one broker at most: two over disjoint partitions while records wait there."""

PAUSED_BEHIND_MAX_WAIT_MS = 50
"""The most a fetch waits at a broker for new records while a paused partition of that broker has records waiting:
a broker serves a connection's requests in order, so the fetch that partition's resume sends waits behind it."""


class _Sent(NamedTuple):
    """One partition of a fetch sent: made for every partition of every fetch (1,024 of them per fetch of a topic
    that wide), so a tuple, about a fifth of a frozen attrs class's cost to make."""

    fetch_offset: int
    epoch: int
    max_bytes: int
    leader_epoch: int | None = None
    """The leader epoch the fetch was sent under (``current_leader_epoch``), from the metadata."""


class FetchManager:
    """Builds fetches for fetchable partitions and turns responses into completed fetches."""

    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        metadata: MetadataManager,
        buffer: FetchBuffer,
        backoff: ExponentialBackoff,
        emit: Callable[[ErrorEvent], None],
    ) -> None:
        self._config = config
        self._subs = subscriptions
        self._metadata = metadata
        self._buffer = buffer
        self._backoff = backoff
        self._emit = emit
        self._in_flight: Counter[int] = Counter()
        """Node -> fetches in flight to it."""
        self._partitions_in_flight: set[TopicPartition] = set()
        self._behind: dict[TopicPartition, int] = {}
        """Partition -> subscription epoch, for partitions whose last response showed records beyond the next fetch
        offset (a seek changes the epoch, and what was known)."""
        self._assignment_version = -1
        self._pipelining = config.fetch_min_bytes == 1 and config.max_in_flight_requests_per_connection >= 2
        self.latency = LatencyWindow()
        """Fetch round trips, for ``metrics()``."""
        self._node_retry_at: dict[int, int] = {}
        self._node_failures: dict[int, int] = {}
        self._partition_retry: dict[TopicPartition, tuple[int, int, int]] = {}
        """Partition -> (subscription epoch, consecutive errors, when to fetch it again) after a partition error."""
        self._isolation = 1 if config.isolation_level == "read_committed" else 0
        self._served: dict[TopicPartition, int] = {}
        """Partition -> when (a count of responses) it last got records: fetches name the longest-unserved first."""
        self._responses = 0
        self._leader_epochs: dict[TopicPartition, int] = {}
        """Partition -> the metadata's leader epoch when last fetched: a change may need a validation (KIP-320)."""
        self.fetches_completed = 0
        self.bytes_fetched = 0
        self.read_replicas = ReadReplicas(config.client_rack, config.metadata_max_age_ms, metadata)
        """Where each partition is read from when its leader named a replica in our rack (KIP-392)."""
        self.sessions = FetchSessions(FETCHES_PER_NODE, config.fetch_sessions)
        """Fetch sessions (KIP-227), one per broker and in-flight slot; see ``fetch_session``."""
        self._routes_of: object = None
        self._routes: dict[TopicPartition, tuple[int | None, int | None]] = {}
        """Partition -> (leader, leader epoch) in the metadata snapshot ``_routes_of``, as looked up so far."""
        self._closing = False
        """Set by ``poll_on_close``: the consumer is closing, and a fetch that ends in an error was abandoned."""

    @property
    def nodes_in_flight(self) -> int:
        return self._in_flight.total()

    def poll(self, now_ms: int) -> PollResult:
        if self._assignment_version != self._subs.assignment_version:
            self._assignment_version = self._subs.assignment_version
            assigned = self._subs.assigned()
            self._served = {tp: n for tp, n in self._served.items() if tp in assigned}
            self._behind = {tp: e for tp, e in self._behind.items() if tp in assigned}
            self._leader_epochs = {tp: e for tp, e in self._leader_epochs.items() if tp in assigned}
            self.read_replicas.retain(assigned)
            self._buffer.fit_partitions(len(assigned))
        limit = self._buffer.limit
        # No fetch is sent into less free buffer than one partition's worth (unless the buffer is empty); asked
        # first, because the walk below is over every assigned partition and the loop turns far more often than a
        # fetch can be sent.
        room = self._buffer.room(min(self._config.max_partition_fetch_bytes, limit))
        if not room:
            return PollResult()
        fetchable = self._subs.fetchable()
        if not fetchable:
            return PollResult()
        cluster = self._metadata.cluster
        by_node: dict[int, dict[TopicPartition, _Sent]] = defaultdict(dict)
        behind: set[TopicPartition] = set()
        wait = 5_000
        # Once per partition per turn, for every assigned partition: each partition's leader is looked up once per
        # metadata snapshot (a snapshot is replaced whole, never changed).
        in_flight = self._partitions_in_flight
        if cluster is not self._routes_of:
            self._routes_of, self._routes = cluster, {}
        routes = self._routes
        leader_epochs = self._leader_epochs
        # What a round cannot change, read once: the nodes with every fetch slot taken, whether any partition is
        # read from a replica, has a failed fetch waiting for the caller, or is backing off, or any node is.
        full = {node for node, n in self._in_flight.items() if n >= FETCHES_PER_NODE}
        replicas = self.read_replicas if self.read_replicas.any_leases(now_ms) else None
        errors = self._buffer.errors_pending
        partition_retry = self._partition_retry
        node_retry_at = self._node_retry_at
        behind_of = self._behind if self._pipelining else None
        default_max = self._config.max_partition_fetch_bytes
        for tp, offset, epoch, override in fetchable:
            route = routes.get(tp)
            if route is None:
                route = routes[tp] = (cluster.leader_for(tp), cluster.leader_epoch(tp))
            elif tp in in_flight:
                continue  # its leader was checked under this metadata snapshot already (KIP-320, below)
            leader, leader_epoch = route
            if leader is None:
                self._metadata.request_update()
                continue
            if leader_epoch is not None and leader_epochs.get(tp) != leader_epoch:
                # a new leader: validate the position against its log before fetching from it (KIP-320)
                if self._subs.begin_validation(tp, epoch, leader_epoch):
                    wait = 0  # the validation manager, polled before us, asks the new leader on the next turn
                    continue
                leader_epochs[tp] = leader_epoch
            # In flight or not, a leader change above starts the validation now: the answer of the fetch out
            # under the old leader is then dropped (KIP-320).
            if tp in in_flight:
                continue
            node = leader if replicas is None else replicas.select(tp, leader, cluster, now_ms)
            if node in full or (errors and self._buffer.error_pending(tp, epoch)):
                continue
            if partition_retry:
                retry = partition_retry.get(tp)
                if retry is not None and retry[0] == epoch and now_ms < retry[2]:
                    wait = min(wait, retry[2] - now_ms)
                    continue
            if node_retry_at:
                retry_at = node_retry_at.get(node, 0)
                if now_ms < retry_at:
                    wait = min(wait, retry_at - now_ms)
                    continue
            by_node[node][tp] = _Sent(offset, epoch, override or default_max, leader_epoch)
            if behind_of is not None and behind_of.get(tp) == epoch:
                behind.add(tp)
        planned = [fetch for node, sent in by_node.items() for fetch in self._plan(node, sent, behind)]
        if not planned:
            return PollResult(wait)
        # The request's max_bytes is how the broker is held to the buffer's bound (a soft limit: a first batch
        # larger than it still comes whole). The room is shared evenly by the fetches sent now; a fetch takes at
        # most half the limit, a pipelined one a quarter, so the next fetch can be under way while the caller
        # decodes.
        per_fetch = room // len(planned)
        held = self._paused_behind_nodes() if self._subs.any_paused() and not behind else ()
        longest = self._config.fetch_max_wait_ms
        requests = tuple(
            self._request(
                node,
                sent,
                self._share(limit // (4 if pipelined else 2), per_fetch),
                now_ms,
                min(longest, PAUSED_BEHIND_MAX_WAIT_MS) if node in held and behind.isdisjoint(sent) else longest,
            )
            for node, sent, pipelined in planned
        )
        return PollResult(wait, requests)

    def _paused_behind_nodes(self) -> set[int]:
        """The leaders of paused partitions with records waiting: a fetch to them that may wait for new records is
        kept short, so a resume (``process()`` pauses for backpressure) is not held up to ``fetch_max_wait_ms``."""
        nodes: set[int] = set()
        cluster = self._metadata.cluster
        for tp in self._subs.paused_behind():  # also those a pause dropped and sought back (fetch_collector)
            leader = cluster.leader_for(tp)
            if leader is not None:
                nodes.add(leader)
        return nodes

    def _share(self, most: int, per_fetch: int) -> int:
        return max(1, min(self._config.fetch_max_bytes, max(1, most), per_fetch))

    def _plan(
        self, node: int, sent: dict[TopicPartition, _Sent], behind: set[TopicPartition]
    ) -> list[tuple[int, dict[TopicPartition, _Sent], bool]]:
        """The fetches to send ``node`` now, each with whether it is pipelined (see the module docstring)."""
        waiting = [tp for tp in sent if tp in behind]
        if not self._in_flight[node]:
            if len(waiting) < 2:
                return [(node, sent, False)]
            # records wait in two partitions or more: split them over two fetches, each naming one of them
            order = waiting + [tp for tp in sent if tp not in behind]
            return [(node, {tp: sent[tp] for tp in order[i::2]}, True) for i in (0, 1)]
        # a second fetch goes only where records wait; a caught-up partition waits for the one in flight
        return [(node, sent, True)] if waiting else []

    def poll_on_close(self, now_ms: int) -> PollResult:
        self._closing = True  # the fetches still out end when the connections close: cancelled, not failed
        return PollResult()

    def _request(
        self, node: int, sent: dict[TopicPartition, _Sent], max_bytes: int, now_ms: int, max_wait_ms: int
    ) -> UnsentRequest:
        self._in_flight[node] += 1
        self._partitions_in_flight.update(sent)
        self._buffer.reserve(max_bytes)
        # A broker fills partitions in request order until max_bytes (KIP-74): the partitions that got records
        # longest ago go first, so none starves, whichever fetch each rides in. (Within a fetch session the broker
        # keeps the order itself, moving partitions that returned records to the back.)
        served = self._served
        wanted: dict[TopicPartition, PartitionFetch] = {}
        for tp in sorted(sent, key=lambda tp: served.get(tp, -1)):
            s = sent[tp]
            epoch = s.leader_epoch
            wanted[tp] = (s.fetch_offset, s.max_bytes, -1 if epoch is None else epoch)
        session, fetch = self.sessions.prepare(node, wanted, now_ms)
        request = FetchRequest(
            max_wait_ms=max_wait_ms,
            min_bytes=self._config.fetch_min_bytes,
            max_bytes=max_bytes,
            topics=fetch.topics,
            isolation_level=self._isolation,
            session_id=fetch.session_id,
            session_epoch=fetch.epoch,
            forgotten_topics_data=fetch.forgotten,
            rack_id=self.read_replicas.rack_id(sent, now_ms),
        )

        sent_at = now_ms

        def on_response(result: object, now_ms: int) -> None:
            self.latency.add(now_ms - sent_at)
            try:
                self._on_response(node, session, sent, result, now_ms)
            finally:
                self._buffer.unreserve(max_bytes)

        return UnsentRequest(
            request, node, on_response, timeout_ms=self._config.request_timeout_ms + self._config.fetch_max_wait_ms
        )

    def _on_response(
        self, node: int, session: FetchSession, sent: dict[TopicPartition, _Sent], result: object, now_ms: int
    ) -> None:
        # Every partition sent is done with, also those an incremental answer leaves out (nothing new for them).
        self._in_flight[node] -= 1
        self._partitions_in_flight.difference_update(sent)
        if isinstance(result, KafkaError):
            session.failed()
            for tp in sent:
                self._behind.pop(tp, None)
            if self._closing or isinstance(result, ClientClosedError):
                log.debug("fetch.cancelled", node=node, reason=str(result))
                return
            failures = self._node_failures.get(node, 0) + 1
            self._node_failures[node] = failures
            self._node_retry_at[node] = now_ms + self._backoff.backoff_ms(failures)
            if result.invalid_metadata:
                self._metadata.request_update()
            self.read_replicas.node_failed(node, sent, now_ms)
            log.info("fetch.failed", node=node, error=str(result), failures=failures)
            return
        assert isinstance(result, FetchResponse)
        self._node_failures.pop(node, None)
        if not self.sessions.answered(session, result, now_ms):
            return  # the session is gone and the broker fetched nothing: the next fetch, a full one, goes at once
        if result.error_code:
            for tp in sent:
                self._behind.pop(tp, None)
            error = for_code(result.error_code, f"fetch from node {node}")
            self._node_retry_at[node] = now_ms + self._backoff.backoff_ms(1)
            if not error.retriable:
                self._emit(ErrorEvent(error))
            return
        completed: list[CompletedFetch] = []
        size = 0
        self._responses += 1
        share = ResponseShare(sum(len(p.records) for t in result.responses for p in t.partitions if p.records))
        for topic in result.responses:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition_index)
                s = sent.get(tp)
                if s is None:
                    continue
                # what was known of records waiting; a partition left out of an incremental answer keeps it (it got
                # no records and its high watermark did not move)
                self._behind.pop(tp, None)
                if part.error_code:
                    from_replica = self.read_replicas.partition_failed(tp, node)
                    if from_replica and part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        continue  # a follower may lag the leader: ask the leader, no reset (as Java's consumer)
                    failed = self._partition_error(tp, s, part.error_code, now_ms, share)
                    if failed is not None:
                        completed.append(failed)
                    continue
                self._partition_retry.pop(tp, None)
                records = part.records
                view = memoryview(records) if records is not None else memoryview(b"")
                length, next_offset, batch_epoch = complete_batches(view) if len(view) else (0, None, -1)
                if len(view) and next_offset is None:
                    self._too_large(tp, s, view)
                    continue
                if next_offset is not None and next_offset <= s.fetch_offset:
                    self._emit(
                        ErrorEvent(
                            CorruptRecordError(
                                tp.topic,
                                tp.partition,
                                s.fetch_offset,
                                f"batches end at {next_offset}, before the fetch offset",
                            )
                        )
                    )
                    continue
                if not self._subs.fetched(
                    tp,
                    s.epoch,
                    s.fetch_offset,
                    next_offset,
                    part.high_watermark,
                    part.last_stable_offset,
                    part.log_start_offset,
                    s.leader_epoch,
                    batch_epoch,
                ):
                    continue  # sought, reset, unassigned or awaiting validation while in flight
                self.read_replicas.answered(tp, node, part.preferred_read_replica, next_offset is not None, now_ms)
                end = (
                    part.last_stable_offset if self._isolation and part.last_stable_offset >= 0 else part.high_watermark
                )
                if (s.fetch_offset if next_offset is None else next_offset) < end:
                    self._behind[tp] = s.epoch
                if next_offset is not None:
                    completed.append(
                        CompletedFetch(
                            tp,
                            s.epoch,
                            s.fetch_offset,
                            next_offset,
                            view[:length],
                            part.high_watermark,
                            part.aborted_transactions,
                            share,
                        )
                    )
                    size += length
                    self._served[tp] = self._responses
        self.fetches_completed += 1
        self.bytes_fetched += size
        if completed:
            self._buffer.add_all(completed, share)
        log.debug("fetch.completed", node=node, partitions=len(completed), bytes=size)

    def _partition_error(
        self, tp: TopicPartition, s: _Sent, code: int, now_ms: int, share: ResponseShare
    ) -> CompletedFetch | None:
        """Handles a partition's error code; returns the failed fetch to queue behind the records already buffered
        when the error was reported to the caller (see the module docstring)."""
        error = for_code(code, f"fetch of {tp} at offset {s.fetch_offset}")
        previous = self._partition_retry.get(tp)
        failures = previous[1] + 1 if previous is not None and previous[0] == s.epoch else 1
        # entries of partitions sought or unassigned since are of no use: drop them here, off the hot path
        self._partition_retry = {p: r for p, r in self._partition_retry.items() if self._subs.epoch(p) == r[0]}
        self._partition_retry[tp] = (s.epoch, failures, now_ms + self._backoff.backoff_ms(failures))
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            strategy = self._config.auto_offset_reset
            if strategy != "none":
                if self._subs.reset_if_unchanged(tp, s.epoch, strategy):
                    log.info("fetch.offset_out_of_range", partition=str(tp), offset=s.fetch_offset, reset=strategy)
                return None
            error = OffsetOutOfRangeError(
                f"offset {s.fetch_offset} is out of range for {tp} and auto_offset_reset is 'none'"
            )
        elif error.invalid_metadata or error.retriable:
            self._metadata.request_update()
            log.debug("fetch.partition_retry", partition=str(tp), error=str(error), failures=failures)
            return None
        if self._subs.epoch(tp) != s.epoch:
            return None  # sought, reset or unassigned while in flight: the error is about a stale fetch
        log.info("fetch.partition_error", partition=str(tp), offset=s.fetch_offset, error=str(error))
        self._emit(ErrorEvent(error))
        empty = memoryview(b"")
        return CompletedFetch(tp, s.epoch, s.fetch_offset, s.fetch_offset, empty, -1, None, share, error)

    def _too_large(self, tp: TopicPartition, s: _Sent, partial: memoryview) -> None:
        """A batch bigger than the partition limit (a broker may cut it): fetch it again with room for it."""
        needed = s.max_bytes * 2
        if len(partial) >= 12:
            needed = max(needed, int.from_bytes(partial[8:12], "big", signed=True) + 12)
        self._subs.grow_fetch_size(tp, s.epoch, needed)
        log.info("fetch.batch_too_large", partition=str(tp), offset=s.fetch_offset, max_bytes=needed)
