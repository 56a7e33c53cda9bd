"""Generated from Apache Kafka's IncrementalAlterConfigsRequest.json/IncrementalAlterConfigsResponse.json
(kafka-clients 4.4.0) by scripts/gen_protocol.py; do not edit.

IncrementalAlterConfigs (API key 44) at v0-1 of the v0-1 Kafka defines; flexible from v1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

import attrs

from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.protocol.wire import Reader, Writer

if TYPE_CHECKING:
    from asyncconsumer.protocol.base import Response

__all__ = [
    "AlterConfigsResource",
    "AlterConfigsResourceResponse",
    "AlterableConfig",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
]


@attrs.define(frozen=True, slots=True)
class AlterConfigsResourceResponse:
    """The responses for each resource."""

    error_code: int = 0
    """The resource error code. (v0+)"""
    error_message: str | None = ""
    """The resource error message, or null if there was no error. (v0+)"""
    resource_type: int = 0
    """The resource type. (v0+)"""
    resource_name: str = ""
    """The resource name. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 1
        w.int16(self.error_code)
        w.nullable_string(self.error_message, flexible)
        w.int8(self.resource_type)
        w.string(self.resource_name, flexible)
        if version >= 1:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 1
        error_code = r.int16()
        error_message = r.nullable_string(flexible)
        resource_type = r.int8()
        resource_name = r.string(flexible)
        if version >= 1:
            r.skip_tags()
        return cls(error_code, error_message, resource_type, resource_name)


@attrs.define(frozen=True, slots=True)
class IncrementalAlterConfigsResponse:
    """The IncrementalAlterConfigs response (API key 44), v0-1."""

    throttle_time_ms: int = 0
    """Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request
    did not violate any quota. (v0+)
    """
    responses: tuple[AlterConfigsResourceResponse, ...] = ()
    """The responses for each resource. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 1
        w.int32(self.throttle_time_ms)
        w.structs(self.responses, version, flexible)
        if version >= 1:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 1
        throttle_time_ms = r.int32()
        responses = r.structs(AlterConfigsResourceResponse, version, flexible)
        if version >= 1:
            r.skip_tags()
        return cls(throttle_time_ms, responses)


@attrs.define(frozen=True, slots=True)
class AlterableConfig:
    """The configurations."""

    name: str = ""
    """The configuration key name. (v0+)"""
    config_operation: int = 0
    """The type (Set, Delete, Append, Subtract) of operation. (v0+)"""
    value: str | None = ""
    """The value to set for the configuration key. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 1
        w.string(self.name, flexible)
        w.int8(self.config_operation)
        w.nullable_string(self.value, flexible)
        if version >= 1:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 1
        name = r.string(flexible)
        config_operation = r.int8()
        value = r.nullable_string(flexible)
        if version >= 1:
            r.skip_tags()
        return cls(name, config_operation, value)


@attrs.define(frozen=True, slots=True)
class AlterConfigsResource:
    """The incremental updates for each resource."""

    resource_type: int = 0
    """The resource type. (v0+)"""
    resource_name: str = ""
    """The resource name. (v0+)"""
    configs: tuple[AlterableConfig, ...] = ()
    """The configurations. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 1
        w.int8(self.resource_type)
        w.string(self.resource_name, flexible)
        w.structs(self.configs, version, flexible)
        if version >= 1:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 1
        resource_type = r.int8()
        resource_name = r.string(flexible)
        configs = r.structs(AlterableConfig, version, flexible)
        if version >= 1:
            r.skip_tags()
        return cls(resource_type, resource_name, configs)


@attrs.define(frozen=True, slots=True)
class IncrementalAlterConfigsRequest:
    """The IncrementalAlterConfigs request (API key 44), v0-1."""

    API_KEY: ClassVar[ApiKey] = ApiKey.INCREMENTAL_ALTER_CONFIGS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 1
    FLEXIBLE_FROM: ClassVar[int] = 1
    RESPONSE: ClassVar[type[Response]] = IncrementalAlterConfigsResponse

    resources: tuple[AlterConfigsResource, ...] = ()
    """The incremental updates for each resource. (v0+)"""
    validate_only: bool = False
    """True if we should validate the request, but not change the configurations. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 1
        w.structs(self.resources, version, flexible)
        w.boolean(self.validate_only)
        if version >= 1:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 1
        resources = r.structs(AlterConfigsResource, version, flexible)
        validate_only = r.boolean()
        if version >= 1:
            r.skip_tags()
        return cls(resources, validate_only)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
