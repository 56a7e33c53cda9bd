"""Application events: what the caller asks of the background thread.

Each carries a ``concurrent.futures.Future`` that the background completes and an absolute ``deadline_ms`` (on the
consumer's clock) after which it is failed with ``KafkaTimeoutError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

import attrs

from asyncconsumer.records import (
    GroupMembershipOperation,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    TopicPartition,
)


@attrs.define(frozen=True, slots=True, kw_only=True)
class ApplicationEvent:
    """Base: a request from the caller with the future it waits on."""

    deadline_ms: int
    future: Future[Any] = attrs.field(factory=Future, eq=False, repr=False)

    def complete(self, value: Any) -> None:
        if not self.future.done():
            self.future.set_result(value)

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)

    def describe(self) -> str:
        """What the caller asked for, in the caller's words (errors name it; never the class)."""
        return "the request"


@attrs.define(frozen=True, slots=True, kw_only=True)
class AssignEvent(ApplicationEvent):
    """Replace the manual assignment. Completes with ``None``."""

    partitions: frozenset[TopicPartition]

    def describe(self) -> str:
        return f"assign({_partitions(self.partitions)})"


@attrs.define(frozen=True, slots=True, kw_only=True)
class SeekEvent(ApplicationEvent):
    """Set the position of one partition. Completes with ``None``."""

    tp: TopicPartition
    offset: int

    def describe(self) -> str:
        return f"seek({self.tp}, {self.offset})"


@attrs.define(frozen=True, slots=True, kw_only=True)
class ResetPositionsEvent(ApplicationEvent):
    """Seek to the beginning or the end (lazily, like Java). Completes with ``None``."""

    partitions: frozenset[TopicPartition]
    strategy: str

    def describe(self) -> str:
        return f"seek_to_{'beginning' if self.strategy == 'earliest' else 'end'}({_partitions(self.partitions)})"


@attrs.define(frozen=True, slots=True, kw_only=True)
class PauseEvent(ApplicationEvent):
    """Pause (or resume) fetching. Completes with ``None``."""

    partitions: frozenset[TopicPartition]
    paused: bool

    def describe(self) -> str:
        return f"{'pause' if self.paused else 'resume'}({_partitions(self.partitions)})"


@attrs.define(frozen=True, slots=True, kw_only=True)
class UpdatePositionsEvent(ApplicationEvent):
    """Make sure these partitions have positions (resetting them as configured). Completes with ``None``."""

    partitions: frozenset[TopicPartition]

    def describe(self) -> str:
        return f"looking up the position of {_partitions(self.partitions)}"


@attrs.define(frozen=True, slots=True, kw_only=True)
class ListOffsetsEvent(ApplicationEvent):
    """ListOffsets for each partition at a timestamp (-2 earliest, -1 latest).

    Completes with ``dict[TopicPartition, OffsetAndTimestamp | None]``.
    """

    timestamps: dict[TopicPartition, int] = attrs.field(eq=False)

    def complete_offsets(self, result: dict[TopicPartition, OffsetAndTimestamp | None]) -> None:
        self.complete(result)

    def describe(self) -> str:
        return f"looking up offsets of {_partitions(self.timestamps)}"


@attrs.define(frozen=True, slots=True, kw_only=True)
class TopicMetadataEvent(ApplicationEvent):
    """Partitions of one topic, or of every topic when ``topic`` is None.

    Completes with ``dict[str, list[PartitionInfo]]``; an unknown topic is absent from the answer.
    """

    topic: str | None

    def complete_topics(self, result: dict[str, list[PartitionInfo]]) -> None:
        self.complete(result)

    def describe(self) -> str:
        return "listing the cluster's topics" if self.topic is None else f"looking up topic {self.topic!r}"


@attrs.define(frozen=True, slots=True, kw_only=True)
class ClientInstanceIdEvent(ApplicationEvent):
    """The id a broker gave this client for its telemetry (KIP-714); completes with a ``uuid.UUID``."""

    def describe(self) -> str:
        return "client_instance_id()"


@attrs.define(frozen=True, slots=True, kw_only=True)
class CloseEvent(ApplicationEvent):
    """Stop the background thread after the managers' close work, by ``deadline_ms`` at the latest."""

    group_membership: GroupMembershipOperation = GroupMembershipOperation.DEFAULT
    """What the group's close work does with the member's place (KIP-1092): the processor tells the membership."""

    def describe(self) -> str:
        return "close()"


@attrs.define(frozen=True, slots=True, kw_only=True)
class SubscribeEvent(ApplicationEvent):
    """Subscribe through the group to topics, or to every topic matching ``pattern``. Completes with ``None``."""

    topics: frozenset[str]
    pattern: re.Pattern[str] | None = None
    has_listener: bool = False
    """A rebalance listener came with the subscription: rebalances wait for its callbacks."""

    def describe(self) -> str:
        what = repr(self.pattern.pattern) if self.pattern is not None else sorted(self.topics)
        return f"subscribe({what})"


@attrs.define(frozen=True, slots=True, kw_only=True)
class UnsubscribeEvent(ApplicationEvent):
    """Leave the group and drop the assignment. Completes with ``None``."""

    def describe(self) -> str:
        return "unsubscribe()"


@attrs.define(frozen=True, slots=True, kw_only=True)
class CommitEvent(ApplicationEvent):
    """Commit offsets (``None``: the current positions). Completes with ``None`` when the coordinator accepted."""

    offsets: dict[TopicPartition, OffsetAndMetadata] | None = attrs.field(eq=False)

    def describe(self) -> str:
        return "commit()" if self.offsets is None else f"commit of {_partitions(self.offsets)}"


@attrs.define(frozen=True, slots=True, kw_only=True)
class CommittedEvent(ApplicationEvent):
    """Look committed offsets up. Completes with ``dict[TopicPartition, OffsetAndMetadata | None]``."""

    partitions: frozenset[TopicPartition]

    def describe(self) -> str:
        return f"looking up the committed offsets of {_partitions(self.partitions)}"


@attrs.define(frozen=True, slots=True, kw_only=True)
class PolledEvent(ApplicationEvent):
    """The caller polled: a member that left for a poll timeout joins again. Completes with ``None``."""

    def describe(self) -> str:
        return "poll()"


@attrs.define(frozen=True, slots=True, kw_only=True)
class EnforceRebalanceEvent(ApplicationEvent):
    """Rejoin the group now (classic protocol; Java's ``enforceRebalance``). Completes with ``None`` at once."""

    reason: str

    def describe(self) -> str:
        return "enforce_rebalance()"


@attrs.define(frozen=True, slots=True, kw_only=True)
class SetAutoCommitEvent(ApplicationEvent):
    """Turn auto-commit of the positions on or off while the consumer runs, whatever ``enable_auto_commit`` said:
    the interval's commits, the commit before a revocation and the one on close. Completes with ``None`` once the
    change holds and, when switched off, once no auto-commit is in flight (none can land after the future)."""

    enabled: bool

    def describe(self) -> str:
        return f"turning auto-commit {'on' if self.enabled else 'off'}"


@attrs.define(frozen=True, slots=True, kw_only=True)
class SetRebalanceHookEvent(ApplicationEvent):
    """The caller's side has (or no longer has) a rebalance hook: send every assignment and revocation to the caller,
    with or without a listener. Completes with ``None``; every rebalance callback asked for after that goes to the
    caller."""

    installed: bool

    def describe(self) -> str:
        return f"{'installing' if self.installed else 'removing'} the rebalance hook"


def _partitions(partitions: Iterable[TopicPartition]) -> str:
    """A few partitions by name, then how many more: errors stay one readable line."""
    names = sorted(str(tp) for tp in partitions)
    shown = ", ".join(names[:4])
    return f"{shown} and {len(names) - 4} more" if len(names) > 4 else shown or "no partitions"
