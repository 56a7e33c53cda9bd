"""The admin client's one manager: sends each admin request where it goes and hands back the response.

A request goes to a node, to the least-loaded one, or to a coordinator, which this manager finds (FindCoordinator)
and remembers until a connection to it closes or the caller's ``refresh`` says an answer named it wrong. A
connection error is retried with backoff until the event's deadline (the processor fails it then, naming what was
asked); what a response's error codes mean is the caller's to read, since each API nests them its own way.
"""

from __future__ import annotations

import functools

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.errors import KafkaError, for_code
from asyncconsumer.events.admin import AdminAnswer, AdminRequestEvent, CoordinatorOf
from asyncconsumer.managers.base import MAX_POLL_WAIT_MS, PollResult, UnsentRequest
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.layouts import coordinator_for
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

log = get_logger("asyncconsumer.admin")


@attrs.define(slots=True)
class _Pending:
    event: AdminRequestEvent
    not_before_ms: int
    failures: int = 0


@attrs.define(slots=True)
class _Lookup:
    """One coordinator's lookup: in flight, or waiting out its backoff."""

    in_flight: bool = False
    not_before_ms: int = 0
    failures: int = 0


@attrs.define(frozen=True, slots=True)
class _Found:
    node_id: int
    host: str
    port: int


class AdminRequestsManager:
    """Admin requests waiting to be sent (or sent again), and the coordinators found for them."""

    def __init__(self, retry: ExponentialBackoff) -> None:
        self._retry = retry
        self._waiting: list[_Pending] = []
        self._found: dict[CoordinatorOf, _Found] = {}
        self._lookups: dict[CoordinatorOf, _Lookup] = {}

    # --- from the processor and the delegate -------------------------------------------------------------------
    def submit(self, event: AdminRequestEvent) -> None:
        if event.refresh and isinstance(event.target, CoordinatorOf):
            self._found.pop(event.target, None)
        self._waiting.append(_Pending(event, event.not_before_ms))

    def address(self, node_id: int) -> tuple[str, int] | None:
        """A coordinator's address, for the node directory (a coordinator may be a node metadata has not named)."""
        for found in self._found.values():
            if found.node_id == node_id:
                return found.host, found.port
        return None

    def disconnected(self, node_id: int) -> None:
        """A connection closed: the coordinators on that node are looked up again."""
        for key in [key for key, found in self._found.items() if found.node_id == node_id]:
            del self._found[key]

    # --- the manager contract ----------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> PollResult:
        unsent: list[UnsentRequest] = []
        wait = MAX_POLL_WAIT_MS
        still: list[_Pending] = []
        for pending in self._waiting:
            event = pending.event
            if event.future.done():  # past its deadline: the processor failed it
                continue
            if pending.not_before_ms > now_ms:
                wait = min(wait, pending.not_before_ms - now_ms)
                still.append(pending)
                continue
            target = event.target
            node: int | None
            if isinstance(target, CoordinatorOf):
                found = self._found.get(target)
                if found is None:
                    wait = min(wait, self._look_up(target, now_ms, unsent))
                    still.append(pending)
                    continue
                node = found.node_id
            else:
                node = target
            unsent.append(UnsentRequest(event.request, node, functools.partial(self._answered, pending, node)))
        self._waiting = still
        return PollResult(wait, tuple(unsent))

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()

    # --- helpers -------------------------------------------------------------------------------------------------
    def _look_up(self, key: CoordinatorOf, now_ms: int, unsent: list[UnsentRequest]) -> int:
        """Starts ``key``'s lookup unless one is under way or backing off; how long until it is worth polling."""
        lookup = self._lookups.setdefault(key, _Lookup())
        if lookup.in_flight:
            return MAX_POLL_WAIT_MS
        if lookup.not_before_ms > now_ms:
            return lookup.not_before_ms - now_ms
        lookup.in_flight = True
        request = FindCoordinatorRequest(key=key.key, key_type=key.key_type)
        unsent.append(UnsentRequest(request, None, functools.partial(self._coordinator_answered, key)))
        return MAX_POLL_WAIT_MS

    def _coordinator_answered(self, key: CoordinatorOf, result: object, now_ms: int) -> None:
        lookup = self._lookups.setdefault(key, _Lookup())
        lookup.in_flight = False
        error: KafkaError | None = result if isinstance(result, KafkaError) else None
        if error is None:
            assert isinstance(result, FindCoordinatorResponse)
            answer = coordinator_for(result, key.key)
            if not answer.error_code:
                del self._lookups[key]
                self._found[key] = _Found(answer.node_id, answer.host, answer.port)
                log.debug("admin.coordinator", key=key.key, node=answer.node_id, host=answer.host, port=answer.port)
                return
            error = for_code(answer.error_code, answer.error_message or f"finding the coordinator of {key.key!r}")
        if error.retriable:
            lookup.failures += 1
            lookup.not_before_ms = now_ms + self._retry.backoff_ms(lookup.failures)
            log.debug("admin.coordinator_retry", key=key.key, error=str(error), failures=lookup.failures)
            return
        del self._lookups[key]  # an error no retry fixes (not authorized): every request waiting on it fails
        for pending in [p for p in self._waiting if p.event.target == key]:
            pending.event.fail(error)
        self._waiting = [p for p in self._waiting if p.event.target != key]

    def _answered(self, pending: _Pending, node: int | None, result: object, now_ms: int) -> None:
        event = pending.event
        if not isinstance(result, KafkaError):
            event.complete(AdminAnswer(-1 if node is None else node, result))
            return
        if not result.retriable or event.future.done():
            event.fail(result)
            return
        if isinstance(event.target, CoordinatorOf):
            self._found.pop(event.target, None)
        pending.failures += 1
        pending.not_before_ms = now_ms + self._retry.backoff_ms(pending.failures)
        log.debug("admin.retry", what=event.describe(), error=str(result), failures=pending.failures)
        self._waiting.append(pending)
