"""An admin client's application events turned into work for its one manager (background thread)."""

from __future__ import annotations

from collections.abc import Callable

from asyncconsumer._background.processor import EventProcessor
from asyncconsumer.errors import KafkaError
from asyncconsumer.events.admin import AdminRequestEvent
from asyncconsumer.events.application import ApplicationEvent, CloseEvent
from asyncconsumer.managers.admin_requests import AdminRequestsManager


class AdminEventProcessor(EventProcessor):
    """A request to send, or the close."""

    def __init__(
        self,
        requests: AdminRequestsManager,
        *,
        on_close: Callable[[CloseEvent], None],
        last_error: Callable[[], KafkaError | None],
        fatal_error: Callable[[], KafkaError | None] = lambda: None,
    ) -> None:
        super().__init__(last_error, fatal_error)
        self._requests = requests
        self._on_close = on_close

    def _dispatch(self, event: ApplicationEvent) -> None:
        match event:
            case AdminRequestEvent():
                self._track(event)  # its deadline fails it, naming what was asked and the last connection error
                self._requests.submit(event)
            case CloseEvent():
                self._on_close(event)
            case _:
                event.fail(TypeError(f"unknown application event {type(event).__name__}"))
