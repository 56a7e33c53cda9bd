"""Generated from Apache Kafka's CreatePartitionsRequest.json/CreatePartitionsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

CreatePartitions (API key 37) at v0-3 of the v0-3 Kafka defines; flexible from v2.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "CreatePartitionsAssignment",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreatePartitionsTopic",
    "CreatePartitionsTopicResult",
]

_io = struct.Struct(">i?")


@attrs.define(frozen=True, slots=True)
class CreatePartitionsTopicResult:
    """The partition creation results for each topic."""

    name: str = ""
    """The topic name. (v0+)"""
    error_code: int = 0
    """The result error, or zero if there was no error. (v0+)"""
    error_message: str | None = None
    """The result message, or null if there was no error. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.string(self.name, flexible)
        w.int16(self.error_code)
        w.nullable_string(self.error_message, flexible)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        name = r.string(flexible)
        error_code = r.int16()
        error_message = r.nullable_string(flexible)
        if version >= 2:
            r.skip_tags()
        return cls(name, error_code, error_message)


@attrs.define(frozen=True, slots=True)
class CreatePartitionsResponse:
    """The CreatePartitions response (API key 37), v0-3."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    results: tuple[CreatePartitionsTopicResult, ...] = ()
    """The partition creation results for each topic. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.int32(self.throttle_time_ms)
        w.structs(self.results, version, flexible)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        throttle_time_ms = r.int32()
        results = r.structs(CreatePartitionsTopicResult, version, flexible)
        if version >= 2:
            r.skip_tags()
        return cls(throttle_time_ms, results)


@attrs.define(frozen=True, slots=True)
class CreatePartitionsAssignment:
    """The new partition assignments."""

    broker_ids: tuple[int, ...] = ()
    """The assigned broker IDs. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.int32s(self.broker_ids, flexible)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        broker_ids = r.int32s(flexible)
        if version >= 2:
            r.skip_tags()
        return cls(broker_ids)


@attrs.define(frozen=True, slots=True)
class CreatePartitionsTopic:
    """Each topic that we want to create new partitions inside."""

    name: str = ""
    """The topic name. (v0+)"""
    count: int = 0
    """The new partition count. (v0+)"""
    assignments: tuple[CreatePartitionsAssignment, ...] | None = None
    """The new partition assignments. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.string(self.name, flexible)
        w.int32(self.count)
        w.structs(self.assignments, version, flexible)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        name = r.string(flexible)
        count = r.int32()
        assignments = r.nullable_structs(CreatePartitionsAssignment, version, flexible)
        if version >= 2:
            r.skip_tags()
        return cls(name, count, assignments)


@attrs.define(frozen=True, slots=True)
class CreatePartitionsRequest:
    """The CreatePartitions request (API key 37), v0-3."""

    API_KEY: ClassVar[ApiKey] = ApiKey.CREATE_PARTITIONS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 3
    FLEXIBLE_FROM: ClassVar[int] = 2
    RESPONSE: ClassVar[type[Response]] = CreatePartitionsResponse

    topics: tuple[CreatePartitionsTopic, ...] = ()
    """Each topic that we want to create new partitions inside. (v0+)"""
    timeout_ms: int = 0
    """The time in ms to wait for the partitions to be created. (v0+)"""
    validate_only: bool = False
    """If true, then validate the request, but don't actually increase the number of partitions. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 2
        w.structs(self.topics, version, flexible)
        w.pack(_io, self.timeout_ms, self.validate_only)
        if version >= 2:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 2
        topics = r.structs(CreatePartitionsTopic, version, flexible)
        timeout_ms, validate_only = r.unpack(_io)
        if version >= 2:
            r.skip_tags()
        return cls(topics, timeout_ms, validate_only)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
