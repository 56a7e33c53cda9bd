"""Generated from Apache Kafka's ApiVersionsRequest.json/ApiVersionsResponse.json (kafka-clients 4.4.0) by
scripts/gen_protocol.py; do not edit.

ApiVersions (API key 18) at v0-3 of the v0-5 Kafka defines; flexible from v3.
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
    "ApiVersion",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "FinalizedFeatureKey",
    "SupportedFeatureKey",
]

_hh = struct.Struct(">hh")
_hhh = struct.Struct(">hhh")


@attrs.define(frozen=True, slots=True)
class ApiVersion:
    """The APIs supported by the broker."""

    api_key: int = 0
    """The API index. (v0+)"""
    min_version: int = 0
    """The minimum supported version, inclusive. (v0+)"""
    max_version: int = 0
    """The maximum supported version, inclusive. (v0+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.pack(_hhh, self.api_key, self.min_version, self.max_version)
        if version >= 3:
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        api_key, min_version, max_version = r.unpack(_hhh)
        if version >= 3:
            r.skip_tags()
        return cls(api_key, min_version, max_version)


@attrs.define(frozen=True, slots=True)
class SupportedFeatureKey:
    """Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted."""

    name: str = ""
    """The name of the feature. (v3+)"""
    min_version: int = 0
    """The minimum supported version for the feature. (v3+)"""
    max_version: int = 0
    """The maximum supported version for the feature. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.name, True)
        w.pack(_hh, self.min_version, self.max_version)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name = r.string(True)
        min_version, max_version = r.unpack(_hh)
        r.skip_tags()
        return cls(name, min_version, max_version)


@attrs.define(frozen=True, slots=True)
class FinalizedFeatureKey:
    """List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0."""

    name: str = ""
    """The name of the feature. (v3+)"""
    max_version_level: int = 0
    """The cluster-wide finalized max version level for the feature. (v3+)"""
    min_version_level: int = 0
    """The cluster-wide finalized min version level for the feature. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        w.string(self.name, True)
        w.pack(_hh, self.max_version_level, self.min_version_level)
        w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        name = r.string(True)
        max_version_level, min_version_level = r.unpack(_hh)
        r.skip_tags()
        return cls(name, max_version_level, min_version_level)


@attrs.define(frozen=True, slots=True)
class ApiVersionsResponse:
    """The ApiVersions response (API key 18), v0-3."""

    error_code: int = 0
    """The top-level error code. (v0+)"""
    api_keys: tuple[ApiVersion, ...] = ()
    """The APIs supported by the broker. (v0+)"""
    throttle_time_ms: int = 0
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota. (v1+)
    """
    supported_features: tuple[SupportedFeatureKey, ...] = ()
    """Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted. (v3+, tag
    0)
    """
    finalized_features_epoch: int = -1
    """The monotonically increasing epoch for the finalized features information. Valid values are >= 0. A value of
    -1 is special and represents unknown epoch. (v3+, tag 1)
    """
    finalized_features: tuple[FinalizedFeatureKey, ...] = ()
    """List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0. (v3+,
    tag 2)
    """
    zk_migration_ready: bool = False
    """Set by a KRaft controller if the required configurations for ZK migration are present. (v3+, tag 3)"""

    def encode(self, w: Writer, version: int) -> None:
        flexible = version >= 3
        w.int16(self.error_code)
        w.structs(self.api_keys, version, flexible)
        if version >= 1:
            w.int32(self.throttle_time_ms)
        if version >= 3:
            tags: dict[int, bytes] = {}
            if self.supported_features:
                t = Writer()
                t.structs(self.supported_features, version, True)
                tags[0] = t.getvalue()
            if self.finalized_features_epoch != -1:
                t = Writer()
                t.int64(self.finalized_features_epoch)
                tags[1] = t.getvalue()
            if self.finalized_features:
                t = Writer()
                t.structs(self.finalized_features, version, True)
                tags[2] = t.getvalue()
            if self.zk_migration_ready:
                t = Writer()
                t.boolean(self.zk_migration_ready)
                tags[3] = t.getvalue()
            w.tagged_fields(tags)

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        flexible = version >= 3
        error_code = r.int16()
        api_keys = r.structs(ApiVersion, version, flexible)
        throttle_time_ms = r.int32() if version >= 1 else 0
        supported_features: tuple[SupportedFeatureKey, ...] = ()
        finalized_features_epoch: int = -1
        finalized_features: tuple[FinalizedFeatureKey, ...] = ()
        zk_migration_ready: bool = False
        if version >= 3:
            for _ in range(r.uvarint()):
                tag, end = r.tag()
                if tag == 0:
                    supported_features = r.structs(SupportedFeatureKey, version, True)
                elif tag == 1:
                    finalized_features_epoch = r.int64()
                elif tag == 2:
                    finalized_features = r.structs(FinalizedFeatureKey, version, True)
                elif tag == 3:
                    zk_migration_ready = r.boolean()
                r.skip_to(end)
        return cls(
            error_code,
            api_keys,
            throttle_time_ms,
            supported_features,
            finalized_features_epoch,
            finalized_features,
            zk_migration_ready,
        )


@attrs.define(frozen=True, slots=True)
class ApiVersionsRequest:
    """The ApiVersions request (API key 18), v0-3."""

    API_KEY: ClassVar[ApiKey] = ApiKey.API_VERSIONS
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 3
    FLEXIBLE_FROM: ClassVar[int] = 3
    RESPONSE: ClassVar[type[Response]] = ApiVersionsResponse

    client_software_name: str = ""
    """The name of the client. (v3+)"""
    client_software_version: str = ""
    """The version of the client. (v3+)"""

    def encode(self, w: Writer, version: int) -> None:
        if version >= 3:
            w.string(self.client_software_name, True)
            w.string(self.client_software_version, True)
            w.empty_tags()

    @classmethod
    def decode(cls, r: Reader, version: int) -> Self:
        client_software_name = r.string(True) if version >= 3 else ""
        client_software_version = r.string(True) if version >= 3 else ""
        if version >= 3:
            r.skip_tags()
        return cls(client_software_name, client_software_version)

    def for_version(self, version: int) -> Self:
        """Itself: this request has one layout at every version we speak."""
        return self
