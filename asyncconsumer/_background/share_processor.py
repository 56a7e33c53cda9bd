"""A share consumer's application events turned into work for its managers (background thread)."""

from __future__ import annotations

from collections.abc import Callable

from asyncconsumer._background.processor import EventProcessor
from asyncconsumer.errors import ClientClosedError, KafkaError
from asyncconsumer.events.application import ApplicationEvent, CloseEvent
from asyncconsumer.events.share import ShareAcknowledgeEvent, ShareSubscribeEvent, ShareUnsubscribeEvent
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.share_consume import ShareConsumeManager
from asyncconsumer.managers.share_membership import ShareMembershipManager
from asyncconsumer.managers.telemetry import TelemetryManager


class ShareEventProcessor(EventProcessor):
    """Subscribe, unsubscribe, acknowledge, close."""

    def __init__(
        self,
        metadata: MetadataManager,
        membership: ShareMembershipManager,
        consume: ShareConsumeManager,
        *,
        on_close: Callable[[CloseEvent], None],
        last_error: Callable[[], KafkaError | None],
        fatal_error: Callable[[], KafkaError | None] = lambda: None,
        telemetry: TelemetryManager | None = None,
    ) -> None:
        super().__init__(last_error, fatal_error, telemetry)
        self._metadata = metadata
        self._membership = membership
        self._consume = consume
        self._on_close = on_close

    def _dispatch(self, event: ApplicationEvent) -> None:
        match event:
            case ShareSubscribeEvent(topics=topics):
                self._metadata.set_topics(topics)
                self._membership.subscribe(topics)
                event.complete(None)
            case ShareUnsubscribeEvent():
                self._membership.unsubscribe()
                self._metadata.set_topics(())
                event.complete(None)
            case ShareAcknowledgeEvent(acks=acks, commit=False, poll=poll):
                self._consume.acknowledge(acks, poll=poll)
                event.complete(None)
            case ShareAcknowledgeEvent(acks=acks, commit=True):
                self._track(event)
                self._consume.acknowledge(acks, event.complete)
            case CloseEvent(group_membership=membership):
                self._membership.closing(membership)  # before the loop's close work polls it
                self._on_close(event)
            case _:
                event.fail(TypeError(f"unknown application event {type(event).__name__}"))

    def fail_all(self, error: KafkaError | None = None) -> None:
        """The loop stopped: events and acknowledgements still waiting are answered with ``error``."""
        super().fail_all(error)
        self._consume.fail_all(error or ClientClosedError("the share consumer is closed"))
