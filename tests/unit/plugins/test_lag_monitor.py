"""The reference plugin (``plugins/lag_monitor.py``), driven sans-I/O with literal timestamps and hand-built
ListOffsets answers: one request per leader per interval, lag published per round, retries and metadata refreshes,
and the last stable offset under read_committed."""

from __future__ import annotations

import pytest

from asyncconsumer.errors import ConfigError, KafkaConnectionError
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.plugins.lag_monitor import LagMonitor, create
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from asyncconsumer.records import TopicPartition
from tests.support.plugins import TP0, TP1, TP2, context

NOT_LEADER_OR_FOLLOWER = 6


def answer(offsets: dict[TopicPartition, int], error_code: int = 0) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=(
            ListOffsetsTopicResponse(
                name="t",
                partitions=tuple(
                    ListOffsetsPartitionResponse(
                        partition_index=tp.partition, error_code=error_code, timestamp=-1, offset=o
                    )
                    for tp, o in offsets.items()
                ),
            ),
        )
    )


def by_node(result: PollResult) -> dict[int | None, UnsentRequest]:
    return {u.node_id: u for u in result.unsent_requests}


def test_lag_monitor_asks_each_leader_once_per_interval_and_publishes_lag() -> None:
    ctx, subs, _, store, _ = context(options={"interval_ms": 1000})
    monitor = create(ctx)
    subs.assign([TP0, TP1, TP2])
    for tp, offset in ((TP0, 10), (TP1, 0), (TP2, 3)):
        subs.seek(tp, offset)
    sent = by_node(monitor.poll(0))
    assert set(sent) == {1, 2}
    asked = {
        (t.name, p.partition_index, p.timestamp)
        for u in sent.values()
        for t in u.request.topics  # type: ignore[attr-defined]
        for p in t.partitions
    }
    assert asked == {("t", 0, -1), ("t", 1, -1), ("t", 2, -1)}
    assert monitor.poll(1).unsent_requests == ()  # the round is in flight
    sent[1].on_response(answer({TP0: 25, TP2: 3}), 5)
    assert store.snapshot().values == {}  # published when the round is complete
    sent[2].on_response(answer({TP1: 7}), 6)
    snap = store.snapshot()
    assert {tp: m["lag"] for tp, m in snap.partitions.items()} == {TP0: 15, TP1: 7, TP2: 0}
    assert snap.partitions[TP0]["log_end_offset"] == 25
    assert snap.values == {"lag_total": 22, "lag_max": 15, "partitions": 3, "rounds": 1}

    result = monitor.poll(500)
    assert result.unsent_requests == () and result.time_until_next_poll_ms == 500
    assert len(monitor.poll(1000).unsent_requests) == 2


def test_lag_monitor_retries_next_round_and_refreshes_metadata_when_the_leader_moved() -> None:
    ctx, subs, meta, store, _ = context(leaders={0: 1}, options={"interval_ms": 100})
    monitor = create(ctx)
    subs.assign([TP0])
    subs.seek(TP0, 2)
    meta.poll(0)  # nothing due: metadata is fresh
    (request,) = monitor.poll(0).unsent_requests
    request.on_response(answer({TP0: -1}, NOT_LEADER_OR_FOLLOWER), 1)
    assert store.snapshot().partitions == {}
    assert meta.poll(2).unsent_requests  # a refresh was asked for
    (request,) = monitor.poll(100).unsent_requests
    request.on_response(KafkaConnectionError("gone"), 101)
    (request,) = monitor.poll(200).unsent_requests
    request.on_response(answer({TP0: 9}), 201)
    assert store.snapshot().partitions == {TP0: {"lag": 7, "log_end_offset": 9}}


def test_lag_monitor_forgets_partitions_that_are_no_longer_assigned() -> None:
    ctx, subs, _, store, _ = context(leaders={0: 1, 1: 1}, options={"interval_ms": 100})
    monitor = create(ctx)
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    (request,) = monitor.poll(0).unsent_requests
    request.on_response(answer({TP0: 4, TP1: 6}), 1)
    assert set(store.snapshot().partitions) == {TP0, TP1}
    subs.assign([TP1])
    monitor.poll(2)
    assert set(store.snapshot().partitions) == {TP1}
    assert store.snapshot().values["lag_total"] == 6


def test_lag_monitor_uses_the_last_stable_offset_under_read_committed_and_checks_its_interval() -> None:
    ctx, subs, _, _, _ = context(leaders={0: 1}, isolation_level="read_committed")
    subs.assign([TP0])
    (request,) = LagMonitor(ctx).poll(0).unsent_requests
    assert request.request.isolation_level == 1  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="interval_ms must be an integer >= 10, got 0"):
        LagMonitor(ctx, interval_ms=0)
