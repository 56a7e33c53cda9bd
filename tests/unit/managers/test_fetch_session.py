"""Fetch sessions (KIP-227) driven by hand: what each fetch names and forgets, its session id and epoch, and how
every kind of answer (a new session, none, a session error, no answer) sets up the next fetch."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from asyncconsumer.errors import ErrorCode
from asyncconsumer.managers.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    MAX_EPOCH,
    SESSION_RETRY_MS,
    FetchSession,
    FetchSessions,
    PartitionFetch,
    SessionFetch,
    next_epoch,
)
from asyncconsumer.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from asyncconsumer.records import TopicPartition


def tp(p: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, p)


def wanted(
    offsets: Mapping[int, int], max_bytes: int = 1024, leader_epoch: int = 0
) -> dict[TopicPartition, PartitionFetch]:
    return {tp(p): (offset, max_bytes, leader_epoch) for p, offset in offsets.items()}


def named(fetch: SessionFetch) -> dict[TopicPartition, int]:
    """Partition -> fetch offset of every partition the fetch names."""
    return {TopicPartition(t.topic, p.partition): p.fetch_offset for t in fetch.topics for p in t.partitions}


def forgotten(fetch: SessionFetch) -> set[TopicPartition]:
    return {TopicPartition(f.topic, p) for f in fetch.forgotten for p in f.partitions}


def answer(session_id: int = 0, error_code: int = 0, full: FetchSession | None = None) -> FetchResponse:
    """An answer with no partitions, or with ``full``: every partition that session holds (as a full answer)."""
    by_topic: dict[str, list[PartitionData]] = {}
    for t in full.partitions if full is not None else ():
        by_topic.setdefault(t.topic, []).append(
            PartitionData(partition_index=t.partition, error_code=0, high_watermark=0)
        )
    responses = tuple(FetchableTopicResponse(topic=topic, partitions=tuple(parts)) for topic, parts in by_topic.items())
    return FetchResponse(responses=responses, error_code=error_code, session_id=session_id)


def opened(session_id: int = 7, offsets: Mapping[int, int] | None = None) -> FetchSession:
    """A session the broker opened with a full fetch of ``offsets`` (partitions 0-2 at 0 by default)."""
    session = FetchSession(node=1, slot=0)
    first = session.prepare(wanted(offsets or {0: 0, 1: 0, 2: 0}), 0)
    assert (first.session_id, first.epoch, first.full) == (0, INITIAL_EPOCH, True)
    assert session.answered(answer(session_id, full=session), 1)
    return session


def test_the_first_fetch_is_full_and_opens_a_session_then_fetches_name_only_what_changed() -> None:
    session = FetchSession(node=1, slot=0)
    first = session.prepare(wanted({0: 0, 1: 5, 2: 9}), 0)
    assert named(first) == {tp(0): 0, tp(1): 5, tp(2): 9} and forgotten(first) == set()
    assert session.answered(answer(42, full=session), 1)
    assert (session.session_id, session.epoch) == (42, 1)
    unchanged = session.prepare(wanted({0: 0, 1: 5, 2: 9}), 2)
    assert (unchanged.session_id, unchanged.epoch, unchanged.full) == (42, 1, False)
    assert named(unchanged) == {} and unchanged.topics == () and unchanged.forgotten == ()


def test_an_incremental_fetch_names_the_partitions_whose_offset_size_or_leader_epoch_changed() -> None:
    session = opened()
    now = wanted({0: 0, 1: 0, 2: 0})
    now[tp(0)] = (3, 1024, 0)  # records came: a new fetch offset
    now[tp(1)] = (0, 4096, 0)  # a batch too large: a bigger limit
    # partition 2 unchanged; partition 3 new
    now[tp(3)] = (0, 1024, 0)
    fetch = session.prepare(now, 2)
    assert fetch.epoch == 1
    assert named(fetch) == {tp(0): 3, tp(1): 0, tp(3): 0}
    session.answered(answer(7), 3)
    now[tp(2)] = (0, 1024, 5)  # a new leader epoch
    fetch = session.prepare(now, 4)
    assert fetch.epoch == 2 and named(fetch) == {tp(2): 0}
    assert session.partitions == now


def test_a_partition_not_fetched_now_is_forgotten_and_named_again_when_it_comes_back() -> None:
    session = opened()
    # partition 1 paused (or backing off, or in the other fetch): the broker must stop fetching it
    fetch = session.prepare(wanted({0: 0, 2: 0}), 2)
    assert named(fetch) == {} and forgotten(fetch) == {tp(1)}
    assert fetch.forgotten[0].topic == "t" and fetch.forgotten[0].partitions == (1,)
    session.answered(answer(7), 3)
    back = session.prepare(wanted({0: 0, 1: 0, 2: 0}), 4)
    assert named(back) == {tp(1): 0} and forgotten(back) == set()


def test_forgotten_partitions_are_grouped_by_topic() -> None:
    session = FetchSession(node=1, slot=0)
    both = {
        tp(0, "a"): (0, 1, -1),
        tp(1, "a"): (0, 1, -1),
        tp(0, "b"): (0, 1, -1),
    }
    session.prepare(both, 0)
    session.answered(answer(7, full=session), 1)
    fetch = session.prepare({tp(1, "a"): (0, 1, -1)}, 2)
    assert {(f.topic, f.partitions) for f in fetch.forgotten} == {("a", (0,)), ("b", (0,))}


def test_the_epoch_counts_up_with_each_answer_and_wraps_to_one() -> None:
    session = opened()
    for epoch in (1, 2, 3, 4):
        fetch = session.prepare(wanted({0: 0, 1: 0, 2: 0}), epoch)
        assert fetch.epoch == epoch
        session.answered(answer(7), epoch)
    assert next_epoch(1) == 2
    assert next_epoch(MAX_EPOCH - 1) == MAX_EPOCH
    assert next_epoch(MAX_EPOCH) == 1  # never 0 (a new session) or -1 (no session)


def test_session_id_not_found_starts_a_new_session_with_a_full_fetch_at_once() -> None:
    session = opened()
    session.prepare(wanted({0: 4, 1: 0, 2: 0}), 2)
    # the broker evicted the session: the answer holds no partitions, so the caller must not back off
    assert not session.answered(answer(0, ErrorCode.FETCH_SESSION_ID_NOT_FOUND), 3)
    fetch = session.prepare(wanted({0: 4, 1: 0, 2: 0}), 4)
    assert (fetch.session_id, fetch.epoch, fetch.full) == (0, INITIAL_EPOCH, True)  # nothing left to close
    assert named(fetch) == {tp(0): 4, tp(1): 0, tp(2): 0}
    session.answered(answer(8, full=session), 5)
    assert (session.session_id, session.epoch) == (8, 1)


def test_invalid_epoch_closes_the_session_and_opens_a_new_one_in_a_full_fetch() -> None:
    session = opened()
    session.prepare(wanted({0: 0, 1: 0, 2: 0}), 2)
    assert not session.answered(answer(7, ErrorCode.INVALID_FETCH_SESSION_EPOCH), 3)
    fetch = session.prepare(wanted({0: 0, 1: 0, 2: 0}), 4)
    # session id 7 with epoch 0: the broker drops session 7 and opens another
    assert (fetch.session_id, fetch.epoch) == (7, INITIAL_EPOCH)
    assert named(fetch) == {tp(0): 0, tp(1): 0, tp(2): 0}


@pytest.mark.parametrize("code", [ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH])
def test_a_session_error_to_a_full_fetch_is_handled_as_any_error(code: ErrorCode) -> None:
    session = FetchSession(node=1, slot=0)
    session.prepare(wanted({0: 0}), 0)
    # no broker answers a full fetch so; one that does is not retried at once in a loop
    assert session.answered(answer(0, code), 1)
    assert session.prepare(wanted({0: 0}), 2).epoch == INITIAL_EPOCH


def test_another_top_level_error_restarts_the_session_and_leaves_the_backoff_to_the_caller() -> None:
    session = opened()
    session.prepare(wanted({0: 0, 1: 0, 2: 0}), 2)
    assert session.answered(answer(7, ErrorCode.UNKNOWN_SERVER_ERROR), 3)
    fetch = session.prepare(wanted({0: 0, 1: 0, 2: 0}), 4)
    assert (fetch.session_id, fetch.epoch, fetch.full) == (7, INITIAL_EPOCH, True)


def test_a_failed_request_closes_the_session_and_opens_a_new_one() -> None:
    session = opened()
    session.prepare(wanted({0: 0, 1: 0, 2: 0}), 2)
    session.failed()  # connection lost: did the broker see it and move the epoch? unknown
    fetch = session.prepare(wanted({0: 0, 1: 0, 2: 0}), 3)
    assert (fetch.session_id, fetch.epoch) == (7, INITIAL_EPOCH)
    assert named(fetch) == {tp(0): 0, tp(1): 0, tp(2): 0}


def test_no_session_given_means_sessionless_full_fetches_then_a_new_try_later() -> None:
    session = FetchSession(node=1, slot=0)
    session.prepare(wanted({0: 0, 1: 0}), 1_000)
    assert session.answered(answer(session_id=0), 1_001)  # the broker's session cache is full
    for now in (1_002, 50_000, 1_001 + SESSION_RETRY_MS - 1):
        fetch = session.prepare(wanted({0: 0, 1: 0}), now)
        assert (fetch.session_id, fetch.epoch) == (0, FINAL_EPOCH)  # no session asked for, none evicted for us
        assert named(fetch) == {tp(0): 0, tp(1): 0}
        session.answered(answer(0), now)
    retry = session.prepare(wanted({0: 0, 1: 0}), 1_001 + SESSION_RETRY_MS)
    assert retry.epoch == INITIAL_EPOCH
    session.answered(answer(3, full=session), 1_001 + SESSION_RETRY_MS)
    assert session.prepare(wanted({0: 0, 1: 0}), 1_002 + SESSION_RETRY_MS).epoch == 1


def test_an_incremental_fetch_answered_without_a_session_means_the_broker_closed_it() -> None:
    session = opened()
    session.prepare(wanted({0: 0, 1: 0, 2: 0}), 2)
    assert session.answered(answer(session_id=0), 3)
    fetch = session.prepare(wanted({0: 0, 1: 0, 2: 0}), 4)
    assert (fetch.session_id, fetch.epoch) == (0, INITIAL_EPOCH)  # a new session at once, not sessionless
    assert named(fetch) == {tp(0): 0, tp(1): 0, tp(2): 0}


def test_sessions_switched_off_send_every_fetch_in_full_without_a_session() -> None:
    session = FetchSession(node=1, slot=0, enabled=False)
    for now in range(3):
        fetch = session.prepare(wanted({0: 0, 1: 0}), now)
        assert (fetch.session_id, fetch.epoch) == (0, FINAL_EPOCH)
        assert named(fetch) == {tp(0): 0, tp(1): 0}
        session.answered(answer(session_id=0), now)


def test_a_session_fetches_one_at_a_time() -> None:
    session = FetchSession(node=1, slot=0)
    session.prepare(wanted({0: 0}), 0)
    with pytest.raises(AssertionError):
        session.prepare(wanted({0: 0}), 1)


# --- a broker's sessions: one per in-flight slot ----------------------------------------------------------------


def test_two_fetches_in_flight_to_a_broker_go_in_two_sessions_over_disjoint_partitions() -> None:
    sessions = FetchSessions(slots=2)
    first, a = sessions.prepare(1, wanted({0: 0, 1: 0}), 0)
    second, b = sessions.prepare(1, wanted({2: 0, 3: 0}), 0)
    assert first is not second and (first.slot, second.slot) == (0, 1)
    assert a.full and b.full
    sessions.answered(first, answer(10, full=first), 1)
    sessions.answered(second, answer(11, full=second), 1)
    # each slot's next fetch goes in the session that holds its partitions, naming nothing new
    again_b, b2 = sessions.prepare(1, wanted({2: 0, 3: 0}), 2)
    again_a, a2 = sessions.prepare(1, wanted({0: 0, 1: 0}), 2)
    assert (again_a, again_b) == (first, second)
    assert (a2.session_id, a2.epoch, named(a2)) == (10, 1, {})
    assert (b2.session_id, b2.epoch, named(b2)) == (11, 1, {})
    assert sessions.full_fetches == 2 and sessions.incremental_fetches == 2


def test_a_partition_moving_to_the_other_slot_is_forgotten_in_one_and_named_in_the_other() -> None:
    sessions = FetchSessions(slots=2)
    first, _ = sessions.prepare(1, wanted({0: 0, 1: 0}), 0)
    second, _ = sessions.prepare(1, wanted({2: 0, 3: 0}), 0)
    sessions.answered(first, answer(10, full=first), 1)
    sessions.answered(second, answer(11, full=second), 1)
    s1, moved_in = sessions.prepare(1, wanted({0: 0, 1: 0, 2: 0}), 2)  # most of these are in the first slot
    s2, moved_out = sessions.prepare(1, wanted({3: 0}), 2)
    assert (s1, s2) == (first, second)
    assert named(moved_in) == {tp(2): 0} and forgotten(moved_in) == set()
    assert named(moved_out) == {} and forgotten(moved_out) == {tp(2)}
    # never fetched by both: each session holds exactly its own fetch's partitions
    assert not first.partitions.keys() & second.partitions.keys()


def test_one_fetch_for_all_partitions_goes_in_the_slot_holding_most_of_them() -> None:
    sessions = FetchSessions(slots=2)
    small, _ = sessions.prepare(1, wanted({0: 0}), 0)
    large, _ = sessions.prepare(1, wanted({1: 0, 2: 0, 3: 0}), 0)
    sessions.answered(small, answer(10, full=small), 1)
    sessions.answered(large, answer(11, full=large), 1)
    chosen, fetch = sessions.prepare(1, wanted({0: 0, 1: 0, 2: 0, 3: 0}), 2)
    assert chosen is large and named(fetch) == {tp(0): 0}


def test_each_broker_has_its_own_sessions_and_session_errors_are_counted() -> None:
    sessions = FetchSessions(slots=2)
    one, _ = sessions.prepare(1, wanted({0: 0}), 0)
    two, _ = sessions.prepare(2, wanted({1: 0}), 0)
    assert one is not two and one.node == 1 and two.node == 2 and one.slot == two.slot == 0
    sessions.answered(one, answer(10, full=one), 1)
    sessions.answered(two, answer(10, full=two), 1)  # session ids are per broker
    _, fetch = sessions.prepare(1, wanted({0: 0}), 2)
    assert not sessions.answered(one, answer(0, ErrorCode.FETCH_SESSION_ID_NOT_FOUND), 3)
    assert (fetch.session_id, sessions.session_errors) == (10, 1)
    assert (sessions.full_fetches, sessions.incremental_fetches) == (2, 1)


def test_a_throttled_empty_answer_to_a_full_fetch_is_no_refusal_of_a_session() -> None:
    session = FetchSession(node=1, slot=0)
    session.prepare(wanted({0: 0}), 0)
    throttled = FetchResponse(responses=(), throttle_time_ms=300, session_id=0)  # KIP-219: no data, no session
    assert session.answered(throttled, 1)
    assert session.prepare(wanted({0: 0}), 2).epoch == INITIAL_EPOCH  # asks for a session again at once


def partitions_answer(session_id: int, *parts: int) -> FetchResponse:
    data = tuple(PartitionData(partition_index=p, error_code=0, high_watermark=0) for p in parts)
    return FetchResponse(
        responses=(FetchableTopicResponse(topic="t", partitions=data),) if parts else (), session_id=session_id
    )


def test_an_answer_that_does_not_fit_the_session_restarts_it() -> None:
    session = FetchSession(node=1, slot=0)
    session.prepare(wanted({0: 0, 1: 0}), 0)
    assert session.answered(partitions_answer(7, 0), 1)  # a full answer leaving partition 1 out
    assert (session.session_id, session.epoch) == (7, INITIAL_EPOCH)  # closed and reopened by the next fetch
    session.prepare(wanted({0: 0, 1: 0}), 2)
    session.answered(partitions_answer(8, 0, 1), 3)
    assert (session.session_id, session.epoch) == (8, 1)
    session.prepare(wanted({0: 0, 1: 0}), 4)
    assert session.answered(partitions_answer(8, 0), 5)  # an incremental answer may leave partitions out
    assert session.epoch == 2
    session.prepare(wanted({0: 0, 1: 0}), 6)
    assert session.answered(partitions_answer(8, 5), 7)  # but not name one outside the session
    assert (session.session_id, session.epoch) == (8, INITIAL_EPOCH)
