"""The fetch manager driven with literal timestamps and hand-built responses: what it asks for and how much, the
buffer's room and limit, partition errors and their backoff, and pipelining (two fetches in flight per broker while
records wait there: when, over which partitions, and what stays true)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from asyncconsumer._state.fetch_buffer import GROW_AFTER_DRY_POLLS, CompletedFetch, FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ClientClosedError, ErrorCode, KafkaConnectionError, KafkaError, OffsetOutOfRangeError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers import fetch as fetch_module
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.protocol.messages.fetch import FetchableTopicResponse, FetchRequest, FetchResponse, PartitionData
from asyncconsumer.records import TopicPartition
from tests.support.batches import build_batch
from tests.support.fetch_broker import FakeFetchBroker
from tests.support.fetch_buffer import held_back
from tests.support.logs import captured_events, events_named
from tests.support.managers import metadata_response, no_jitter, only

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def take(buffer: FetchBuffer) -> CompletedFetch | None:
    """What the caller takes next, once the loop delivered what the manager added (as every iteration's end does)."""
    buffer.deliver()
    return buffer.take()


def fetch_fixture(
    buffer_bytes: int = 16 << 20,
    initial_bytes: int | None = None,
    partitions: int = 2,
    leader: int | tuple[int, ...] = 1,
    **config: object,
) -> tuple[FetchManager, MetadataManager, SubscriptionState, FetchBuffer, list[ErrorEvent]]:
    cfg = ConsumerConfig.from_kwargs("h:1", fetch_buffer_bytes=buffer_bytes, **config)
    metadata = MetadataManager(["h:1"], 60_000, no_jitter())
    only(metadata.poll(0).unsent_requests).on_response(metadata_response(partitions=partitions, leader=leader), 0)
    subs = SubscriptionState(cfg.auto_offset_reset)
    buffer = FetchBuffer(buffer_bytes, CallerSignal(), initial_bytes)
    errors: list[ErrorEvent] = []
    return FetchManager(cfg, subs, metadata, buffer, no_jitter(), errors.append), metadata, subs, buffer, errors


def fetch_answer(
    parts: dict[int, tuple[int, bytes | None]], high_watermark: int = 100, session_id: int = 0
) -> FetchResponse:
    return FetchResponse(
        responses=(
            FetchableTopicResponse(
                topic="t",
                partitions=tuple(
                    PartitionData(
                        partition_index=p,
                        error_code=code,
                        high_watermark=high_watermark,
                        last_stable_offset=high_watermark,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=records,
                    )
                    for p, (code, records) in parts.items()
                ),
            ),
        )
        if parts
        else (),
        session_id=session_id,
    )


def test_fetch_sends_one_request_per_leader_and_buffers_complete_batches() -> None:
    manager, _, subs, buffer, _ = fetch_fixture()
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 10)
    request = only(manager.poll(0).unsent_requests)
    assert isinstance(request.request, FetchRequest)
    assert {(p.partition, p.fetch_offset) for t in request.request.topics for p in t.partitions} == {(0, 0), (1, 10)}
    assert manager.poll(1).unsent_requests == ()  # one fetch in flight per leader
    batch0 = build_batch(0, [b"a", b"b"])
    batch1 = build_batch(10, [b"c"]) + build_batch(11, [b"d"])[:-5]  # the second batch is cut off
    # records wait beyond partition 0's batch only: one partition behind is no reason for a second fetch
    request.on_response(fetch_answer({0: (0, batch0), 1: (0, batch1)}, high_watermark=11), 2)
    fetched = [take(buffer), take(buffer)]
    assert {(f.tp, f.fetch_offset, f.next_fetch_offset) for f in fetched if f} == {(TP0, 0, 2), (TP1, 10, 11)}
    assert take(buffer) is None
    # The next fetch starts where the last complete batch ended, while the caller still holds the data.
    follow_up = only(manager.poll(3).unsent_requests)
    assert isinstance(follow_up.request, FetchRequest)
    assert {(p.partition, p.fetch_offset) for t in follow_up.request.topics for p in t.partitions} == {(0, 2), (1, 11)}


def test_fetch_answer_for_a_partition_sought_meanwhile_is_dropped() -> None:
    manager, _, subs, buffer, _ = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    request = only(manager.poll(0).unsent_requests)
    subs.seek(TP0, 50)
    request.on_response(fetch_answer({0: (0, build_batch(0, [b"x"]))}), 1)
    assert take(buffer) is None
    again = only(manager.poll(2).unsent_requests)
    assert isinstance(again.request, FetchRequest)
    assert again.request.topics[0].partitions[0].fetch_offset == 50


def test_no_fetch_while_the_buffer_is_full_and_release_wakes_the_background() -> None:
    manager, _, subs, buffer, _ = fetch_fixture(buffer_bytes=10)
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    subs.assign([TP0])
    subs.seek(TP0, 0)
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (0, build_batch(0, [b"a" * 50]))}), 1)
    assert manager.poll(2).unsent_requests == ()
    fetched = take(buffer)
    assert fetched is not None
    buffer.release(fetched)
    assert woken == [True]
    assert only(manager.poll(3).unsent_requests)


def fetch_order(request: UnsentRequest) -> list[int]:
    assert isinstance(request.request, FetchRequest)
    return [p.partition for t in request.request.topics for p in t.partitions]


def test_fetch_asks_the_broker_for_no_more_than_the_room_left_in_the_buffer() -> None:
    manager, _, subs, buffer, _ = fetch_fixture(buffer_bytes=3 << 20)
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    first = only(manager.poll(0).unsent_requests)
    assert isinstance(first.request, FetchRequest)
    assert first.request.max_bytes == 3 << 19  # half the bound, so a second fetch fits while this one is decoded
    assert buffer.reserved_bytes == 3 << 19
    answer = fetch_answer(
        {0: (0, build_batch(0, [b"a" * 100])), 1: (0, build_batch(0, [b"b" * 100]))}, high_watermark=1
    )
    first.on_response(answer, 1)  # caught up: one fetch at a time
    held = buffer.buffered_bytes
    assert buffer.reserved_bytes == 0 and held > 200
    second = only(manager.poll(2).unsent_requests)
    assert isinstance(second.request, FetchRequest)
    assert second.request.max_bytes == 3 << 19
    second.on_response(fetch_answer({0: (0, None), 1: (0, None)}, high_watermark=1), 3)
    buffer.reserve((3 << 20) - held - (1 << 20) - 10)  # as if another leader's fetch were in flight
    third = only(manager.poll(4).unsent_requests)
    assert isinstance(third.request, FetchRequest)
    assert third.request.max_bytes == (1 << 20) + 10  # what is left of the bound


def test_fetch_sizes_follow_the_buffer_limit_as_it_grows() -> None:
    # as the consumer builds the buffer: half the bound at first
    manager, _, subs, buffer, _ = fetch_fixture(buffer_bytes=8 << 20, initial_bytes=4 << 20)
    subs.assign([TP0])
    subs.seek(TP0, 0)
    first = only(manager.poll(0).unsent_requests)
    assert isinstance(first.request, FetchRequest)
    assert first.request.max_bytes == 2 << 20  # half the limit, not half the bound
    first.on_response(fetch_answer({0: (0, None)}), 1)
    for _ in range(GROW_AFTER_DRY_POLLS):
        held_back(buffer)
        buffer.poll_done(returned=1, ran_dry=True)
    assert buffer.limit == 8 << 20
    second = only(manager.poll(2).unsent_requests)
    assert isinstance(second.request, FetchRequest)
    assert second.request.max_bytes == 4 << 20


def test_no_fetch_into_less_room_than_one_partition_fetch() -> None:
    manager, _, subs, buffer, _ = fetch_fixture(buffer_bytes=(1 << 20) + 100, max_partition_fetch_bytes=1 << 20)
    subs.assign([TP0])
    subs.seek(TP0, 0)
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (0, build_batch(0, [b"a" * 200]))}), 1)
    assert buffer.buffered_bytes > 100
    assert manager.poll(2).unsent_requests == ()  # room < 1 MiB: wait for the caller


def test_a_bound_below_one_batch_still_makes_progress() -> None:
    manager, _, subs, buffer, _ = fetch_fixture(buffer_bytes=10)
    subs.assign([TP0])
    subs.seek(TP0, 0)
    request = only(manager.poll(0).unsent_requests)
    assert isinstance(request.request, FetchRequest)
    assert request.request.max_bytes == 5  # the broker still returns one whole first batch
    request.on_response(fetch_answer({0: (0, build_batch(0, [b"a" * 50]))}), 1)
    assert take(buffer) is not None


def test_a_response_is_freed_only_when_its_last_partition_is_released() -> None:
    manager, _, subs, buffer, _ = fetch_fixture()
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    answer = fetch_answer({0: (0, build_batch(0, [b"a" * 100])), 1: (0, build_batch(0, [b"b" * 300]))})
    only(manager.poll(0).unsent_requests).on_response(answer, 1)
    whole = buffer.buffered_bytes
    first, second = take(buffer), take(buffer)
    assert first is not None and second is not None
    assert whole == first.size + second.size  # both partitions' bytes, counted once
    buffer.release(first)
    assert buffer.buffered_bytes == whole  # the response is still alive through the other view
    buffer.release(second)
    assert buffer.buffered_bytes == 0


def test_the_partitions_that_got_records_longest_ago_are_named_first_so_none_starves() -> None:
    manager, _, subs, _, _ = fetch_fixture()
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    orders = []
    # a broker filling the first partition named until max_bytes: records for that one only; then none
    for now in range(3):
        request = only(manager.poll(now * 10).unsent_requests)
        orders.append(fetch_order(request))
        served = orders[-1][0] if now < 2 else None
        answer = {p: (0, build_batch(0, [b"a"]) if p == served else None) for p in (0, 1)}
        request.on_response(fetch_answer(answer, high_watermark=1), now * 10 + 1)
    orders.append(fetch_order(only(manager.poll(100).unsent_requests)))
    # whoever was served goes last; a fetch without records changes nothing
    assert orders[1] == orders[0][::-1] and orders[2] == orders[0] and orders[3] == orders[0]


def test_offset_out_of_range_resets_with_the_configured_strategy() -> None:
    manager, _, subs, _, errors = fetch_fixture(auto_offset_reset="earliest")
    subs.assign([TP0])
    subs.seek(TP0, 500)
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (1, None)}), 1)
    assert subs.position(TP0) is None
    assert subs.partitions_awaiting_reset()[TP0][0] == "earliest"
    assert errors == []


def test_offset_out_of_range_without_reset_strategy_is_an_error_naming_the_offset() -> None:
    manager, _, subs, _, errors = fetch_fixture(auto_offset_reset="none")
    subs.assign([TP0])
    subs.seek(TP0, 500)
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (1, None)}), 1)
    assert len(errors) == 1
    assert "500" in str(errors[0].error) and "t-0" in str(errors[0].error)


def test_not_leader_requests_a_metadata_refresh() -> None:
    manager, metadata, subs, _, errors = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    assert metadata.poll(0).unsent_requests == ()  # fresh
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (6, None)}), 1)
    assert only(metadata.poll(2).unsent_requests)
    assert errors == []


def test_disconnect_backs_off_the_node() -> None:
    manager, _, subs, _, _ = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    only(manager.poll(0).unsent_requests).on_response(KafkaConnectionError("gone"), 10)
    assert manager.poll(50).unsent_requests == ()
    assert only(manager.poll(110).unsent_requests)


def test_a_fetch_failing_while_the_consumer_runs_is_logged_as_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    manager, _, subs, _, _ = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    with captured_events(monkeypatch, fetch_module) as events:
        only(manager.poll(0).unsent_requests).on_response(KafkaConnectionError("gone"), 10)
    assert [(e["event"], e["log_level"], e["error"]) for e in events_named(events, "fetch.failed")] == [
        ("fetch.failed", "info", "gone")
    ]
    assert events_named(events, "fetch.cancelled") == []


def test_a_fetch_still_out_when_the_consumer_closes_is_cancelled_not_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The delegate closes every connection after the close work: a fetch in flight then ends in an error that says
    the consumer is closing. Unsent fetches fail earlier, with ``ClientClosedError``, before ``poll_on_close``."""
    manager, _, subs, buffer, _ = fetch_fixture(partitions=2, leader=(1, 2))
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    to_1, to_2 = sorted(manager.poll(0).unsent_requests, key=lambda u: u.node_id or 0)
    with captured_events(monkeypatch, fetch_module) as events:
        to_2.on_response(ClientClosedError("the consumer is closing"), 5)  # unsent when the close began
        assert manager.poll_on_close(5).unsent_requests == ()
        to_1.on_response(KafkaConnectionError("the consumer is closing"), 6)  # in flight until the delegate closed
    assert events_named(events, "fetch.failed") == []
    cancelled = events_named(events, "fetch.cancelled")
    assert [(e["node"], e["log_level"], e["reason"]) for e in cancelled] == [
        (2, "debug", "the consumer is closing"),
        (1, "debug", "the consumer is closing"),
    ]
    assert take(buffer) is None


def test_a_batch_larger_than_the_partition_limit_is_fetched_again_with_room() -> None:
    manager, _, subs, buffer, _ = fetch_fixture(max_partition_fetch_bytes=64)
    subs.assign([TP0])
    subs.seek(TP0, 0)
    big = build_batch(0, [b"z" * 500])
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (0, big[:64])}), 1)
    assert take(buffer) is None
    retry = only(manager.poll(2).unsent_requests)
    assert isinstance(retry.request, FetchRequest)
    assert retry.request.topics[0].partitions[0].partition_max_bytes >= len(big)
    assert retry.request.topics[0].partitions[0].fetch_offset == 0


def test_paused_partitions_are_not_fetched() -> None:
    manager, _, subs, _, _ = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    subs.set_paused([TP0], True)
    assert manager.poll(0).unsent_requests == ()


@pytest.mark.parametrize("code", [29, 87])
def test_a_fatal_partition_error_reaches_the_caller_typed(code: int) -> None:
    manager, _, subs, _, errors = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (code, None)}), 1)
    assert len(errors) == 1
    assert isinstance(errors[0].error, KafkaError)
    assert str(code) in str(errors[0].error)


# --- partition errors ------------------------------------------------------------------------------------------


def fetched_partitions(request: UnsentRequest) -> set[int]:
    return set(fetch_order(request))


def answer_empty(request: UnsentRequest, now: int, codes: dict[int, int] | None = None) -> None:
    """Answers every partition of ``request`` without records, with the error codes given (0 for the rest)."""
    codes = codes or {}
    request.on_response(fetch_answer({p: (codes.get(p, 0), None) for p in fetch_order(request)}), now)


@pytest.mark.parametrize("code", [6, 7])  # NOT_LEADER_OR_FOLLOWER (metadata refresh), REQUEST_TIMED_OUT
def test_a_repeating_retriable_partition_error_spaces_its_fetches_by_a_growing_backoff(code: int) -> None:
    manager, _, subs, _, errors = fetch_fixture()
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    answer_empty(only(manager.poll(0).unsent_requests), 10, {0: code})
    failed_at = 10
    for backoff in (100, 200, 400, 800, 1000, 1000):
        retry_at = failed_at + backoff
        # The other partition on the same leader is fetched on meanwhile, and the wait names the retry time.
        result = manager.poll(failed_at + 1)
        assert fetched_partitions(only(result.unsent_requests)) == {1}
        assert result.time_until_next_poll_ms == retry_at - failed_at - 1
        answer_empty(only(result.unsent_requests), failed_at + 2)
        just_before = only(manager.poll(retry_at - 1).unsent_requests)
        assert fetched_partitions(just_before) == {1}
        answer_empty(just_before, retry_at - 1)
        retry = only(manager.poll(retry_at).unsent_requests)
        assert fetched_partitions(retry) == {0, 1}
        failed_at = retry_at + 5
        answer_empty(retry, failed_at, {0: code})
    assert errors == []


def test_a_successful_answer_resets_the_partition_backoff() -> None:
    manager, _, subs, _, _ = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    answer_empty(only(manager.poll(0).unsent_requests), 0, {0: 7})  # retry at 100
    answer_empty(only(manager.poll(100).unsent_requests), 100, {0: 7})  # retry at 300
    answer_empty(only(manager.poll(300).unsent_requests), 300, {0: 7})  # retry at 700
    assert manager.poll(699).unsent_requests == ()
    answer_empty(only(manager.poll(700).unsent_requests), 700)  # the partition answers: its errors are forgotten
    answer_empty(only(manager.poll(701).unsent_requests), 701, {0: 7})  # a first error again: 100 ms, not 800
    assert manager.poll(800).unsent_requests == ()
    assert only(manager.poll(801).unsent_requests)


def test_a_seek_starts_the_partition_backoff_afresh() -> None:
    manager, _, subs, _, _ = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    answer_empty(only(manager.poll(0).unsent_requests), 0, {0: 7})  # retry at 100
    answer_empty(only(manager.poll(100).unsent_requests), 100, {0: 7})  # retry at 300
    subs.seek(TP0, 20)
    again = only(manager.poll(101).unsent_requests)  # the new position is fetched at once
    assert isinstance(again.request, FetchRequest)
    assert again.request.topics[0].partitions[0].fetch_offset == 20
    answer_empty(again, 101, {0: 7})  # the first error at this epoch: 100 ms, not 400
    assert manager.poll(200).unsent_requests == ()
    assert only(manager.poll(201).unsent_requests)


@pytest.mark.parametrize(("code", "reset"), [(29, "earliest"), (1, "none")])
def test_a_non_retriable_partition_error_is_reported_once_and_refetched_after_the_caller_passed_it(
    code: int, reset: str
) -> None:
    manager, _, subs, buffer, errors = fetch_fixture(auto_offset_reset=reset)
    woken: list[bool] = []
    buffer.set_space_waiter(lambda: woken.append(True))
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    first = only(manager.poll(0).unsent_requests)
    first.on_response(fetch_answer({0: (code, None), 1: (0, build_batch(0, [b"a"]))}), 1)
    assert len(errors) == 1
    error = errors[0].error
    if code == 1:
        assert isinstance(error, OffsetOutOfRangeError)
    # Long past any backoff, the failed partition waits for the caller; the other one is fetched on.
    for now in range(2_000, 10_000, 1_000):
        request = only(manager.poll(now).unsent_requests)
        assert fetched_partitions(request) == {1}
        answer_empty(request, now + 1)
    assert len(errors) == 1
    taken = [take(buffer), take(buffer)]
    assert take(buffer) is None
    failed = next(f for f in taken if f is not None and f.tp == TP0)
    data = next(f for f in taken if f is not None and f.tp == TP1)
    assert failed.error is error and data.error is None
    assert failed.size == 0 and failed.fetch_offset == failed.next_fetch_offset == 0
    buffer.release(data)
    # Taken is not enough: the caller has not passed the failed fetch until it releases it.
    held = only(manager.poll(10_000).unsent_requests)
    assert fetched_partitions(held) == {1}
    answer_empty(held, 10_000)
    assert not woken
    buffer.release(failed)
    assert woken == [True]  # the background is woken to fetch the partition again
    again = only(manager.poll(10_001).unsent_requests)
    assert isinstance(again.request, FetchRequest)
    assert {(p.partition, p.fetch_offset) for t in again.request.topics for p in t.partitions} == {(0, 0), (1, 1)}
    answer_empty(again, 10_002, {0: code})
    assert len(errors) == 2  # one error per failed fetch
    assert fetched_partitions(only(manager.poll(20_000).unsent_requests)) == {1}


@pytest.mark.parametrize(("code", "reset"), [(29, "earliest"), (1, "none"), (7, "earliest")])
def test_the_error_of_a_fetch_in_flight_across_a_seek_is_dropped(code: int, reset: str) -> None:
    manager, _, subs, buffer, errors = fetch_fixture(auto_offset_reset=reset)
    subs.assign([TP0])
    subs.seek(TP0, 0)
    request = only(manager.poll(0).unsent_requests)
    subs.seek(TP0, 50)
    request.on_response(fetch_answer({0: (code, None)}), 1)
    assert errors == []  # it was about offset 0, which the caller left
    assert take(buffer) is None  # and nothing waits for the caller
    again = only(manager.poll(2).unsent_requests)  # neither held back nor backed off
    assert isinstance(again.request, FetchRequest)
    assert again.request.topics[0].partitions[0].fetch_offset == 50


# --- fetch sessions (KIP-227): see also test_fetch_session.py -----------------------------------------------------


def session_of(request: UnsentRequest) -> tuple[int, int]:
    assert isinstance(request.request, FetchRequest)
    return request.request.session_id, request.request.session_epoch


def forgotten_of(request: UnsentRequest) -> set[int]:
    assert isinstance(request.request, FetchRequest)
    return {p for f in request.request.forgotten_topics_data for p in f.partitions}


def in_session(**config: Any) -> tuple[FetchManager, SubscriptionState, FetchBuffer, list[ErrorEvent]]:
    """Partitions 0 and 1 at offset 0, the first (full) fetch answered by a broker opening session 5 with records for
    partition 0 up to offset 2 (the high watermark) and nothing for partition 1."""
    manager, _, subs, buffer, errors = fetch_fixture(**config)
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    first = only(manager.poll(0).unsent_requests)
    assert session_of(first) == (0, 0 if config.get("fetch_sessions", True) else -1)
    assert fetched_partitions(first) == {0, 1}
    first.on_response(fetch_answer({0: (0, build_batch(0, [b"a", b"b"])), 1: (0, None)}, 2, session_id=5), 1)
    return manager, subs, buffer, errors


def test_fetches_in_a_session_name_only_what_changed_and_partitions_left_out_of_the_answer_are_done_with() -> None:
    manager, _, buffer, _ = in_session()
    second = only(manager.poll(2).unsent_requests)
    assert session_of(second) == (5, 1)
    assert isinstance(second.request, FetchRequest)
    assert [(p.partition, p.fetch_offset) for t in second.request.topics for p in t.partitions] == [(0, 2)]
    assert forgotten_of(second) == set()
    assert manager.poll(3).unsent_requests == ()  # in flight, partition 1 included though not named
    second.on_response(fetch_answer({}, session_id=5), 4)  # nothing new anywhere: an empty answer
    assert manager.nodes_in_flight == 0
    third = only(manager.poll(5).unsent_requests)  # both partitions free again
    assert session_of(third) == (5, 2) and fetched_partitions(third) == set()
    # records for partition 1 only: partition 0 is left out of the answer
    third.on_response(fetch_answer({1: (0, build_batch(0, [b"c"]))}, 2, session_id=5), 6)
    fourth = only(manager.poll(7).unsent_requests)
    assert session_of(fourth) == (5, 3) and fetched_partitions(fourth) == {1}
    taken = [take(buffer), take(buffer), take(buffer)]
    assert [(f.tp, f.fetch_offset, f.next_fetch_offset) for f in taken if f] == [(TP0, 0, 2), (TP1, 0, 1)]
    assert (manager.sessions.full_fetches, manager.sessions.incremental_fetches) == (1, 3)


def test_a_partition_not_fetched_now_is_forgotten_from_the_session_so_the_broker_stops_fetching_it() -> None:
    manager, subs, _, _ = in_session()
    subs.set_paused([TP1], True)
    paused = only(manager.poll(2).unsent_requests)
    assert forgotten_of(paused) == {1} and fetched_partitions(paused) == {0}
    paused.on_response(fetch_answer({}, session_id=5), 3)
    subs.set_paused([TP1], False)
    resumed = only(manager.poll(4).unsent_requests)
    assert forgotten_of(resumed) == set() and fetched_partitions(resumed) == {1}
    # a partition backing off after an error is forgotten while it waits, and named again after
    resumed.on_response(fetch_answer({1: (7, None)}, session_id=5), 10)  # REQUEST_TIMED_OUT: retry in 100 ms
    waiting = only(manager.poll(11).unsent_requests)
    assert forgotten_of(waiting) == {1} and session_of(waiting) == (5, 3)
    waiting.on_response(fetch_answer({}, session_id=5), 12)
    retry = only(manager.poll(110).unsent_requests)
    assert fetched_partitions(retry) == {1} and forgotten_of(retry) == set()


@pytest.mark.parametrize(
    ("code", "closed"), [(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0), (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 5)]
)
def test_a_session_error_is_followed_at_once_by_a_full_fetch_and_loses_nothing(code: ErrorCode, closed: int) -> None:
    manager, _, buffer, errors = in_session()
    incremental = only(manager.poll(2).unsent_requests)
    assert session_of(incremental) == (5, 1)
    incremental.on_response(FetchResponse(responses=(), error_code=code, session_id=closed), 3)
    full = only(manager.poll(3).unsent_requests)  # no backoff: the broker fetched nothing
    assert session_of(full) == (closed, 0)  # 71: closes session 5 and opens another in one fetch
    assert isinstance(full.request, FetchRequest)
    assert {(p.partition, p.fetch_offset) for t in full.request.topics for p in t.partitions} == {(0, 2), (1, 0)}
    full.on_response(fetch_answer({0: (0, build_batch(2, [b"z"])), 1: (0, None)}, 3, session_id=6), 4)
    assert session_of(only(manager.poll(5).unsent_requests)) == (6, 1)
    taken = [take(buffer), take(buffer)]
    assert [(f.fetch_offset, f.next_fetch_offset) for f in taken if f] == [(0, 2), (2, 3)]
    assert errors == [] and manager.sessions.session_errors == 1


def test_a_lost_connection_closes_the_session_and_opens_a_new_one_in_the_next_fetch() -> None:
    manager, _, _, _ = in_session()
    only(manager.poll(2).unsent_requests).on_response(KafkaConnectionError("gone"), 10)
    assert manager.poll(50).unsent_requests == ()  # the broker backs off as before
    again = only(manager.poll(110).unsent_requests)
    assert session_of(again) == (5, 0) and fetched_partitions(again) == {0, 1}


def test_a_broker_giving_no_session_gets_sessionless_full_fetches() -> None:
    manager, _, subs, _, _ = fetch_fixture()
    subs.assign([TP0])
    subs.seek(TP0, 0)
    first = only(manager.poll(0).unsent_requests)
    assert session_of(first) == (0, 0)
    first.on_response(fetch_answer({0: (0, None)}, 0, session_id=0), 1)  # Tansu, or a full session cache
    for now in (2, 4, 6):
        request = only(manager.poll(now).unsent_requests)
        assert session_of(request) == (0, -1) and fetched_partitions(request) == {0}
        request.on_response(fetch_answer({0: (0, None)}, 0), now + 1)
    assert (manager.sessions.full_fetches, manager.sessions.incremental_fetches) == (4, 0)


def test_fetch_sessions_off_sends_every_fetch_in_full() -> None:
    manager, _, _, _ = in_session(fetch_sessions=False)
    second = only(manager.poll(2).unsent_requests)
    assert session_of(second) == (0, -1) and fetched_partitions(second) == {0, 1}


# --- pipelining: two fetches in flight per broker while records wait there -------------------------------------


TPS = [TopicPartition("t", p) for p in range(4)]


def named(request: UnsentRequest) -> set[int]:
    return set(fetch_order(request))


def max_bytes(request: UnsentRequest) -> int:
    assert isinstance(request.request, FetchRequest)
    return request.request.max_bytes


def backlog_fixture(**config: Any) -> tuple[FetchManager, SubscriptionState, FetchBuffer]:
    """Four partitions on one broker, the first fetch answered with records and more waiting in every partition."""
    manager, _, subs, buffer, _ = fetch_fixture(buffer_bytes=8 << 20, partitions=4, **config)
    subs.assign(TPS)
    for tp in TPS:
        subs.seek(tp, 0)
    first = only(manager.poll(0).unsent_requests)
    assert named(first) == {0, 1, 2, 3} and max_bytes(first) == 4 << 20  # nothing known yet: one fetch, half
    first.on_response(fetch_answer({p: (0, build_batch(0, [b"x"])) for p in range(4)}, high_watermark=100), 1)
    return manager, subs, buffer


def test_records_waiting_in_several_partitions_split_the_next_fetch_in_two() -> None:
    manager, _, _ = backlog_fixture()
    requests = manager.poll(2).unsent_requests
    assert len(requests) == 2
    a, b = (named(r) for r in requests)
    assert a | b == {0, 1, 2, 3} and not a & b
    assert [max_bytes(r) for r in requests] == [2 << 20, 2 << 20]  # a quarter of the limit each
    assert manager.nodes_in_flight == 2
    assert manager.poll(3).unsent_requests == ()  # two in flight: the most for one broker


def test_a_second_fetch_goes_only_where_records_wait_and_one_fetch_at_a_time_once_caught_up() -> None:
    manager, _, _ = backlog_fixture()
    a, b = manager.poll(2).unsent_requests
    a_parts = sorted(named(a))
    # a's partitions still have records waiting: a goes again while b is in flight
    a.on_response(fetch_answer({p: (0, build_batch(1, [b"y"])) for p in a_parts}, high_watermark=100), 3)
    again = only(manager.poll(4).unsent_requests)
    assert named(again) == set(a_parts)
    # b comes back caught up: its partitions wait for the fetch in flight instead of riding a second one
    b.on_response(fetch_answer({p: (0, build_batch(1, [b"z"])) for p in named(b)}, high_watermark=2), 5)
    assert manager.poll(6).unsent_requests == ()
    # a caught up too: one fetch for the whole broker, with half the limit, as before any backlog
    again.on_response(fetch_answer({p: (0, build_batch(2, [b"w"])) for p in a_parts}, high_watermark=3), 7)
    last = only(manager.poll(8).unsent_requests)
    assert named(last) == {0, 1, 2, 3} and max_bytes(last) == 4 << 20


def max_wait(request: UnsentRequest) -> int:
    assert isinstance(request.request, FetchRequest)
    return request.request.max_wait_ms


def test_a_fetch_that_may_wait_is_kept_short_while_a_paused_partition_of_its_broker_has_records_waiting() -> None:
    # A broker serves a connection's requests in order: the fetch a resume sends would wait behind a long poll of
    # the caught-up partitions (process() pauses for backpressure and resumes within milliseconds).
    manager, subs, _ = backlog_fixture()  # every partition has records waiting
    a, b = manager.poll(2).unsent_requests
    assert max_wait(a) == max_wait(b) == 500  # records wait in both: the broker answers at once anyway
    paused = sorted(named(b))
    subs.set_paused([TPS[p] for p in paused], True)
    b.on_response(fetch_answer({p: (0, build_batch(1, [b"z"])) for p in paused}, high_watermark=100), 3)
    a.on_response(fetch_answer({p: (0, build_batch(1, [b"y"])) for p in named(a)}, high_watermark=2), 4)
    caught_up = only(manager.poll(5).unsent_requests)  # only the caught-up partitions, which may wait
    assert named(caught_up) == set(range(4)) - set(paused)
    assert max_wait(caught_up) == fetch_module.PAUSED_BEHIND_MAX_WAIT_MS == 50
    subs.set_paused([TPS[p] for p in paused], False)
    caught_up.on_response(fetch_answer({}), 60)
    resumed = manager.poll(61).unsent_requests  # each names a partition with records waiting: answered at once
    assert set().union(*(named(r) for r in resumed)) == {0, 1, 2, 3}
    assert [max_wait(r) for r in resumed] == [500, 500]
    for request in resumed:
        request.on_response(
            fetch_answer({p: (0, build_batch(2, [b"w"])) for p in named(request)}, high_watermark=3), 62
        )
    assert max_wait(only(manager.poll(63).unsent_requests)) == 500  # all caught up, nothing paused: the long poll


def test_a_paused_partition_sought_back_below_its_high_watermark_keeps_the_wait_short() -> None:
    # a pause over its budget drops what was fetched and seeks back (fetch_collector): records wait there again
    manager, subs, _ = backlog_fixture()
    a, b = manager.poll(2).unsent_requests
    for request in (a, b):
        request.on_response(fetch_answer({p: (0, build_batch(1, [b"y"])) for p in named(request)}, high_watermark=2), 3)
    subs.set_paused([TPS[0]], True)
    subs.seek(TPS[0], 1)
    assert max_wait(only(manager.poll(4).unsent_requests)) == 50


def test_a_paused_partition_caught_up_leaves_the_long_poll_alone() -> None:
    manager, subs, _ = backlog_fixture()
    a, b = manager.poll(2).unsent_requests
    for request in (a, b):
        request.on_response(fetch_answer({p: (0, build_batch(1, [b"y"])) for p in named(request)}, high_watermark=2), 3)
    subs.set_paused([TPS[0]], True)
    assert max_wait(only(manager.poll(4).unsent_requests)) == 500


@pytest.mark.parametrize(
    "config", [{"fetch_min_bytes": 1024}, {"max_in_flight_requests_per_connection": 1}], ids=["min_bytes", "in_flight"]
)
def test_no_pipelining_when_the_broker_may_wait_or_one_request_per_connection_is_allowed(
    config: dict[str, object],
) -> None:
    manager, _, _ = backlog_fixture(**config)
    assert named(only(manager.poll(2).unsent_requests)) == {0, 1, 2, 3}


def test_a_seek_forgets_that_records_were_waiting() -> None:
    manager, subs, _ = backlog_fixture()
    for tp in TPS[1:]:
        subs.seek(tp, 100)  # to the end: no longer known to have records waiting
    assert named(only(manager.poll(2).unsent_requests)) == {0, 1, 2, 3}


def test_read_committed_counts_records_waiting_up_to_the_last_stable_offset_only() -> None:
    manager, _, subs, _, _ = fetch_fixture(buffer_bytes=8 << 20, partitions=4, isolation_level="read_committed")
    subs.assign(TPS)
    for tp in TPS:
        subs.seek(tp, 0)
    first = only(manager.poll(0).unsent_requests)
    # open transactions: the high watermark is at 100, but nothing past offset 1 may be read yet
    parts = tuple(
        PartitionData(
            partition_index=p,
            error_code=0,
            high_watermark=100,
            last_stable_offset=1,
            log_start_offset=0,
            aborted_transactions=(),
            preferred_read_replica=-1,
            records=build_batch(0, [b"x"]),
        )
        for p in range(4)
    )
    first.on_response(FetchResponse(responses=(FetchableTopicResponse(topic="t", partitions=parts),)), 1)
    assert named(only(manager.poll(2).unsent_requests)) == {0, 1, 2, 3}


@pytest.mark.parametrize("broker_kind", ["sessionless", "sessions", "evicting"])
@pytest.mark.parametrize("leaders", [(1,), (1, 2)], ids=["one_broker", "two_brokers"])
@pytest.mark.parametrize("seed", range(6))
def test_a_backlog_is_fetched_once_in_order_never_a_partition_in_two_fetches_and_none_starved(
    seed: int, leaders: tuple[int, ...], broker_kind: str
) -> None:
    """``sessions``: a broker keeping fetch sessions (KIP-227), which fetches partitions no request names and leaves
    partitions with nothing new out of its answers; ``evicting``: one that also drops them now and then."""
    rng = random.Random(seed)
    manager, _, subs, buffer, errors = fetch_fixture(
        buffer_bytes=64 << 10, partitions=4, leader=leaders, max_partition_fetch_bytes=8 << 10
    )
    logs: dict[int, list[tuple[int, int, bytes]]] = {}
    for p in range(4):
        offset, log = 0, []
        for _ in range(60):
            count = rng.randrange(1, 4)
            log.append((offset, offset + count, build_batch(offset, [bytes(rng.randrange(500, 3000))] * count)))
            offset += count
        logs[p] = log
    # one broker object per node: session ids are per broker
    brokers_by_node = {node: FakeFetchBroker(logs, sessions=broker_kind != "sessionless") for node in leaders}
    ends = {p: log[-1][1] for p, log in logs.items()}
    subs.assign(TPS)
    for tp in TPS:
        subs.seek(tp, 0)
    in_flight: list[UnsentRequest] = []
    delivered = {p: 0 for p in range(4)}
    brokers = {node: [p for p in range(4) if leaders[p % len(leaders)] == node] for node in leaders}
    # per broker, each of its partitions' progress (percent) when the first of them was done
    progress_when_first_done: dict[int, list[int]] = {}
    most_per_node = 0
    for step in range(5_000):
        if all(delivered[p] == ends[p] for p in range(4)):
            break
        for request in manager.poll(step * 10).unsent_requests:
            busy = set().union(*(named(r) for r in in_flight))
            assert not named(request) & busy, "a partition in two fetches at once"
            assert request.node_id is not None
            brokers_by_node[request.node_id].sent(request)  # and what a session fetches unnamed is checked there
            in_flight.append(request)
        per_node = [sum(r.node_id == node for r in in_flight) for node in leaders]
        assert max(per_node) <= 2
        most_per_node = max(most_per_node, *per_node)
        if broker_kind == "evicting" and rng.random() < 0.02:
            rng.choice(list(brokers_by_node.values())).evict()
        if in_flight and rng.random() < 0.6:
            # a broker answers its connection's requests in order; which broker answers next is random
            node = rng.choice(in_flight).node_id
            request = in_flight.pop(next(i for i, r in enumerate(in_flight) if r.node_id == node))
            assert node is not None
            request.on_response(brokers_by_node[node].answer(request), step * 10 + 1)
        while rng.random() < 0.8 and (fetched := take(buffer)) is not None:
            p = fetched.tp.partition
            assert fetched.fetch_offset == delivered[p], "fetched out of order or twice"
            delivered[p] = fetched.next_fetch_offset
            buffer.release(fetched)
        for node, parts in brokers.items():
            if node not in progress_when_first_done and any(delivered[p] == ends[p] for p in parts):
                progress_when_first_done[node] = [delivered[p] * 100 // ends[p] for p in parts]
    assert delivered == ends and errors == []
    assert most_per_node == 2  # the backlog was pipelined
    # a broker's partitions share its fetches fairly: 61-92% here (a fixed rotation of the partitions named, which
    # one of two fetches always met at the same turn, starved some: mostly 3-24%)
    assert min(min(progress) for progress in progress_when_first_done.values()) >= 50, progress_when_first_done
    # caught up: one fetch per broker with all of its partitions
    for request in in_flight:
        assert request.node_id is not None
        request.on_response(brokers_by_node[request.node_id].answer(request), 100_000)
    final = manager.poll(100_001).unsent_requests
    assert len(final) == len(leaders)
    now = 100_002
    # a session evicted last: its answer is a session error, and the fetch after it a full one, in the other slot
    # (possibly evicted too: a broker drops all its sessions at once here)
    for _ in range(3):
        for request in final:
            assert request.node_id is not None
            brokers_by_node[request.node_id].sent(request)
        fetching = set().union(*(b.fetching() for b in brokers_by_node.values()))
        if fetching == set(TPS) or broker_kind != "evicting":
            break
        for request in final:
            assert request.node_id is not None
            request.on_response(brokers_by_node[request.node_id].answer(request), now)
        final = manager.poll(now + 1).unsent_requests
        now += 2
    assert fetching == set(TPS)
    sessions = manager.sessions
    if broker_kind == "sessionless":
        assert sessions.incremental_fetches == 0 and sessions.session_errors == 0
    else:
        assert sessions.incremental_fetches > sessions.full_fetches
        # every session error the broker answered was seen (the last fetches may still await their answers)
        fake_errors = sum(b.session_errors for b in brokers_by_node.values())
        assert fake_errors - len(final) <= sessions.session_errors <= fake_errors
        assert (fake_errors > 0) == (broker_kind == "evicting")
