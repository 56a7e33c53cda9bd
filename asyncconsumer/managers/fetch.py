"""Fetch: one request in flight per leader, sent again as soon as the last one answered and the buffer has room.

What is buffered plus what fetches in flight may bring stays within the buffer's limit (at most
``fetch_buffer_bytes``; see ``fetch_buffer``): each request asks the broker for at most the room left
(``max_bytes``), so memory is bounded whatever the topics hold.

Each partition is fetched from its ``fetch_position``, which runs ahead of the caller's position, so the broker
works on the next fetch while the caller decodes the previous one. Responses are cut to their complete batches
(walking batch headers only) and handed to the fetch buffer; no record is decoded here.

A partition error is retried after a backoff that grows while it repeats: retriable errors silently (after a
metadata refresh when the leader may have moved), other errors after reporting them to the caller, once per failed
fetch; such a partition is not fetched again until the caller's ``poll`` has passed the failed fetch in the buffer,
so a broker that keeps failing a partition costs one fetch and one error per ``poll``, never a flood.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import attrs

from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import (
    CorruptRecordError,
    KafkaError,
    OffsetOutOfRangeError,
    for_code,
)
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.fetch_buffer import CompletedFetch, FetchBuffer, ResponseShare
from asyncconsumer.logs import get_logger
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.metrics import LatencyWindow
from asyncconsumer.protocol.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from asyncconsumer.protocol.records import complete_prefix
from asyncconsumer.records import TopicPartition
from asyncconsumer.subscription import SubscriptionState

log = get_logger("asyncconsumer.fetch")

_OFFSET_OUT_OF_RANGE = 1


@attrs.define(frozen=True, slots=True)
class _Sent:
    fetch_offset: int
    epoch: int
    max_bytes: int


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
        self._in_flight: set[int] = set()
        self.latency = LatencyWindow()
        """Fetch round trips, for ``metrics()``."""
        self._node_retry_at: dict[int, int] = {}
        self._node_failures: dict[int, int] = {}
        self._partition_retry: dict[TopicPartition, tuple[int, int, int]] = {}
        """Partition -> (subscription epoch, consecutive errors, when to fetch it again) after a partition error."""
        self._isolation = 1 if config.isolation_level == "read_committed" else 0
        self._rotation = 0
        self.fetches_completed = 0
        self.bytes_fetched = 0

    @property
    def nodes_in_flight(self) -> int:
        return len(self._in_flight)

    def poll(self, now_ms: int) -> PollResult:
        fetchable = self._subs.fetchable()
        if not fetchable:
            return PollResult()
        limit = self._buffer.limit
        # No fetch is sent into less free buffer than one partition's worth (unless the buffer is empty).
        room = self._buffer.room(min(self._config.max_partition_fetch_bytes, limit))
        if not room:
            return PollResult()
        cluster = self._metadata.cluster
        by_node: dict[int, dict[TopicPartition, _Sent]] = defaultdict(dict)
        wait = 5_000
        for tp, offset, epoch, override in fetchable:
            leader = cluster.leader_for(tp)
            if leader is None:
                self._metadata.request_update()
                continue
            if leader in self._in_flight or self._buffer.error_pending(tp, epoch):
                continue
            retry = self._partition_retry.get(tp)
            if retry is not None and retry[0] == epoch and now_ms < retry[2]:
                wait = min(wait, retry[2] - now_ms)
                continue
            retry_at = self._node_retry_at.get(leader, 0)
            if now_ms < retry_at:
                wait = min(wait, retry_at - now_ms)
                continue
            max_bytes = override or self._config.max_partition_fetch_bytes
            by_node[leader][tp] = _Sent(offset, epoch, max_bytes)
        if not by_node:
            return PollResult(wait)
        # The request's max_bytes is how the broker is held to the buffer's bound (a soft limit: a first batch
        # larger than it still comes whole). The room is shared evenly by the leaders fetched from now, and no
        # request takes more than half the bound, so the next fetch can be under way while the caller decodes.
        share = max(1, min(self._config.fetch_max_bytes, max(1, limit // 2), room // len(by_node)))
        requests = tuple(self._request(node, sent, share, now_ms) for node, sent in by_node.items())
        return PollResult(wait, requests)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    def maximum_time_to_wait(self, now_ms: int) -> int:
        return 5_000

    def _request(self, node: int, sent: dict[TopicPartition, _Sent], max_bytes: int, now_ms: int) -> UnsentRequest:
        self._in_flight.add(node)
        self._buffer.reserve(max_bytes)
        by_topic: dict[str, list[FetchPartition]] = defaultdict(list)
        cluster = self._metadata.cluster
        # A broker fills partitions in request order until max_bytes: rotate the order so none starves (KIP-74).
        order = list(sent.items())
        self._rotation += 1
        if len(order) > 1:
            cut = self._rotation % len(order)
            order = order[cut:] + order[:cut]
        for tp, s in order:
            epoch = cluster.leader_epoch(tp)
            by_topic[tp.topic].append(
                FetchPartition(tp.partition, s.fetch_offset, s.max_bytes, -1 if epoch is None else epoch)
            )
        request = FetchRequest(
            max_wait_ms=self._config.fetch_max_wait_ms,
            min_bytes=self._config.fetch_min_bytes,
            max_bytes=max_bytes,
            topics=tuple(FetchTopic(t, tuple(ps)) for t, ps in by_topic.items()),
            isolation_level=self._isolation,
            rack_id=self._config.client_rack,
        )

        sent_at = now_ms

        def on_response(result: object, now_ms: int) -> None:
            self.latency.add(now_ms - sent_at)
            try:
                self._on_response(node, sent, result, now_ms)
            finally:
                self._buffer.unreserve(max_bytes)

        return UnsentRequest(
            request, node, on_response, timeout_ms=self._config.request_timeout_ms + self._config.fetch_max_wait_ms
        )

    def _on_response(self, node: int, sent: dict[TopicPartition, _Sent], result: object, now_ms: int) -> None:
        self._in_flight.discard(node)
        if isinstance(result, KafkaError):
            failures = self._node_failures.get(node, 0) + 1
            self._node_failures[node] = failures
            self._node_retry_at[node] = now_ms + self._backoff.backoff_ms(failures)
            if result.invalid_metadata:
                self._metadata.request_update()
            log.info("fetch.failed", node=node, error=str(result), failures=failures)
            return
        assert isinstance(result, FetchResponse)
        self._node_failures.pop(node, None)
        if result.error_code:
            error = for_code(result.error_code, f"fetch from node {node}")
            self._node_retry_at[node] = now_ms + self._backoff.backoff_ms(1)
            if not error.retriable:
                self._emit(ErrorEvent(error))
            return
        completed: list[CompletedFetch] = []
        size = 0
        share = ResponseShare(sum(len(p.records) for t in result.responses for p in t.partitions if p.records))
        for topic in result.responses:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition_index)
                s = sent.get(tp)
                if s is None:
                    continue
                if part.error_code:
                    failed = self._partition_error(tp, s, part.error_code, now_ms, share)
                    if failed is not None:
                        completed.append(failed)
                    continue
                self._partition_retry.pop(tp, None)
                records = part.records
                view = memoryview(records) if records is not None else memoryview(b"")
                length, next_offset = complete_prefix(view) if len(view) else (0, None)
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
                ):
                    continue  # sought, reset or unassigned while in flight
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
        if code == _OFFSET_OUT_OF_RANGE:
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
