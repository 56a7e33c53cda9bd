"""Application events (``events/application.py``): a future completed or failed once, an absolute deadline, and a
description in the caller's words that every timeout error quotes."""

from __future__ import annotations

import re

import pytest

from asyncconsumer.errors import KafkaTimeoutError
from asyncconsumer.events import application
from asyncconsumer.events.application import (
    ApplicationEvent,
    AssignEvent,
    ClientInstanceIdEvent,
    CloseEvent,
    CommitEvent,
    CommittedEvent,
    EnforceRebalanceEvent,
    ListOffsetsEvent,
    PauseEvent,
    PolledEvent,
    ResetPositionsEvent,
    SeekEvent,
    SetAutoCommitEvent,
    SetRebalanceHookEvent,
    SubscribeEvent,
    TopicMetadataEvent,
    UnsubscribeEvent,
    UpdatePositionsEvent,
)
from asyncconsumer.records import OffsetAndMetadata, TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


CASES: list[tuple[ApplicationEvent, str]] = [
    (AssignEvent(partitions=frozenset([T1, T0]), deadline_ms=0), "assign(t-0, t-1)"),
    (AssignEvent(partitions=frozenset(), deadline_ms=0), "assign(no partitions)"),
    (SeekEvent(tp=T0, offset=42, deadline_ms=0), "seek(t-0, 42)"),
    (ResetPositionsEvent(partitions=frozenset([T0]), strategy="earliest", deadline_ms=0), "seek_to_beginning(t-0)"),
    (ResetPositionsEvent(partitions=frozenset([T0]), strategy="latest", deadline_ms=0), "seek_to_end(t-0)"),
    (PauseEvent(partitions=frozenset([T0]), paused=True, deadline_ms=0), "pause(t-0)"),
    (PauseEvent(partitions=frozenset([T0]), paused=False, deadline_ms=0), "resume(t-0)"),
    (UpdatePositionsEvent(partitions=frozenset([T0]), deadline_ms=0), "looking up the position of t-0"),
    (ListOffsetsEvent(timestamps={T0: -1}, deadline_ms=0), "looking up offsets of t-0"),
    (TopicMetadataEvent(topic=None, deadline_ms=0), "listing the cluster's topics"),
    (TopicMetadataEvent(topic="t", deadline_ms=0), "looking up topic 't'"),
    (CloseEvent(deadline_ms=0), "close()"),
    (ClientInstanceIdEvent(deadline_ms=0), "client_instance_id()"),
    (SubscribeEvent(topics=frozenset({"b", "a"}), deadline_ms=0), "subscribe(['a', 'b'])"),
    (SubscribeEvent(topics=frozenset(), pattern=re.compile("e.*"), deadline_ms=0), "subscribe('e.*')"),
    (UnsubscribeEvent(deadline_ms=0), "unsubscribe()"),
    (CommitEvent(offsets=None, deadline_ms=0), "commit()"),
    (CommitEvent(offsets={T1: OffsetAndMetadata(3)}, deadline_ms=0), "commit of t-1"),
    (CommittedEvent(partitions=frozenset([T0]), deadline_ms=0), "looking up the committed offsets of t-0"),
    (PolledEvent(deadline_ms=0), "poll()"),
    (EnforceRebalanceEvent(reason="why", deadline_ms=0), "enforce_rebalance()"),
    (SetAutoCommitEvent(enabled=False, deadline_ms=0), "turning auto-commit off"),
    (SetAutoCommitEvent(enabled=True, deadline_ms=0), "turning auto-commit on"),
    (SetRebalanceHookEvent(installed=True, deadline_ms=0), "installing the rebalance hook"),
    (SetRebalanceHookEvent(installed=False, deadline_ms=0), "removing the rebalance hook"),
]
"""One of each kind of event, with what it says."""


def test_the_first_outcome_wins_and_later_ones_are_ignored() -> None:
    done = SeekEvent(tp=T0, offset=1, deadline_ms=10)
    done.complete("first")
    done.complete("second")
    done.fail(KafkaTimeoutError("late"))
    assert done.future.result(0) == "first"
    failed = TopicMetadataEvent(topic=None, deadline_ms=10)
    error = KafkaTimeoutError("x")
    failed.fail(error)
    failed.complete({})
    assert failed.future.exception(0) is error


def test_an_event_needs_its_deadline_by_keyword_and_its_future_is_not_part_of_its_value() -> None:
    with pytest.raises(TypeError):
        CloseEvent()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        CloseEvent(5)  # type: ignore[misc]
    first, second = CloseEvent(deadline_ms=5), CloseEvent(deadline_ms=5)
    assert first == second and first.future is not second.future


@pytest.mark.parametrize(
    ("event", "words"),
    CASES,
    ids=lambda value: type(value).__name__ if isinstance(value, ApplicationEvent) else "",
)
def test_each_event_describes_what_the_caller_asked_in_the_callers_words(event: ApplicationEvent, words: str) -> None:
    assert event.describe() == words


def test_every_kind_of_event_has_its_own_description() -> None:
    kinds = [
        value
        for value in vars(application).values()
        if isinstance(value, type) and issubclass(value, ApplicationEvent) and value is not ApplicationEvent
    ]
    assert set(kinds) == {type(event) for event, _ in CASES}  # each kind's words are pinned above
    assert all(kind.describe is not ApplicationEvent.describe for kind in kinds)


def test_many_partitions_are_named_four_then_counted() -> None:
    many = frozenset(TopicPartition("t", p) for p in range(7))
    assert AssignEvent(partitions=many, deadline_ms=0).describe() == "assign(t-0, t-1, t-2, t-3 and 3 more)"
