"""The reference plugin, ``lag-monitor``: every ``interval_ms`` it asks each assigned partition's leader for the log
end (ListOffsets LATEST; the last stable offset under ``read_committed``) and publishes lag = end - position.

Unlike the fetch-based lag in ``metrics().partitions``, this is fresh for paused partitions and for partitions whose
fetches wait on a full buffer. Metrics (``metrics().plugins["lag-monitor"]``): per partition ``lag``,
``log_end_offset``; overall ``lag_total``, ``lag_max``, ``partitions``, ``rounds``. Logs: ``lag_monitor.updated``
(info, one per round), ``lag_monitor.partition`` (debug, one per partition), ``lag_monitor.retry`` (debug).
Options: ``interval_ms`` (default 5000, >= 10).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from asyncconsumer.errors import ConfigError, KafkaError, for_code
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.plugins.context import PluginContext
from asyncconsumer.protocol.constants import CONSUMER_REPLICA_ID, LATEST_TIMESTAMP
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from asyncconsumer.records import TopicPartition

DEFAULT_INTERVAL_MS = 5_000


class LagMonitor:
    """A sans-I/O request manager: one ListOffsets per leader per round, at most one round in flight."""

    def __init__(self, context: PluginContext, interval_ms: int = DEFAULT_INTERVAL_MS) -> None:
        if not isinstance(interval_ms, int) or isinstance(interval_ms, bool) or interval_ms < 10:
            raise ConfigError(
                "plugin_options", f"lag-monitor: interval_ms must be an integer >= 10, got {interval_ms!r}"
            )
        self._ctx = context
        self._interval_ms = interval_ms
        self._isolation = 1 if context.config.isolation_level == "read_committed" else 0
        self._next_round_ms = 0
        self._pending = 0
        """Requests of the current round still unanswered."""
        self._ends: dict[TopicPartition, int] = {}
        self._assignment_version = -1
        self.rounds = 0

    def poll(self, now_ms: int) -> PollResult:
        if self._assignment_version != self._ctx.assignment_version:
            self._assignment_version = self._ctx.assignment_version
            self._forget_unassigned()
        if self._pending or now_ms < self._next_round_ms:
            return PollResult(max(self._next_round_ms - now_ms, 0) or self._interval_ms)
        self._next_round_ms = now_ms + self._interval_ms
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in sorted(self._ctx.assignment()):
            leader = self._ctx.leader_for(tp)
            if leader is None:
                self._ctx.request_metadata_update()
                continue
            by_leader[leader].append(tp)
        requests = tuple(self._request(leader, tps) for leader, tps in by_leader.items())
        self._pending = len(requests)
        return PollResult(self._interval_ms, requests)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    def _request(self, leader: int, partitions: list[TopicPartition]) -> UnsentRequest:
        by_topic: dict[str, list[ListOffsetsPartition]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(ListOffsetsPartition(partition_index=tp.partition, timestamp=LATEST_TIMESTAMP))
        request = ListOffsetsRequest(
            replica_id=CONSUMER_REPLICA_ID,
            topics=tuple(ListOffsetsTopic(name=topic, partitions=tuple(parts)) for topic, parts in by_topic.items()),
            isolation_level=self._isolation,
        )

        def on_response(result: Any, now_ms: int) -> None:
            self._pending -= 1
            self._on_response(result, leader, frozenset(partitions))
            if not self._pending:
                self._publish()

        return UnsentRequest(request, leader, on_response)

    def _on_response(self, result: Any, leader: int, sent: frozenset[TopicPartition]) -> None:
        if isinstance(result, KafkaError):
            self._retry(leader, result)
            return
        if not isinstance(result, ListOffsetsResponse):
            raise TypeError(f"expected a ListOffsetsResponse, got {type(result).__name__}")
        assigned = self._ctx.assignment()
        for topic in result.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.name, part.partition_index)
                if tp not in sent or tp not in assigned:
                    continue
                if part.error_code:
                    self._retry(leader, for_code(part.error_code, f"ListOffsets for {tp}"))
                elif part.offset >= 0:
                    self._ends[tp] = part.offset

    def _retry(self, leader: int, error: KafkaError) -> None:
        """Every error waits for the next round; one that means the leader moved refreshes metadata first."""
        if error.invalid_metadata or not error.retriable:
            self._ctx.request_metadata_update()
        self._ctx.log.debug("lag_monitor.retry", node=leader, error=str(error))

    def _forget_unassigned(self) -> None:
        assigned = self._ctx.assignment()
        kept = {tp: end for tp, end in self._ends.items() if tp in assigned}
        if len(kept) != len(self._ends):
            self._ends = kept
            self._publish(log=False)

    def _publish(self, log: bool = True) -> None:
        lags: dict[TopicPartition, int] = {}
        for tp, end in self._ends.items():
            position = self._ctx.position(tp)
            if position is not None:
                lags[tp] = max(end - position, 0)
                if log:
                    self._ctx.log.debug(
                        "lag_monitor.partition",
                        topic=tp.topic,
                        partition=tp.partition,
                        position=position,
                        log_end_offset=end,
                        lag=lags[tp],
                    )
        ctx = self._ctx
        ctx.set_partition_metrics("lag", lags)
        ctx.set_partition_metrics("log_end_offset", self._ends)
        ctx.set_metric("lag_total", sum(lags.values()))
        ctx.set_metric("lag_max", max(lags.values(), default=0))
        ctx.set_metric("partitions", len(lags))
        if log:
            self.rounds += 1
            ctx.set_metric("rounds", self.rounds)
            ctx.log.info(
                "lag_monitor.updated",
                partitions=len(lags),
                lag_total=sum(lags.values()),
                lag_max=max(lags.values(), default=0),
            )


def create(context: PluginContext) -> LagMonitor:
    """The ``lag-monitor`` entry point: options from ``plugin_options["lag-monitor"]``."""
    unknown = set(context.options) - {"interval_ms"}
    if unknown:
        raise ConfigError("plugin_options", f"lag-monitor: unknown option(s) {', '.join(sorted(unknown))}")
    return LagMonitor(context, context.options.get("interval_ms", DEFAULT_INTERVAL_MS))
