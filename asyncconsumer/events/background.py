"""Background events: what the background thread tells the caller, drained inside every ``poll``."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

import attrs

from asyncconsumer.errors import KafkaError
from asyncconsumer.records import TopicPartition


@attrs.define(frozen=True, slots=True)
class ErrorEvent:
    """An error for the caller; ``poll`` raises the first one it finds."""

    error: KafkaError


@attrs.define(frozen=True, slots=True)
class RebalanceEvent:
    """Run the rebalance listener's ``on_partitions_<kind>``; the group waits for ``done`` before it goes on."""

    kind: str
    partitions: frozenset[TopicPartition]
    done: Future[None] = attrs.field(eq=False, repr=False)


@attrs.define(frozen=True, slots=True)
class CallbackEvent:
    """Run a user callback on the caller's side (e.g. ``commit_async``'s), inside the next ``poll``."""

    call: Callable[[], object] = attrs.field(eq=False)


@attrs.define(frozen=True, slots=True)
class AcknowledgedEvent:
    """A share consumer's acknowledgements of one partition were answered: ``error`` None when all took effect.
    The caller's acknowledgement commit callback runs with it, inside ``poll`` or a commit."""

    tp: TopicPartition
    offsets: frozenset[int]
    error: KafkaError | None


BackgroundEvent = ErrorEvent | RebalanceEvent | CallbackEvent | AcknowledgedEvent
