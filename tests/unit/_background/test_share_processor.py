"""A share consumer's application events turned into work (``_background/share_processor.py``), with no thread:
subscribing and unsubscribing the membership and the metadata's topics, acknowledgements queued or committed, a
commit failed at its deadline naming what the caller asked, close handed over, and ``fail_all`` answering both the
events and the acknowledgements still waiting."""

from __future__ import annotations

from typing import Any

import pytest

from asyncconsumer._background.builder import build_share
from asyncconsumer._background.share_processor import ShareEventProcessor
from asyncconsumer._clock import ManualClock
from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.errors import ClientClosedError, KafkaConnectionError, KafkaError, KafkaTimeoutError
from asyncconsumer.events.application import CloseEvent, SeekEvent
from asyncconsumer.events.background import AcknowledgedEvent
from asyncconsumer.events.share import ShareAcknowledgeEvent, ShareSubscribeEvent, ShareUnsubscribeEvent
from asyncconsumer.managers.share_membership import ShareMemberState
from asyncconsumer.records import GroupMembershipOperation, TopicPartition

T0 = TopicPartition("t", 0)


class Parts:
    """A processor over one share consumer's real managers (built, never run)."""

    def __init__(self) -> None:
        config = ShareConsumerConfig.from_settings("h:1", group_id="g")
        self.built = build_share(config, ManualClock())
        owned = self.built.owned
        self.metadata, self.membership, self.consume = owned.metadata, owned.membership, owned.consume
        self.closed: list[CloseEvent] = []
        self.last_error: KafkaError | None = None
        self.processor = ShareEventProcessor(
            self.metadata,
            self.membership,
            self.consume,
            on_close=self.closed.append,
            last_error=lambda: self.last_error,
        )

    def process(self, event: Any) -> Any:
        self.processor.process(event)
        return event

    def asked_topics(self) -> tuple[str, ...] | None:
        (request,) = self.metadata.poll(0).unsent_requests
        topics = request.request.topics  # type: ignore[attr-defined]
        return None if topics is None else tuple(t.name for t in topics)

    def acknowledged(self) -> list[AcknowledgedEvent]:
        queue = self.built.background_events
        queue.deliver()
        return [e for e in queue.drain() if isinstance(e, AcknowledgedEvent)]


def test_subscribe_joins_the_group_and_asks_for_the_topics() -> None:
    p = Parts()
    event = p.process(ShareSubscribeEvent(topics=frozenset({"t", "u"}), deadline_ms=10))
    assert event.future.result(0) is None
    assert p.membership.state is ShareMemberState.JOINING and p.membership.topics == {"t", "u"}
    assert p.asked_topics() == ("t", "u")


def test_unsubscribe_leaves_and_forgets_the_topics() -> None:
    p = Parts()
    p.process(ShareSubscribeEvent(topics=frozenset({"t"}), deadline_ms=10))
    p.metadata.poll(0)
    event = p.process(ShareUnsubscribeEvent(deadline_ms=10))
    assert event.future.result(0) is None
    assert p.membership.state is ShareMemberState.UNSUBSCRIBED and p.membership.topics == frozenset()


def test_acknowledgements_without_a_commit_complete_at_once_and_wait_for_a_fetch() -> None:
    p = Parts()
    queued = p.process(ShareAcknowledgeEvent(acks={T0: {1: 1}}, commit=False, deadline_ms=10))
    assert queued.future.result(0) is None
    commit = p.process(ShareAcknowledgeEvent(acks={}, commit=True, deadline_ms=50))
    assert not commit.future.done()  # it took the queued acknowledgements along: it waits for their answer
    assert p.processor.next_deadline_ms() == 50
    p.last_error = KafkaConnectionError("node 1 refused")
    p.processor.reap(50)
    error = commit.future.exception(0)
    assert isinstance(error, KafkaTimeoutError)
    assert "the commit of acknowledgements timed out" in str(error) and "node 1 refused" in str(error)


def test_a_commit_with_nothing_to_send_completes_with_no_results() -> None:
    p = Parts()
    commit = p.process(ShareAcknowledgeEvent(acks={}, commit=True, deadline_ms=50))
    assert commit.future.result(0) == {}


def test_close_is_handed_over_and_an_unknown_event_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    p = Parts()
    told: list[GroupMembershipOperation] = []
    monkeypatch.setattr(p.membership, "closing", told.append)
    close = p.process(CloseEvent(deadline_ms=10, group_membership=GroupMembershipOperation.REMAIN_IN_GROUP))
    assert p.closed == [close] and not close.future.done()
    assert told == [GroupMembershipOperation.REMAIN_IN_GROUP]  # before the thread's close work polls it
    seek = p.process(SeekEvent(tp=T0, offset=1, deadline_ms=10))
    assert isinstance(seek.future.exception(0), TypeError)


def test_fail_all_fails_the_waiting_commits_and_answers_every_acknowledgement() -> None:
    p = Parts()
    p.process(ShareAcknowledgeEvent(acks={T0: {1: 1}}, commit=False, deadline_ms=10))
    commit = p.process(ShareAcknowledgeEvent(acks={T0: {2: 3}}, commit=True, deadline_ms=50))
    p.processor.fail_all()
    assert isinstance(commit.future.exception(0), ClientClosedError)
    (event,) = p.acknowledged()
    assert event.tp == T0 and event.offsets == {1, 2} and isinstance(event.error, ClientClosedError)
    assert p.processor.next_deadline_ms() is None
