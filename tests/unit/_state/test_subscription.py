"""The state both threads share (``_state/subscription.py``): assignment and subscription, the two positions, the
epoch that makes stale answers and fetches harmless, pending resets, pauses, and the leader-epoch validation of
KIP-320 (refetch, reset or stop on truncation)."""

from __future__ import annotations

import threading

import pytest

from asyncconsumer._state.subscription import COMMITTED, SubscriptionState
from asyncconsumer.errors import IllegalStateError
from asyncconsumer.records import TopicPartition

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def at(position: int, *partitions: TopicPartition, reset: str = "earliest") -> SubscriptionState:
    """Partitions assigned by hand, each sought to ``position``."""
    subs = SubscriptionState(reset)
    subs.assign(partitions)
    for tp in partitions:
        subs.seek(tp, position)
    return subs


def epoch(subs: SubscriptionState, tp: TopicPartition) -> int:
    found = subs.epoch(tp)
    assert found is not None
    return found


def fetch(subs: SubscriptionState, tp: TopicPartition, offset: int, next_offset: int, **kw: int) -> bool:
    """A fetch answer for ``tp`` from ``offset`` to ``next_offset`` (high watermark 100 unless given)."""
    return subs.fetched(
        tp,
        epoch(subs, tp),
        offset,
        next_offset,
        kw.pop("high_watermark", 100),
        kw.pop("last_stable_offset", -1),
        kw.pop("log_start_offset", -1),
        **kw,
    )


# --- assignment and subscription -----------------------------------------------------------------------------


def test_a_new_assignment_keeps_the_positions_of_kept_partitions_and_new_ones_await_the_default_reset() -> None:
    subs = at(5, T0, T1, reset="latest")
    version = subs.assignment_version
    subs.assign([T1, T2])
    assert subs.assigned() == {T1, T2} and subs.topics() == {"t"}
    assert subs.position(T1) == 5
    assert subs.position(T2) is None
    assert subs.partitions_awaiting_reset() == {T2: ("latest", epoch(subs, T2))}
    assert subs.assignment_version == version + 1
    with pytest.raises(IllegalStateError, match="partition t-0 is not assigned"):
        subs.position(T0)


def test_manual_assignment_and_subscription_do_not_mix() -> None:
    subs = at(0, T0)
    with pytest.raises(IllegalStateError, match="call unsubscribe"):
        subs.subscribe(["t"])
    subs.unsubscribe()
    assert subs.assigned() == set() and subs.subscription is None
    subs.subscribe(["t", "u"])
    assert subs.subscription == frozenset({"t", "u"})
    with pytest.raises(IllegalStateError, match="call unsubscribe"):
        subs.assign([T0])


def test_a_group_assignment_looks_committed_offsets_up_first_then_falls_back_to_the_default() -> None:
    subs = SubscriptionState("earliest")
    subs.subscribe(["t"])
    subs.assign_from_group([T0, T1])
    awaiting = subs.partitions_awaiting_committed()
    assert awaiting == {T0: epoch(subs, T0), T1: epoch(subs, T1)}
    assert subs.partitions_awaiting_reset() == {T0: (COMMITTED, awaiting[T0]), T1: (COMMITTED, awaiting[T1])}
    subs.use_default_reset(T0, awaiting[T0])  # nothing committed for t-0
    subs.use_default_reset(T1, awaiting[T1] - 1)  # an answer from before: ignored
    assert subs.partitions_awaiting_reset()[T0] == ("earliest", awaiting[T0])
    assert subs.partitions_awaiting_committed() == {T1: awaiting[T1]}


# --- positions -----------------------------------------------------------------------------------------------


def test_a_seek_moves_both_positions_under_a_new_epoch() -> None:
    subs = at(0, T0)
    before = epoch(subs, T0)
    subs.seek(T0, 42)
    assert subs.position(T0) == 42
    assert subs.fetchable() == [(T0, 42, before + 1, None)]
    assert subs.partitions_awaiting_reset() == {}
    with pytest.raises(IllegalStateError, match="t-2 is not assigned"):
        subs.seek(T2, 1)


def test_a_reset_answer_lands_only_if_nothing_moved_the_partition_meanwhile() -> None:
    subs = at(0, T0, T1)
    subs.request_reset([T0, T1], "latest")
    assert subs.missing_positions([T0, T1]) == [T0, T1]
    waiting = subs.partitions_awaiting_reset()
    assert subs.complete_reset(T0, waiting[T0][1], 90) is True
    assert subs.position(T0) == 90
    subs.seek(T1, 7)  # the caller sought while the answer was on its way
    assert subs.complete_reset(T1, waiting[T1][1], 90) is False
    assert subs.position(T1) == 7
    assert subs.complete_reset(T0, epoch(subs, T0), 91) is False  # it has a position already


def test_a_reset_if_unchanged_is_refused_after_a_seek() -> None:
    subs = at(10, T0)
    stale = epoch(subs, T0)
    assert subs.reset_if_unchanged(T0, stale, "earliest") is True
    assert subs.position(T0) is None
    assert subs.reset_if_unchanged(T0, stale, "earliest") is False  # the reset itself was a move
    assert subs.reset_if_unchanged(T2, 0, "earliest") is False  # not assigned


def test_the_caller_advances_only_within_the_epoch_it_read() -> None:
    subs = at(0, T0)
    read = epoch(subs, T0)
    assert subs.advance(T0, read, 5) is True
    assert subs.position(T0) == 5 and subs.consumed_positions() == {T0: 5}
    subs.seek(T0, 100)
    assert subs.advance(T0, read, 6) is False  # records from before the seek: dropped
    assert subs.position(T0) == 100


def test_partitions_without_a_position_and_no_reset_strategy_wait_for_a_seek() -> None:
    subs = at(0, T0, T1, reset="none")
    subs.request_reset([T1], "none")
    assert subs.without_position_and_no_reset() == [T1]
    subs.assign([T0, T1, T2])
    assert sorted(subs.without_position_and_no_reset()) == [T1, T2]


# --- fetching ------------------------------------------------------------------------------------------------


def test_a_fetch_answer_moves_the_fetch_position_and_records_the_partitions_edges() -> None:
    subs = at(0, T0)
    assert fetch(subs, T0, 0, 10, high_watermark=50, last_stable_offset=40, log_start_offset=3, batch_epoch=2)
    assert subs.fetchable() == [(T0, 10, epoch(subs, T0), None)]
    assert subs.position(T0) == 0  # only the caller's poll moves the position
    assert (subs.high_watermark(T0), subs.last_stable_offset(T0)) == (50, 40)
    assert fetch(subs, T0, 10, None, high_watermark=60)  # nothing complete: the position stays, the edges move
    assert subs.fetchable()[0][1] == 10 and subs.high_watermark(T0) == 60
    assert subs.last_stable_offset(T0) == 40  # -1: not reported, kept


def test_a_stale_fetch_answer_changes_nothing() -> None:
    subs = at(0, T0)
    old = epoch(subs, T0)
    subs.seek(T0, 20)
    assert subs.fetched(T0, old, 0, 10, 50, -1, -1) is False
    assert subs.fetched(T0, epoch(subs, T0), 5, 10, 50, -1, -1) is False  # not from the fetch position
    assert subs.fetchable()[0][1] == 20 and subs.high_watermark(T0) is None


def test_a_grown_fetch_size_lasts_until_the_next_answer_with_records() -> None:
    subs = at(0, T0)
    subs.grow_fetch_size(T0, epoch(subs, T0), 2_000_000)
    assert subs.fetchable()[0][3] == 2_000_000
    subs.grow_fetch_size(T0, epoch(subs, T0) - 1, 9)  # stale: ignored
    assert subs.fetchable()[0][3] == 2_000_000
    fetch(subs, T0, 0, 3)
    assert subs.fetchable()[0][3] is None


def test_paused_partitions_are_not_fetchable_and_pausing_an_unassigned_one_pauses_none() -> None:
    subs = at(0, T0, T1)
    subs.set_paused([T0], True)
    assert [tp for tp, *_ in subs.fetchable()] == [T1]
    assert subs.paused() == {T0} and subs.is_withheld(T0) and not subs.is_withheld(T1) and not subs.is_withheld(T2)
    with pytest.raises(IllegalStateError):
        subs.set_paused([T1, T2], True)
    assert subs.paused() == {T0}  # all or nothing
    subs.set_paused([T0], False)
    assert subs.paused() == set()


# --- leader epochs and truncation (KIP-320) ------------------------------------------------------------------------


def test_nothing_fetched_yet_needs_no_validation_and_only_notes_the_epoch() -> None:
    subs = at(0, T0)
    assert subs.begin_validation(T0, epoch(subs, T0), 4) is False
    assert fetch(subs, T0, 0, 5, leader_epoch=3, batch_epoch=3)  # an older leader epoch does not go back
    assert subs.begin_validation(T0, epoch(subs, T0), 4) is False  # not newer than the one noted
    assert subs.begin_validation(T0, epoch(subs, T0), 5) is True


def test_a_newer_leader_stops_fetching_until_it_confirms_the_position() -> None:
    subs = at(0, T0)
    fetch(subs, T0, 0, 10, leader_epoch=3, batch_epoch=3)
    e = epoch(subs, T0)
    assert subs.begin_validation(T0, e, 4) is True
    assert subs.fetchable() == []
    assert subs.awaiting_validation() == {T0: (e, 4, 3, 10)}
    assert fetch(subs, T0, 10, 20) is False  # the old leader's answer in flight: dropped
    assert subs.begin_validation(T0, e, 4) is False  # already validating against it
    assert subs.begin_validation(T0, e, 5) is True  # the leader moved again: validate against the newest
    assert subs.complete_validation(T0, e, 4) is False
    assert subs.complete_validation(T0, e, 5) is True
    assert subs.fetchable() == [(T0, 10, e, None)]


@pytest.mark.parametrize(
    ("consumed", "reset", "outcome", "position_after"),
    [(4, False, "refetch", 4), (8, True, "reset", 6), (8, False, "fatal", 8)],
)
def test_a_truncated_log_refetches_resets_or_stops_by_what_the_caller_consumed(
    consumed: int, reset: bool, outcome: str, position_after: int
) -> None:
    subs = at(0, T0)
    fetch(subs, T0, 0, 10, leader_epoch=3, batch_epoch=3)
    subs.advance(T0, epoch(subs, T0), consumed)
    e = epoch(subs, T0)
    subs.begin_validation(T0, e, 4)
    assert subs.truncated(T0, e, 4, divergent_offset=6, reset=reset) == (outcome, consumed)
    assert subs.position(T0) == position_after
    if outcome == "fatal":
        assert subs.fetchable() == []  # until the caller seeks
    else:
        assert subs.fetchable() == [(T0, position_after, e + 1, None)]  # under a new epoch: old data is stale
    assert subs.truncated(T0, e, 4, divergent_offset=6, reset=reset)[0] == ("fatal" if outcome == "fatal" else "stale")


# --- two threads --------------------------------------------------------------------------------------------------


def test_a_seek_racing_the_callers_advance_always_wins_or_comes_after() -> None:
    """The caller advances within the epoch it read while another thread seeks: whatever the interleaving, the
    position ends at the seek's offset, never at an advance made with the epoch from before the seek."""
    subs = at(0, T0)
    for round_ in range(200):
        read = epoch(subs, T0)
        seeker = threading.Thread(target=subs.seek, args=(T0, 1_000_000 + round_))
        seeker.start()
        subs.advance(T0, read, round_ + 1)
        seeker.join(10)
        assert subs.position(T0) == 1_000_000 + round_


def test_a_partition_being_revoked_is_withheld_until_an_assignment_keeps_it() -> None:
    subs = SubscriptionState("earliest")
    subs.subscribe(["t"])
    subs.assign_from_group([T0, T1])
    subs.seek(T0, 3)
    subs.seek(T1, 4)
    subs.mark_pending_revocation([T0, TopicPartition("t", 9)])  # one not assigned is ignored
    assert subs.is_withheld(T0) and not subs.is_withheld(T1) and subs.paused() == set()
    subs.set_paused([T0], False)
    assert [f[0] for f in subs.fetchable()] == [T1]
    subs.assign_from_group([T0])
    assert not subs.is_withheld(T0) and [f[0] for f in subs.fetchable()] == [T0]
    assert subs.position(T0) == 3
