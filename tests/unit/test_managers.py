"""Request managers driven with literal timestamps and hand-built responses: no sockets, no clock."""

from __future__ import annotations

import itertools
import random
import uuid

import pytest

from asyncconsumer._state.fetch_buffer import GROW_AFTER_DRY_POLLS, FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaConnectionError, KafkaError, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import OffsetsManager
from asyncconsumer.managers.request_state import ExponentialBackoff, RequestState
from asyncconsumer.protocol.fetch import FetchableTopicResponse, FetchPartitionData, FetchRequest, FetchResponse
from asyncconsumer.protocol.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from asyncconsumer.protocol.metadata import (
    MetadataBroker,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
)
from asyncconsumer.records import OffsetAndTimestamp, TopicPartition
from tests.batches import build_batch
from tests.unit.test_fetch_buffer_limit import held_back

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def no_jitter(initial: int = 100, maximum: int = 1000) -> ExponentialBackoff:
    return ExponentialBackoff(initial, maximum, jitter=0.0)


def metadata_response(
    topic: str = "t", partitions: int = 2, leader: int | tuple[int, ...] = 1, error_code: int = 0
) -> MetadataResponse:
    """``leader``: one leader for all partitions, or partition p's leader at ``leader[p % len(leader)]``."""
    leaders = (leader,) if isinstance(leader, int) else leader
    return MetadataResponse(
        brokers=(MetadataBroker(1, "127.0.0.1", 9092), MetadataBroker(2, "127.0.0.1", 9093)),
        topics=(
            MetadataTopic(
                error_code,
                topic,
                tuple(
                    MetadataPartition(0, p, node, 0, (node,), (node,))
                    for p, node in zip(range(partitions), itertools.cycle(leaders))
                )
                if error_code == 0
                else (),
                uuid.uuid4(),
            ),
        ),
        cluster_id="c",
        controller_id=1,
    )


def only(requests: tuple[UnsentRequest, ...]) -> UnsentRequest:
    assert len(requests) == 1, requests
    return requests[0]


# --- backoff ---------------------------------------------------------------------------------------------------


def test_request_state_backs_off_exponentially_after_failures() -> None:
    state = RequestState(no_jitter(100, 1000))
    assert state.can_send_request(0)
    state.on_send_attempt(0)
    assert not state.can_send_request(0)
    state.on_failed_attempt(35)
    assert not state.can_send_request(134)
    assert state.can_send_request(135)
    state.on_send_attempt(135)
    state.on_failed_attempt(200)
    assert state.remaining_backoff_ms(200) == 200
    state.on_send_attempt(400)
    state.on_successful_attempt(410)
    assert state.can_send_request(410)


def test_backoff_is_capped_and_jittered_within_bounds() -> None:
    backoff = ExponentialBackoff(50, 1000, jitter=0.2, rng=random.Random(1))
    values = [backoff.backoff_ms(n) for n in range(1, 20)]
    assert values[0] in range(40, 61)
    assert max(values) <= 1200
    assert min(values[6:]) >= 800


# --- metadata --------------------------------------------------------------------------------------------------


def test_metadata_bootstraps_then_refreshes_after_max_age() -> None:
    manager = MetadataManager(["127.0.0.1:9092", "[::1]:9093"], metadata_max_age_ms=10_000, backoff=no_jitter())
    assert manager.address(-1) == ("127.0.0.1", 9092)
    assert manager.address(-2) == ("::1", 9093)
    assert manager.candidate_nodes() == [-1, -2]
    first = only(manager.poll(0).unsent_requests)
    assert isinstance(first.request, MetadataRequest)
    assert first.node_id is None
    assert manager.poll(1).unsent_requests == ()  # one in flight at a time
    first.on_response(metadata_response(), 5)
    assert manager.cluster.leader_for(TP0) == 1
    assert manager.candidate_nodes() == [1, 2]
    result = manager.poll(6)
    assert result.unsent_requests == ()
    assert result.time_until_next_poll_ms == 9_999
    assert only(manager.poll(10_005).unsent_requests)


def test_metadata_retries_with_backoff_after_a_failure() -> None:
    manager = MetadataManager(["h:1"], metadata_max_age_ms=60_000, backoff=no_jitter(100))
    only(manager.poll(0).unsent_requests).on_response(KafkaConnectionError("down"), 10)
    assert manager.poll(50).unsent_requests == ()
    assert manager.poll(50).time_until_next_poll_ms == 60
    assert only(manager.poll(110).unsent_requests)


def test_metadata_records_unknown_topics_and_answers_waiters() -> None:
    manager = MetadataManager(["h:1"], metadata_max_age_ms=60_000, backoff=no_jitter())
    answers: list[object] = []
    manager.await_topic("missing", answers.append, answers.append)
    request = only(manager.poll(0).unsent_requests)
    assert isinstance(request.request, MetadataRequest)
    assert request.request.topics == ("missing",)
    request.on_response(metadata_response("missing", error_code=3), 1)
    assert "missing" in manager.cluster.unknown_topics
    assert len(answers) == 1 and "missing" not in answers[0].topics  # type: ignore[attr-defined]


def test_metadata_asks_again_at_the_backoff_maximum_while_a_wanted_topic_is_unknown() -> None:
    manager = MetadataManager(["h:1"], metadata_max_age_ms=60_000, backoff=no_jitter(100))  # maximum 1,000 ms
    manager.set_topics(["missing"])
    only(manager.poll(0).unsent_requests).on_response(metadata_response("missing", error_code=3), 10)
    assert manager.poll(500).unsent_requests == ()
    assert manager.poll(500).time_until_next_poll_ms == 510
    only(manager.poll(1_010).unsent_requests).on_response(metadata_response("missing"), 1_020)
    assert "missing" not in manager.cluster.unknown_topics
    assert manager.poll(2_100).unsent_requests == ()  # known now: back to metadata_max_age_ms
    assert manager.poll(2_100).time_until_next_poll_ms == 58_920


# --- offsets ---------------------------------------------------------------------------------------------------


def offsets_fixture(
    strategy: str = "earliest",
) -> tuple[OffsetsManager, MetadataManager, SubscriptionState, list[ErrorEvent]]:
    metadata = MetadataManager(["h:1"], 60_000, no_jitter())
    only(metadata.poll(0).unsent_requests).on_response(metadata_response(), 0)
    subs = SubscriptionState(strategy)
    errors: list[ErrorEvent] = []
    return OffsetsManager(subs, metadata, "read_uncommitted", no_jitter(), errors.append), metadata, subs, errors


def list_offsets_answer(offsets: dict[TopicPartition, int], error_code: int = 0) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=(
            ListOffsetsTopicResponse(
                "t", tuple(ListOffsetsPartitionResponse(tp.partition, error_code, -1, o) for tp, o in offsets.items())
            ),
        )
    )


def test_new_assignment_is_reset_through_list_offsets_to_the_leader() -> None:
    manager, _, subs, _ = offsets_fixture("earliest")
    subs.assign([TP0, TP1])
    request = only(manager.poll(10).unsent_requests)
    assert request.node_id == 1
    assert isinstance(request.request, ListOffsetsRequest)
    sent = {(p.partition_index, p.timestamp) for t in request.request.topics for p in t.partitions}
    assert sent == {(0, -2), (1, -2)}
    assert manager.poll(11).unsent_requests == ()  # already in flight
    request.on_response(list_offsets_answer({TP0: 5, TP1: 7}), 12)
    assert subs.position(TP0) == 5
    assert subs.position(TP1) == 7


def test_a_reset_answer_is_ignored_if_the_caller_sought_meanwhile() -> None:
    manager, _, subs, _ = offsets_fixture("latest")
    subs.assign([TP0])
    request = only(manager.poll(0).unsent_requests)
    subs.seek(TP0, 3)
    request.on_response(list_offsets_answer({TP0: 99}), 1)
    assert subs.position(TP0) == 3


def test_retriable_reset_error_retries_after_backoff() -> None:
    manager, _metadata, subs, errors = offsets_fixture()
    subs.assign([TP0])
    only(manager.poll(0).unsent_requests).on_response(list_offsets_answer({TP0: -1}, error_code=6), 10)
    assert manager.poll(50).unsent_requests == ()
    assert only(manager.poll(110).unsent_requests)
    assert errors == []


def test_list_offsets_job_completes_with_offsets_and_timestamps() -> None:
    manager, _, _, _ = offsets_fixture()
    results: list[object] = []
    manager.list_offsets({TP0: 1000, TP1: 1000}, results.append, results.append)
    request = only(manager.poll(0).unsent_requests)
    request.on_response(
        ListOffsetsResponse(
            topics=(
                ListOffsetsTopicResponse(
                    "t",
                    (ListOffsetsPartitionResponse(0, 0, 1001, 4, 0), ListOffsetsPartitionResponse(1, 0, -1, -1, -1)),
                ),
            )
        ),
        5,
    )
    assert results == [{TP0: OffsetAndTimestamp(4, 1001, 0), TP1: None}]


def test_list_offsets_for_an_unknown_topic_fails_naming_it() -> None:
    manager, metadata, _, _ = offsets_fixture()
    errors: list[KafkaError] = []
    manager.list_offsets({TopicPartition("nope", 0): -1}, lambda r: None, errors.append)
    assert manager.poll(0).unsent_requests == ()
    only(metadata.poll(1).unsent_requests).on_response(metadata_response("nope", error_code=3), 2)
    manager.poll(3)
    assert len(errors) == 1
    assert isinstance(errors[0], UnknownTopicOrPartitionError)
    assert "nope" in str(errors[0])


def test_list_offsets_for_a_missing_partition_fails_naming_it() -> None:
    manager, _, _, _ = offsets_fixture()
    errors: list[KafkaError] = []
    manager.list_offsets({TopicPartition("t", 9): -1}, lambda r: None, errors.append)
    manager.poll(0)
    assert isinstance(errors[0], UnknownTopicOrPartitionError)
    assert "partition 9" in str(errors[0])


# --- fetch -----------------------------------------------------------------------------------------------------


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


def fetch_answer(parts: dict[int, tuple[int, bytes | None]], high_watermark: int = 100) -> FetchResponse:
    return FetchResponse(
        responses=(
            FetchableTopicResponse(
                "t",
                tuple(
                    FetchPartitionData(p, code, high_watermark, high_watermark, 0, None, -1, records)
                    for p, (code, records) in parts.items()
                ),
            ),
        )
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
    fetched = [buffer.take(), buffer.take()]
    assert {(f.tp, f.fetch_offset, f.next_fetch_offset) for f in fetched if f} == {(TP0, 0, 2), (TP1, 10, 11)}
    assert buffer.take() is None
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
    assert buffer.take() is None
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
    fetched = buffer.take()
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
    assert buffer.take() is not None


def test_a_response_is_freed_only_when_its_last_partition_is_released() -> None:
    manager, _, subs, buffer, _ = fetch_fixture()
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    answer = fetch_answer({0: (0, build_batch(0, [b"a" * 100])), 1: (0, build_batch(0, [b"b" * 300]))})
    only(manager.poll(0).unsent_requests).on_response(answer, 1)
    whole = buffer.buffered_bytes
    first, second = buffer.take(), buffer.take()
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


def test_a_batch_larger_than_the_partition_limit_is_fetched_again_with_room() -> None:
    manager, _, subs, buffer, _ = fetch_fixture(max_partition_fetch_bytes=64)
    subs.assign([TP0])
    subs.seek(TP0, 0)
    big = build_batch(0, [b"z" * 500])
    only(manager.poll(0).unsent_requests).on_response(fetch_answer({0: (0, big[:64])}), 1)
    assert buffer.take() is None
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


# --- fetch: partition errors -----------------------------------------------------------------------------------


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
    taken = [buffer.take(), buffer.take()]
    assert buffer.take() is None
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
    assert buffer.take() is None  # and nothing waits for the caller
    again = only(manager.poll(2).unsent_requests)  # neither held back nor backed off
    assert isinstance(again.request, FetchRequest)
    assert again.request.topics[0].partitions[0].fetch_offset == 50
