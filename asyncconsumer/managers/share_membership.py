"""A share group's membership (KIP-932): ShareGroupHeartbeat requests and the assignment they bring.

Simpler than KIP-848's: members of a share group share partitions, so an assignment takes effect at once, with no
revocation to reconcile and nothing to commit first. The member id is made here (as Kafka's clients do), epoch 0
joins and -1 leaves. Errors, as Kafka's share consumer treats them: a moved coordinator is looked up again, a loading
one retried after a backoff; UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH lose the assignment and join again, and so
does GROUP_ID_NOT_FOUND to a member (the coordinator lost the group: seen after a whole cluster crashed; Java's
share consumer stops there); anything else (no share-group support, authorization, a full group) is fatal and
reaches the caller once.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Callable, Iterable

from asyncconsumer._logs import get_logger
from asyncconsumer._state.cluster import Cluster
from asyncconsumer.errors import ErrorCode, KafkaError, UnsupportedVersionError, for_code
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.request_state import ExponentialBackoff, RequestState
from asyncconsumer.protocol.constants import LEAVE_EPOCH
from asyncconsumer.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from asyncconsumer.records import GroupMembershipOperation, TopicPartition

log = get_logger("asyncconsumer.share")

DEFAULT_INTERVAL_MS = 5_000
"""Kafka's ``group.share.heartbeat.interval.ms`` default, used until the coordinator names its own."""

_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
_FENCED = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})


def _fenced(code: int, epoch: int) -> bool:
    """The coordinator no longer knows this member: join again. A group it no longer knows counts too once the
    member had joined (epoch > 0): a join (epoch 0) creates the group, so the group was lost, not refused."""
    return code in _FENCED or (code == ErrorCode.GROUP_ID_NOT_FOUND and epoch > 0)


class ShareMemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    STABLE = "stable"
    LEAVING = "leaving"
    FATAL = "fatal"


_S = ShareMemberState

TRANSITIONS: dict[ShareMemberState, frozenset[ShareMemberState]] = {
    _S.UNSUBSCRIBED: frozenset({_S.JOINING, _S.LEAVING}),
    _S.JOINING: frozenset({_S.STABLE, _S.JOINING, _S.LEAVING, _S.UNSUBSCRIBED, _S.FATAL}),
    _S.STABLE: frozenset({_S.STABLE, _S.JOINING, _S.LEAVING, _S.UNSUBSCRIBED, _S.FATAL}),
    _S.LEAVING: frozenset({_S.UNSUBSCRIBED, _S.JOINING, _S.FATAL}),
    _S.FATAL: frozenset(),
}
"""Which state may follow which; anything else is a bug (``AssertionError``)."""


def new_member_id() -> str:
    """A member id as Kafka's clients make one: a random UUID in URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ShareMembershipManager:
    """Heartbeats for one share-group member; the assignment is ``assignment`` (partitions by name)."""

    def __init__(
        self,
        group_id: str,
        coordinator: CoordinatorManager,
        backoff: ExponentialBackoff,
        emit: Callable[[ErrorEvent], None],
        *,
        rack_id: str | None = None,
        cluster: Callable[[], Cluster],
        request_metadata: Callable[[], None],
        on_assignment: Callable[[frozenset[TopicPartition]], None] = lambda assigned: None,
    ) -> None:
        self.group_id = group_id
        self.member_id = new_member_id()
        self.member_epoch = 0
        self.state = ShareMemberState.UNSUBSCRIBED
        self.topics: frozenset[str] = frozenset()
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.interval_ms = DEFAULT_INTERVAL_MS
        self.last_heartbeat_ms: int | None = None
        self._coordinator = coordinator
        self._state = RequestState(backoff)
        self._emit = emit
        self._rack_id = rack_id or None
        self._cluster = cluster
        self._request_metadata = request_metadata
        self._on_assignment = on_assignment
        self._next_ms = 0
        self._send_all = True
        """The next heartbeat carries every field (the first one, and after any failure)."""
        self._assigned_ids: dict[uuid.UUID, tuple[int, ...]] = {}
        """The coordinator's last assignment by topic id; resolved to names as metadata learns them."""
        self._leave_sent = False
        self._remain_on_close = False
        """``close(group_membership="remain_in_group")``: no leave heartbeat on close."""
        self._unresolved = False
        """Some assigned topic ids are not in metadata yet: resolved again at each poll."""

    def _to(self, state: ShareMemberState) -> None:
        assert state in TRANSITIONS[self.state], f"{self.state} -> {state}"
        if state is not self.state:
            log.info("share.member_state", group=self.group_id, member=self.member_id, old=self.state.value,
                     new=state.value)  # fmt: skip
        self.state = state

    # --- what the caller asks (through the processor) ----------------------------------------------------------
    def subscribe(self, topics: Iterable[str]) -> None:
        self.topics = frozenset(topics)
        self._send_all = True
        self._next_ms = 0
        if self.state in (_S.UNSUBSCRIBED, _S.LEAVING):
            self._to(_S.JOINING)
            self.member_epoch = 0

    def unsubscribe(self) -> None:
        """Leave the group with the next heartbeat (or at once, if never joined)."""
        if self.state in (_S.JOINING, _S.STABLE):
            if self.member_epoch > 0:
                self._to(_S.LEAVING)
                self._next_ms = 0
                self._leave_sent = False
            else:
                self._to(_S.UNSUBSCRIBED)
        self.topics = frozenset()
        self._set_assignment({})

    @property
    def joined(self) -> bool:
        """The coordinator knows this member (a ShareFetch may name it)."""
        return self.state is _S.STABLE and self.member_epoch > 0

    # --- the manager contract ----------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        if self.state in (_S.UNSUBSCRIBED, _S.FATAL):
            return PollResult()
        if self._unresolved:
            self._resolve()  # metadata may have learned the topic ids since
        coordinator = self._coordinator.coordinator
        if coordinator is None:
            return PollResult()
        if not self._state.can_send_request(now_ms):
            return PollResult(self._state.remaining_backoff_ms(now_ms) or MAX_POLL_WAIT_MS)
        if self.state is _S.LEAVING:
            if self._leave_sent:
                return PollResult()
            self._leave_sent = True
            return self._send(now_ms, coordinator.node_id, self._request(LEAVE_EPOCH))
        if now_ms < self._next_ms:
            return PollResult(self._next_ms - now_ms)
        return self._send(now_ms, coordinator.node_id, self._request(self.member_epoch))

    def closing(self, operation: GroupMembershipOperation) -> None:
        """The consumer is closing with ``operation`` (KIP-1092): share groups have no static members, so only
        ``REMAIN_IN_GROUP`` differs, sending no leave."""
        self._remain_on_close = operation is GroupMembershipOperation.REMAIN_IN_GROUP

    def poll_on_close(self, now_ms: int) -> PollResult:
        coordinator = self._coordinator.coordinator
        if self.member_epoch <= 0 or coordinator is None or self.state is _S.FATAL:
            return PollResult()
        if self._remain_on_close:
            log.info("share.remained", group=self.group_id, member=self.member_id)
            return PollResult()
        if self.state is not _S.LEAVING:
            self._to(_S.LEAVING)
        self.topics = frozenset()  # the consumer is closing: leaving, not rejoining
        self._leave_sent = True
        return self._send(now_ms, coordinator.node_id, self._request(LEAVE_EPOCH))

    def _request(self, epoch: int) -> ShareGroupHeartbeatRequest:
        full = self._send_all or epoch <= 0
        return ShareGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            rack_id=self._rack_id if full else None,
            subscribed_topic_names=tuple(sorted(self.topics)) if full and epoch != LEAVE_EPOCH else None,
        )

    def _send(self, now_ms: int, node_id: int, request: ShareGroupHeartbeatRequest) -> PollResult:
        self._state.on_send_attempt(now_ms)
        self._send_all = False
        epoch = request.member_epoch

        def on_response(result: object, now: int) -> None:
            self._on_response(result, now, epoch)

        return PollResult(self.interval_ms, (UnsentRequest(request, node_id, on_response),))

    # --- answers -------------------------------------------------------------------------------------------------
    def _on_response(self, result: object, now_ms: int, epoch: int) -> None:
        self.last_heartbeat_ms = now_ms
        if isinstance(result, KafkaError):
            self._state.on_failed_attempt(now_ms)
            self._send_all = True
            if isinstance(result, UnsupportedVersionError):
                if self.state is not _S.UNSUBSCRIBED:  # else it answers a join the caller gave up: nothing to tell
                    self._fatal(result)
                return
            self._coordinator.mark_unknown(f"heartbeat failed: {result}")
            log.info("share.heartbeat_failed", group=self.group_id, error=str(result))
            if epoch == LEAVE_EPOCH:
                self._left()
            return
        assert isinstance(result, ShareGroupHeartbeatResponse)
        code = result.error_code
        if epoch == LEAVE_EPOCH:
            self._state.on_successful_attempt(now_ms)
            self._left()
            return
        if code:
            self._state.on_failed_attempt(now_ms)
            self._send_all = True
            error = for_code(code, result.error_message or f"ShareGroupHeartbeat for group {self.group_id!r}")
            if code in _COORDINATOR_MOVED:
                self._coordinator.mark_unknown(str(error))
            elif code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                pass
            elif self.state is _S.UNSUBSCRIBED:
                pass  # the answer to a join the caller gave up (unsubscribed before it was answered)
            elif _fenced(code, epoch) and self.state is _S.LEAVING:
                self._left()  # the coordinator forgot the member already: nothing left to leave
            elif _fenced(code, epoch):
                log.info("share.fenced", group=self.group_id, member=self.member_id, error=str(error))
                self.member_epoch = 0
                self._set_assignment({})
                self._to(_S.JOINING)
                self._state.reset()
                self._next_ms = now_ms
            else:
                self._fatal(error)
            return
        self._state.on_successful_attempt(now_ms)
        if self.state is _S.UNSUBSCRIBED and epoch == 0 and result.member_epoch > 0:
            # a join the caller gave up was answered: the coordinator made a member of it, which leaves at once
            # rather than holding partitions in the assignment until its session times out
            self.member_epoch = result.member_epoch
            self._to(_S.LEAVING)
            self._leave_sent = False
            self._next_ms = 0
            return
        if self.state is not _S.JOINING and self.state is not _S.STABLE:
            return
        self.member_epoch = result.member_epoch
        if result.heartbeat_interval_ms > 0:
            self.interval_ms = result.heartbeat_interval_ms
        self._next_ms = now_ms + self.interval_ms
        if result.assignment is not None:
            self._set_assignment({t.topic_id: tuple(t.partitions) for t in result.assignment.topic_partitions})
        if self.state is _S.JOINING:
            self._to(_S.STABLE)
            log.info("share.joined", group=self.group_id, member=self.member_id, epoch=self.member_epoch)

    def _left(self) -> None:
        self.member_epoch = 0
        self._set_assignment({})
        if self.state is _S.LEAVING:
            if self.topics:
                self._to(_S.JOINING)
            else:
                self._to(_S.UNSUBSCRIBED)
        log.info("share.left", group=self.group_id, member=self.member_id)

    def _fatal(self, error: KafkaError) -> None:
        log.warning("share.heartbeat_fatal", group=self.group_id, error=str(error))
        self._set_assignment({})
        self._to(_S.FATAL)
        self._emit(ErrorEvent(error))

    # --- the assignment ------------------------------------------------------------------------------------------
    def _set_assignment(self, by_id: dict[uuid.UUID, tuple[int, ...]]) -> None:
        self._assigned_ids = by_id
        self._resolve()

    def _resolve(self) -> bool:
        """Names the assignment's topics by id from metadata; asks for metadata while an id is unknown. True when
        the assignment changed."""
        names = {info.topic_id: name for name, info in self._cluster().topics.items() if info.topic_id is not None}
        resolved: set[TopicPartition] = set()
        missing = False
        for topic_id, partitions in self._assigned_ids.items():
            name = names.get(topic_id)
            if name is None:
                missing = True
                continue
            resolved.update(TopicPartition(name, p) for p in partitions)
        self._unresolved = missing
        if missing:
            self._request_metadata()
        new = frozenset(resolved)
        if new == self.assignment:
            return False
        self.assignment = new
        log.info("share.assignment", group=self.group_id, member=self.member_id,
                 partitions=sorted(str(tp) for tp in new))  # fmt: skip
        self._on_assignment(new)
        return True
