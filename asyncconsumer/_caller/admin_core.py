"""What the async and the blocking admin client share: the lifecycle, and one event per request.

An admin operation is composed of requests on the caller's side (``admin_methods.py``); each goes to the background
as an ``AdminRequestEvent`` whose future the background completes with the decoded response.
"""

from __future__ import annotations

from concurrent.futures import Future

from asyncconsumer._background.builder import AdminComponents, build_admin
from asyncconsumer._caller.lifecycle import ClientCore
from asyncconsumer._clock import Clock, SystemClock
from asyncconsumer._logs import get_logger
from asyncconsumer.config import AdminConfig
from asyncconsumer.events.admin import AdminRequestEvent, Target
from asyncconsumer.protocol.base import Request

log = get_logger("asyncconsumer.admin")


class AdminCore(ClientCore[AdminComponents]):
    """One admin client's parts and the calls both faces share."""

    NAME = "admin client"

    def __init__(self, config: AdminConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.settings = config.client
        self.clock: Clock = clock or SystemClock()
        self.parts = build_admin(config, self.clock)
        self._init_lifecycle()

    def _log_started(self) -> None:
        log.info("admin.started", client_id=self.settings.client_id, bootstrap=list(self.settings.bootstrap_servers))

    def _log_closed(self, timed_out: float | None) -> None:
        if timed_out is not None:
            log.warning("admin.close_timeout", timeout_s=timed_out)
        log.info("admin.closed", client_id=self.settings.client_id)

    def send(
        self, request: Request, target: Target, deadline_ms: int, *, delay_ms: int = 0, refresh: bool = False
    ) -> Future[object]:
        """``request`` to ``target`` (after ``delay_ms``), answered by ``deadline_ms``: the decoded response."""
        self._check_open()
        event = AdminRequestEvent(
            request=request,
            target=target,
            not_before_ms=self.clock.now_ms() + delay_ms,
            refresh=refresh,
            deadline_ms=deadline_ms,
        )
        return self.submit(event)
