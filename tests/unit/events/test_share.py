"""A share consumer's application events (``events/share.py``): what each says in the caller's words (every timeout
error quotes it), and a future completed once like every event's."""

from __future__ import annotations

import pytest

from asyncconsumer.errors import KafkaTimeoutError
from asyncconsumer.events.application import ApplicationEvent
from asyncconsumer.events.share import ShareAcknowledgeEvent, ShareSubscribeEvent, ShareUnsubscribeEvent
from asyncconsumer.records import TopicPartition

T0 = TopicPartition("t", 0)


@pytest.mark.parametrize(
    ("event", "text"),
    [
        (ShareSubscribeEvent(topics=frozenset({"b", "a"}), deadline_ms=0), "subscribe(['a', 'b'])"),
        (ShareUnsubscribeEvent(deadline_ms=0), "unsubscribe()"),
        (ShareAcknowledgeEvent(acks={T0: {1: 1}}, commit=False, deadline_ms=0), "acknowledge()"),
        (ShareAcknowledgeEvent(acks={T0: {1: 1}}, commit=True, deadline_ms=0), "the commit of acknowledgements"),
    ],
)
def test_each_event_describes_what_the_caller_asked(event: ApplicationEvent, text: str) -> None:
    assert event.describe() == text


def test_a_share_event_is_an_application_event_completed_once() -> None:
    event = ShareAcknowledgeEvent(acks={}, commit=True, deadline_ms=5)
    event.complete({T0: None})
    event.fail(KafkaTimeoutError(f"{event.describe()} timed out"))
    assert event.future.result(0) == {T0: None}
    assert event.deadline_ms == 5
