"""Generated from Apache Kafka's ShareGroupDescribeRequest.json/ShareGroupDescribeResponse.json (kafka-clients 4.4.0)
by scripts/gen_protocol.py; do not edit.

ShareGroupDescribe (API key 77) at v1 of the v1 Kafka defines; flexible from v0.
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
    "Assignment",
    "DescribedGroup",
    "Member",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "TopicPartitions",
]

_ii = struct.Struct(">ii")


@attrs.define(frozen=True, slots=True)
class TopicPartitions:
    """The assigned topic-partitions to the member."""

    topic_id: uuid.UUID = ZERO_UUID
    """The topic ID. (v0+)"""
    topic_name: str = ""
    """The topic name. (v0+)"""
    partitions: tuple[int, ...] = ()
    """The partitions. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.uuid(self.topic_id)
        w.string(self.topic_name, True)
        w.int32s(self.partitions, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_id = r.uuid()
        topic_name = r.string(True)
        partitions = r.int32s(True)
        r.skip_tags()
        return cls(topic_id, topic_name, partitions)


@attrs.define(frozen=True, slots=True)
class Assignment:
    """The current assignment."""

    topic_partitions: tuple[TopicPartitions, ...] = ()
    """The assigned topic-partitions to the member. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.structs(self.topic_partitions, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        topic_partitions = r.structs(TopicPartitions, version, True)
        r.skip_tags()
        return cls(topic_partitions)


@attrs.define(frozen=True, slots=True)
class Member:
    """The members."""

    member_id: str = ""
    """The member ID. (v0+)"""
    rack_id: str | None = None
    """The member rack ID. (v0+)"""
    member_epoch: int = 0
    """The current member epoch. (v0+)"""
    client_id: str = ""
    """The client ID. (v0+)"""
    client_host: str = ""
    """The client host. (v0+)"""
    subscribed_topic_names: tuple[str, ...] = ()
    """The subscribed topic names. (v0+)"""
    assignment: Assignment = attrs.field(factory=Assignment)
    """The current assignment. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.member_id, True)
        w.nullable_string(self.rack_id, True)
        w.int32(self.member_epoch)
        w.string(self.client_id, True)
        w.string(self.client_host, True)
        w.strings(self.subscribed_topic_names, True)
        self.assignment.encode(w, version)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        member_id = r.string(True)
        rack_id = r.nullable_string(True)
        member_epoch = r.int32()
        client_id = r.string(True)
        client_host = r.string(True)
        subscribed_topic_names = r.strings(True)
        assignment = Assignment.decode(r, version)
        r.skip_tags()
        return cls(member_id, rack_id, member_epoch, client_id, client_host, subscribed_topic_names, assignment)


@attrs.define(frozen=True, slots=True)
class DescribedGroup:
    """Each described group."""

    error_code: int = 0
    """The describe error, or 0 if there was no error. (v0+)"""
    error_message: str | None = None
    """The top-level error message, or null if there was no error. (v0+)"""
    group_id: str = ""
    """The group ID string. (v0+)"""
    group_state: str = ""
    """The group state string, or the empty string. (v0+)"""
    group_epoch: int = 0
    """The group epoch. (v0+)"""
    assignment_epoch: int = 0
    """The assignment epoch. (v0+)"""
    assignor_name: str = ""
    """The selected assignor. (v0+)"""
    members: tuple[Member, ...] = ()
    """The members. (v0+)"""
    authorized_operations: int = -2147483648
    """32-bit bitfield to represent authorized operations for this group. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int16(self.error_code)
        w.nullable_string(self.error_message, True)
        w.string(self.group_id, True)
        w.string(self.group_state, True)
        w.pack(_ii, self.group_epoch, self.assignment_epoch)
        w.string(self.assignor_name, True)
        w.structs(self.members, version, True)
        w.int32(self.authorized_operations)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        error_code = r.int16()
        error_message = r.nullable_string(True)
        group_id = r.string(True)
        group_state = r.string(True)
        group_epoch, assignment_epoch = r.unpack(_ii)
        assignor_name = r.string(True)
        members = r.structs(Member, version, True)
        authorized_operations = r.int32()
        r.skip_tags()
        return cls(
            error_code,
            error_message,
            group_id,
            group_state,
            group_epoch,
            assignment_epoch,
            assignor_name,
            members,
            authorized_operations,
        )


@attrs.define(frozen=True, slots=True)
class ShareGroupDescribeResponse:
    """The ShareGroupDescribe response (API key 77), v1."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    groups: tuple[DescribedGroup, ...] = ()
    """Each described group. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.structs(self.groups, version, True)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()
        groups = r.structs(DescribedGroup, version, True)
        r.skip_tags()
        return cls(throttle_time_ms, groups)


@attrs.define(frozen=True, slots=True)
class ShareGroupDescribeRequest:
    """The ShareGroupDescribe request (API key 77), v1."""

    API_KEY: ClassVar[ApiKey] = ApiKey.SHARE_GROUP_DESCRIBE
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 1
    FLEXIBLE_FROM: ClassVar[int] = 0
    RESPONSE: ClassVar[type[Response]] = ShareGroupDescribeResponse

    group_ids: tuple[str, ...] = ()
    """The ids of the groups to describe. (v0+)"""
    include_authorized_operations: bool = False
    """Whether to include authorized operations. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.strings(self.group_ids, True)
        w.boolean(self.include_authorized_operations)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        group_ids = r.strings(True)
        include_authorized_operations = r.boolean()
        r.skip_tags()
        return cls(group_ids, include_authorized_operations)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
