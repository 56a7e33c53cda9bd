"""ConsumerGroupHeartbeat requests (KIP-848), sent from the background thread, and what their answers mean.

The first heartbeat of a membership carries every field; later ones only what changed (subscription, owned
partitions), and after any failure everything again, since the coordinator may have missed the last one. Errors, as
Kafka's consumer treats them: a moved or unavailable coordinator is looked up again and the member keeps its
partitions; a loading one is retried after a backoff; FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID lose the partitions
and join again, as GROUP_ID_NOT_FOUND does once the member had joined; anything else is fatal and reaches the caller
once. ``max_poll_interval_ms`` is enforced here too: a caller that stops polling makes the member leave, and its
next ``poll`` is told so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import (
    ErrorCode,
    InvalidRegularExpressionError,
    KafkaError,
    PollIntervalExceededError,
    UnsupportedVersionError,
    for_code,
)
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.member_state_consumer import ConsumerMemberState as S
from asyncconsumer.managers.membership_consumer import ConsumerMembershipManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

log = get_logger("asyncconsumer.heartbeat")

_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
_FENCED = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})

DEFAULT_INTERVAL_MS = 5_000
"""Kafka's ``group.consumer.heartbeat.interval.ms`` default, used until the coordinator names its own."""


@attrs.define(frozen=True, slots=True)
class ConsumerHeartbeatSettings:
    group_id: str
    rebalance_timeout_ms: int
    """Sent as RebalanceTimeoutMs: ``max_poll_interval_ms``, as Kafka's consumer does."""
    max_poll_interval_ms: int
    group_instance_id: str | None = None
    rack_id: str | None = None
    server_assignor: str | None = None


@attrs.define(frozen=True, slots=True)
class _Sent:
    """The fields the coordinator has from us; a heartbeat repeats none of them unless they changed."""

    topic_names: tuple[str, ...]
    owned: tuple[TopicPartitions, ...]
    regex: str | None = None


class ConsumerHeartbeatManager:
    """Heartbeats at the coordinator's interval (at once when joining, acknowledging or leaving)."""

    def __init__(
        self,
        settings: ConsumerHeartbeatSettings,
        coordinator: CoordinatorManager,
        membership: ConsumerMembershipManager,
        subscribed_topics: Callable[[], Sequence[str]],
        subscribed_regex: Callable[[], str | None],
        last_poll_ms: Callable[[], int | None],
        backoff: ExponentialBackoff,
        emit: Callable[[ErrorEvent], None],
        api_supported: Callable[[], bool | None] = lambda: None,
    ) -> None:
        self._settings = settings
        self._api_supported = api_supported
        self._support_waiters: list[tuple[Callable[[None], None], Callable[[KafkaError], None]]] = []
        self._coordinator = coordinator
        self._membership = membership
        self._subscribed_topics = subscribed_topics
        self._subscribed_regex = subscribed_regex
        """The regular expression the coordinator matches topics with (``subscribe(pattern=...)``), or None."""
        self._last_poll_ms = last_poll_ms
        self._backoff = backoff
        self._emit = emit
        self.interval_ms = DEFAULT_INTERVAL_MS
        self._in_flight = False
        self._next_at = 0
        self._failures = 0
        self._sent: _Sent | None = None
        self.last_heartbeat_ms: int | None = None

    def check_support(self, on_ok: Callable[[None], None], on_error: Callable[[KafkaError], None]) -> None:
        """Calls ``on_ok`` once a connected broker is seen to offer API 68, ``on_error`` if it does not."""
        self._support_waiters.append((on_ok, on_error))

    def _check_support(self) -> None:
        supported = self._api_supported()
        if supported is None:
            return
        waiters, self._support_waiters = self._support_waiters, []
        if supported:
            for on_ok, _ in waiters:
                on_ok(None)
            return
        error = self._unsupported("its brokers' ApiVersions")
        self._membership.fatal(error, report=False)  # the caller hears it from subscribe(), once
        for _, on_error in waiters:
            on_error(error)

    def _unsupported(self, evidence: str) -> UnsupportedVersionError:
        return UnsupportedVersionError(
            f"the cluster of group {self._settings.group_id!r} does not support ConsumerGroupHeartbeat (API 68), "
            "which group_protocol='consumer' needs (KIP-848: Apache Kafka 4.0+ with the consumer group protocol "
            f"enabled); use group_protocol='classic' (seen in {evidence})"
        )

    # --- the manager contract --------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        if self._support_waiters:
            self._check_support()
        membership = self._membership
        coordinator = self._coordinator.coordinator
        if not membership.should_heartbeat() or coordinator is None:
            return PollResult(MAX_POLL_WAIT_MS)
        last_poll = self._last_poll_ms()
        if (
            membership.state is not S.LEAVING
            and last_poll is not None
            and now_ms - last_poll > self._settings.max_poll_interval_ms
        ):
            self._poll_timeout(now_ms - last_poll)
            return PollResult(0)  # the leave heartbeat goes on the next turn
        if self._in_flight:
            return PollResult(MAX_POLL_WAIT_MS)
        if now_ms < self._next_at and not (membership.heartbeat_now() and self._failures == 0):
            return PollResult(self._next_at - now_ms)
        request = self._request()
        leaving = membership.state is S.LEAVING
        self._in_flight = True
        self._next_at = now_ms + self.interval_ms
        membership.on_heartbeat_sent()
        return PollResult(
            self.interval_ms,
            (UnsentRequest(request, coordinator.node_id, self._callback(request, leaving)),),
        )

    def poll_on_close(self, now_ms: int) -> PollResult:
        """The leave heartbeat, when the membership manager (polled just before) prepared one."""
        coordinator = self._coordinator.coordinator
        if self._membership.state is not S.LEAVING or coordinator is None:
            return PollResult()
        request = self._request()
        self._membership.on_heartbeat_sent()
        return PollResult(0, (UnsentRequest(request, coordinator.node_id, self._callback(request, True)),))

    # --- requests ----------------------------------------------------------------------------------------------
    def _request(self) -> ConsumerGroupHeartbeatRequest:
        membership = self._membership
        settings = self._settings
        if membership.state is S.LEAVING:
            self._sent = None
            epoch = membership.leave_epoch()
            assert epoch is not None  # a member that remains never reaches LEAVING on close
            return ConsumerGroupHeartbeatRequest(
                group_id=settings.group_id,
                member_id=membership.member_id,
                member_epoch=epoch,
                instance_id=settings.group_instance_id,
            )
        names = tuple(sorted(self._subscribed_topics()))
        regex = self._subscribed_regex()
        owned_map = membership.owned_by_topic_id() or {}
        owned = tuple(TopicPartitions(topic_id=t, partitions=p) for t, p in sorted(owned_map.items()))
        full = self._sent is None or membership.member_epoch == 0
        sent = self._sent
        self._sent = _Sent(names, owned, regex)
        # As Java's consumer: the regex on every full heartbeat, then only when it changed ("" drops it).
        send_regex = regex if full and regex is not None else None
        if not full and sent is not None and sent.regex != regex:
            send_regex = regex if regex is not None else ""
        return ConsumerGroupHeartbeatRequest(
            group_id=settings.group_id,
            member_id=membership.member_id,
            member_epoch=membership.member_epoch,
            instance_id=settings.group_instance_id,
            rack_id=settings.rack_id if full else None,
            rebalance_timeout_ms=settings.rebalance_timeout_ms if full else -1,
            subscribed_topic_names=names if full or sent is None or sent.topic_names != names else None,
            subscribed_topic_regex=send_regex,
            server_assignor=settings.server_assignor if full else None,
            topic_partitions=owned if full or sent is None or sent.owned != owned else None,
        )

    # --- answers -----------------------------------------------------------------------------------------------
    def _callback(self, request: ConsumerGroupHeartbeatRequest, leaving: bool) -> Callable[[object, int], None]:
        def on_response(result: object, now_ms: int) -> None:
            self._in_flight = False
            if leaving:
                log.info("heartbeat.left", group=self._settings.group_id, result=_describe(result))
                return  # the member moved on when the leave went out
            if isinstance(result, UnsupportedVersionError):
                self._membership.fatal(self._unsupported(str(result)))
                return
            if isinstance(result, KafkaError):
                self._failed(now_ms, str(result), coordinator_moved=result.retriable)
                return
            assert isinstance(result, ConsumerGroupHeartbeatResponse)
            self._on_answer(request, result, now_ms)

        return on_response

    def _on_answer(
        self, request: ConsumerGroupHeartbeatRequest, response: ConsumerGroupHeartbeatResponse, now_ms: int
    ) -> None:
        code = response.error_code
        if code == ErrorCode.NONE:
            self._failures = 0
            self.last_heartbeat_ms = now_ms
            if response.heartbeat_interval_ms > 0:
                self.interval_ms = response.heartbeat_interval_ms
                self._next_at = min(self._next_at, now_ms + self.interval_ms)
            assignment = None
            if response.assignment is not None:
                assignment = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions}
            self._membership.on_heartbeat_answer(response.member_id, response.member_epoch, assignment)
            return
        detail = f"heartbeat of group {self._settings.group_id!r}"
        if response.error_message:
            detail += f": {response.error_message}"
        if code in _COORDINATOR_MOVED:
            self._failed(now_ms, for_code(code).kafka_name, coordinator_moved=True)
        elif code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self._failed(now_ms, for_code(code).kafka_name, coordinator_moved=False)
        elif code in _FENCED or (code == ErrorCode.GROUP_ID_NOT_FOUND and request.member_epoch > 0):
            # a group the coordinator lost (seen after a whole cluster crashed) is rejoined too; Java stops there
            self._sent = None
            self._next_at = now_ms  # rejoin at once
            self._membership.fenced(code)
        elif code == ErrorCode.INVALID_REGULAR_EXPRESSION:
            refused = f"subscribe(pattern={request.subscribed_topic_regex or self._subscribed_regex()!r}) of group"
            why = response.error_message or "not a valid RE2/J regular expression"
            self._membership.fatal(InvalidRegularExpressionError(f"{refused} {self._settings.group_id!r}: {why}"))
        else:
            self._membership.fatal(for_code(code, detail))

    def _poll_timeout(self, idle_ms: int) -> None:
        limit = self._settings.max_poll_interval_ms
        log.warning(
            "heartbeat.poll_timeout", group=self._settings.group_id, idle_ms=idle_ms, max_poll_interval_ms=limit
        )
        self._membership.leave_until_next_poll()
        self._emit(
            ErrorEvent(
                PollIntervalExceededError(
                    f"poll() was not called for {idle_ms} ms (max_poll_interval_ms={limit}): "
                    "the member left the group and rejoins on this poll; its partitions may have moved"
                )
            )
        )

    def _failed(self, now_ms: int, reason: str, *, coordinator_moved: bool) -> None:
        self._failures += 1
        self._sent = None  # the coordinator may not have seen the last one: send everything again
        self._next_at = now_ms + self._backoff.backoff_ms(self._failures)
        if coordinator_moved:
            self._coordinator.mark_unknown(f"heartbeat failed: {reason}")
        log.info("heartbeat.failed", group=self._settings.group_id, reason=reason, failures=self._failures)


def _describe(result: object) -> str:
    if isinstance(result, ConsumerGroupHeartbeatResponse):
        return "ok" if result.error_code == ErrorCode.NONE else for_code(result.error_code).kafka_name
    return str(result)
