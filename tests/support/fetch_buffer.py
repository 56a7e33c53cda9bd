"""Filling and squeezing a FetchBuffer by hand, for the fetch buffer, fetch collector and fetch manager unit tests."""

from __future__ import annotations

from asyncconsumer._state.fetch_buffer import CompletedFetch, FetchBuffer
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.protocol.messages.fetch import AbortedTransaction
from asyncconsumer.records import TopicPartition

TP = TopicPartition("t", 0)
"""The partition ``add`` fills."""


def add(
    buffer: FetchBuffer,
    subs: SubscriptionState,
    records: bytes,
    fetch_offset: int,
    aborted: tuple[AbortedTransaction, ...] | None = None,
) -> None:
    from asyncconsumer.protocol.records import complete_prefix

    view = memoryview(records)
    _, next_offset = complete_prefix(view)
    assert next_offset is not None
    epoch = subs.epoch(TP)
    assert epoch is not None
    buffer.add_all([CompletedFetch(TP, epoch, fetch_offset, next_offset, view, 100, aborted)])
    buffer.deliver()


def held_back(buffer: FetchBuffer) -> None:
    """Fills the limit with an in-flight reservation so the background is refused room, then lets it go."""
    buffer.reserve(buffer.limit)
    assert buffer.room(floor=1) == 0
    buffer.unreserve(buffer.limit)
