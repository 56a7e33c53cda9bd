"""Generated from Apache Kafka's DescribeConfigsRequest.json/DescribeConfigsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

DescribeConfigs (API key 32) at v1-4 of the v1-4 Kafka defines; flexible from v4.
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
    "DescribeConfigsRequest",
    "DescribeConfigsResource",
    "DescribeConfigsResourceResult",
    "DescribeConfigsResponse",
    "DescribeConfigsResult",
    "DescribeConfigsSynonym",
]

_oo = struct.Struct(">??")
_obo = struct.Struct(">?b?")


@attrs.define(frozen=True, slots=True)
class DescribeConfigsSynonym:
    """The synonyms for this configuration key."""

    name: str = ""
    """The synonym name. (v1+)"""
    value: str | None = ""
    """The synonym value. (v1+)"""
    source: int = 0
    """The synonym source. (v1+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.name, flexible)
        w.nullable_string(self.value, flexible)
        w.int8(self.source)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        name = r.string(flexible)
        value = r.nullable_string(flexible)
        source = r.int8()
        if version >= 4:
            r.skip_tags()
        return cls(name, value, source)


@attrs.define(frozen=True, slots=True)
class DescribeConfigsResourceResult:
    """Each listed configuration."""

    name: str = ""
    """The configuration name. (v0+)"""
    value: str | None = ""
    """The configuration value. (v0+)"""
    read_only: bool = False
    """True if the configuration is read-only. (v0+)"""
    config_source: int = -1
    """The configuration source. (v1+)"""
    is_sensitive: bool = False
    """True if this configuration is sensitive. (v0+)"""
    synonyms: tuple[DescribeConfigsSynonym, ...] = ()
    """The synonyms for this configuration key. (v1+)"""
    config_type: int = 0
    """The configuration data type. Type can be one of the following values - BOOLEAN, STRING, INT, SHORT, LONG,
    DOUBLE, LIST, CLASS, PASSWORD. (v3+)
    """
    documentation: str | None = ""
    """The configuration documentation. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.string(self.name, flexible)
        w.nullable_string(self.value, flexible)
        w.pack(_obo, self.read_only, self.config_source, self.is_sensitive)
        w.structs(self.synonyms, version, flexible)
        if version >= 3:
            w.int8(self.config_type)
            w.nullable_string(self.documentation, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        name = r.string(flexible)
        value = r.nullable_string(flexible)
        read_only, config_source, is_sensitive = r.unpack(_obo)
        synonyms = r.structs(DescribeConfigsSynonym, version, flexible)
        config_type = r.int8() if version >= 3 else 0
        documentation = r.nullable_string(flexible) if version >= 3 else ""
        if version >= 4:
            r.skip_tags()
        return cls(name, value, read_only, config_source, is_sensitive, synonyms, config_type, documentation)


@attrs.define(frozen=True, slots=True)
class DescribeConfigsResult:
    """The results for each resource."""

    error_code: int = 0
    """The error code, or 0 if we were able to successfully describe the configurations. (v0+)"""
    error_message: str | None = ""
    """The error message, or null if we were able to successfully describe the configurations. (v0+)"""
    resource_type: int = 0
    """The resource type. (v0+)"""
    resource_name: str = ""
    """The resource name. (v0+)"""
    configs: tuple[DescribeConfigsResourceResult, ...] = ()
    """Each listed configuration. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.int16(self.error_code)
        w.nullable_string(self.error_message, flexible)
        w.int8(self.resource_type)
        w.string(self.resource_name, flexible)
        w.structs(self.configs, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        error_code = r.int16()
        error_message = r.nullable_string(flexible)
        resource_type = r.int8()
        resource_name = r.string(flexible)
        configs = r.structs(DescribeConfigsResourceResult, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(error_code, error_message, resource_type, resource_name, configs)


@attrs.define(frozen=True, slots=True)
class DescribeConfigsResponse:
    """The DescribeConfigs response (API key 32), v1-4."""

    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v0+)
    """
    results: tuple[DescribeConfigsResult, ...] = ()
    """The results for each resource. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.int32(self.throttle_time_ms)
        w.structs(self.results, version, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        throttle_time_ms = r.int32()
        results = r.structs(DescribeConfigsResult, version, flexible)
        if version >= 4:
            r.skip_tags()
        return cls(throttle_time_ms, results)


@attrs.define(frozen=True, slots=True)
class DescribeConfigsResource:
    """The resources whose configurations we want to describe."""

    resource_type: int = 0
    """The resource type. (v0+)"""
    resource_name: str = ""
    """The resource name. (v0+)"""
    configuration_keys: tuple[str, ...] | None = None
    """The configuration keys to list, or null to list all configuration keys. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.int8(self.resource_type)
        w.string(self.resource_name, flexible)
        w.strings(self.configuration_keys, flexible)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        resource_type = r.int8()
        resource_name = r.string(flexible)
        configuration_keys = r.nullable_strings(flexible)
        if version >= 4:
            r.skip_tags()
        return cls(resource_type, resource_name, configuration_keys)


@attrs.define(frozen=True, slots=True)
class DescribeConfigsRequest:
    """The DescribeConfigs request (API key 32), v1-4."""

    API_KEY: ClassVar[ApiKey] = ApiKey.DESCRIBE_CONFIGS
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = 4
    RESPONSE: ClassVar[type[Response]] = DescribeConfigsResponse

    resources: tuple[DescribeConfigsResource, ...] = ()
    """The resources whose configurations we want to describe. (v0+)"""
    include_synonyms: bool = False
    """True if we should include all synonyms. (v1+)"""
    include_documentation: bool = False
    """True if we should include configuration documentation. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 4
        w.structs(self.resources, version, flexible)
        if version >= 3:
            w.pack(_oo, self.include_synonyms, self.include_documentation)
        else:
            if self.include_documentation:
                raise ValueError(f"DescribeConfigsRequest.include_documentation needs v3+, not v{version}")
            w.boolean(self.include_synonyms)
        if version >= 4:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 4
        resources = r.structs(DescribeConfigsResource, version, flexible)
        if version >= 3:
            include_synonyms, include_documentation = r.unpack(_oo)
        else:
            include_synonyms = r.boolean()
            include_documentation = False
        if version >= 4:
            r.skip_tags()
        return cls(resources, include_synonyms, include_documentation)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
