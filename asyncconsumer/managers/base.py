"""The request-manager contract: build requests for ``now``, do no I/O, say when to be polled again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs

from asyncconsumer.errors import KafkaError
from asyncconsumer.protocol.base import Request

MAX_POLL_WAIT_MS = 5_000
"""The loop never sleeps longer than this, whatever the managers say."""

ResponseCallback = Callable[[Any, int], None]
"""Called on the background thread with (response or ``KafkaError``, now_ms)."""


@attrs.define(frozen=True, slots=True)
class UnsentRequest:
    """A request a manager wants sent; ``node_id`` None means the least-loaded node."""

    request: Request
    node_id: int | None
    on_response: ResponseCallback = attrs.field(eq=False, repr=False)
    timeout_ms: int | None = None
    """Overrides ``request_timeout_ms`` (e.g. fetches add ``fetch_max_wait_ms``)."""


@attrs.define(frozen=True, slots=True)
class PollResult:
    """What one ``poll`` produced."""

    time_until_next_poll_ms: int = MAX_POLL_WAIT_MS
    unsent_requests: tuple[UnsentRequest, ...] = ()


EMPTY = PollResult()


class RequestManager(Protocol):
    """A sans-I/O manager, polled by the network thread once per loop iteration, in a fixed order.

    The thread promises: ``poll`` is called only from the background thread, with the ``now_ms`` it read once for
    the iteration; every request returned is sent (or failed) and its ``on_response`` is called exactly once, on
    the same thread, with the response or a ``KafkaError``; ``poll_on_close`` replaces ``poll`` once the consumer
    closes. The manager promises: no await, no clock read, no socket, no blocking, no user code; and a poll that
    hands work to a manager polled before it returns ``time_until_next_poll_ms=0``, so the loop does not sleep on
    that work (what a membership hands over through its context's callables, the group's wiring says for it).
    """

    def poll(self, now_ms: int) -> PollResult:
        """The requests to send now, and how long until this manager has something to do again."""
        ...

    def poll_on_close(self, now_ms: int) -> PollResult:
        """The last requests before the consumer stops (a final commit, LeaveGroup); polled until they complete or
        the close deadline passes."""
        ...


def is_error(result: object) -> bool:
    return isinstance(result, KafkaError)
