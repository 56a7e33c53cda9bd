"""Group membership on the classic protocol: JoinGroup → (leader assigns) → SyncGroup → stable, and LeaveGroup.

Eager rebalancing: before every (re)join the member gives up its partitions (the caller's revoke callback runs
first), and a member fenced by the coordinator reports its partitions lost. Listener callbacks run on the caller's
side; the manager waits for their futures before it moves on, and a rejoin asked for meanwhile waits for them
too. Every state change goes through the transition table in ``member_state.py``; a change made while a callback
is pending (leave, fenced, fatal) abandons what was to follow that callback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import ErrorCode, KafkaError, for_code
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.commit import NO_GENERATION, Generation
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.member_state import MemberState, transition
from asyncconsumer.managers.membership import ListenerCall
from asyncconsumer.managers.pending_callback import PendingCallback
from asyncconsumer.managers.request_state import ExponentialBackoff, RequestState
from asyncconsumer.protocol.base import Request
from asyncconsumer.protocol.consumer_protocol import decode_assignment
from asyncconsumer.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from asyncconsumer.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from asyncconsumer.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse
from asyncconsumer.records import GroupMembershipOperation, TopicPartition

log = get_logger("asyncconsumer.membership")

_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
_RETRY_JOIN = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REBALANCE_IN_PROGRESS,
    }
)
_RESET_MEMBER = frozenset({ErrorCode.UNKNOWN_MEMBER_ID})
_RESET_GENERATION = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID})

LeaderAssign = Callable[[str, Sequence[JoinGroupResponseMember]], dict[str, bytes]]
"""The leader's assignor: (protocol name, members with their subscription bytes) -> member id -> assignment bytes."""


@attrs.define(frozen=True, slots=True)
class GroupSettings:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    request_timeout_ms: int
    group_instance_id: str | None = None


class ClassicMembershipManager:
    """Drives one member through the classic group protocol (a ``membership.MembershipManager``)."""

    def __init__(
        self,
        settings: GroupSettings,
        coordinator: CoordinatorManager,
        protocols: Callable[[], Sequence[JoinGroupRequestProtocol]],
        leader_assign: LeaderAssign,
        apply_assignment: Callable[[frozenset[TopicPartition]], None],
        listener: ListenerCall,
        backoff: ExponentialBackoff,
        emit: Callable[[ErrorEvent], None],
        *,
        cooperative: bool = False,
        stale_assignment: Callable[[], str | None] = lambda: None,
        ready_to_join: Callable[[], bool] = lambda: True,
    ) -> None:
        self.cooperative = cooperative
        self._ready_to_join = ready_to_join
        """Whether the metadata answered for every subscribed topic: a JoinGroup waits for it, so a member elected
        leader assigns what exists rather than nothing and a rebalance later."""
        self._stale_assignment = stale_assignment
        """Asked on every poll while STABLE (Java's ``rejoinNeededOrPending``): why the assignment this member made
        as leader no longer fits the metadata (a topic created, deleted or grown since), or None."""
        """Incremental rebalancing (every configured assignor supports it): keep partitions across rejoins."""
        self._settings = settings
        self._coordinator = coordinator
        self._protocols = protocols
        self._leader_assign = leader_assign
        self._apply_assignment = apply_assignment
        self._listener = listener
        self._emit = emit
        self._request = RequestState(backoff)
        self._close_operation = GroupMembershipOperation.DEFAULT
        """What a close does with the member's place (``closing``); a leave before the close uses the default."""
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.owned: frozenset[TopicPartition] = frozenset()
        self.subscribed = False
        self._pending_assignments: dict[str, bytes] = {}
        self._callback: PendingCallback[MemberState] = PendingCallback()
        self._rejoin_reason: str | None = None
        self.rejoin_on_poll = False
        self.rebalances = 0

    # --- what others ask -------------------------------------------------------------------------------------
    def generation(self) -> Generation:
        if self.state in (MemberState.STABLE, MemberState.ASSIGNING, MemberState.PREPARING) and self.generation_id >= 0:
            return Generation(self.generation_id, self.member_id, self._settings.group_instance_id)
        return NO_GENERATION

    @property
    def in_group(self) -> bool:
        """True while heartbeats are due: we hold a generation the coordinator knows."""
        return self.generation() is not NO_GENERATION

    def subscribe(self) -> None:
        """The subscription changed (or began): (re)join with the new one."""
        self.subscribed = True
        self.request_rejoin("subscription changed")

    def request_rejoin(self, reason: str) -> None:
        if self.state in (MemberState.FATAL, MemberState.LEAVING) or not self.subscribed:
            return
        if self.state in (MemberState.STABLE, MemberState.ASSIGNING):
            if self._callback.pending:
                self._rejoin_reason = reason  # after the pending callback: the rebalance it finishes comes first
                return
            log.info("membership.rejoin", group=self._settings.group_id, reason=reason)
            self._prepare_join()

    def fenced(self, error_code: int) -> None:
        """The coordinator no longer knows our generation (heartbeat or commit said so): partitions are lost."""
        if self.state in (MemberState.UNJOINED, MemberState.FATAL, MemberState.LEAVING):
            return
        log.info("membership.fenced", group=self._settings.group_id, code=error_code)
        self.generation_id = -1
        if error_code in _RESET_MEMBER:
            self.member_id = ""
        lost, self.owned = self.owned, frozenset()
        self._move(MemberState.UNJOINED)
        if lost:  # they leave the assignment once the caller's poll has run their callback; the rejoin waits too
            self._wait(self._listener("lost", lost), MemberState.UNJOINED, lambda: self._apply_assignment(self.owned))
        else:
            self._apply_assignment(frozenset())

    def leave(self, *, notify: bool = True) -> None:
        """Give up the partitions and leave (a static member does not send LeaveGroup).

        ``notify=False`` when the caller's side already ran its revoke callback (``unsubscribe``, ``close``).
        """
        self.subscribed = False
        if self.state in (MemberState.UNJOINED, MemberState.FATAL, MemberState.LEAVING):
            return
        revoked, self.owned = self.owned, frozenset()
        self._apply_assignment(frozenset())
        if revoked and notify:
            self._listener("revoked", revoked)
        self._move(self._after_leaving())

    def _after_leaving(self) -> MemberState:
        """LEAVING sends a LeaveGroup; a member that remains (a static one by default) or was never given an id just
        stops."""
        if self.member_id and sends_leave(self._close_operation, static=self._settings.group_instance_id is not None):
            return MemberState.LEAVING
        return MemberState.UNJOINED

    def closing(self, operation: GroupMembershipOperation) -> None:
        self._close_operation = operation

    def leave_until_next_poll(self) -> None:
        """``max_poll_interval_ms`` passed without a ``poll``: leave now, join again when the caller polls.

        The partitions are lost, as in Java's classic consumer: nothing more of them is handed out, a commit of what
        was handed out fails (the member holds no generation), and they leave the assignment at the next ``poll``.
        """
        self.subscribed = False
        self.rejoin_on_poll = True
        if self.state in (MemberState.UNJOINED, MemberState.FATAL, MemberState.LEAVING):
            return
        lost, self.owned = self.owned, frozenset()
        if lost:
            self._listener("lost", lost)
        self._move(self._after_leaving())

    def caller_polled(self) -> None:
        """The caller's ``poll`` ran; a member that left for a poll timeout lets its lost partitions go (the poll runs
        their callback) and joins again."""
        if self.rejoin_on_poll:
            self.rejoin_on_poll = False
            self.subscribed = True
            self._apply_assignment(self.owned)

    # --- the manager contract --------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        if not self._callback.resume(self.state, self._move):
            return PollResult(MAX_POLL_WAIT_MS)
        if not self._callback.pending and self._rejoin_reason is not None:
            reason, self._rejoin_reason = self._rejoin_reason, None
            self.request_rejoin(reason)
        if self.state is MemberState.STABLE and not self._callback.pending:
            stale = self._stale_assignment()
            if stale is not None:
                self.request_rejoin(stale)
        if self.state is MemberState.UNJOINED and self.subscribed:
            self._prepare_join()
        coordinator = self._coordinator.coordinator
        if coordinator is None or self._request.in_flight:
            return PollResult(MAX_POLL_WAIT_MS)
        if not self._request.can_send_request(now_ms):
            return PollResult(self._request.remaining_backoff_ms(now_ms))
        if self.state is MemberState.JOINING:
            if not self._ready_to_join():
                return PollResult(MAX_POLL_WAIT_MS)  # the metadata answer wakes the loop
            return self._send(now_ms, self._join_request(), coordinator.node_id, self._on_join, join=True)
        if self.state is MemberState.SYNCING:
            return self._send(now_ms, self._sync_request(), coordinator.node_id, self._on_sync, join=True)
        if self.state is MemberState.LEAVING:
            return self._send(now_ms, self._leave_request(), coordinator.node_id, self._on_leave)
        return PollResult(MAX_POLL_WAIT_MS)

    def poll_on_close(self, now_ms: int) -> PollResult:
        in_group = bool(self.member_id) and self.state not in (MemberState.UNJOINED, MemberState.FATAL)
        self.leave(notify=False)
        coordinator = self._coordinator.coordinator
        if self.state is MemberState.LEAVING and coordinator is not None:
            return self._send(now_ms, self._leave_request(), coordinator.node_id, self._on_leave)
        if in_group and self.state is MemberState.UNJOINED:
            log.info("membership.remained", group=self._settings.group_id, member=self.member_id)
        return PollResult()

    # --- requests ----------------------------------------------------------------------------------------------
    def _send(
        self, now_ms: int, request: Request, node_id: int, handler: Callable[[object, int], None], join: bool = False
    ) -> PollResult:
        self._request.on_send_attempt(now_ms)
        timeout = None
        if join:  # a JoinGroup may be held for the whole rebalance
            timeout = max(self._settings.request_timeout_ms, self._settings.rebalance_timeout_ms + 5_000)
        return PollResult(MAX_POLL_WAIT_MS, (UnsentRequest(request, node_id, handler, timeout_ms=timeout),))

    def _join_request(self) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=self._settings.group_id,
            session_timeout_ms=self._settings.session_timeout_ms,
            rebalance_timeout_ms=self._settings.rebalance_timeout_ms,
            member_id=self.member_id,
            protocol_type="consumer",
            protocols=tuple(self._protocols()),
            group_instance_id=self._settings.group_instance_id,
        )

    def _sync_request(self) -> SyncGroupRequest:
        return SyncGroupRequest(
            group_id=self._settings.group_id,
            generation_id=self.generation_id,
            member_id=self.member_id,
            assignments=tuple(
                SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in self._pending_assignments.items()
            ),
            group_instance_id=self._settings.group_instance_id,
            protocol_type="consumer",
            protocol_name=self.protocol_name,
        )

    def _leave_request(self) -> LeaveGroupRequest:
        leaving = MemberIdentity(
            member_id=self.member_id,
            group_instance_id=self._settings.group_instance_id,
            reason="the consumer is leaving",
        )
        return LeaveGroupRequest(group_id=self._settings.group_id, member_id=self.member_id, members=(leaving,))

    # --- answers -----------------------------------------------------------------------------------------------
    def _on_join(self, result: object, now_ms: int) -> None:
        if self.state is not MemberState.JOINING:
            self._request.on_successful_attempt(now_ms)
            return  # left or fenced while the join was in flight
        if isinstance(result, KafkaError):
            self._retry_join(now_ms, result.retriable, str(result), coordinator_moved=result.retriable)
            return
        assert isinstance(result, JoinGroupResponse)
        code = result.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = result.member_id
            self._request.on_successful_attempt(now_ms)  # join again at once, with the id the coordinator gave
            return
        if code:
            if code in _RESET_MEMBER:
                self.member_id = ""
            self._retry_join(
                now_ms,
                code in _RETRY_JOIN | _RESET_MEMBER,
                for_code(code).kafka_name,
                coordinator_moved=code in _COORDINATOR_MOVED,
                code=code,
            )
            return
        self._request.on_successful_attempt(now_ms)
        self.generation_id = result.generation_id
        self.member_id = result.member_id
        self.protocol_name = result.protocol_name
        self.leader_id = result.leader
        self._pending_assignments = {}
        if result.leader == result.member_id and not result.skip_assignment:
            try:
                self._pending_assignments = self._leader_assign(result.protocol_name or "", result.members)
            except KafkaError as exc:
                self._fatal(exc)
                return
        log.info(
            "membership.joined",
            group=self._settings.group_id,
            generation=self.generation_id,
            member=self.member_id,
            leader=self.leader_id == self.member_id,
        )
        self._move(MemberState.SYNCING)

    def _on_sync(self, result: object, now_ms: int) -> None:
        if self.state is not MemberState.SYNCING:
            self._request.on_successful_attempt(now_ms)
            return
        if isinstance(result, KafkaError):
            self._retry_join(now_ms, result.retriable, str(result), coordinator_moved=result.retriable)
            return
        assert isinstance(result, SyncGroupResponse)
        code = result.error_code
        if code:
            if code in _RESET_GENERATION:
                self.generation_id = -1
            if code in _RESET_MEMBER:
                self.member_id = ""
            self._retry_join(
                now_ms,
                code in _RETRY_JOIN | _RESET_GENERATION,
                for_code(code).kafka_name,
                coordinator_moved=code in _COORDINATOR_MOVED,
                code=code,
            )
            return
        self._request.on_successful_attempt(now_ms)
        if self._assignment_ignored(result.assignment):
            return
        try:
            assignment = decode_assignment(result.assignment)
        except KafkaError as exc:
            self._retry_join(now_ms, True, f"undecodable assignment: {exc}")
            return
        assigned = frozenset(TopicPartition(t.topic, p) for t in assignment.assigned_partitions for p in t.partitions)
        self.rebalances += 1
        log.info(
            "membership.assigned",
            group=self._settings.group_id,
            generation=self.generation_id,
            partitions=len(assigned),
        )
        self._move(MemberState.ASSIGNING)
        if not self.cooperative:
            self.owned = assigned
            self._apply_assignment(assigned)
            self._wait(self._listener("assigned", assigned), MemberState.STABLE)
            return
        # Incremental: give up only what moved (callback first, so it can commit), keep the rest, announce the new
        # ones, and rejoin at once when something was revoked so the group can hand it out.
        revoked = self.owned - assigned
        added = assigned - self.owned
        self.owned = assigned

        def finish() -> None:
            self._apply_assignment(assigned)
            rejoin = (lambda: self.request_rejoin("partitions were revoked")) if revoked else None
            self._wait(self._listener("assigned", added), MemberState.STABLE, rejoin)

        if revoked:
            self._wait(self._listener("revoked", revoked), MemberState.ASSIGNING, finish)
        else:
            finish()

    def _on_leave(self, result: object, now_ms: int) -> None:
        self._request.on_successful_attempt(now_ms)
        if self.state is MemberState.LEAVING:
            self.generation_id = -1
            self.member_id = ""
            self._move(MemberState.UNJOINED)
        log.info("membership.left", group=self._settings.group_id)

    # --- helpers -----------------------------------------------------------------------------------------------
    def _assignment_ignored(self, received: bytes) -> bool:
        """The leader got back an assignment other than the one it just sent for itself: the coordinator kept its
        last generation's assignments instead of rebalancing (Tansu 0.6 answers a rejoin whose subscription did
        not change that way, even from the leader, where Kafka always rebalances). Then the member leaves and joins
        again, which makes any coordinator start a new generation, instead of keeping an assignment made for
        metadata that has since changed (a topic created, deleted or grown)."""
        sent = self._pending_assignments.get(self.member_id)
        if sent is None or sent == received or self._settings.group_instance_id is not None:
            return False
        log.warning(
            "membership.assignment_ignored",
            group=self._settings.group_id,
            generation=self.generation_id,
            reason="the coordinator answered with an older assignment than the leader sent: leaving to rejoin",
        )
        self.leave()
        self.subscribed = True  # joins again once the LeaveGroup is answered (LEAVING -> UNJOINED)
        return True

    def _prepare_join(self) -> None:
        if self.cooperative:
            self._move(MemberState.JOINING)  # keep the partitions: the new assignment says which to give up
            return
        revoked, self.owned = self.owned, frozenset()
        if revoked:
            # The partitions stay assigned (positions intact, so the callback may commit) until it returns.
            self._move(MemberState.PREPARING)
            self._wait(
                self._listener("revoked", revoked), MemberState.JOINING, lambda: self._apply_assignment(frozenset())
            )
        else:
            self._move(MemberState.JOINING)

    def _retry_join(
        self, now_ms: int, retriable: bool, reason: str, *, coordinator_moved: bool = False, code: int = 0
    ) -> None:
        if coordinator_moved:
            self._coordinator.mark_unknown(reason)
        if not retriable:
            self._request.on_failed_attempt(now_ms)
            detail = f"group {self._settings.group_id!r}"
            if code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL:
                offered = ", ".join(p.name for p in self._protocols())
                detail += (
                    f": no partition assignment strategy in common with the other members (this one offers {offered})"
                )
            self._fatal(for_code(code, detail) if code else KafkaError(reason))
            return
        self._request.on_failed_attempt(now_ms)
        log.info("membership.join_retry", group=self._settings.group_id, reason=reason)
        self._move(MemberState.JOINING)

    def _fatal(self, error: KafkaError) -> None:
        log.error("membership.fatal", group=self._settings.group_id, error=str(error))
        self._move(MemberState.FATAL)
        self._emit(ErrorEvent(error))

    def _wait(self, future: Future[None], then: MemberState, after: Callable[[], None] | None = None) -> None:
        """Once the caller's callback returned: move to ``then``, then run ``after``."""
        self._callback.wait(future, then, after)

    def _move(self, new: MemberState) -> None:
        """Changes state; a change made while a callback is pending abandons what was to follow it."""
        self.state = transition(self.state, new)
        if self._callback.abandon():
            log.debug("membership.wait_abandoned", group=self._settings.group_id, state=new.name)
            self._rejoin_reason = None


def sends_leave(operation: GroupMembershipOperation, *, static: bool) -> bool:
    """Whether a member leaves its group explicitly (KIP-1092): by default only a dynamic one; ``LEAVE_GROUP`` any;
    ``REMAIN_IN_GROUP`` none (the classic protocol has no "leaving for now" for a static member)."""
    if operation is GroupMembershipOperation.DEFAULT:
        return not static
    return operation is GroupMembershipOperation.LEAVE_GROUP
