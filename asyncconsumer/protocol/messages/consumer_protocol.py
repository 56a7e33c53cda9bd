"""Generated from Apache Kafka's ConsumerProtocolSubscription.json/ConsumerProtocolAssignment.json (kafka-clients
4.4.0) by scripts/gen_protocol.py; do not edit.

ConsumerProtocolSubscription and ConsumerProtocolAssignment at v0-3 of the v0-3 Kafka defines; never flexible.
"""

from __future__ import annotations

from typing import Self

import attrs

from asyncconsumer.protocol.wire import Reader, Writer, blob_repr

__all__ = [
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "TopicPartition",
]


@attrs.define(frozen=True, slots=True)
class TopicPartition:
    """The partitions that the member owns."""

    topic: str = ""
    """The topic name. (v1+)"""
    partitions: tuple[int, ...] = ()
    """The partition ids. (v1+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.topic, False)
        w.int32s(self.partitions, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic = r.string(False)
        partitions = r.int32s(False)
        return cls(topic, partitions)


@attrs.define(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    """Kafka's ConsumerProtocolSubscription, v0-3; its bytes carry no version (the consumer protocol prefixes one)."""

    topics: tuple[str, ...] = ()
    """The topics that the member wants to consume. (v0+)"""
    user_data: bytes | None = attrs.field(default=None, repr=blob_repr)
    """User data that will be passed back to the consumer. (v0+)"""
    owned_partitions: tuple[TopicPartition, ...] = ()
    """The partitions that the member owns. (v1+)"""
    generation_id: int = -1
    """The generation id of the member. (v2+)"""
    rack_id: str | None = None
    """The rack id of the member. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.strings(self.topics, False)
        w.nullable_bytes(self.user_data, False)
        if version >= 1:
            w.structs(self.owned_partitions, version, False)
        if version >= 2:
            w.int32(self.generation_id)
        if version >= 3:
            w.nullable_string(self.rack_id, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topics = r.strings(False)
        user_data = r.nullable_bytes(False)
        owned_partitions = r.structs(TopicPartition, version, False) if version >= 1 else ()
        generation_id = r.int32() if version >= 2 else -1
        rack_id = r.nullable_string(False) if version >= 3 else None
        return cls(topics, user_data, owned_partitions, generation_id, rack_id)


@attrs.define(frozen=True, slots=True)
class ConsumerProtocolAssignment:
    """Kafka's ConsumerProtocolAssignment, v0-3; its bytes carry no version (the consumer protocol prefixes one)."""

    assigned_partitions: tuple[TopicPartition, ...] = ()
    """The list of topics and partitions assigned to this consumer. (v0+)"""
    user_data: bytes | None = attrs.field(default=None, repr=blob_repr)
    """User data. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.structs(self.assigned_partitions, version, False)
        w.nullable_bytes(self.user_data, False)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        assigned_partitions = r.structs(TopicPartition, version, False)
        user_data = r.nullable_bytes(False)
        return cls(assigned_partitions, user_data)
