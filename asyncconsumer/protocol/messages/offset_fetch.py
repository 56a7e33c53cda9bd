"""Generated from Apache Kafka's OffsetFetchRequest.json/OffsetFetchResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

OffsetFetch (API key 9) at v1-9 of the v1-10 Kafka defines; flexible from v6.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer, not_null

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "OffsetFetchRequest",
    "OffsetFetchRequestGroup",
    "OffsetFetchRequestTopic",
    "OffsetFetchRequestTopics",
    "OffsetFetchResponse",
    "OffsetFetchResponseGroup",
    "OffsetFetchResponsePartition",
    "OffsetFetchResponsePartitions",
    "OffsetFetchResponseTopic",
    "OffsetFetchResponseTopics",
]

_iq = struct.Struct(">iq")
_iqi = struct.Struct(">iqi")


@attrs.define(frozen=True, slots=True)
class OffsetFetchResponsePartition:
    """The responses per partition."""

    partition_index: int = 0
    """The partition index. (v0-7)"""
    committed_offset: int = 0
    """The committed message offset. (v0-7)"""
    committed_leader_epoch: int = -1
    """The leader epoch. (v5-7)"""
    metadata: str | None = ""
    """The partition metadata. (v0-7)"""
    error_code: int = 0
    """The error code, or 0 if there was no error. (v0-7)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        if version >= 5:
            w.pack(_iqi, self.partition_index, self.committed_offset, self.committed_leader_epoch)
        else:
            w.pack(_iq, self.partition_index, self.committed_offset)
        w.nullable_string(self.metadata, flexible)
        w.int16(self.error_code)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        if version >= 5:
            partition_index, committed_offset, committed_leader_epoch = r.unpack(_iqi)
        else:
            partition_index, committed_offset = r.unpack(_iq)
            committed_leader_epoch = -1
        metadata = r.nullable_string(flexible)
        error_code = r.int16()
        if version >= 6:
            r.skip_tags()
        return cls(partition_index, committed_offset, committed_leader_epoch, metadata, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetFetchResponseTopic:
    """The responses per topic."""

    name: str = ""
    """The topic name. (v0-7)"""
    partitions: tuple[OffsetFetchResponsePartition, ...] = ()
    """The responses per partition. (v0-7)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.string(self.name, flexible)
        w.structs(self.partitions, version, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        name = r.string(flexible)
        partitions = r.structs(OffsetFetchResponsePartition, version, flexible)
        if version >= 6:
            r.skip_tags()
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetFetchResponsePartitions:
    """The responses per partition."""

    partition_index: int = 0
    """The partition index. (v8+)"""
    committed_offset: int = 0
    """The committed message offset. (v8+)"""
    committed_leader_epoch: int = -1
    """The leader epoch. (v8+)"""
    metadata: str | None = ""
    """The partition metadata. (v8+)"""
    error_code: int = 0
    """The partition-level error code, or 0 if there was no error. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_iqi, self.partition_index, self.committed_offset, self.committed_leader_epoch)
        w.nullable_string(self.metadata, True)
        w.int16(self.error_code)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        partition_index, committed_offset, committed_leader_epoch = r.unpack(_iqi)
        metadata = r.nullable_string(True)
        error_code = r.int16()
        r.skip_tags()
        return cls(partition_index, committed_offset, committed_leader_epoch, metadata, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetFetchResponseTopics:
    """The responses per topic."""

    name: str = ""
    """The topic name. (v8-9)"""
    partitions: tuple[OffsetFetchResponsePartitions, ...] = ()
    """The responses per partition. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.name, True)
        w.structs(self.partitions, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name = r.string(True)
        partitions = r.structs(OffsetFetchResponsePartitions, version, True)
        r.skip_tags()
        return cls(name, partitions)


@attrs.define(frozen=True, slots=True)
class OffsetFetchResponseGroup:
    """The responses per group id."""

    group_id: str = ""
    """The group ID. (v8+)"""
    topics: tuple[OffsetFetchResponseTopics, ...] = ()
    """The responses per topic. (v8+)"""
    error_code: int = 0
    """The group-level error code, or 0 if there was no error. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.group_id, True)
        w.structs(self.topics, version, True)
        w.int16(self.error_code)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_id = r.string(True)
        topics = r.structs(OffsetFetchResponseTopics, version, True)
        error_code = r.int16()
        r.skip_tags()
        return cls(group_id, topics, error_code)


@attrs.define(frozen=True, slots=True)
class OffsetFetchResponse:
    """The OffsetFetch response (API key 9), v1-9."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v3+)
    """
    topics: tuple[OffsetFetchResponseTopic, ...] = ()
    """The responses per topic. (v0-7)"""
    error_code: int = 0
    """The top-level error code, or 0 if there was no error. (v2-7)"""
    groups: tuple[OffsetFetchResponseGroup, ...] = ()
    """The responses per group id. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        if version >= 3:
            w.int32(self.throttle_time_ms)
        if version <= 7:
            w.structs(self.topics, version, flexible)
        if 2 <= version <= 7:
            w.int16(self.error_code)
        if version >= 8:
            w.structs(self.groups, version, True)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        throttle_time_ms = r.int32() if version >= 3 else 0
        topics = () if version >= 8 else r.structs(OffsetFetchResponseTopic, version, flexible)
        error_code = 0 if version <= 1 or version >= 8 else r.int16()
        groups = r.structs(OffsetFetchResponseGroup, version, True) if version >= 8 else ()
        if version >= 6:
            r.skip_tags()
        return cls(throttle_time_ms, topics, error_code, groups)


@attrs.define(frozen=True, slots=True)
class OffsetFetchRequestTopic:
    """Each topic we would like to fetch offsets for, or null to fetch offsets for all topics."""

    name: str = ""
    """The topic name. (v0-7)"""
    partition_indexes: tuple[int, ...] = ()
    """The partition indexes we would like to fetch offsets for. (v0-7)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        w.string(self.name, flexible)
        w.int32s(self.partition_indexes, flexible)
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        name = r.string(flexible)
        partition_indexes = r.int32s(flexible)
        if version >= 6:
            r.skip_tags()
        return cls(name, partition_indexes)


@attrs.define(frozen=True, slots=True)
class OffsetFetchRequestTopics:
    """Each topic we would like to fetch offsets for, or null to fetch offsets for all topics."""

    name: str = ""
    """The topic name. (v8-9)"""
    partition_indexes: tuple[int, ...] = ()
    """The partition indexes we would like to fetch offsets for. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.name, True)
        w.int32s(self.partition_indexes, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name = r.string(True)
        partition_indexes = r.int32s(True)
        r.skip_tags()
        return cls(name, partition_indexes)


@attrs.define(frozen=True, slots=True)
class OffsetFetchRequestGroup:
    """Each group we would like to fetch offsets for."""

    group_id: str = ""
    """The group ID. (v8+)"""
    member_id: str | None = None
    """The member id. (v9+)"""
    member_epoch: int = -1
    """The member epoch if using the new consumer protocol (KIP-848). (v9+)"""
    topics: tuple[OffsetFetchRequestTopics, ...] | None = None
    """Each topic we would like to fetch offsets for, or null to fetch offsets for all topics. (v8+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.group_id, True)
        if version >= 9:
            w.nullable_string(self.member_id, True)
            w.int32(self.member_epoch)
        w.structs(self.topics, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_id = r.string(True)
        member_id = r.nullable_string(True) if version >= 9 else None
        member_epoch = r.int32() if version >= 9 else -1
        topics = r.nullable_structs(OffsetFetchRequestTopics, version, True)
        r.skip_tags()
        return cls(group_id, member_id, member_epoch, topics)


@attrs.define(frozen=True, slots=True)
class OffsetFetchRequest:
    """The OffsetFetch request (API key 9), v1-9."""

    API_KEY: ClassVar[ApiKey] = ApiKey.OFFSET_FETCH
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = 6
    RESPONSE: ClassVar[type[Response]] = OffsetFetchResponse

    group_id: str = ""
    """The group to fetch offsets for. (v0-7)"""
    topics: tuple[OffsetFetchRequestTopic, ...] | None = None
    """Each topic we would like to fetch offsets for, or null to fetch offsets for all topics. (v0-7)"""
    groups: tuple[OffsetFetchRequestGroup, ...] = ()
    """Each group we would like to fetch offsets for. (v8+)"""
    require_stable: bool = False
    """Whether broker should hold on returning unstable offsets but set a retriable error code for the partitions.
    (v7+)
    """

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 6
        if version >= 8:
            if self.group_id:
                raise ValueError(f"OffsetFetchRequest.group_id needs v0-7, not v{version}")
        else:
            w.string(self.group_id, flexible)
        if version >= 8:
            if self.topics is not None:
                raise ValueError(f"OffsetFetchRequest.topics needs v0-7, not v{version}")
        elif 2 <= version <= 7:
            w.structs(self.topics, version, flexible)
        else:
            w.structs(not_null(self.topics, "OffsetFetchRequest.topics", version, "2-7"), version, False)
        if version >= 8:
            w.structs(self.groups, version, True)
        elif self.groups:
            raise ValueError(f"OffsetFetchRequest.groups needs v8+, not v{version}")
        if version >= 7:
            w.boolean(self.require_stable)
        elif self.require_stable:
            raise ValueError(f"OffsetFetchRequest.require_stable needs v7+, not v{version}")
        if version >= 6:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 6
        group_id = "" if version >= 8 else r.string(flexible)
        topics = None if version >= 8 else r.nullable_structs(OffsetFetchRequestTopic, version, flexible)
        groups = r.structs(OffsetFetchRequestGroup, version, True) if version >= 8 else ()
        require_stable = r.boolean() if version >= 7 else False
        if version >= 6:
            r.skip_tags()
        return cls(group_id, topics, groups, require_stable)

    def for_version(self, version: int) -> Self:
        """The request in the layout ``version`` has, built in either: ``group_id``, ``topics`` to v7, ``groups``
        from v8; ``ValueError`` when an older version cannot carry the batch (Kafka's builders' rule).
        """
        if version >= 8:
            if not self.groups:
                return attrs.evolve(
                    self,
                    group_id="",
                    topics=None,
                    groups=(
                        OffsetFetchRequestGroup(
                            group_id=self.group_id,
                            topics=None
                            if self.topics is None
                            else tuple(
                                OffsetFetchRequestTopics(name=item0.name, partition_indexes=item0.partition_indexes)
                                for item0 in self.topics
                            ),
                        ),
                    ),
                )
            return attrs.evolve(self, group_id="", topics=None) if self.group_id or self.topics is not None else self
        if not self.groups:
            return self
        if len(self.groups) != 1:
            raise ValueError(f"OffsetFetchRequest v{version} takes one of groups, not {len(self.groups)}")
        (one,) = self.groups
        return attrs.evolve(
            self,
            group_id=one.group_id,
            topics=None
            if one.topics is None
            else tuple(
                OffsetFetchRequestTopic(name=item0.name, partition_indexes=item0.partition_indexes)
                for item0 in one.topics
            ),
            groups=(),
        )
