"""Classic heartbeats, sent from the background thread so a busy caller is never taken for a dead one.

Also the consumer-side failure detection of the classic design: no heartbeat answer within the session timeout
means the coordinator is gone (look it up again); and ``max_poll_interval_ms`` as Java enforces it: a caller that
stops calling ``poll`` makes the member leave the group, and its next ``poll`` is told so.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ErrorCode, KafkaError, PollIntervalExceededError, for_code
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.membership_classic import ClassicMembershipManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse

log = get_logger("asyncconsumer.heartbeat")

_FENCED = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID})
_COORDINATOR_MOVED = frozenset(
    {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
)


@attrs.define(frozen=True, slots=True)
class HeartbeatSettings:
    heartbeat_interval_ms: int
    session_timeout_ms: int
    max_poll_interval_ms: int


class ClassicHeartbeatManager:
    """Heartbeats while the member holds a generation; watches the session and the caller's poll interval (a
    ``membership.HeartbeatManager``)."""

    def __init__(
        self,
        settings: HeartbeatSettings,
        coordinator: CoordinatorManager,
        membership: ClassicMembershipManager,
        last_poll_ms: Callable[[], int | None],
        backoff: ExponentialBackoff,
        emit: Callable[[ErrorEvent], None],
    ) -> None:
        self._settings = settings
        self._coordinator = coordinator
        self._membership = membership
        self._last_poll_ms = last_poll_ms
        self._backoff = backoff
        self._emit = emit
        self._in_flight = False
        self._next_at = 0
        self._last_answer_ms: int | None = None
        self._failures = 0
        self.last_heartbeat_ms: int | None = None

    def check_support(self, on_ok: Callable[[None], None], on_error: Callable[[KafkaError], None]) -> None:
        """Every broker offers the classic group APIs: a subscription needs nothing checked."""
        on_ok(None)

    def poll(self, now_ms: int) -> PollResult:
        coordinator = self._coordinator.coordinator
        if not self._membership.in_group or coordinator is None:
            self._last_answer_ms = None
            return PollResult(MAX_POLL_WAIT_MS)
        last_poll = self._last_poll_ms()
        if last_poll is not None and now_ms - last_poll > self._settings.max_poll_interval_ms:
            self._poll_timeout(now_ms - last_poll)
            return PollResult(0)  # the membership manager, polled before us, sends the LeaveGroup on the next turn
        if self._last_answer_ms is None:
            self._last_answer_ms = now_ms
        elif now_ms - self._last_answer_ms > self._settings.session_timeout_ms:
            self._coordinator.mark_unknown("no heartbeat answer within the session timeout")
            self._last_answer_ms = None
            return PollResult(MAX_POLL_WAIT_MS)
        poll_deadline = (
            MAX_POLL_WAIT_MS if last_poll is None else last_poll + self._settings.max_poll_interval_ms + 1 - now_ms
        )
        if self._in_flight:
            return PollResult(min(MAX_POLL_WAIT_MS, poll_deadline))
        if now_ms < self._next_at:
            return PollResult(min(self._next_at - now_ms, poll_deadline))
        generation = self._membership.generation()
        request = HeartbeatRequest(
            group_id=self._coordinator.group_id,
            generation_id=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=generation.group_instance_id,
        )
        self._in_flight = True
        self._next_at = now_ms + self._settings.heartbeat_interval_ms
        return PollResult(
            min(self._settings.heartbeat_interval_ms, poll_deadline),
            (UnsentRequest(request, coordinator.node_id, self._on_response),),
        )

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    def _poll_timeout(self, idle_ms: int) -> None:
        log.warning(
            "heartbeat.poll_timeout",
            group=self._coordinator.group_id,
            idle_ms=idle_ms,
            max_poll_interval_ms=self._settings.max_poll_interval_ms,
        )
        self._membership.leave_until_next_poll()
        limit = self._settings.max_poll_interval_ms
        error = PollIntervalExceededError(
            f"poll() was not called for {idle_ms} ms (max_poll_interval_ms={limit}): "
            "the member left the group and rejoins on this poll; its partitions may have moved"
        )
        self._emit(ErrorEvent(error))

    def _on_response(self, result: object, now_ms: int) -> None:
        self._in_flight = False
        if isinstance(result, KafkaError):
            self._failed(now_ms, str(result), coordinator_moved=result.retriable)
            return
        assert isinstance(result, HeartbeatResponse)
        code = result.error_code
        if code == ErrorCode.NONE or code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._last_answer_ms = now_ms
            self.last_heartbeat_ms = now_ms
            self._failures = 0
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                self._membership.request_rejoin("the coordinator started a rebalance")
            return
        if code in _FENCED:
            self._membership.fenced(code)
            return
        if code in _COORDINATOR_MOVED:
            self._failed(
                now_ms, for_code(code).kafka_name, coordinator_moved=code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            )
            return
        self._emit(ErrorEvent(for_code(code, f"heartbeat of group {self._coordinator.group_id!r}")))

    def _failed(self, now_ms: int, reason: str, *, coordinator_moved: bool) -> None:
        self._failures += 1
        self._next_at = now_ms + self._backoff.backoff_ms(self._failures)
        if coordinator_moved:
            self._coordinator.mark_unknown(f"heartbeat failed: {reason}")
        log.info("heartbeat.failed", group=self._coordinator.group_id, reason=reason, failures=self._failures)
