"""Application events turned into work (``_background/processor.py``), on the background's side with no thread: each
event's effect on the subscription state and the managers, group calls refused without a group, and events failed
at their deadline naming what the caller asked and the last connection error."""

from __future__ import annotations

import re

import pytest

from asyncconsumer._background.processor import ApplicationEventProcessor
from asyncconsumer._state.queues import BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import (
    AuthenticationError,
    ClientClosedError,
    CommitFailedError,
    ErrorCode,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from asyncconsumer.events.application import (
    ApplicationEvent,
    AssignEvent,
    ClientInstanceIdEvent,
    CloseEvent,
    CommitEvent,
    CommittedEvent,
    EnforceRebalanceEvent,
    PauseEvent,
    PolledEvent,
    ResetPositionsEvent,
    SeekEvent,
    SetAutoCommitEvent,
    SetRebalanceHookEvent,
    SubscribeEvent,
    TopicMetadataEvent,
    UnsubscribeEvent,
    UpdatePositionsEvent,
)
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import OffsetsManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.offset_commit import OffsetCommitRequest
from asyncconsumer.records import GroupMembershipOperation, OffsetAndMetadata, PartitionInfo, TopicPartition
from tests.support.group_context import WiredGroup, answer_metadata

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Parts:
    """A processor over real shared state and managers; ``last_error`` and ``fatal`` are what the network says."""

    def __init__(self, group: WiredGroup | None = None) -> None:
        self.subs = group.subscriptions if group is not None else SubscriptionState("earliest")
        self.metadata = (
            group.metadata if group is not None else MetadataManager(["h:1"], 60_000, ExponentialBackoff(100, 1000))
        )
        self.offsets = OffsetsManager(
            self.subs,
            self.metadata,
            "read_uncommitted",
            ExponentialBackoff(100, 1000),
            BackgroundEventQueue(CallerSignal()).put,
        )
        self.closed: list[CloseEvent] = []
        self.last_error: KafkaError | None = None
        self.fatal: KafkaError | None = None
        self.processor = ApplicationEventProcessor(
            self.subs,
            self.metadata,
            self.offsets,
            on_close=self.closed.append,
            last_error=lambda: self.last_error,
            group=group.group if group is not None else None,
            fatal_error=lambda: self.fatal,
        )

    def process(self, event: ApplicationEvent) -> ApplicationEvent:
        self.processor.process(event)
        return event

    def asked_topics(self) -> tuple[str, ...] | None:
        self.metadata.request_update()
        (request,) = self.metadata.poll(0).unsent_requests
        topics = request.request.topics  # type: ignore[attr-defined]
        return None if topics is None else tuple(t.name for t in topics)


# --- what each event does ---------------------------------------------------------------------------------------


def test_an_assignment_is_applied_and_its_topics_are_asked_for() -> None:
    parts = Parts()
    event = parts.process(AssignEvent(partitions=frozenset([T0, TopicPartition("u", 0)]), deadline_ms=10))
    assert event.future.result(0) is None
    assert parts.subs.assigned() == {T0, TopicPartition("u", 0)}
    assert parts.asked_topics() == ("t", "u")


def test_seek_reset_and_pause_change_the_subscription_state() -> None:
    parts = Parts()
    parts.process(AssignEvent(partitions=frozenset([T0, T1]), deadline_ms=10))
    assert parts.process(SeekEvent(tp=T0, offset=5, deadline_ms=10)).future.result(0) is None
    assert parts.subs.position(T0) == 5
    parts.process(ResetPositionsEvent(partitions=frozenset([T1]), strategy="latest", deadline_ms=10))
    assert parts.subs.partitions_awaiting_reset()[T1][0] == "latest"
    epoch = parts.subs.epoch(T0)
    assert epoch is not None and parts.subs.fetched(T0, epoch, 5, 9, 20, -1, -1)  # fetched ahead of the caller
    parts.process(PauseEvent(partitions=frozenset([T0]), paused=True, deadline_ms=10))
    assert parts.subs.paused() == {T0}
    assert parts.subs.epoch(T0) == epoch  # what was fetched ahead is kept for the resume (the collector parks it)
    assert parts.subs.position(T0) == 5
    parts.process(PauseEvent(partitions=frozenset([T0]), paused=False, deadline_ms=10))
    assert parts.subs.paused() == set()


def test_an_event_the_state_refuses_fails_with_that_error() -> None:
    parts = Parts()
    event = parts.process(SeekEvent(tp=T0, offset=5, deadline_ms=10))
    error = event.future.exception(0)
    assert isinstance(error, IllegalStateError) and "t-0 is not assigned" in str(error)
    updates = parts.process(UpdatePositionsEvent(partitions=frozenset([T0]), deadline_ms=10))
    assert isinstance(updates.future.exception(0), IllegalStateError)


def test_a_topic_lookup_waits_for_the_metadata_and_answers_its_partitions_in_order() -> None:
    parts = Parts()
    one = parts.process(TopicMetadataEvent(topic="t", deadline_ms=10))
    every = parts.process(TopicMetadataEvent(topic=None, deadline_ms=10))
    assert not one.future.done() and parts.processor.next_deadline_ms() == 10
    answer_metadata(parts.metadata, {"t": 2, "u": 1})
    found = one.future.result(0)
    assert list(found) == ["t"] and [p.partition for p in found["t"]] == [0, 1]
    assert all(isinstance(p, PartitionInfo) for p in found["t"])
    assert set(every.future.result(0)) == {"t", "u"}  # one request for every topic answered both


@pytest.mark.parametrize(
    ("event", "call"),
    [
        (SubscribeEvent(topics=frozenset({"t"}), deadline_ms=10), "subscribe"),
        (CommitEvent(offsets=None, deadline_ms=10), "commit"),
        (CommittedEvent(partitions=frozenset([T0]), deadline_ms=10), "committed"),
        (EnforceRebalanceEvent(reason="x", deadline_ms=10), "enforce_rebalance"),
    ],
    ids=["subscribe", "commit", "committed", "enforce_rebalance"],
)
def test_a_group_call_without_a_group_fails_naming_what_to_set(event: ApplicationEvent, call: str) -> None:
    Parts().process(event)
    error = event.future.exception(0)
    assert isinstance(error, IllegalStateError)
    assert str(error) == f"{call}() needs a consumer group: set group_id"


def test_unsubscribe_and_poll_without_a_group_complete_and_forget_the_assignment() -> None:
    parts = Parts()
    parts.process(AssignEvent(partitions=frozenset([T0]), deadline_ms=10))
    assert parts.process(UnsubscribeEvent(deadline_ms=10)).future.result(0) is None
    assert parts.subs.assigned() == set()
    assert parts.asked_topics() == ()
    assert parts.process(PolledEvent(deadline_ms=10)).future.result(0) is None


def test_subscribe_hands_the_topics_to_the_group_and_completes_once_its_api_is_known_to_be_offered() -> None:
    wired = WiredGroup()
    parts = Parts(wired)
    event = parts.process(SubscribeEvent(topics=frozenset({"t"}), deadline_ms=10))
    assert parts.subs.subscription == {"t"}
    assert wired.group.has_listener is False
    assert wired.group.membership.subscribed  # type: ignore[attr-defined]
    assert event.future.result(0) is None  # every broker offers the classic group APIs
    assert parts.asked_topics() == ("t",)
    parts.process(SubscribeEvent(topics=frozenset(), pattern=re.compile("t.*"), has_listener=True, deadline_ms=10))
    assert wired.group.has_listener is True and wired.metadata.all_topics_always

    kip848 = Parts(WiredGroup(group_protocol="consumer"))
    waiting = kip848.process(SubscribeEvent(topics=frozenset({"t"}), deadline_ms=10))
    assert not waiting.future.done()  # until a connected broker is seen to offer API 68
    assert kip848.processor.next_deadline_ms() == 10


def test_the_rebalance_hook_routes_rebalances_to_the_caller_whether_subscribe_comes_before_or_after_it() -> None:
    for hook_first in (True, False):
        wired = WiredGroup()
        parts = Parts(wired)
        hook = SetRebalanceHookEvent(installed=True, deadline_ms=10)
        subscribe = SubscribeEvent(topics=frozenset({"t"}), deadline_ms=10)  # no listener
        for event in (hook, subscribe) if hook_first else (subscribe, hook):
            parts.process(event)
        assert hook.future.result(0) is None
        assert wired.group.rebalance_hook and wired.group.asks_caller
        assert wired.group.has_listener is False
        parts.process(SubscribeEvent(topics=frozenset({"t"}), has_listener=True, deadline_ms=10))
        parts.process(SubscribeEvent(topics=frozenset({"t"}), deadline_ms=10))  # a listener dropped, not the hook
        assert wired.group.asks_caller
        assert parts.process(SetRebalanceHookEvent(installed=False, deadline_ms=10)).future.result(0) is None
        assert not wired.group.asks_caller


def test_auto_commit_switched_off_completes_once_no_auto_commit_is_in_flight() -> None:
    wired = WiredGroup()
    parts = Parts(wired)
    commit = wired.group.commit
    assert commit.auto_commit_enabled  # the config's default
    off = parts.process(SetAutoCommitEvent(enabled=False, deadline_ms=10))
    assert off.future.result(0) is None  # nothing in flight
    assert not commit.auto_commit_enabled
    on = parts.process(SetAutoCommitEvent(enabled=True, deadline_ms=10))
    assert on.future.result(0) is None and commit.auto_commit_enabled

    wired.join_as_leader(listener=False)
    for tp in wired.subscriptions.assigned():
        wired.subscriptions.seek(tp, 4)
    assert commit.commit_positions(0)  # an auto-commit (as before a revocation), then sent
    (sent,) = commit.poll(0).unsent_requests
    off = parts.process(SetAutoCommitEvent(enabled=False, deadline_ms=100))
    assert not off.future.done()
    assert parts.processor.next_deadline_ms() == 100  # failed at its deadline if it never gets quiet
    sent.on_response(KafkaConnectionError("gone"), 1)  # retriable, but not retried now
    commit.poll(2)
    assert off.future.result(0) is None


def test_without_a_group_the_hook_and_auto_commit_events_complete_at_once() -> None:
    parts = Parts()
    assert parts.process(SetAutoCommitEvent(enabled=False, deadline_ms=10)).future.result(0) is None
    assert parts.process(SetRebalanceHookEvent(installed=True, deadline_ms=10)).future.result(0) is None


def test_a_commit_of_nothing_completes_at_once() -> None:
    parts = Parts(WiredGroup())
    assert parts.process(CommitEvent(offsets=None, deadline_ms=10)).future.result(0) is None  # no positions yet
    assert parts.processor.next_deadline_ms() is None  # not even tracked


def test_close_goes_to_the_thread_and_an_unknown_event_fails() -> None:
    parts = Parts()
    close = parts.process(CloseEvent(deadline_ms=10))
    assert parts.closed == [close]
    odd = parts.process(ApplicationEvent(deadline_ms=10))
    with pytest.raises(TypeError, match="unknown application event ApplicationEvent"):
        odd.future.result(0)


def test_close_tells_the_membership_its_operation_before_the_thread_closes() -> None:
    """The loop's close work polls the membership on close; what it does there depends on the operation."""
    wired = WiredGroup(group_protocol="consumer", group_instance_id="i-1")
    parts = Parts(wired)
    membership = wired.group.membership
    assert membership.leave_epoch() == -2  # type: ignore[attr-defined]
    close = parts.process(CloseEvent(deadline_ms=10, group_membership=GroupMembershipOperation.LEAVE_GROUP))
    assert parts.closed == [close]
    assert membership.leave_epoch() == -1  # type: ignore[attr-defined]


# --- deadlines ---------------------------------------------------------------------------------------------------


def test_events_past_their_deadline_fail_naming_what_was_asked_and_the_last_error() -> None:
    parts = Parts()
    early = parts.process(TopicMetadataEvent(topic="t", deadline_ms=100))
    late = parts.process(TopicMetadataEvent(topic=None, deadline_ms=300))
    parts.processor.reap(99)
    assert not early.future.done()
    parts.processor.reap(100)
    assert str(early.future.exception(0)) == "looking up topic 't' timed out"
    assert parts.processor.next_deadline_ms() == 300
    parts.last_error = KafkaConnectionError("cannot connect to bootstrap server h:1: connection refused")
    parts.processor.reap(300)
    error = late.future.exception(0)
    assert isinstance(error, KafkaTimeoutError)
    assert str(error) == (
        "listing the cluster's topics timed out; last error: cannot connect to bootstrap server h:1: connection refused"
    )
    assert parts.processor.next_deadline_ms() is None


def test_a_fatal_network_error_fails_every_waiting_event_at_once() -> None:
    parts = Parts()
    waiting = [parts.process(TopicMetadataEvent(topic=t, deadline_ms=10_000)) for t in ("a", "b")]
    parts.fatal = AuthenticationError("SASL PLAIN refused by broker 1")
    parts.processor.reap(0)
    assert [e.future.exception(0) for e in waiting] == [parts.fatal, parts.fatal]


def test_closing_fails_what_is_still_waiting_as_closed() -> None:
    parts = Parts()
    waiting = parts.process(TopicMetadataEvent(topic="t", deadline_ms=10_000))
    parts.processor.fail_all()
    error = waiting.future.exception(0)
    assert isinstance(error, ClientClosedError) and str(error) == "the consumer is closed"
    assert parts.processor.next_deadline_ms() is None


# --- a fenced member's commit (the network-faults issue's first defect) ------------------------------------------
FENCING = [
    pytest.param("classic", ErrorCode.ILLEGAL_GENERATION, id="classic-illegal-generation"),
    pytest.param("classic", ErrorCode.UNKNOWN_MEMBER_ID, id="classic-unknown-member"),
    pytest.param("consumer", ErrorCode.FENCED_MEMBER_EPOCH, id="kip848-fenced-epoch"),
    pytest.param("consumer", ErrorCode.UNKNOWN_MEMBER_ID, id="kip848-unknown-member"),
]


def joined_group(protocol: str) -> WiredGroup:
    """A member holding t-0 and t-1 with records consumed up to offset 7 in each, and no rebalance listener."""
    wired = WiredGroup(group_protocol=protocol)
    if protocol == "consumer":
        wired.join_as_kip848_member(listener=False)
    else:
        wired.join_as_leader(listener=False)
    for tp in (T0, T1):
        wired.subscriptions.seek(tp, 7)
    return wired


@pytest.mark.parametrize(("protocol", "code"), FENCING)
def test_a_commit_after_the_member_was_fenced_fails_instead_of_finding_nothing_to_commit(
    protocol: str, code: ErrorCode
) -> None:
    """A heartbeat fenced the member: its partitions stay assigned (withheld) until the caller's poll runs the lost
    callback, so ``commit()`` of what was handed out fails, as Java's classic consumer raises CommitFailedException,
    rather than completing with nothing committed while those records are read again after the rejoin."""
    wired = joined_group(protocol)
    parts = Parts(wired)
    wired.group.membership.fenced(code)

    commit = parts.process(CommitEvent(offsets=None, deadline_ms=10_000))
    assert isinstance(commit.future.exception(0), CommitFailedError)
    assert not [r for r in wired.group.commit.poll(1).unsent_requests if isinstance(r.request, OffsetCommitRequest)]
    # Nothing of the lost partitions is fetched or handed out meanwhile, listener or not.
    assert wired.subscriptions.assigned() == {T0, T1}
    assert all(wired.subscriptions.is_withheld(tp) for tp in (T0, T1))
    assert wired.subscriptions.fetchable() == []
    assert [(e.kind, e.partitions) for e in wired.asked] == [("lost", frozenset({T0, T1}))]

    wired.finish_rebalance_callbacks()  # the caller's poll ran it
    wired.group.membership.poll(2)
    assert wired.subscriptions.assigned() == set()
    after = parts.process(CommitEvent(offsets=None, deadline_ms=10_000))
    assert after.future.result(0) is None  # nothing is assigned now: nothing to commit


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_an_explicit_commit_by_a_member_not_in_its_group_fails_at_once(protocol: str) -> None:
    """Subscribed, but not (or no longer) in the group: no commit goes out at all, not even a standalone one."""
    wired = joined_group(protocol)
    parts = Parts(wired)
    wired.group.membership.fenced(ErrorCode.UNKNOWN_MEMBER_ID)
    commit = parts.process(CommitEvent(offsets={T0: OffsetAndMetadata(3)}, deadline_ms=10_000))
    error = commit.future.exception(0)
    assert isinstance(error, CommitFailedError) and "not a member of its group" in str(error)
    assert wired.group.commit.pending == 0


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_after_a_poll_timeout_a_commit_fails_and_the_next_poll_lets_the_partitions_go(protocol: str) -> None:
    """``max_poll_interval_ms`` passed: the member left, and its partitions are lost (Java's CommitFailedException
    for a commit after the poll interval): withheld, not committable, gone from the assignment at the next poll."""
    wired = joined_group(protocol)
    parts = Parts(wired)
    membership = wired.group.membership
    assert hasattr(membership, "leave_until_next_poll")
    membership.leave_until_next_poll()
    commit = parts.process(CommitEvent(offsets=None, deadline_ms=10_000))
    assert isinstance(commit.future.exception(0), CommitFailedError)
    assert wired.subscriptions.assigned() == {T0, T1} and wired.subscriptions.fetchable() == []
    assert [(e.kind, e.partitions) for e in wired.asked] == [("lost", frozenset({T0, T1}))]
    parts.process(PolledEvent(deadline_ms=10_000))
    assert wired.subscriptions.assigned() == set()


def test_client_instance_id_without_telemetry_fails_naming_the_setting() -> None:
    event = Parts().process(ClientInstanceIdEvent(deadline_ms=10))
    error = event.future.exception(0)
    assert isinstance(error, IllegalStateError)
    assert str(error) == "client_instance_id() needs client telemetry: enable_metrics_push is False"
