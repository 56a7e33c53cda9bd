"""The values users handle: topic-partitions, records, offsets.

``ConsumerRecord`` is a ``NamedTuple`` because one is built per record on the hot path: constructing it costs
about 0.15 µs where a frozen attrs class costs 1.6 µs (measured on this project's machines).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

import attrs


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class TimestampType:
    NO_TIMESTAMP = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ConsumerRecord(NamedTuple):
    """One record as consumed; ``key``/``value`` are deserialized when deserializers are configured.

    ``headers`` is a tuple of (key, value) pairs: a tuple, not aiokafka's per-record list, so a record leaves one
    object for the cyclic GC to track instead of two.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int | None
    serialized_key_size: int
    serialized_value_size: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class ShareRecord(NamedTuple):
    """One record as a share consumer receives it: ``ConsumerRecord``'s fields, and how many times the broker has
    delivered it (1 the first time; a record released, or whose lock expired, comes back with a higher count)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int | None
    serialized_key_size: int
    serialized_value_size: int
    delivery_count: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class AcknowledgeType(enum.IntEnum):
    """How a share consumer acknowledges a record (Kafka's wire values, KIP-932 and KIP-1222)."""

    ACCEPT = 1
    """Processed: never delivered again."""
    RELEASE = 2
    """Not processed: delivered again (to any member), with its delivery count raised."""
    REJECT = 3
    """Unprocessable: never delivered again (archived; a dead-letter topic where the broker has one)."""
    RENEW = 4
    """Still working on it: the acquisition lock is extended (brokers with ShareAcknowledge v2); it must still be
    acknowledged with one of the others."""


class GroupMembershipOperation(enum.Enum):
    """What ``close()`` does with the consumer's place in its group (KIP-1092, Java's
    ``CloseOptions.GroupMembershipOperation``); ``close`` takes one of these or its name, in any case."""

    DEFAULT = "default"
    """A dynamic member leaves; a static one (``group_instance_id``) keeps its place for ``session_timeout_ms``."""
    LEAVE_GROUP = "leave_group"
    """Leave at once, static members too: the group rebalances now, and a static member's place is given up."""
    REMAIN_IN_GROUP = "remain_in_group"
    """Send no leave: the member keeps its partitions until ``session_timeout_ms`` passes without a heartbeat (a
    static member that comes back within it gets them again with no rebalance)."""

    @classmethod
    def parse(cls, value: GroupMembershipOperation | str) -> GroupMembershipOperation:
        """The operation ``value`` names; ``ValueError`` naming ``group_membership`` for anything else."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for member in cls:
                if value.lower() == member.value:
                    return member
        choices = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"group_membership must be a GroupMembershipOperation or one of {choices}, got {value!r}")


@attrs.define(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset: the next offset to consume, with optional metadata and the leader epoch it came from."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


@attrs.define(frozen=True, slots=True)
class GroupMetadata:
    """Who this consumer is in its group right now (generation -1 and an empty member id when not in it)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@attrs.define(frozen=True, slots=True)
class OffsetAndTimestamp:
    """The answer of ``offsets_for_times`` for one partition."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


@attrs.define(frozen=True, slots=True)
class PartitionInfo:
    """What metadata says about one partition."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    in_sync_replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    leader_epoch: int | None = None


R = TypeVar("R", ConsumerRecord, ShareRecord)


class _Records(Mapping[TopicPartition, list[R]], Generic[R]):
    """Records per partition (a mapping) and, iterated with ``records()``, all records in order."""

    __slots__ = ("_by_partition",)

    def __init__(self, by_partition: dict[TopicPartition, list[R]]) -> None:
        self._by_partition: dict[TopicPartition, list[R]] = by_partition

    def __getitem__(self, tp: TopicPartition) -> list[R]:
        return self._by_partition[tp]

    def __len__(self) -> int:
        return len(self._by_partition)

    def partitions(self) -> set[TopicPartition]:
        return set(self._by_partition)

    def records(self) -> Iterator[R]:
        """Every record, partition by partition, each partition in offset order."""
        for records in self._by_partition.values():
            yield from records

    def count(self) -> int:
        return sum(len(r) for r in self._by_partition.values())

    def is_empty(self) -> bool:
        return not self._by_partition

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._by_partition)

    def __bool__(self) -> bool:
        return bool(self._by_partition)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({ {str(tp): len(r) for tp, r in self._by_partition.items()} })"


class ConsumerRecords(_Records[ConsumerRecord]):
    """What one ``poll`` returned: records per partition (a mapping) and, iterated, all records in order."""

    __slots__ = ()


class ShareRecords(_Records[ShareRecord]):
    """What one share consumer's ``poll`` returned: records per partition, each with its delivery count."""

    __slots__ = ()
