"""A broker answering the fetch manager's requests from in-memory logs, fetch sessions (KIP-227) included, as
Kafka's ``FetchManager``/``FetchSession`` do: for unit tests that drive the fetch manager through many fetches.

``sent(request)`` takes a request as the manager hands it out (the broker updates the session then, as Kafka does on
arrival) and ``answer(request)`` builds its response. Partitions are filled in session order up to the request's
``max_bytes`` and each partition's limit, whole batches only, the first one even past the limit (KIP-74). An
incremental answer holds only the partitions with records, a changed high watermark or log start offset, and the
partitions that returned records move to the back of the session, so none starves. ``evict()`` drops every session
(the next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND); ``sessions=False`` is a broker that never gives one.

It also checks what the manager promises: a session's next fetch only after the answer to its last (the epoch), and
no partition fetched by two requests at once, counting the partitions a session fetches without naming them.
"""

from __future__ import annotations

import itertools

import attrs

from asyncconsumer.errors import ErrorCode
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, next_epoch
from asyncconsumer.protocol.messages.fetch import FetchableTopicResponse, FetchRequest, FetchResponse, PartitionData
from asyncconsumer.records import TopicPartition

Log = list[tuple[int, int, bytes]]
"""One partition's batches: (base offset, next offset, batch bytes)."""


@attrs.define
class _Cached:
    fetch_offset: int
    max_bytes: int
    high_watermark: int = -1


@attrs.define
class _Session:
    partitions: dict[TopicPartition, _Cached]
    epoch: int = 1


@attrs.define
class _Pending:
    session_id: int
    incremental: bool
    error_code: int
    partitions: dict[TopicPartition, tuple[int, int]]
    """What the broker fetches for the request: partition -> (fetch offset, max bytes)."""


class FakeFetchBroker:
    """See the module docstring; ``logs`` maps a partition of topic ``topic`` to its batches."""

    def __init__(self, logs: dict[int, Log], *, topic: str = "t", sessions: bool = True) -> None:
        self.logs = {TopicPartition(topic, p): log for p, log in logs.items()}
        self.sessions_enabled = sessions
        self._sessions: dict[int, _Session] = {}
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self.incremental_requests = 0
        self.full_requests = 0
        self.session_errors = 0

    def evict(self) -> None:
        self._sessions.clear()

    def fetching(self) -> set[TopicPartition]:
        """The partitions the requests sent and not yet answered fetch, named or not."""
        return {tp for pending in self._pending.values() for tp in pending.partitions}

    def sent(self, unsent: UnsentRequest) -> None:
        request = unsent.request
        assert isinstance(request, FetchRequest)
        named = {
            TopicPartition(t.topic, p.partition): (p.fetch_offset, p.partition_max_bytes)
            for t in request.topics
            for p in t.partitions
        }
        forgotten = {TopicPartition(f.topic, p) for f in request.forgotten_topics_data for p in f.partitions}
        pending = self._arrive(request.session_id, request.session_epoch, named, forgotten)
        busy = {tp for other in self._pending.values() for tp in other.partitions}
        assert not pending.partitions.keys() & busy, "a partition fetched by two requests at once"
        self._pending[id(unsent)] = pending

    def _arrive(
        self,
        session_id: int,
        epoch: int,
        named: dict[TopicPartition, tuple[int, int]],
        forgotten: set[TopicPartition],
    ) -> _Pending:
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            self.full_requests += 1
            assert not forgotten, "a full fetch forgets nothing"
            self._sessions.pop(session_id, None)  # a full fetch closes the session it names
            new_id = 0
            if epoch == INITIAL_EPOCH and self.sessions_enabled:
                new_id = next(self._ids)
                self._sessions[new_id] = _Session({tp: _Cached(*v) for tp, v in named.items()})
            return _Pending(new_id, False, 0, dict(named))
        self.incremental_requests += 1
        session = self._sessions.get(session_id)
        if session is None or session.epoch != epoch:
            self.session_errors += 1
            code = ErrorCode.FETCH_SESSION_ID_NOT_FOUND if session is None else ErrorCode.INVALID_FETCH_SESSION_EPOCH
            return _Pending(session_id, True, code, {})
        for tp, (offset, max_bytes) in named.items():
            cached = session.partitions.get(tp)
            if cached is None:
                session.partitions[tp] = _Cached(offset, max_bytes)
            else:
                cached.fetch_offset, cached.max_bytes = offset, max_bytes
        for tp in forgotten:
            session.partitions.pop(tp, None)
        session.epoch = next_epoch(session.epoch)
        fetched = {tp: (c.fetch_offset, c.max_bytes) for tp, c in session.partitions.items()}
        return _Pending(session_id, True, 0, fetched)

    def answer(self, unsent: UnsentRequest) -> FetchResponse:
        request = unsent.request
        assert isinstance(request, FetchRequest)
        pending = self._pending.pop(id(unsent))
        if pending.error_code:
            return FetchResponse(responses=(), error_code=pending.error_code, session_id=0)
        session = self._sessions.get(pending.session_id)
        total = 0
        parts: dict[str, list[PartitionData]] = {}
        served: list[TopicPartition] = []
        for tp, (fetch_offset, partition_max_bytes) in pending.partitions.items():
            log = self.logs[tp]
            chunk = b""
            for base, _, batch in log:
                if base < fetch_offset:
                    continue
                over = total + len(batch) > request.max_bytes or len(chunk) + len(batch) > partition_max_bytes
                if total and over:
                    break
                chunk += batch
                total += len(batch)
            end = log[-1][1] if log else 0
            cached = session.partitions.get(tp) if session is not None else None
            if pending.incremental and cached is not None and not chunk and cached.high_watermark == end:
                continue  # nothing new: left out of an incremental answer
            if cached is not None:
                cached.high_watermark = end
            if chunk:
                served.append(tp)
            parts.setdefault(tp.topic, []).append(
                PartitionData(
                    partition_index=tp.partition,
                    error_code=0,
                    high_watermark=end,
                    last_stable_offset=end,
                    log_start_offset=0,
                    aborted_transactions=None,
                    preferred_read_replica=-1,
                    records=chunk or None,
                )
            )
        if session is not None and pending.incremental:
            for tp in served:  # to the back of the session, as Kafka does
                if tp in session.partitions:
                    session.partitions[tp] = session.partitions.pop(tp)
        responses = tuple(FetchableTopicResponse(topic=topic, partitions=tuple(ps)) for topic, ps in parts.items())
        return FetchResponse(responses=responses, session_id=pending.session_id)
