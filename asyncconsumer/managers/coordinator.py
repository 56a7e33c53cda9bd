"""FindCoordinator: which broker coordinates the consumer's group, found with backoff and forgotten on failure.

The coordinator gets its own connection, under a node id of its own (``coordinator_node_id``), like Kafka's
clients do, so group traffic never queues behind fetches to the same broker. Nothing uses this manager yet: the
group managers that will (membership, heartbeat, commit) are the rest of the consumer-groups work.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import KafkaError, for_code
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.request_state import ExponentialBackoff, RequestState
from asyncconsumer.protocol.layouts import coordinator_for
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

log = get_logger("asyncconsumer.coordinator")

COORDINATOR_NODE_BASE = 2**31 - 1
"""Coordinator connections use ``COORDINATOR_NODE_BASE - broker node id``, apart from the broker's own."""


def coordinator_node_id(broker_node_id: int) -> int:
    return COORDINATOR_NODE_BASE - broker_node_id


@attrs.define(frozen=True, slots=True)
class CoordinatorNode:
    """The group coordinator: the broker's node id and address, and the node id its connection uses."""

    broker_node_id: int
    host: str
    port: int

    @property
    def node_id(self) -> int:
        return coordinator_node_id(self.broker_node_id)


class CoordinatorManager:
    """Finds the group coordinator and keeps it until told it is gone."""

    def __init__(self, group_id: str, backoff: ExponentialBackoff, emit: Callable[[ErrorEvent], None]) -> None:
        self.group_id = group_id
        self.coordinator: CoordinatorNode | None = None
        self.last_error: KafkaError | None = None
        """Why the last FindCoordinator failed (None once one succeeded): what a timed-out group request names."""
        self._state = RequestState(backoff)
        self._emit = emit

    # --- the delegate's node directory, for the coordinator's connection -------------------------------------
    def address(self, node_id: int) -> tuple[str, int] | None:
        coordinator = self.coordinator
        if coordinator is None or coordinator.node_id != node_id:
            return None
        return coordinator.host, coordinator.port

    def mark_unknown(self, reason: str) -> None:
        """Forget the coordinator (disconnect, NOT_COORDINATOR, no heartbeat answer within the session)."""
        if self.coordinator is not None:
            log.info("coordinator.lost", group=self.group_id, node=self.coordinator.broker_node_id, reason=reason)
        self.coordinator = None

    def disconnected(self, node_id: int) -> None:
        """A connection closed: if it was the coordinator's, the coordinator is looked up again."""
        coordinator = self.coordinator
        if coordinator is not None and coordinator.node_id == node_id:
            self.mark_unknown("its connection closed")

    # --- the manager contract --------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        if self.coordinator is not None:
            return PollResult(MAX_POLL_WAIT_MS)
        if not self._state.can_send_request(now_ms):
            wait = self._state.remaining_backoff_ms(now_ms)
            return PollResult(wait if wait > 0 else MAX_POLL_WAIT_MS)
        self._state.on_send_attempt(now_ms)
        request = FindCoordinatorRequest(key=self.group_id)
        return PollResult(MAX_POLL_WAIT_MS, (UnsentRequest(request, None, self._on_response),))

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    def _on_response(self, result: object, now_ms: int) -> None:
        if isinstance(result, KafkaError):
            self._failed(now_ms, result)
            return
        assert isinstance(result, FindCoordinatorResponse)
        found = coordinator_for(result, self.group_id)
        if found.error_code:
            error = for_code(found.error_code, found.error_message or f"FindCoordinator for group {self.group_id!r}")
            if error.retriable:
                self._failed(now_ms, error)
            else:
                self._state.on_failed_attempt(now_ms)
                self._emit(ErrorEvent(error))
            return
        self._state.on_successful_attempt(now_ms)
        self.last_error = None
        self.coordinator = CoordinatorNode(found.node_id, found.host, found.port)
        log.info("coordinator.found", group=self.group_id, node=found.node_id, host=found.host, port=found.port)

    def _failed(self, now_ms: int, error: KafkaError) -> None:
        self.last_error = error
        self._state.on_failed_attempt(now_ms)
        log.info("coordinator.find_failed", group=self.group_id, error=str(error), failures=self._state.failures)
