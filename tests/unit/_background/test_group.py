"""The group managers wired together (``_background/group.py``): their loop order, a pattern matched by the member
on every metadata refresh (classic) or handed to the coordinator (KIP-848), the coordinator forgotten when its
connection closes, the rebalance listener's round trip (revoked partitions withheld, committed first), and the warning
of a topic subscribed by name that does not exist."""

from __future__ import annotations

import re

import pytest

from asyncconsumer._background import group as group_module
from asyncconsumer.errors import CommitFailedError, ErrorCode
from asyncconsumer.managers.commit import NO_GENERATION
from asyncconsumer.managers.member_state import MemberState
from asyncconsumer.managers.member_state_consumer import ConsumerMemberState
from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from asyncconsumer.records import OffsetAndMetadata, TopicPartition
from tests.support.group_context import WiredGroup, answer_metadata
from tests.support.logs import captured_events, events_named

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_the_managers_run_coordinator_commit_membership_heartbeat() -> None:
    wired = WiredGroup()
    group = wired.group
    assert list(group.managers) == [group.coordinator, group.commit, group.membership, group.heartbeat]


def test_a_classic_member_matches_its_pattern_against_every_metadata_refresh() -> None:
    wired = WiredGroup()
    wired.group.set_pattern(re.compile("events-.*"))
    assert wired.metadata.all_topics_always is True
    answer_metadata(wired.metadata, {"events-1": 1, "events-2": 1, "events-": 1, "other": 1, "xevents-1": 1})
    assert wired.subscriptions.subscription == {"events-1", "events-2", "events-"}  # the whole name must match
    assert wired.group.membership.state is MemberState.UNJOINED  # waits for its coordinator, then joins
    answer_metadata(wired.metadata, {"events-1": 1, "events-3": 1}, internal=["events-3"], now_ms=10)
    assert wired.subscriptions.subscription == {"events-1"}  # internal topics never match
    wired.group.set_pattern(None)
    assert wired.metadata.all_topics_always is False
    answer_metadata(wired.metadata, {"events-9": 1}, now_ms=20)
    assert wired.subscriptions.subscription == {"events-1"}  # explicit topics again: no more matching


def test_a_kip848_member_hands_its_pattern_to_the_coordinator_and_joins_at_once() -> None:
    wired = WiredGroup(group_protocol="consumer")
    wired.group.set_pattern(re.compile("events-.*"))
    assert wired.group.membership.state is ConsumerMemberState.JOINING
    assert wired.metadata.all_topics_always is True  # assigned topic ids still need names
    answer_metadata(wired.metadata, {"events-1": 1})
    assert wired.subscriptions.subscription is None  # the coordinator matches, not the member


def test_the_coordinator_is_forgotten_only_when_its_own_connection_closes() -> None:
    wired = WiredGroup()
    wired.find_coordinator(node_id=3)
    coordinator = wired.group.coordinator.coordinator
    assert coordinator is not None
    assert wired.group.address(coordinator.node_id) == ("h", 9092)
    wired.group.on_disconnect(3)  # the broker's own connection, not the coordinator's
    assert wired.group.coordinator.coordinator is not None
    wired.group.on_disconnect(coordinator.node_id)
    assert wired.group.coordinator.coordinator is None


def test_an_assignment_reaches_the_subscription_state_and_without_a_listener_the_member_goes_on() -> None:
    wired = WiredGroup(enable_auto_commit=False)
    wired.join_as_leader(listener=False)
    assert wired.subscriptions.assigned() == {T0, T1}
    assert wired.subscriptions.partitions_awaiting_committed().keys() == {T0, T1}  # committed offsets first
    assert wired.asked == []
    wired.group.membership.poll(3)
    assert wired.group.membership.state is MemberState.STABLE


def test_the_listener_is_asked_on_the_callers_side_and_revoked_partitions_are_withheld_meanwhile() -> None:
    wired = WiredGroup(enable_auto_commit=False)
    wired.join_as_leader(listener=True)
    (assigned,) = wired.asked
    assert (assigned.kind, assigned.partitions) == ("assigned", frozenset([T0, T1]))
    assigned.done.set_result(None)  # the caller's side ran it
    membership = wired.group.membership
    membership.poll(3)
    assert membership.state is MemberState.STABLE
    for tp in (T0, T1):
        wired.subscriptions.seek(tp, 7)
    assert len(wired.subscriptions.fetchable()) == 2
    membership.request_rejoin("a test")  # eager: everything is revoked first
    revoked = wired.asked[-1]
    assert (revoked.kind, revoked.partitions) == ("revoked", frozenset([T0, T1]))
    subs = wired.subscriptions
    assert subs.is_withheld(T0) and subs.is_withheld(T1)  # nothing more of them reaches the caller
    assert subs.fetchable() == []
    assert subs.paused() == set()  # the caller's pauses are its own
    subs.set_paused([T0, T1], False)  # a resume (a processing engine's backpressure) does not undo the revocation
    assert subs.is_withheld(T0) and subs.fetchable() == []
    assert subs.assigned() == {T0, T1}  # positions kept while the callback may commit
    assert not revoked.done.done()


def test_assigned_partitions_are_not_fetched_before_the_callers_listener_ran() -> None:
    # Java's pendingOnAssignedCallback: a listener that seeks (to offsets of its own) costs no fetch, and
    # process_transactionally's claim moves the positions before anything of them is fetched.
    wired = WiredGroup(enable_auto_commit=False)
    wired.join_as_leader(listener=True)
    (assigned,) = wired.asked
    subs = wired.subscriptions
    for tp in (T0, T1):
        subs.seek(tp, 7)  # a position known (the committed lookup goes on meanwhile)
    assert subs.fetchable() == []
    assigned.done.set_result(None)  # the caller's side ran it
    assert {tp for tp, *_ in subs.fetchable()} == {T0, T1}


def test_without_a_listener_assigned_partitions_are_fetched_at_once() -> None:
    wired = WiredGroup(enable_auto_commit=False)
    wired.join_as_leader(listener=False)
    for tp in (T0, T1):
        wired.subscriptions.seek(tp, 7)
    assert {tp for tp, *_ in wired.subscriptions.fetchable()} == {T0, T1}


def test_with_auto_commit_the_revoke_callback_is_asked_only_once_the_positions_are_committed() -> None:
    wired = WiredGroup()
    wired.join_as_leader(listener=True)
    wired.asked[-1].done.set_result(None)
    membership = wired.group.membership
    membership.poll(3)
    wired.subscriptions.seek(T0, 7)
    membership.request_rejoin("a test")
    assert [e.kind for e in wired.asked] == ["assigned"]  # Java's commit-before-revoke
    sent_now = wired.group.commit.poll(4).unsent_requests  # also the OffsetFetch of t-1, which has no position
    (commit,) = [u for u in sent_now if isinstance(u.request, OffsetCommitRequest)]
    assert isinstance(commit.request, OffsetCommitRequest)
    sent = [(t.name, p.partition_index, p.committed_offset) for t in commit.request.topics for p in t.partitions]
    assert sent == [("t", 0, 7)]
    commit.on_response(
        OffsetCommitResponse(
            topics=(
                OffsetCommitResponseTopic(
                    name="t", partitions=(OffsetCommitResponsePartition(partition_index=0, error_code=0),)
                ),
            )
        ),
        5,
    )
    assert [e.kind for e in wired.asked] == ["assigned", "revoked"]


def test_with_the_rebalance_hook_and_no_listener_every_rebalance_is_asked_on_the_callers_side() -> None:
    wired = WiredGroup(enable_auto_commit=False)
    wired.group.rebalance_hook = True  # SetRebalanceHookEvent; the subscription has no listener
    wired.join_as_leader(listener=False)
    (assigned,) = wired.asked
    assert (assigned.kind, assigned.partitions) == ("assigned", frozenset([T0, T1]))
    assigned.done.set_result(None)
    membership = wired.group.membership
    membership.poll(3)
    membership.request_rejoin("a test")
    revoked = wired.asked[-1]
    assert (revoked.kind, revoked.partitions) == ("revoked", frozenset([T0, T1]))
    assert wired.subscriptions.assigned() == {T0, T1}  # until the hook returns: it may commit
    membership.poll(4)
    assert membership.state is MemberState.PREPARING
    revoked.done.set_result(None)
    membership.poll(5)
    assert wired.subscriptions.assigned() == set() and membership.state is MemberState.JOINING


def test_with_auto_commit_switched_off_the_revocation_is_asked_at_once_and_nothing_is_committed() -> None:
    wired = WiredGroup()  # enable_auto_commit in the config
    wired.group.rebalance_hook = True
    wired.join_as_leader(listener=False)
    wired.asked[-1].done.set_result(None)
    membership = wired.group.membership
    membership.poll(3)
    wired.subscriptions.seek(T0, 7)
    wired.subscriptions.seek(T1, 9)
    wired.group.set_auto_commit(False)
    membership.request_rejoin("a test")
    assert [e.kind for e in wired.asked] == ["assigned", "revoked"]  # no commit-before-revoke to wait for
    for now in (4, 10_000, 100_000):
        sent = wired.group.commit.poll(now).unsent_requests
        assert not [u for u in sent if isinstance(u.request, OffsetCommitRequest)]
    assert not [u for u in wired.group.commit.poll_on_close(100_001).unsent_requests]
    wired.group.set_auto_commit(True)  # back on: the next revocation commits first again
    assert wired.group.commit.auto_commit_enabled


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_a_subscribed_topic_that_does_not_exist_is_warned_of_once_and_again_only_after_it_existed(
    monkeypatch: pytest.MonkeyPatch, group_protocol: str
) -> None:
    wired = WiredGroup(group_protocol=group_protocol)
    wired.subscriptions.subscribe(["t", "missing", "later"])
    with captured_events(monkeypatch, group_module) as events:
        answer_metadata(wired.metadata, {"t": 1}, unknown=["missing", "later"], now_ms=0)
        answer_metadata(wired.metadata, {"t": 1}, unknown=["missing", "later"], now_ms=1000)  # every refresh
        answer_metadata(wired.metadata, {"t": 1, "later": 1}, unknown=["missing"], now_ms=2000)  # created
        answer_metadata(wired.metadata, {"t": 1, "later": 1}, unknown=["missing"], now_ms=3000)
        answer_metadata(wired.metadata, {"t": 1}, unknown=["missing", "later"], now_ms=4000)  # deleted
    warned = [(e["log_level"], e["group"], e["topics"]) for e in events_named(events, "subscription.topic_unknown")]
    assert warned == [("warning", "g", ["later", "missing"]), ("warning", "g", ["later"])]


def test_a_topic_warned_of_is_warned_of_again_once_subscribed_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    wired = WiredGroup()
    with captured_events(monkeypatch, group_module) as events:
        wired.subscriptions.subscribe(["missing"])
        answer_metadata(wired.metadata, {}, unknown=["missing"], now_ms=0)
        wired.subscriptions.subscribe(["t"])
        answer_metadata(wired.metadata, {"t": 1}, unknown=["missing"], now_ms=1000)  # no longer subscribed
        wired.subscriptions.subscribe(["missing"])
        answer_metadata(wired.metadata, {}, unknown=["missing"], now_ms=2000)
    assert [e["topics"] for e in events_named(events, "subscription.topic_unknown")] == [["missing"], ["missing"]]


def test_unknown_topics_of_a_manual_assignment_or_a_pattern_are_not_warned_of(monkeypatch: pytest.MonkeyPatch) -> None:
    """``assign()`` of an unknown topic fails the call itself (UnknownTopicOrPartitionError); a pattern names only
    topics that exist."""
    assigned = WiredGroup()
    assigned.subscriptions.assign([TopicPartition("missing", 0)])
    patterned = WiredGroup()
    patterned.group.set_pattern(re.compile("missing|t"))
    with captured_events(monkeypatch, group_module) as events:
        answer_metadata(assigned.metadata, {}, unknown=["missing"])
        answer_metadata(patterned.metadata, {"t": 1}, unknown=["missing"])
    assert patterned.subscriptions.subscription == {"t"}
    assert events_named(events, "subscription.topic_unknown") == []
    assert events_named(events, "group.pattern_matched") != []  # the capture heard the group's logger


@pytest.mark.parametrize(
    ("protocol", "code"),
    [
        ("classic", ErrorCode.ILLEGAL_GENERATION),
        ("classic", ErrorCode.UNKNOWN_MEMBER_ID),
        ("consumer", ErrorCode.FENCED_MEMBER_EPOCH),
        ("consumer", ErrorCode.UNKNOWN_MEMBER_ID),
    ],
)
def test_a_commit_refused_for_the_member_s_generation_fences_it_at_once(protocol: str, code: ErrorCode) -> None:
    """The network-faults issue's third defect: the coordinator refused a commit because it no longer knows the
    member, and ``poll`` went on handing out buffered records until the next heartbeat noticed. Now the refusal
    fences the member before the commit's caller hears: nothing more of its partitions is handed out, and the
    caller's next poll runs the lost callback."""
    wired = WiredGroup(group_protocol=protocol)
    if protocol == "consumer":
        wired.join_as_kip848_member(listener=False)
    else:
        wired.join_as_leader(listener=False)
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    for tp in (t0, t1):
        wired.subscriptions.seek(tp, 5)
    failed: list[object] = []
    commit = wired.group.commit
    commit.commit({t0: OffsetAndMetadata(5)}, 10_000, failed.append, failed.append)
    (sent,) = [r for r in commit.poll(10).unsent_requests if isinstance(r.request, OffsetCommitRequest)]
    sent.on_response(
        OffsetCommitResponse(
            topics=(
                OffsetCommitResponseTopic(
                    name="t", partitions=(OffsetCommitResponsePartition(partition_index=0, error_code=code),)
                ),
            )
        ),
        11,
    )
    assert isinstance(failed[0], CommitFailedError)
    assert wired.group.membership.generation() is NO_GENERATION
    assert all(wired.subscriptions.is_withheld(tp) for tp in (t0, t1))
    assert [(e.kind, e.partitions) for e in wired.asked][-1] == ("lost", frozenset({t0, t1}))
