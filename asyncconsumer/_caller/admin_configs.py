"""Configs for the admin client: what names a resource (``ConfigResource``), what one config holds
(``ConfigEntry``), a change to one (``AlterConfigOp``), and the plain functions that build DescribeConfigs and
IncrementalAlterConfigs requests and read their answers (no I/O; unit-tested on hand-built responses).

Names and numbers are Java's (``ConfigResource.Type``, ``ConfigEntry.ConfigSource``, ``AlterConfigOp.OpType``),
written as enums by name. A broker's and a broker logger's configs are asked of that broker; every other resource
(topics, groups, client-metrics subscriptions) of any broker, which forwards a change to the controller.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol, TypeVar

import attrs

from asyncconsumer.errors import CorruptResponseError, ErrorCode, KafkaError, for_code
from asyncconsumer.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
)
from asyncconsumer.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)


class ConfigResourceType(enum.Enum):
    """What a config belongs to, with the number the protocol gives it (Java's ``ConfigResource.Type``)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(enum.Enum):
    """Where a config's value comes from (Java's ``ConfigEntry.ConfigSource``)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType(enum.Enum):
    """A config's value type, as the broker describes it (Java's ``ConfigEntry.ConfigType``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class AlterConfigOpType(enum.Enum):
    """What an ``AlterConfigOp`` does (Java's ``AlterConfigOp.OpType``): set a value, delete it (back to the
    default), or append to or subtract from a list."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def _resource_type(value: ConfigResourceType | str) -> ConfigResourceType:
    if isinstance(value, ConfigResourceType):
        return value
    try:
        return ConfigResourceType[str(value).upper()]
    except KeyError:
        names = ", ".join(t.name.lower() for t in ConfigResourceType if t is not ConfigResourceType.UNKNOWN)
        raise ValueError(f"a config resource's type is one of {names}, got {value!r}") from None


def _op_type(value: AlterConfigOpType | str) -> AlterConfigOpType:
    if isinstance(value, AlterConfigOpType):
        return value
    try:
        return AlterConfigOpType[str(value).upper()]
    except KeyError:
        raise ValueError(f"a config operation is one of set, delete, append, subtract, got {value!r}") from None


@attrs.frozen(order=True)
class ConfigResource:
    """A topic, a group, a broker (by its id), a broker's loggers or a client-metrics subscription, by name:
    ``ConfigResource("topic", "orders")``."""

    type: ConfigResourceType = attrs.field(converter=_resource_type, order=lambda t: t.value)
    name: str = attrs.field()

    @name.validator
    def _check_name(self, _: object, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"a config resource's name is a string, got {name!r}")
        if self.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
            if name and not name.isdigit():
                raise ValueError(f"a {self.type.name.lower()} resource is named by a broker id, got {name!r}")
        elif not name:
            raise ValueError(f"a {self.type.name.lower()} resource needs a name")

    def __str__(self) -> str:
        return f"{self.type.name.lower()} {self.name!r}"


@attrs.frozen
class ConfigSynonym:
    """A value the config would take from another source, in the order the broker applies them."""

    name: str
    value: str | None
    source: ConfigSource


@attrs.frozen
class ConfigEntry:
    """One config as the broker describes it: its value (None when sensitive), where it comes from, and whether it
    is the default, read-only or sensitive; synonyms and documentation when asked for."""

    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    is_sensitive: bool = False
    is_read_only: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()
    type: ConfigType = ConfigType.UNKNOWN
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        """Whether no one set it: the broker's (or Kafka's) default applies."""
        return self.source is ConfigSource.DEFAULT_CONFIG


@attrs.frozen
class AlterConfigOp:
    """One change to one config: ``AlterConfigOp("retention.ms", "3600000")`` sets it;
    ``AlterConfigOp("retention.ms", op="delete")`` puts the default back."""

    name: str
    value: str | None = None
    op: AlterConfigOpType = attrs.field(default=AlterConfigOpType.SET, converter=_op_type)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a config operation names a config, got {self.name!r}")
        if self.op is not AlterConfigOpType.DELETE and not isinstance(self.value, str):
            raise ValueError(f"{self.op.name.lower()} of config {self.name!r} needs a string value, got {self.value!r}")


def _resources(resources: Iterable[ConfigResource]) -> list[ConfigResource]:
    if isinstance(resources, ConfigResource):
        raise TypeError("takes a list of ConfigResource values, not one")
    chosen = list(resources)
    for resource in chosen:
        if not isinstance(resource, ConfigResource):
            raise TypeError(f"takes ConfigResource values, got {resource!r}")
    return sorted(set(chosen))


def broker_of(resource: ConfigResource) -> int | None:
    """The broker a resource's configs are asked of: its own for a broker or its loggers (named by id), else any."""
    if resource.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER) and resource.name:
        return int(resource.name)
    return None


def by_broker(resources: Iterable[ConfigResource]) -> dict[int | None, list[ConfigResource]]:
    """The resources grouped by where they are asked (``broker_of``), each group in order, in the order they are
    asked: any broker's first, then each broker's by id."""
    grouped: dict[int | None, list[ConfigResource]] = {}
    for resource in _resources(resources):
        grouped.setdefault(broker_of(resource), []).append(resource)
    return dict(sorted(grouped.items(), key=lambda item: (item[0] is not None, item[0] or 0)))


def describe_request(
    resources: Iterable[ConfigResource], *, synonyms: bool, documentation: bool
) -> DescribeConfigsRequest:
    """Every config of each resource (no key filter), with synonyms and documentation when asked."""
    return DescribeConfigsRequest(
        resources=tuple(
            DescribeConfigsResource(resource_type=r.type.value, resource_name=r.name, configuration_keys=None)
            for r in resources
        ),
        include_synonyms=synonyms,
        include_documentation=documentation,
    )


def _enum(kind: type[enum.Enum], value: int) -> enum.Enum:
    try:
        return kind(value)
    except ValueError:
        return kind(0)


def _said(what: str, message: str | None) -> str:
    return f"{what}: {message}" if message else what


class _ResourceAnswer(Protocol):
    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...


AnswerT = TypeVar("AnswerT", bound=_ResourceAnswer)


def _answers(
    resources: Iterable[ConfigResource], answers: Iterable[AnswerT], api: str
) -> Iterator[tuple[ConfigResource, AnswerT]]:
    """Each resource asked with its part of the answer; ``CorruptResponseError`` naming one the answer left out."""
    by_key = {(a.resource_type, a.resource_name): a for a in answers}
    for resource in resources:
        answer = by_key.get((resource.type.value, resource.name))
        if answer is None:
            raise CorruptResponseError(f"{api} answered without {resource}")
        yield resource, answer


def described_configs(
    resources: Iterable[ConfigResource], response: DescribeConfigsResponse
) -> tuple[dict[ConfigResource, dict[str, ConfigEntry]], dict[ConfigResource, KafkaError]]:
    """Each resource's configs by name, and each resource's error (``UnknownTopicOrPartitionError`` for a topic that
    does not exist, with the broker's message); ``CorruptResponseError`` when a resource asked is left out."""
    found: dict[ConfigResource, dict[str, ConfigEntry]] = {}
    errors: dict[ConfigResource, KafkaError] = {}
    for resource, result in _answers(resources, response.results, "DescribeConfigs"):
        if result.error_code != ErrorCode.NONE:
            errors[resource] = for_code(
                result.error_code, _said(f"describing the configs of {resource}", result.error_message)
            )
            continue
        found[resource] = {
            c.name: ConfigEntry(
                name=c.name,
                value=c.value,
                source=_enum(ConfigSource, c.config_source),  # type: ignore[arg-type]
                is_sensitive=c.is_sensitive,
                is_read_only=c.read_only,
                synonyms=tuple(
                    ConfigSynonym(s.name, s.value, _enum(ConfigSource, s.source))  # type: ignore[arg-type]
                    for s in c.synonyms
                ),
                type=_enum(ConfigType, c.config_type),  # type: ignore[arg-type]
                documentation=c.documentation or None,
            )
            for c in sorted(result.configs, key=lambda c: c.name)
        }
    return found, errors


def alter_request(
    changes: Mapping[ConfigResource, Iterable[AlterConfigOp]], resources: Iterable[ConfigResource], validate_only: bool
) -> IncrementalAlterConfigsRequest:
    """One resource entry per resource, its operations in the order given."""
    return IncrementalAlterConfigsRequest(
        resources=tuple(
            AlterConfigsResource(
                resource_type=r.type.value,
                resource_name=r.name,
                configs=tuple(
                    AlterableConfig(
                        name=op.name,
                        config_operation=op.op.value,
                        value=None if op.op is AlterConfigOpType.DELETE else op.value,
                    )
                    for op in changes[r]
                ),
            )
            for r in resources
        ),
        validate_only=validate_only,
    )


def check_changes(
    changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
) -> dict[ConfigResource, list[AlterConfigOp]]:
    """The changes as lists, checked: ``ConfigResource`` keys, ``AlterConfigOp`` values, no config named twice for one
    resource (the broker refuses the whole resource then; said here with its name)."""
    checked: dict[ConfigResource, list[AlterConfigOp]] = {}
    for resource, ops in changes.items():
        if not isinstance(resource, ConfigResource):
            raise TypeError(f"incremental_alter_configs takes ConfigResource keys, got {resource!r}")
        listed: list[AlterConfigOp] = [ops] if isinstance(ops, AlterConfigOp) else list(ops)
        names: set[str] = set()
        for op in listed:
            if not isinstance(op, AlterConfigOp):
                raise TypeError(f"the changes of {resource} are AlterConfigOp values, got {op!r}")
            if op.name in names:
                raise ValueError(f"config {op.name!r} of {resource} is changed twice in one call")
            names.add(op.name)
        checked[resource] = listed
    return checked


def alter_errors(
    resources: Iterable[ConfigResource], response: IncrementalAlterConfigsResponse
) -> dict[ConfigResource, KafkaError]:
    """Each resource not altered, with its error and the broker's message (``InvalidConfigError`` naming the key and
    the bound it broke); ``CorruptResponseError`` when a resource asked is left out."""
    errors: dict[ConfigResource, KafkaError] = {}
    for resource, answer in _answers(resources, response.responses, "IncrementalAlterConfigs"):
        if answer.error_code != ErrorCode.NONE:
            errors[resource] = for_code(
                answer.error_code, _said(f"altering the configs of {resource}", answer.error_message)
            )
    return errors
