"""Classic heartbeats with literal times: interval, rebalance and fencing answers, session and poll timeouts."""

from __future__ import annotations

from asyncconsumer.errors import KafkaConnectionError, PollIntervalExceededError
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.heartbeat_classic import ClassicHeartbeatManager, HeartbeatSettings
from asyncconsumer.managers.member_state import MemberState
from asyncconsumer.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from asyncconsumer.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from tests.support.classic_member import Harness


class Beat:
    def __init__(self) -> None:
        self.h = Harness()
        self.h.join_as_leader()
        self.last_poll: int | None = 0
        self.heartbeat = ClassicHeartbeatManager(
            HeartbeatSettings(heartbeat_interval_ms=1_000, session_timeout_ms=10_000, max_poll_interval_ms=30_000),
            self.h.coordinator,
            self.h.manager,
            lambda: self.last_poll,
            self.h.manager._request._backoff,
            self.h.errors.append,
        )

    def sent(self, now: int) -> list[UnsentRequest]:
        return list(self.heartbeat.poll(now).unsent_requests)


def test_heartbeats_every_interval_with_the_generation() -> None:
    b = Beat()
    (first,) = b.sent(0)
    assert isinstance(first.request, HeartbeatRequest)
    assert (first.request.generation_id, first.request.member_id) == (5, "m-1")
    assert b.sent(500) == []  # in flight
    first.on_response(HeartbeatResponse(error_code=0), 10)
    assert b.sent(999) == []
    assert b.heartbeat.poll(999).time_until_next_poll_ms == 1
    assert len(b.sent(1_000)) == 1


def test_no_heartbeat_outside_the_group() -> None:
    b = Beat()
    b.h.manager.fenced(25)
    assert b.sent(0) == []


def test_rebalance_in_progress_makes_the_member_rejoin() -> None:
    b = Beat()
    (beat,) = b.sent(0)
    beat.on_response(HeartbeatResponse(error_code=27), 1)
    assert b.h.manager.state is MemberState.PREPARING
    assert b.h.calls[-1][0] == "revoked"


def test_an_unknown_member_answer_fences_the_member() -> None:
    b = Beat()
    (beat,) = b.sent(0)
    beat.on_response(HeartbeatResponse(error_code=25), 1)
    assert b.h.manager.state is MemberState.UNJOINED
    assert b.h.calls[-1][0] == "lost"


def test_no_answer_within_the_session_timeout_forgets_the_coordinator() -> None:
    b = Beat()
    (beat,) = b.sent(0)
    beat.on_response(KafkaConnectionError("gone"), 100)
    assert b.h.coordinator.coordinator is None
    b2 = Beat()
    (beat2,) = b2.sent(0)
    beat2.on_response(HeartbeatResponse(error_code=0), 0)
    b2.sent(1_000)  # sent, never answered
    assert b2.h.coordinator.coordinator is not None
    b2.last_poll = 10_000
    b2.sent(10_001)
    assert b2.h.coordinator.coordinator is None


def test_a_caller_that_stops_polling_leaves_and_is_told_then_rejoins_on_its_next_poll() -> None:
    b = Beat()
    b.last_poll = 0
    (beat,) = b.sent(0)
    beat.on_response(HeartbeatResponse(error_code=0), 1)
    timed_out = b.heartbeat.poll(30_001)
    assert timed_out.unsent_requests == ()
    # The membership manager was polled before us in this turn: the loop must come round at once to send the leave.
    assert timed_out.time_until_next_poll_ms == 0
    assert b.h.manager.state is MemberState.LEAVING
    assert len(b.h.errors) == 1 and isinstance(b.h.errors[0].error, PollIntervalExceededError)
    (leave,) = b.h.manager.poll(30_002).unsent_requests
    assert isinstance(leave.request, LeaveGroupRequest)
    leave.on_response(LeaveGroupResponse(error_code=0), 30_003)
    assert b.h.manager.poll(30_004).unsent_requests == ()  # stays out until the caller polls
    b.h.manager.caller_polled()
    (join,) = b.h.manager.poll(30_005).unsent_requests
    assert join.request.member_id == ""  # type: ignore[attr-defined]


def test_the_loop_is_woken_for_the_poll_deadline_even_between_heartbeats() -> None:
    b = Beat()
    b.last_poll = 0
    (beat,) = b.sent(29_500)
    beat.on_response(HeartbeatResponse(error_code=0), 29_500)
    assert b.heartbeat.poll(29_800).time_until_next_poll_ms == 201
