"""A share consumer's acknowledgements waiting to be sent (``managers/share_acks.py``): offset -> type per partition,
turned into the wire's batches (one type for a run that agrees, one per offset otherwise, a batch per run of
consecutive offsets), taken per partition by the request that carries them, or split off (those of a share session
that ended)."""

from __future__ import annotations

from asyncconsumer.managers.share_acks import GAP, Acknowledgements, AckRun, PendingAcknowledgements
from asyncconsumer.records import TopicPartition

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4


def test_a_run_that_agrees_is_one_batch_with_one_type() -> None:
    assert Acknowledgements({5: ACCEPT, 3: ACCEPT, 4: ACCEPT}).runs() == (AckRun(3, 5, (ACCEPT,)),)


def test_a_run_with_mixed_types_names_each_offsets_type() -> None:
    acks = Acknowledgements({10: ACCEPT, 11: GAP, 12: REJECT, 13: ACCEPT})
    assert acks.runs() == (AckRun(10, 13, (ACCEPT, GAP, REJECT, ACCEPT)),)


def test_offsets_that_are_not_consecutive_are_separate_batches_in_offset_order() -> None:
    acks = Acknowledgements({10: RELEASE, 1: ACCEPT, 2: ACCEPT, 7: ACCEPT, 8: REJECT})
    assert acks.runs() == (AckRun(1, 2, (ACCEPT,)), AckRun(7, 8, (ACCEPT, REJECT)), AckRun(10, 10, (RELEASE,)))
    assert Acknowledgements({0: ACCEPT, 2: ACCEPT}).runs() == (AckRun(0, 0, (ACCEPT,)), AckRun(2, 2, (ACCEPT,)))


def test_nothing_acknowledged_is_no_batch_and_false() -> None:
    empty = Acknowledgements()
    assert empty.runs() == () and not empty and len(empty) == 0 and empty.offsets() == frozenset()


def test_a_later_type_replaces_an_earlier_one_and_renew_is_seen() -> None:
    acks = Acknowledgements({1: RENEW})
    assert acks.has_renew()
    acks.add(1, ACCEPT)
    assert not acks.has_renew() and acks.runs() == (AckRun(1, 1, (ACCEPT,)),)
    acks.merge(Acknowledgements({1: REJECT, 2: RENEW}))
    assert acks.runs() == (AckRun(1, 2, (REJECT, RENEW)),) and acks.has_renew()
    assert acks.offsets() == {1, 2} and len(acks) == 2


def test_pending_acknowledgements_merge_per_partition_and_skip_empty_ones() -> None:
    pending = PendingAcknowledgements()
    assert not pending
    pending.add_all({T0: {1: ACCEPT}, T1: {}})
    pending.add_all({T0: {2: ACCEPT, 1: RELEASE}})
    assert pending.partitions() == [T0] and list(pending) == [T0] and pending
    (taken,) = pending.take([T0]).values()
    assert taken.runs() == (AckRun(1, 2, (RELEASE, ACCEPT)),)
    assert not pending


def test_take_returns_only_the_partitions_asked_that_have_acknowledgements() -> None:
    pending = PendingAcknowledgements()
    pending.add_all({T0: {1: ACCEPT}, T1: {4: REJECT}})
    pending.merge(T2, Acknowledgements({7: GAP}))
    taken = pending.take([T1, T2, TopicPartition("u", 0)])
    assert set(taken) == {T1, T2}
    assert taken[T2].runs() == (AckRun(7, 7, (GAP,)),)
    assert pending.partitions() == [T0]
    assert pending.take([T1]) == {}


def test_split_moves_the_offsets_named_that_it_has_and_settled_leaves_out_the_renewed() -> None:
    acks = Acknowledgements({1: ACCEPT, 2: RENEW, 3: REJECT})
    taken = acks.split([2, 3, 9])
    assert dict(taken.types()) == {2: RENEW, 3: REJECT} and dict(acks.types()) == {1: ACCEPT}
    assert list(taken.settled()) == [3]  # a renewed record still waits for its acknowledgement
    assert set(acks.settled()) == {1}
    assert not Acknowledgements({4: ACCEPT}).split([5])


def test_peek_leaves_a_partitions_acknowledgements_waiting() -> None:
    pending = PendingAcknowledgements()
    pending.add_all({T0: {1: ACCEPT}})
    pending.peek(T0).add(2, RELEASE)
    assert dict(pending.take([T0])[T0].types()) == {1: ACCEPT, 2: RELEASE}
