"""Generated from Apache Kafka's CreateTopicsRequest.json/CreateTopicsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

CreateTopics (API key 19) at v2-7 of the v2-7 Kafka defines; flexible from v5.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import ZERO_UUID, Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "CreatableReplicaAssignment",
    "CreatableTopic",
    "CreatableTopicConfig",
    "CreatableTopicConfigs",
    "CreatableTopicResult",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
]

_obo = struct.Struct(">?b?")
_io = struct.Struct(">i?")
_ih = struct.Struct(">ih")


@attrs.define(frozen=True, slots=True)
class CreatableTopicConfigs:
    """Configuration of the topic."""

    name: str = ""
    """The configuration name. (v5+)"""
    value: str | None = ""
    """The configuration value. (v5+)"""
    read_only: bool = False
    """True if the configuration is read-only. (v5+)"""
    config_source: int = -1
    """The configuration source. (v5+)"""
    is_sensitive: bool = False
    """True if this configuration is sensitive. (v5+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.name, True)
        w.nullable_string(self.value, True)
        w.pack(_obo, self.read_only, self.config_source, self.is_sensitive)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name = r.string(True)
        value = r.nullable_string(True)
        read_only, config_source, is_sensitive = r.unpack(_obo)
        r.skip_tags()
        return cls(name, value, read_only, config_source, is_sensitive)


@attrs.define(frozen=True, slots=True)
class CreatableTopicResult:
    """Results for each topic we tried to create."""

    name: str = ""
    """The topic name. (v0+)"""
    topic_id: uuid.UUID = ZERO_UUID
    """The unique topic ID. (v7+)"""
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0+)"""
    error_message: str | None = ""
    """The error message, or null if there was no error. (v1+)"""
    topic_config_error_code: int = 0
    """Optional topic config error returned if configs are not returned in the response. (v5+, tag 0)"""
    num_partitions: int = -1
    """Number of partitions of the topic. (v5+)"""
    replication_factor: int = -1
    """Replication factor of the topic. (v5+)"""
    configs: tuple[CreatableTopicConfigs, ...] | None = None
    """Configuration of the topic. (v5+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.string(self.name, flexible)
        if version >= 7:
            w.uuid(self.topic_id)
        w.int16(self.error_code)
        w.nullable_string(self.error_message, flexible)
        if version >= 5:
            w.pack(_ih, self.num_partitions, self.replication_factor)
            w.structs(self.configs, version, True)
            tags: dict[int, bytes] = {}
            if self.topic_config_error_code:
                t = Writer()
                t.int16(self.topic_config_error_code)
                tags[0] = t.getvalue()
            w.tagged_fields(tags)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        name = r.string(flexible)
        topic_id = r.uuid() if version >= 7 else ZERO_UUID
        error_code = r.int16()
        error_message = r.nullable_string(flexible)
        topic_config_error_code: int = 0
        if version >= 5:
            num_partitions, replication_factor = r.unpack(_ih)
        else:
            num_partitions = -1
            replication_factor = -1
        configs = r.nullable_structs(CreatableTopicConfigs, version, True) if version >= 5 else None
        if version >= 5:
            for _ in range(r.uvarint()):
                tag, end = r.tag()
                if tag == 0:
                    topic_config_error_code = r.int16()
                r.skip_to(end)
        return cls(
            name,
            topic_id,
            error_code,
            error_message,
            topic_config_error_code,
            num_partitions,
            replication_factor,
            configs,
        )


@attrs.define(frozen=True, slots=True)
class CreateTopicsResponse:
    """The CreateTopics response (API key 19), v2-7."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v2+)
    """
    topics: tuple[CreatableTopicResult, ...] = ()
    """Results for each topic we tried to create. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.int32(self.throttle_time_ms)
        w.structs(self.topics, version, flexible)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        throttle_time_ms = r.int32()
        topics = r.structs(CreatableTopicResult, version, flexible)
        if version >= 5:
            r.skip_tags()
        return cls(throttle_time_ms, topics)


@attrs.define(frozen=True, slots=True)
class CreatableReplicaAssignment:
    """The manual partition assignment, or the empty array if we are using automatic assignment."""

    partition_index: int = 0
    """The partition index. (v0+)"""
    broker_ids: tuple[int, ...] = ()
    """The brokers to place the partition on. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.int32(self.partition_index)
        w.int32s(self.broker_ids, flexible)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        partition_index = r.int32()
        broker_ids = r.int32s(flexible)
        if version >= 5:
            r.skip_tags()
        return cls(partition_index, broker_ids)


@attrs.define(frozen=True, slots=True)
class CreatableTopicConfig:
    """The custom topic configurations to set."""

    name: str = ""
    """The configuration name. (v0+)"""
    value: str | None = ""
    """The configuration value. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.string(self.name, flexible)
        w.nullable_string(self.value, flexible)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        name = r.string(flexible)
        value = r.nullable_string(flexible)
        if version >= 5:
            r.skip_tags()
        return cls(name, value)


@attrs.define(frozen=True, slots=True)
class CreatableTopic:
    """The topics to create."""

    name: str = ""
    """The topic name. (v0+)"""
    num_partitions: int = 0
    """The number of partitions to create in the topic, or -1 if we are either specifying a manual partition
    assignment or using the default partitions. (v0+)
    """
    replication_factor: int = 0
    """The number of replicas to create for each partition in the topic, or -1 if we are either specifying a manual
    partition assignment or using the default replication factor. (v0+)
    """
    assignments: tuple[CreatableReplicaAssignment, ...] = ()
    """The manual partition assignment, or the empty array if we are using automatic assignment. (v0+)"""
    configs: tuple[CreatableTopicConfig, ...] = ()
    """The custom topic configurations to set. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.string(self.name, flexible)
        w.pack(_ih, self.num_partitions, self.replication_factor)
        w.structs(self.assignments, version, flexible)
        w.structs(self.configs, version, flexible)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        name = r.string(flexible)
        num_partitions, replication_factor = r.unpack(_ih)
        assignments = r.structs(CreatableReplicaAssignment, version, flexible)
        configs = r.structs(CreatableTopicConfig, version, flexible)
        if version >= 5:
            r.skip_tags()
        return cls(name, num_partitions, replication_factor, assignments, configs)


@attrs.define(frozen=True, slots=True)
class CreateTopicsRequest:
    """The CreateTopics request (API key 19), v2-7."""

    API_KEY: ClassVar[ApiKey] = ApiKey.CREATE_TOPICS
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 7
    FLEXIBLE_FROM: ClassVar[int] = 5
    RESPONSE: ClassVar[type[Response]] = CreateTopicsResponse

    topics: tuple[CreatableTopic, ...] = ()
    """The topics to create. (v0+)"""
    timeout_ms: int = 60000
    """How long to wait in milliseconds before timing out the request. (v0+)"""
    validate_only: bool = False
    """If true, check that the topics can be created as specified, but don't create anything. (v1+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 5
        w.structs(self.topics, version, flexible)
        w.pack(_io, self.timeout_ms, self.validate_only)
        if version >= 5:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 5
        topics = r.structs(CreatableTopic, version, flexible)
        timeout_ms, validate_only = r.unpack(_io)
        if version >= 5:
            r.skip_tags()
        return cls(topics, timeout_ms, validate_only)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
