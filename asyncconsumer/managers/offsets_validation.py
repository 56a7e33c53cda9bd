"""OffsetForLeaderEpoch: validates fetch positions after a leader change, and detects log truncation (KIP-320).

When the metadata names a newer leader epoch for a partition than the one its fetch position was fetched under,
the fetch manager stops fetching it (``SubscriptionState.begin_validation``) and this manager asks the new leader
where the epoch of the last fetched batch ends in its log. If it ends at or after the fetch position, fetching
goes on from there. If it ends before, an unclean leader election truncated the log: records the consumer already
fetched exist no more. What then happens is ``SubscriptionState.truncated``'s to say: fetched data the caller has
not consumed is fetched again; if the caller consumed lost records, the position moves back to where the logs
diverge when a reset policy is set (Java's behaviour: nothing the new leader holds is skipped), else the caller's
``poll`` raises ``LogTruncationError`` once and the partition waits for a seek.

Retriable errors (a leader that moved again, a fenced or unknown leader epoch, a lost connection) refresh the
metadata and retry after a backoff; a broker without OffsetForLeaderEpoch v2 (e.g. Tansu) is trusted, as Java's
consumer does with brokers that cannot answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import (
    KafkaError,
    LogTruncationError,
    UnsupportedVersionError,
    for_code,
)
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.constants import CONSUMER_REPLICA_ID
from asyncconsumer.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from asyncconsumer.records import TopicPartition

log = get_logger("asyncconsumer.offsets_validation")


@attrs.define(frozen=True, slots=True)
class _Asked:
    """What one partition's validation asked: under which subscription epoch, against which leader epoch, for the
    end of which fetched epoch, to compare with which fetch position."""

    epoch: int
    leader_epoch: int
    fetched_epoch: int
    fetch_position: int


class OffsetValidationManager:
    """Sends OffsetForLeaderEpoch for partitions awaiting validation and applies the answers."""

    def __init__(
        self,
        subscriptions: SubscriptionState,
        metadata: MetadataManager,
        auto_offset_reset: str,
        backoff: ExponentialBackoff,
        emit: Callable[[ErrorEvent], None],
    ) -> None:
        self._subs = subscriptions
        self._metadata = metadata
        self._reset = auto_offset_reset
        self._backoff = backoff
        self._emit = emit
        self._in_flight: set[TopicPartition] = set()
        self._retry: dict[TopicPartition, tuple[int, int, int]] = {}
        """Partition -> (subscription epoch, consecutive failures, when to ask again)."""
        self._reported: dict[TopicPartition, int] = {}
        """Partition -> subscription epoch whose truncation (or fatal error) was reported; it waits for a seek."""
        self._unsupported: set[int] = set()
        """Brokers that cannot answer OffsetForLeaderEpoch v2+: their partitions' positions are trusted."""
        self.validations = 0
        self.truncations = 0

    def poll(self, now_ms: int) -> PollResult:
        pending = self._subs.awaiting_validation()
        if not pending:
            if self._retry or self._reported:
                self._retry.clear()
                self._reported.clear()
            return PollResult()
        cluster = self._metadata.cluster
        wait = 5_000
        by_leader: dict[int, dict[TopicPartition, _Asked]] = defaultdict(dict)
        for tp, (epoch, leader_epoch, fetched_epoch, fetch_position) in pending.items():
            if tp in self._in_flight or self._reported.get(tp) == epoch:
                continue
            retry = self._retry.get(tp)
            if retry is not None and retry[0] == epoch and now_ms < retry[2]:
                wait = min(wait, retry[2] - now_ms)
                continue
            current = cluster.leader_epoch(tp)
            if current is not None and current > leader_epoch:
                # the leader moved again while this waited: validate against the newest
                self._subs.begin_validation(tp, epoch, current)
                leader_epoch = current
            leader = cluster.leader_for(tp)
            if leader is None:
                self._metadata.request_update()
                continue
            if leader in self._unsupported:
                self._subs.complete_validation(tp, epoch, leader_epoch)
                continue
            by_leader[leader][tp] = _Asked(epoch, leader_epoch, fetched_epoch, fetch_position)
        requests = tuple(self._request(leader, asked) for leader, asked in by_leader.items())
        return PollResult(wait, requests)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    def _request(self, leader: int, asked: dict[TopicPartition, _Asked]) -> UnsentRequest:
        self._in_flight |= asked.keys()
        by_topic: dict[str, list[OffsetForLeaderPartition]] = defaultdict(list)
        for tp, a in asked.items():
            by_topic[tp.topic].append(
                OffsetForLeaderPartition(
                    partition=tp.partition, leader_epoch=a.fetched_epoch, current_leader_epoch=a.leader_epoch
                )
            )
        request = OffsetForLeaderEpochRequest(
            replica_id=CONSUMER_REPLICA_ID,
            topics=tuple(OffsetForLeaderTopic(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
        )
        log.debug("offsets_validation.request", node=leader, partitions=len(asked))

        def on_response(result: object, now_ms: int) -> None:
            self._in_flight -= asked.keys()
            self._on_response(leader, asked, result, now_ms)

        return UnsentRequest(request, leader, on_response)

    def _on_response(self, leader: int, asked: dict[TopicPartition, _Asked], result: object, now_ms: int) -> None:
        if isinstance(result, UnsupportedVersionError):
            self._unsupported.add(leader)
            log.info("offsets_validation.unsupported", node=leader, error=str(result))
            for tp, sent in asked.items():
                self._subs.complete_validation(tp, sent.epoch, sent.leader_epoch)
            return
        if isinstance(result, KafkaError):
            for tp, sent in asked.items():
                self._failed(tp, sent, now_ms, result)
            return
        assert isinstance(result, OffsetForLeaderEpochResponse)
        answered: set[TopicPartition] = set()
        for topic in result.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition)
                a = asked.get(tp)
                if a is None:
                    continue
                answered.add(tp)
                if p.error_code:
                    self._failed(tp, a, now_ms, for_code(p.error_code, f"OffsetForLeaderEpoch for {tp}"))
                    continue
                self._retry.pop(tp, None)
                self.validations += 1
                if p.end_offset < 0 or p.leader_epoch < 0:
                    self._undefined(tp, a)
                elif p.end_offset < a.fetch_position:
                    self._truncated(tp, a, p.end_offset, p.leader_epoch)
                elif self._subs.complete_validation(tp, a.epoch, a.leader_epoch):
                    log.debug("offsets_validation.valid", partition=str(tp), position=a.fetch_position)
        for tp in asked.keys() - answered:  # a broker that left a partition out: ask again
            self._failed(tp, asked[tp], now_ms, None)

    def _truncated(self, tp: TopicPartition, a: _Asked, divergent_offset: int, divergent_epoch: int) -> None:
        outcome, position = self._subs.truncated(
            tp, a.epoch, a.leader_epoch, divergent_offset, reset=self._reset != "none"
        )
        if outcome == "stale":
            return
        self.truncations += 1
        (log.info if outcome == "refetch" else log.warning)(
            "offsets_validation.log_truncation",
            partition=str(tp),
            fetch_position=a.fetch_position,
            position=position,
            divergent_offset=divergent_offset,
            divergent_epoch=divergent_epoch,
            outcome=outcome,
        )
        if outcome == "fatal":
            assert position is not None
            self._reported[tp] = a.epoch
            self._emit(ErrorEvent(LogTruncationError(tp.topic, tp.partition, position, divergent_offset)))

    def _undefined(self, tp: TopicPartition, a: _Asked) -> None:
        """The new leader knows no epoch at or below the one fetched: nothing to compare with (Java resets)."""
        log.warning("offsets_validation.epoch_unknown", partition=str(tp), fetched_epoch=a.fetched_epoch)
        if self._reset != "none":
            self._subs.reset_if_unchanged(tp, a.epoch, self._reset)
            return
        position = self._subs.position(tp) if self._subs.is_assigned(tp) else None
        if self._subs.epoch(tp) == a.epoch and position is not None:
            self._reported[tp] = a.epoch
            self._emit(ErrorEvent(LogTruncationError(tp.topic, tp.partition, position, None)))

    def _failed(self, tp: TopicPartition, a: _Asked, now_ms: int, error: KafkaError | None) -> None:
        previous = self._retry.get(tp)
        failures = previous[1] + 1 if previous is not None and previous[0] == a.epoch else 1
        self._retry[tp] = (a.epoch, failures, now_ms + self._backoff.backoff_ms(failures))
        if error is not None and not error.retriable and not error.invalid_metadata:
            if self._subs.epoch(tp) == a.epoch:
                self._reported[tp] = a.epoch
                log.info("offsets_validation.failed", partition=str(tp), error=str(error))
                self._emit(ErrorEvent(error))
            return
        self._metadata.request_update()
        log.debug("offsets_validation.retry", partition=str(tp), error=str(error), failures=failures)
