"""Generated from Apache Kafka's DeleteTopicsRequest.json/DeleteTopicsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

DeleteTopics (API key 20) at v1-5 of the v1-6 Kafka defines; flexible from v4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "DeletableTopicResult",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
]


@attrs.define(frozen=True, slots=True)
class DeletableTopicResult:
    """The results for each topic we tried to delete."""

    name: str = ""
    """The topic name. (v0+)"""
    error_code: int = 0
    """The deletion error, or 0 if the deletion succeeded. (v0+)"""
    error_message: str | None = None
    """The error message, or null if there was no error. (v5+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.name, flexible)
        w.int16(self.error_code)
        if version >= 5:
            w.nullable_string(self.error_message, True)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        name = r.string(flexible)
        error_code = r.int16()
        error_message = r.nullable_string(True) if version >= 5 else None
        if version >= 4:
            r.skip_tags()
        return cls(name, error_code, error_message)


@attrs.define(frozen=True, slots=True)
class DeleteTopicsResponse:
    """The DeleteTopics response (API key 20), v1-5."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    responses: tuple[DeletableTopicResult, ...] = ()
    """The results for each topic we tried to delete. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.int32(self.throttle_time_ms)
        w.structs(self.responses, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        throttle_time_ms = r.int32()
        responses = r.structs(DeletableTopicResult, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(throttle_time_ms, responses)


@attrs.define(frozen=True, slots=True)
class DeleteTopicsRequest:
    """The DeleteTopics request (API key 20), v1-5."""

    API_KEY: ClassVar[ApiKey] = ApiKey.DELETE_TOPICS
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 4
    RESPONSE: ClassVar[type[Response]] = DeleteTopicsResponse

    topic_names: tuple[str, ...] = ()
    """The names of the topics to delete. (v0-5)"""
    timeout_ms: int = 0
    """The length of time in milliseconds to wait for the deletions to complete. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.strings(self.topic_names, flexible)
        w.int32(self.timeout_ms)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        topic_names = r.strings(flexible)
        timeout_ms = r.int32()
        if version >= 4:
            r.skip_tags()
        return cls(topic_names, timeout_ms)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
