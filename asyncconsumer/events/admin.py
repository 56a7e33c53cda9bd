"""Application events of an admin client: one request to one node, sent by the background thread.

An admin operation (describe a group, reset its offsets) is a few such requests, composed on the caller's side; the
background only finds where each goes (a group's coordinator, any node, a given node) and sends it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from asyncconsumer.events.application import ApplicationEvent

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Request  # events hold data: the request is built by the caller's side


@attrs.define(frozen=True, slots=True)
class CoordinatorOf:
    """The coordinator of ``key``: a group's (``key_type`` 0, also a share group's) or a transactional id's (1)."""

    key: str
    key_type: int = 0


Target = int | CoordinatorOf | None
"""Where a request goes: a node id, a coordinator, or None for the least-loaded node."""


@attrs.define(frozen=True, slots=True)
class AdminAnswer:
    """What an ``AdminRequestEvent`` completes with: the decoded response and the node that sent it."""

    node_id: int
    response: object


@attrs.define(frozen=True, slots=True, kw_only=True)
class AdminRequestEvent(ApplicationEvent):
    """Send ``request`` to ``target`` no sooner than ``not_before_ms``; completes with an ``AdminAnswer``, or fails
    with the ``KafkaError`` that ended it (connection errors are retried in the background until the deadline).
    ``refresh`` forgets the coordinator known for the target first (the last answer said it moved)."""

    request: Request
    target: Target = None
    not_before_ms: int = 0
    refresh: bool = False

    def describe(self) -> str:
        where = f"the coordinator of {self.target.key!r}" if isinstance(self.target, CoordinatorOf) else "a broker"
        if isinstance(self.target, int):
            where = f"node {self.target}"
        return f"{type(self.request).__name__.removesuffix('Request')} to {where}"
