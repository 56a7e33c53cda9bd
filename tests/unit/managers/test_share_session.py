"""One broker's share session (``managers/share_session.py``): epoch 0 opens it naming every partition, later requests
name only what is new or carries acknowledgements and forget what is no longer wanted, each success raises the epoch
(wrapping to 1), and a session error or a lost connection starts over at epoch 0."""

from __future__ import annotations

import pytest

from asyncconsumer.managers import share_session
from asyncconsumer.managers.share_session import INITIAL_EPOCH, SessionRequest, ShareSession
from asyncconsumer.records import TopicPartition

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def opened(*partitions: TopicPartition) -> ShareSession:
    session = ShareSession()
    session.next_request(partitions)
    session.succeeded()
    return session


def test_epoch_zero_opens_the_session_naming_every_partition() -> None:
    session = ShareSession()
    assert not session.is_open and session.epoch == INITIAL_EPOCH
    assert session.next_request([T1, T0]) == SessionRequest(0, (T0, T1), ())
    assert session.partitions == frozenset()  # not until the broker answers
    session.succeeded()
    assert session.is_open and session.epoch == 1 and session.partitions == {T0, T1}


def test_later_requests_name_only_new_partitions_and_forget_the_ones_not_wanted() -> None:
    session = opened(T0, T1)
    assert session.next_request([T0, T1]) == SessionRequest(1, (), ())
    session.succeeded()
    assert session.next_request([T1, T2]) == SessionRequest(2, (T2,), (T0,))
    session.succeeded()
    assert session.epoch == 3 and session.partitions == {T1, T2}


def test_partitions_carrying_acknowledgements_are_named_again_unless_no_longer_wanted() -> None:
    session = opened(T0, T1)
    assert session.next_request([T0, T1], acked=[T1, T2]) == SessionRequest(1, (T1,), ())


def test_an_acknowledge_uses_the_open_sessions_epoch_and_keeps_its_partitions() -> None:
    session = opened(T0)
    assert session.acknowledge_epoch() == 1
    session.succeeded()
    assert session.epoch == 2 and session.partitions == {T0}
    with pytest.raises(AssertionError):
        ShareSession().acknowledge_epoch()  # nothing to acknowledge in before the session opened


def test_a_reset_starts_over_at_epoch_zero_and_forgets_what_was_in_flight() -> None:
    session = opened(T0)
    session.next_request([T0, T1])
    session.reset()
    assert session.epoch == 0 and not session.is_open and session.partitions == frozenset()
    assert session.next_request([T1]) == SessionRequest(0, (T1,), ())


def test_the_epoch_wraps_to_one_after_the_largest_int32() -> None:
    session = opened(T0)
    session.epoch = share_session._MAX_EPOCH
    session.next_request([T0])
    session.succeeded()
    assert session.epoch == 1
