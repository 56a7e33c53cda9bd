"""A share group's membership (``managers/share_membership.py``), driven with literal times and hand-built
ShareGroupHeartbeat answers: the join (epoch 0, every field), the coordinator's epoch and interval, the assignment by
topic id named through metadata, errors (a moved or loading coordinator, fencing, fatal ones reaching the caller
once), leaving with epoch -1, the leave on close, and every state change allowed by ``TRANSITIONS``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncconsumer.errors import (
    ErrorCode,
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    UnsupportedVersionError,
)
from asyncconsumer.managers import share_membership
from asyncconsumer.managers.share_membership import TRANSITIONS, ShareMemberState
from asyncconsumer.records import GroupMembershipOperation, TopicPartition
from tests.support.consumer_member import T0, T1, T2, T_ID, U_ID, cluster
from tests.support.logs import captured_events, events_named
from tests.support.share_driver import ShareMember, answer, find_coordinator

S = ShareMemberState
U0 = TopicPartition("u", 0)


class Member(ShareMember):
    """A member whose metadata knows topic ``t`` (4 partitions) and, once a test adds it, ``u``."""

    def __init__(self) -> None:
        self.cluster = cluster(("t", T_ID, 4))
        super().__init__(lambda: self.cluster)

    def learn_u(self) -> None:
        self.cluster = cluster(("t", T_ID, 4), ("u", U_ID, 1))


def state(member: ShareMember) -> ShareMemberState:
    """Read afresh (mypy would keep the state it narrowed to before a call changed it)."""
    return member.membership.state


@pytest.fixture(autouse=True)
def transitions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test: each state change logged is one ``TRANSITIONS`` allows (``_to`` asserts it, this reads it)."""
    with captured_events(monkeypatch, share_membership) as events:
        yield
    for change in events_named(events, "share.member_state"):
        assert S(change["new"]) in TRANSITIONS[S(change["old"])], change


def test_join_sends_epoch_zero_with_every_field_and_takes_the_coordinators_epoch_and_assignment() -> None:
    m = Member()
    assert m.membership.poll(0).unsent_requests == ()  # not subscribed: nothing to say
    m.membership.subscribe(["t"])
    assert state(m) is S.JOINING and not m.membership.joined
    join, unsent = m.send(0)
    assert (join.group_id, join.member_epoch, join.subscribed_topic_names, join.rack_id) == ("g", 0, ("t",), "rack-a")
    assert join.member_id == m.membership.member_id and len(join.member_id) == 22  # url-safe base64 of a uuid
    assert unsent.node_id == m.coordinator.coordinator.node_id  # type: ignore[union-attr]
    assert m.membership.poll(1).unsent_requests == ()  # one heartbeat in flight at a time
    unsent.on_response(answer(3, {T_ID: (0, 1)}, interval=2_000), 5)
    assert state(m) is S.STABLE and m.membership.joined
    assert (m.membership.member_epoch, m.membership.interval_ms, m.membership.last_heartbeat_ms) == (3, 2_000, 5)
    assert m.membership.assignment == {T0, T1}
    assert m.assignments == [frozenset({T0, T1})]


def test_heartbeats_keep_the_coordinators_interval_and_send_only_the_epoch_once_joined() -> None:
    m = Member()
    m.join({T_ID: (0,)}, now=10, epoch=2)
    result = m.membership.poll(500)
    assert result.unsent_requests == () and result.time_until_next_poll_ms == 510
    steady, unsent = m.send(1_010)
    assert (steady.member_epoch, steady.subscribed_topic_names, steady.rack_id) == (2, None, None)
    unsent.on_response(answer(2), 1_011)  # no assignment field: it did not change
    assert m.membership.assignment == {T0} and m.assignments == [frozenset({T0})]
    assert m.membership.poll(2_000).unsent_requests == ()
    again, _ = m.send(2_011)
    assert again.member_epoch == 2


def test_a_new_subscription_is_sent_at_once_with_every_field() -> None:
    m = Member()
    m.join({T_ID: (0,)})
    m.membership.subscribe(["t", "u"])
    request, _ = m.send(1)
    assert (request.member_epoch, request.subscribed_topic_names, request.rack_id) == (1, ("t", "u"), "rack-a")
    assert state(m) is S.STABLE


def test_an_assignment_is_named_through_metadata_and_metadata_is_asked_while_an_id_is_unknown() -> None:
    m = Member()
    m.join({T_ID: (0, 2), U_ID: (0,)})
    assert m.membership.assignment == {T0, T2}  # what can be named now is taken at once
    assert m.metadata_requests == 1
    m.membership.poll(10)
    assert m.metadata_requests == 2  # still unknown: asked again
    m.learn_u()
    m.membership.poll(20)
    assert m.membership.assignment == {T0, T2, U0}
    assert m.assignments == [frozenset({T0, T2}), frozenset({T0, T2, U0})]
    m.membership.poll(30)
    assert m.metadata_requests == 2 and len(m.assignments) == 2  # all named: no more asking, no new assignment


def test_an_empty_assignment_empties_the_partitions() -> None:
    m = Member()
    m.join({T_ID: (0,)})
    _, unsent = m.send(1_000)
    unsent.on_response(answer(1, {}), 1_001)
    assert m.membership.assignment == frozenset() and m.assignments[-1] == frozenset()


def test_the_same_assignment_again_keeps_the_partitions() -> None:
    m = Member()
    m.join({T_ID: (0,)})
    _, unsent = m.send(1_000)
    unsent.on_response(answer(1, {T_ID: (0,)}), 1_001)
    assert m.membership.assignment == {T0}
    assert m.assignments == [frozenset({T0})]  # no change reported


@pytest.mark.parametrize(
    "code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.GROUP_ID_NOT_FOUND]
)
def test_a_fenced_member_loses_its_assignment_and_joins_again_at_once_with_epoch_zero(code: int) -> None:
    m = Member()
    m.join({T_ID: (0, 1)}, epoch=4)
    _, unsent = m.send(1_000)
    unsent.on_response(answer(4, code=code), 1_001)
    assert m.membership.member_epoch == 0 and state(m) is S.JOINING and not m.membership.joined
    assert m.membership.assignment == frozenset() and m.assignments[-1] == frozenset()
    rejoin, unsent = m.send(1_001)  # no backoff, no interval
    assert (rejoin.member_epoch, rejoin.subscribed_topic_names, rejoin.rack_id) == (0, ("t",), "rack-a")
    unsent.on_response(answer(5, {T_ID: (1,)}), 1_002)
    assert m.membership.joined and m.membership.member_epoch == 5 and m.membership.assignment == {T1}
    assert m.errors == []


@pytest.mark.parametrize("code", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_is_looked_up_again_and_the_membership_is_kept(code: int) -> None:
    m = Member()
    m.join({T_ID: (0,)}, epoch=2)
    _, unsent = m.send(1_000)
    unsent.on_response(answer(2, code=code), 1_001)
    assert m.coordinator.coordinator is None
    assert m.membership.joined and m.membership.assignment == {T0}
    assert m.membership.poll(1_200).unsent_requests == ()  # no coordinator to ask
    find_coordinator(m.coordinator, 1_200)
    again, _ = m.send(1_200)  # past the backoff (100 ms): every field again
    assert (again.member_epoch, again.subscribed_topic_names) == (2, ("t",))
    assert m.errors == []


def test_a_loading_coordinator_is_asked_again_after_a_backoff() -> None:
    m = Member()
    m.membership.subscribe(["t"])
    _, unsent = m.send(0)
    unsent.on_response(answer(0, code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 1)
    assert m.coordinator.coordinator is not None
    waiting = m.membership.poll(50)
    assert waiting.unsent_requests == () and waiting.time_until_next_poll_ms == 51
    retry, _ = m.send(101)
    assert retry.member_epoch == 0 and state(m) is S.JOINING


def test_a_lost_connection_forgets_the_coordinator_and_keeps_the_membership() -> None:
    m = Member()
    m.join({T_ID: (0,)})
    _, unsent = m.send(1_000)
    unsent.on_response(KafkaConnectionError("gone"), 1_001)
    assert m.coordinator.coordinator is None
    assert m.membership.joined and m.membership.assignment == {T0} and m.errors == []


def test_a_broker_without_share_groups_is_fatal_and_told_once() -> None:
    m = Member()
    m.membership.subscribe(["t"])
    _, unsent = m.send(0)
    unsent.on_response(UnsupportedVersionError("node 1 does not support SHARE_GROUP_HEARTBEAT (API 76)"), 1)
    assert state(m) is S.FATAL
    (event,) = m.errors
    assert isinstance(event.error, UnsupportedVersionError)
    assert m.membership.poll(10_000).unsent_requests == ()
    m.membership.subscribe(["t"])  # nothing brings a fatal member back
    assert m.membership.poll(20_000).unsent_requests == () and len(m.errors) == 1
    assert m.membership.poll_on_close(20_001).unsent_requests == ()


def test_an_error_the_member_cannot_recover_from_is_fatal_with_the_brokers_message() -> None:
    m = Member()
    m.join({T_ID: (0,)})
    _, unsent = m.send(1_000)
    unsent.on_response(answer(1, code=ErrorCode.GROUP_AUTHORIZATION_FAILED, message="detail from the broker"), 1_001)
    assert state(m) is S.FATAL and m.membership.assignment == frozenset()
    (event,) = m.errors
    assert isinstance(event.error, GroupAuthorizationFailedError) and "detail from the broker" in str(event.error)


def test_unsubscribe_leaves_with_epoch_minus_one_and_stops() -> None:
    m = Member()
    m.join({T_ID: (0,)}, epoch=3)
    m.membership.unsubscribe()
    assert state(m) is S.LEAVING
    assert m.membership.assignment == frozenset() and m.assignments[-1] == frozenset()
    leave, unsent = m.send(1)  # at once, not after the interval
    assert (leave.member_epoch, leave.subscribed_topic_names, leave.member_id) == (-1, None, m.membership.member_id)
    assert m.membership.poll(2).unsent_requests == ()  # sent once
    unsent.on_response(answer(-1), 3)
    assert state(m) is S.UNSUBSCRIBED and m.membership.member_epoch == 0
    assert m.membership.poll(10_000).unsent_requests == ()


def test_unsubscribe_before_the_member_joined_sends_nothing() -> None:
    m = Member()
    m.membership.subscribe(["t"])
    m.membership.unsubscribe()
    assert state(m) is S.UNSUBSCRIBED
    assert m.membership.poll(0).unsent_requests == ()


def test_subscribing_again_while_leaving_joins_again_once_the_leave_is_answered() -> None:
    m = Member()
    m.join({T_ID: (0,)}, epoch=3)
    m.membership.unsubscribe()
    _, leave = m.send(1)
    m.membership.subscribe(["t"])
    assert state(m) is S.JOINING
    assert m.membership.poll(2).unsent_requests == ()  # the leave is still in flight
    leave.on_response(answer(-1), 3)
    join, unsent = m.send(3)
    assert (join.member_epoch, join.subscribed_topic_names) == (0, ("t",))
    unsent.on_response(answer(4, {T_ID: (0,)}), 4)
    assert m.membership.joined and m.membership.assignment == {T0}


def test_close_sends_a_leave_only_when_joined() -> None:
    never = Member()
    assert never.membership.poll_on_close(0).unsent_requests == ()
    never.membership.subscribe(["t"])
    assert never.membership.poll_on_close(0).unsent_requests == ()  # joining with epoch 0: unknown to the group
    m = Member()
    m.join({T_ID: (0,)}, epoch=7)
    (unsent,) = m.membership.poll_on_close(100).unsent_requests
    assert unsent.request.member_epoch == -1  # type: ignore[attr-defined]
    assert state(m) is S.LEAVING
    unsent.on_response(KafkaConnectionError("closed"), 101)  # left either way
    assert m.membership.member_epoch == 0 and m.membership.assignment == frozenset()


def test_a_fenced_answer_after_unsubscribing_does_not_join_again() -> None:
    m = Member()
    m.join({T_ID: (0,)}, epoch=3)
    _, heartbeat = m.send(1_000)
    m.membership.unsubscribe()
    heartbeat.on_response(answer(3, code=ErrorCode.FENCED_MEMBER_EPOCH), 1_001)
    assert state(m) is S.UNSUBSCRIBED  # the coordinator forgot the member: nothing left to leave
    assert m.membership.poll(1_002).unsent_requests == ()


def test_a_join_answered_after_unsubscribing_leaves_at_once() -> None:
    """The coordinator made a member of the join the caller gave up: left alone, that member would hold partitions
    in the group's assignment until its session timed out."""
    m = Member()
    m.membership.subscribe(["t"])
    _, join = m.send(0)
    m.membership.unsubscribe()
    join.on_response(answer(1, {T_ID: (0, 1)}), 1)
    assert state(m) is S.LEAVING and m.membership.assignment == frozenset() and m.errors == []
    leave, unsent = m.send(2)
    assert (leave.member_epoch, leave.member_id) == (-1, m.membership.member_id)
    unsent.on_response(answer(-1), 3)
    assert state(m) is S.UNSUBSCRIBED and m.membership.member_epoch == 0
    assert m.membership.poll(10_000).unsent_requests == ()


@pytest.mark.parametrize(
    "result",
    [
        answer(0, code=ErrorCode.GROUP_AUTHORIZATION_FAILED),
        answer(0, code=ErrorCode.UNKNOWN_MEMBER_ID),
        UnsupportedVersionError("no API 76"),
    ],
    ids=["fatal code", "fenced code", "unsupported version"],
)
def test_an_error_answering_a_join_the_caller_gave_up_is_ignored(result: object) -> None:
    m = Member()
    m.membership.subscribe(["t"])
    _, join = m.send(0)
    m.membership.unsubscribe()  # never joined: unsubscribed at once, the join still in flight
    join.on_response(result, 1)
    assert state(m) is S.UNSUBSCRIBED and m.errors == []
    assert m.membership.poll(10_000).unsent_requests == ()


def test_transitions_name_every_state_and_fatal_is_final() -> None:
    assert set(TRANSITIONS) == set(S)
    assert TRANSITIONS[S.FATAL] == frozenset()
    assert all(S.FATAL in after for state, after in TRANSITIONS.items() if state not in (S.UNSUBSCRIBED, S.FATAL))
    m = Member()
    with pytest.raises(AssertionError, match=r"UNSUBSCRIBED -> ShareMemberState\.STABLE"):
        m.membership._to(S.STABLE)


def test_member_ids_are_random_and_url_safe() -> None:
    ids = {share_membership.new_member_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and "=" not in i and "+" not in i and "/" not in i for i in ids)


@pytest.mark.parametrize(
    ("operation", "leaves"),
    [
        (GroupMembershipOperation.DEFAULT, True),
        (GroupMembershipOperation.LEAVE_GROUP, True),
        (GroupMembershipOperation.REMAIN_IN_GROUP, False),
    ],
)
def test_close_leaves_unless_told_to_remain(operation: GroupMembershipOperation, leaves: bool) -> None:
    m = Member()
    m.join({T_ID: (0,)}, epoch=7)
    m.membership.closing(operation)
    sent = m.membership.poll_on_close(100).unsent_requests
    if leaves:
        (unsent,) = sent
        assert unsent.request.member_epoch == -1  # type: ignore[attr-defined]
    else:
        assert sent == ()
