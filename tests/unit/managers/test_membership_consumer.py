"""The KIP-848 member: its transition table, and the membership and heartbeat managers driven with literal times
and hand-built ConsumerGroupHeartbeat answers (no network)."""

from __future__ import annotations

import itertools
import uuid
from concurrent.futures import Future

import pytest

from asyncconsumer._state.cluster import Cluster, TopicInfo
from asyncconsumer.errors import (
    ConfigError,
    GroupAuthorizationFailedError,
    IllegalStateError,
    InvalidRegularExpressionError,
    KafkaConnectionError,
    PollIntervalExceededError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.commit import NO_GENERATION
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.heartbeat_consumer import ConsumerHeartbeatManager, ConsumerHeartbeatSettings
from asyncconsumer.managers.member_state_consumer import TRANSITIONS, transition
from asyncconsumer.managers.member_state_consumer import ConsumerMemberState as S
from asyncconsumer.managers.membership_consumer import ConsumerGroupSettings, ConsumerMembershipManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.records import PartitionInfo, TopicPartition

T_ID, U_ID = uuid.UUID(int=1), uuid.UUID(int=2)
T0, T1, T2, T3 = (TopicPartition("t", p) for p in range(4))

# Kafka's MemberState.previousValidStates (clients/.../consumer/internals/MemberState.java), verbatim.
JAVA_PREVIOUS_VALID_STATES = {
    S.STABLE: {S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.RECONCILING: {S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.ACKNOWLEDGING: {S.RECONCILING},
    S.FATAL: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING, S.UNSUBSCRIBED},
    S.FENCED: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING},
    S.JOINING: {S.FENCED, S.UNSUBSCRIBED, S.STALE},
    S.PREPARE_LEAVING: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED},
    S.LEAVING: {S.PREPARE_LEAVING},
    S.UNSUBSCRIBED: {S.PREPARE_LEAVING, S.LEAVING, S.FENCED},
    S.STALE: {S.LEAVING},
}


# --- the transition table ----------------------------------------------------------------------------------------


def test_the_table_is_kafkas_previous_valid_states_inverted() -> None:
    assert set(TRANSITIONS) == set(S)
    for new in S:
        allowed_from = {current for current in S if new in TRANSITIONS[current]}
        assert allowed_from == JAVA_PREVIOUS_VALID_STATES.get(new, set()), new


@pytest.mark.parametrize(("current", "new"), list(itertools.product(S, S)))
def test_only_the_transitions_in_the_table_are_possible(current: S, new: S) -> None:
    if new in TRANSITIONS[current]:
        assert transition(current, new) is new
    else:
        with pytest.raises(IllegalStateError, match=f"{current.name} cannot move to {new.name}"):
            transition(current, new)


# --- the managers ------------------------------------------------------------------------------------------------


def cluster(*topics: tuple[str, uuid.UUID, int]) -> Cluster:
    return Cluster(
        topics={
            name: TopicInfo(name, 0, {p: PartitionInfo(name, p, 0, (0,), (0,)) for p in range(n)}, topic_id)
            for name, topic_id, n in topics
        }
    )


class Harness:
    def __init__(self, *, instance_id: str | None = None, max_poll_interval_ms: int = 300_000) -> None:
        self.coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
        (find,) = self.coordinator.poll(0).unsent_requests
        find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
        self.cluster = cluster(("t", T_ID, 4))
        self.metadata_requests = 0
        self.applied: list[frozenset[TopicPartition]] = []
        self.calls: list[tuple[str, frozenset[TopicPartition], Future[None]]] = []
        self.errors: list[ErrorEvent] = []
        self.topics = ["t"]
        self.regex: str | None = None
        self.last_poll: int | None = None
        self.supported: bool | None = None
        self.membership = ConsumerMembershipManager(
            ConsumerGroupSettings("g", instance_id),
            lambda: self.cluster,
            self.ask_metadata,
            self.applied.append,
            self.listener,
            self.errors.append,
        )
        self.heartbeat = ConsumerHeartbeatManager(
            ConsumerHeartbeatSettings("g", 60_000, max_poll_interval_ms, instance_id, "rack-a", "uniform"),
            self.coordinator,
            self.membership,
            lambda: self.topics,
            lambda: self.regex,
            lambda: self.last_poll,
            ExponentialBackoff(100, 1000, jitter=0),
            self.errors.append,
            lambda: self.supported,
        )

    def ask_metadata(self) -> None:
        self.metadata_requests += 1

    def listener(self, kind: str, partitions: frozenset[TopicPartition]) -> Future[None]:
        future: Future[None] = Future()
        self.calls.append((kind, partitions, future))
        return future

    def finish_callbacks(self) -> None:
        for _, _, future in self.calls:
            if not future.done():
                future.set_result(None)

    def tick(self, now: int) -> list[UnsentRequest]:
        """One loop turn in Kafka's order: membership first, then heartbeat."""
        self.membership.poll(now)
        return list(self.heartbeat.poll(now).unsent_requests)

    def send(self, now: int) -> tuple[ConsumerGroupHeartbeatRequest, UnsentRequest]:
        requests = self.tick(now)
        assert len(requests) == 1, requests
        request = requests[0].request
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        return request, requests[0]

    def join(self, assignment: dict[uuid.UUID, tuple[int, ...]] | None, now: int = 0, epoch: int = 1) -> None:
        self.membership.subscribe()
        request, unsent = self.send(now)
        assert request.member_epoch == 0
        unsent.on_response(answer(epoch, assignment, member_id=request.member_id), now)
        self.membership.poll(now)  # starts reconciling: the assign callback is now pending


def answer(
    epoch: int,
    assignment: dict[uuid.UUID, tuple[int, ...]] | None = None,
    *,
    code: int = 0,
    member_id: str | None = None,
    interval: int = 1000,
    message: str | None = None,
) -> ConsumerGroupHeartbeatResponse:
    given = (
        None
        if assignment is None
        else Assignment(
            topic_partitions=tuple(TopicPartitions(topic_id=t, partitions=p) for t, p in assignment.items())
        )
    )
    return ConsumerGroupHeartbeatResponse(
        error_code=code,
        member_id=member_id,
        member_epoch=epoch,
        heartbeat_interval_ms=interval,
        error_message=message,
        assignment=given,
    )


def test_join_sends_every_field_then_reconciles_assigns_and_acknowledges_at_once() -> None:
    h = Harness()
    h.membership.subscribe()
    assert h.membership.state is S.JOINING
    join, unsent = h.send(0)
    assert (join.member_epoch, join.subscribed_topic_names, join.rebalance_timeout_ms) == (0, ("t",), 60_000)
    assert (join.rack_id, join.server_assignor, join.topic_partitions) == ("rack-a", "uniform", ())
    assert len(join.member_id) == 22  # generated by the client (v1), Kafka's url-safe base64 uuid
    unsent.on_response(answer(3, {T_ID: (0, 1)}, member_id=join.member_id), 5)
    assert h.membership.state is S.RECONCILING
    assert h.tick(6) == []  # nothing to send while the assign callback runs
    assert h.applied[-1] == {T0, T1}
    assert [(kind, parts) for kind, parts, _ in h.calls] == [("assigned", {T0, T1})]
    h.finish_callbacks()
    ack, unsent = h.send(7)  # acknowledging goes out without waiting for the interval
    assert h.membership.state is S.STABLE
    assert ack.member_epoch == 3
    assert ack.topic_partitions == (TopicPartitions(topic_id=T_ID, partitions=(0, 1)),)
    assert (ack.subscribed_topic_names, ack.rebalance_timeout_ms, ack.rack_id, ack.server_assignor) == (
        None,
        -1,
        None,
        None,
    )
    assert h.membership.generation().generation_id == 3  # commits carry the member epoch
    unsent.on_response(answer(3), 8)
    assert h.tick(500) == []  # STABLE: the coordinator's interval (1000 ms) applies
    steady, _ = h.send(1008)
    assert steady.topic_partitions is None and steady.subscribed_topic_names is None


def test_a_moved_partition_is_revoked_with_its_callback_before_the_new_ones_are_assigned() -> None:
    h = Harness()
    h.join({T_ID: (0, 1)})
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(1), 2)
    _, unsent = h.send(2000)
    unsent.on_response(answer(2, {T_ID: (1, 2)}), 2001)
    h.tick(2002)
    kind, revoked, future = h.calls[-1]
    assert (kind, revoked) == ("revoked", {T0})
    assert h.membership.owned == {T0, T1}  # still held (positions intact) while the callback may commit
    # Heartbeats during the callback still report the old partitions: the coordinator must not hand T0 out yet.
    during, _ = h.send(3001)
    assert during.topic_partitions is None
    future.set_result(None)
    h.tick(3002)
    assert (h.calls[-1][0], h.calls[-1][1]) == ("assigned", {T2})
    assert h.applied[-1] == {T1, T2}
    h.finish_callbacks()
    h.membership.poll(3003)
    assert h.membership.state is S.ACKNOWLEDGING


def test_a_new_assignment_during_reconciliation_is_reconciled_after_the_acknowledgement() -> None:
    h = Harness()
    h.join({T_ID: (0,)})
    h.tick(1)  # assign callback pending
    # A heartbeat goes out meanwhile (interval) and brings a newer assignment.
    _, unsent = h.send(1001)
    unsent.on_response(answer(2, {T_ID: (0, 1)}), 1002)
    h.finish_callbacks()
    ack, _ = h.send(1003)
    assert ack.topic_partitions == (TopicPartitions(topic_id=T_ID, partitions=(0,)),)
    assert h.membership.state is S.RECONCILING  # the newer target is next
    h.tick(1004)
    assert h.calls[-1][1] == {T1}


def test_unknown_topic_ids_wait_for_metadata_and_the_rest_is_reconciled_meanwhile() -> None:
    h = Harness()
    h.join({T_ID: (0,), U_ID: (0,)})
    h.tick(1)
    assert h.metadata_requests == 1
    assert h.applied[-1] == {T0}
    h.finish_callbacks()
    h.send(2)  # acknowledges what it has
    assert h.membership.state is S.RECONCILING
    h.cluster = cluster(("t", T_ID, 4), ("u", U_ID, 1))
    h.tick(3)
    assert h.applied[-1] == {T0, TopicPartition("u", 0)}


def test_fenced_loses_the_partitions_and_rejoins_with_epoch_zero_and_every_field() -> None:
    h = Harness()
    h.join({T_ID: (0, 1)}, epoch=4)
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(4), 2)
    member_id = h.membership.member_id
    _, unsent = h.send(1002)
    unsent.on_response(answer(-1, code=110), 1003)  # FENCED_MEMBER_EPOCH
    assert h.membership.state is S.FENCED
    assert h.membership.generation() is NO_GENERATION
    assert (h.calls[-1][0], h.calls[-1][1]) == ("lost", {T0, T1})
    assert h.applied[-1] == frozenset()
    assert h.tick(1004) == []  # no heartbeat until the lost callback returned
    h.finish_callbacks()
    rejoin, _ = h.send(1005)
    assert h.membership.state is S.JOINING
    assert (rejoin.member_epoch, rejoin.member_id, rejoin.subscribed_topic_names) == (0, member_id, ("t",))
    assert not [e for e in h.errors]  # fencing is not the caller's error


@pytest.mark.parametrize("code", [15, 16])
def test_coordinator_loss_keeps_the_partitions_and_resends_every_field(code: int) -> None:
    h = Harness()
    h.join({T_ID: (0,)})
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(1), 2)
    _, unsent = h.send(1002)
    unsent.on_response(answer(1, code=code), 1003)
    assert h.coordinator.coordinator is None
    assert h.membership.state is S.STABLE and h.membership.owned == {T0}
    (find,) = h.coordinator.poll(1004).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 1004)
    again, _ = h.send(1200)  # after the backoff
    assert again.member_epoch == 1
    assert again.subscribed_topic_names == ("t",) and again.topic_partitions == (
        TopicPartitions(topic_id=T_ID, partitions=(0,)),
    )


def test_a_lost_connection_backs_off_and_keeps_the_membership() -> None:
    h = Harness()
    h.join({T_ID: (0,)})
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(KafkaConnectionError("gone"), 2)
    assert h.membership.owned == {T0}
    assert h.coordinator.coordinator is None
    assert h.errors == []


def test_load_in_progress_backs_off_without_forgetting_the_coordinator() -> None:
    h = Harness()
    h.membership.subscribe()
    _, unsent = h.send(0)
    unsent.on_response(answer(0, code=14), 1)
    assert h.coordinator.coordinator is not None
    assert h.tick(50) == []  # backing off (100 ms)
    retry, _ = h.send(101)
    assert retry.member_epoch == 0


@pytest.mark.parametrize(
    ("code", "error_type"),
    [(112, UnsupportedAssignorError), (30, GroupAuthorizationFailedError), (42, None), (81, None)],
)
def test_fatal_errors_reach_the_caller_once_and_stop_the_heartbeats(code: int, error_type: type | None) -> None:
    h = Harness()
    h.membership.subscribe()
    _, unsent = h.send(0)
    unsent.on_response(answer(0, code=code, message="detail from the broker"), 1)
    assert h.membership.state is S.FATAL
    assert len(h.errors) == 1
    if error_type is not None:
        assert isinstance(h.errors[0].error, error_type)
    assert "detail from the broker" in str(h.errors[0].error)
    assert h.tick(10_000) == []
    h.membership.subscribe()  # nothing brings a fatal member back
    assert h.tick(20_000) == [] and len(h.errors) == 1


def test_a_broker_without_api_68_fails_subscribe_naming_the_api_and_the_classic_protocol() -> None:
    h = Harness()
    outcome: list[object] = []
    h.membership.subscribe()
    h.heartbeat.check_support(outcome.append, outcome.append)
    h.tick(0)
    assert outcome == []  # no broker connection yet: wait
    h.supported = False
    h.tick(1)
    (error,) = outcome
    assert isinstance(error, UnsupportedVersionError)
    assert "API 68" in str(error) and "group_protocol='classic'" in str(error)
    assert h.membership.state is S.FATAL
    assert h.errors == []  # told through subscribe(), not a second time through poll()


def test_a_heartbeat_the_delegate_could_not_version_is_fatal_with_the_same_advice() -> None:
    h = Harness()
    h.membership.subscribe()
    _, unsent = h.send(0)
    unsent.on_response(UnsupportedVersionError("node 1 does not support CONSUMER_GROUP_HEARTBEAT (API 68)"), 1)
    (event,) = h.errors
    assert "group_protocol='classic'" in str(event.error)


def test_leave_revokes_then_sends_epoch_minus_one_and_a_static_member_minus_two() -> None:
    for instance_id, epoch in ((None, -1), ("i-1", -2)):
        h = Harness(instance_id=instance_id)
        h.join({T_ID: (0,)})
        h.finish_callbacks()
        _, unsent = h.send(1)
        unsent.on_response(answer(1), 2)
        h.membership.leave()
        assert h.membership.state is S.PREPARE_LEAVING
        assert (h.calls[-1][0], h.calls[-1][1]) == ("revoked", {T0})
        assert h.tick(3) == []  # the callback runs first
        h.finish_callbacks()
        leave, unsent = h.send(4)
        assert (leave.member_epoch, leave.instance_id) == (epoch, instance_id)
        assert h.membership.state is S.UNSUBSCRIBED
        unsent.on_response(answer(epoch), 5)
        assert h.tick(10_000) == []


def test_close_sends_the_leave_heartbeat() -> None:
    h = Harness()
    h.join({T_ID: (0,)})
    h.finish_callbacks()
    h.membership.poll_on_close(1)
    (unsent,) = h.heartbeat.poll_on_close(1).unsent_requests
    assert isinstance(unsent.request, ConsumerGroupHeartbeatRequest) and unsent.request.member_epoch == -1


def test_poll_interval_expiry_leaves_goes_stale_and_rejoins_on_the_next_poll() -> None:
    h = Harness(max_poll_interval_ms=10_000)
    h.last_poll = 0
    h.join({T_ID: (0,)})
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(1), 2)
    h.tick(10_001)
    (event,) = h.errors
    assert isinstance(event.error, PollIntervalExceededError)
    assert (h.calls[-1][0], h.calls[-1][1]) == ("lost", {T0})
    leave, unsent = h.send(10_002)
    assert leave.member_epoch == -1
    assert h.membership.state is S.STALE
    unsent.on_response(answer(-1), 10_003)
    assert h.tick(20_000) == []
    h.last_poll = 20_001
    h.membership.caller_polled()
    rejoin, _ = h.send(20_002)
    assert rejoin.member_epoch == 0 and h.membership.state is S.JOINING


def test_a_changed_subscription_goes_out_in_the_next_heartbeat_only() -> None:
    h = Harness()
    h.join({T_ID: (0,)})
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(1), 2)
    h.topics = ["t", "u"]
    h.membership.subscribe()
    changed, unsent = h.send(1002)
    assert changed.subscribed_topic_names == ("t", "u")
    unsent.on_response(answer(1), 1003)
    same, _ = h.send(2003)
    assert same.subscribed_topic_names is None


def test_a_pattern_goes_to_the_coordinator_on_join_and_again_only_when_it_changes() -> None:
    h = Harness()
    h.topics, h.regex = [], "events-.*"
    h.membership.subscribe()
    join, unsent = h.send(0)
    assert (join.subscribed_topic_regex, join.subscribed_topic_names) == ("events-.*", ())
    unsent.on_response(answer(1, member_id=join.member_id), 1)
    steady, unsent = h.send(1001)
    assert steady.subscribed_topic_regex is None  # unchanged: not repeated
    unsent.on_response(answer(1), 1002)
    h.regex = "orders-.*"
    changed, unsent = h.send(2002)
    assert changed.subscribed_topic_regex == "orders-.*"
    unsent.on_response(answer(1), 2003)
    h.regex, h.topics = None, ["t"]
    dropped, _ = h.send(3003)
    assert (dropped.subscribed_topic_regex, dropped.subscribed_topic_names) == ("", ("t",))  # "" removes it


def test_a_refused_pattern_is_a_config_error_naming_it_raised_once() -> None:
    h = Harness()
    h.topics, h.regex = [], "(?P<name>x)"
    h.membership.subscribe()
    _, unsent = h.send(0)
    message = "SubscribedTopicRegex `(?P<name>x)` is not a valid regular expression: invalid named capture group."
    unsent.on_response(answer(0, code=128, message=message), 1)
    assert h.membership.state is S.FATAL
    (event,) = h.errors
    assert isinstance(event.error, InvalidRegularExpressionError) and isinstance(event.error, ConfigError)
    assert event.error.key == "pattern"
    assert str(event.error) == (
        "pattern: [INVALID_REGULAR_EXPRESSION (128)] subscribe(pattern='(?P<name>x)') of group 'g': " + message
    )
    assert h.tick(10_000) == []


def test_an_answer_arriving_after_leave_does_not_reconcile() -> None:
    h = Harness()
    h.membership.subscribe()
    _, unsent = h.send(0)
    h.membership.leave()
    unsent.on_response(answer(1, {T_ID: (0,)}), 1)
    assert h.applied[-1:] != [{T0}]
    assert h.membership.state in (S.LEAVING, S.UNSUBSCRIBED)


def test_a_v0_coordinator_s_member_id_replaces_the_generated_one() -> None:
    h = Harness()
    h.membership.subscribe()
    join, unsent = h.send(0)
    unsent.on_response(answer(1, {T_ID: (0,)}, member_id="coordinator-made"), 1)
    assert h.membership.member_id == "coordinator-made" != join.member_id
    h.membership.poll(2)
    h.finish_callbacks()
    ack, _ = h.send(3)
    assert ack.member_id == "coordinator-made"


def test_a_poll_before_the_poll_timeout_leave_went_out_still_rejoins() -> None:
    """The caller polls between the timeout and the leave heartbeat: the member must not stay STALE for good."""
    h = Harness(max_poll_interval_ms=10_000)
    h.last_poll = 0
    h.join({T_ID: (0,)})
    h.finish_callbacks()
    _, unsent = h.send(1)
    unsent.on_response(answer(1), 2)
    assert h.tick(10_001) == []  # timeout seen; the leave goes on the next turn
    h.last_poll = 10_002
    h.membership.caller_polled()  # the caller's poll arrives first
    leave, unsent = h.send(10_003)
    assert leave.member_epoch == -1
    unsent.on_response(answer(-1), 10_004)
    rejoin, _ = h.send(10_005)
    assert rejoin.member_epoch == 0 and h.membership.state is S.JOINING
