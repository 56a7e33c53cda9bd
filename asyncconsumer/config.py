"""Typed, validated consumer configuration.

Keys are Pythonic (``fetch_max_wait_ms``); the Java spelling (``fetch.max.wait.ms``) is accepted too. Each field's
docstring names the Java property it corresponds to, when there is one.
"""

from __future__ import annotations

import difflib
import ssl
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypedDict

import attrs

import asyncconsumer._config_checks as checks
from asyncconsumer.errors import ConfigError

Deserializer = Callable[[bytes | None], Any]


class PluginLike(Protocol):
    """A ``plugins`` entry given as an object: a ``Plugin`` (``asyncconsumer.plugins``) or anything with its two
    fields. Settings live below the plugins, so they name this shape rather than the class."""

    @property
    def name(self) -> str: ...

    @property
    def factory(self) -> Callable[[Any], Any]: ...


class AssignorLike(Protocol):
    """A ``partition_assignment_strategy`` entry given as an object (or its class): a ``PartitionAssignor``
    (``asyncconsumer.assignors``), which the consumer checks it is when it is built. Settings live below the
    assignors, so they name this shape rather than the class."""

    @property
    def name(self) -> str: ...

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[Any]) -> Mapping[str, Any]: ...


_ISOLATION = ("read_uncommitted", "read_committed")
_SECURITY = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
_GROUP_PROTOCOLS = ("classic", "consumer")
_PLUGIN_ERRORS = ("isolate", "fatal")
_CLASSIC_ONLY = ("partition_assignment_strategy", "session_timeout_ms", "heartbeat_interval_ms")
"""Settings Kafka rejects under group_protocol='consumer': the coordinator assigns and times sessions there."""
_CLASSIC_ONLY_MESSAGE = (
    "is not supported with group_protocol='consumer' (the group coordinator assigns partitions and sets the session "
    "and heartbeat timing); remove it or use group_protocol='classic'"
)


def canonical_key(key: str) -> str:
    """The Python name of a setting from any spelling: ``fetch.max.wait.ms`` and ``fetch-max-wait-ms`` are
    ``fetch_max_wait_ms``."""
    return key.strip().replace(".", "_").replace("-", "_")


DEFAULT_RECEIVE_MESSAGE_MAX_BYTES = 100_000_000
"""librdkafka's default for receive.message.max.bytes."""
_RESPONSE_OVERHEAD = 512
"""What librdkafka allows a fetch response beyond fetch.max.bytes for the protocol's own fields."""
_MAX_FRAME = 2_147_483_647
"""A response's size is a signed 32-bit integer on the wire."""


def _default_receive_max(config: ConsumerConfig) -> int:
    return min(max(DEFAULT_RECEIVE_MESSAGE_MAX_BYTES, config.fetch_max_bytes + _RESPONSE_OVERHEAD), _MAX_FRAME)


def _check_receive_max(instance: ConsumerConfig, attribute: attrs.Attribute[int], value: int) -> None:
    checks.positive(instance, attribute, value)
    floor = instance.fetch_max_bytes + _RESPONSE_OVERHEAD
    if floor > _MAX_FRAME:
        raise ConfigError(
            "fetch_max_bytes", f"must be at most {_MAX_FRAME - _RESPONSE_OVERHEAD}; got {instance.fetch_max_bytes}"
        )
    if value < floor:
        raise ConfigError(
            attribute.name,
            f"must be at least fetch_max_bytes + {_RESPONSE_OVERHEAD} ({floor}), so that a whole fetch response "
            f"fits; got {value}",
        )
    if value > _MAX_FRAME:
        raise ConfigError(attribute.name, f"must be at most {_MAX_FRAME} (a response's size is 32 bits); got {value}")


def _check_plugin_options(
    instance: ConsumerConfig, attribute: attrs.Attribute[dict[str, dict[str, Any]]], value: dict[str, dict[str, Any]]
) -> None:
    enabled = {checks.plugin_name(p) for p in instance.plugins}
    for name in value:
        if name not in enabled:
            listed = ", ".join(sorted(enabled)) or "none"
            raise ConfigError("plugin_options", f"plugin {name!r} is not enabled in plugins (enabled: {listed})")


def _canonical(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings under their Python names; an unknown key, or one key spelled two ways, is a ``ConfigError``."""
    names = {f.name for f in attrs.fields(ConsumerConfig)}
    values: dict[str, Any] = {}
    for raw_key, value in settings.items():
        if not isinstance(raw_key, str):
            raise ConfigError(repr(raw_key), "configuration keys are strings")
        key = canonical_key(raw_key)
        if key not in names:
            close = difflib.get_close_matches(key, sorted(names), n=3)
            hint = f"; did you mean {', '.join(checks.spelled_like(name, raw_key) for name in close)}?" if close else ""
            raise ConfigError(raw_key, f"unknown configuration key{hint}")
        if key in values:
            raise ConfigError(raw_key, "given twice (Pythonic and Java spelling)")
        values[key] = value
    return values


@attrs.define(frozen=True, slots=True, kw_only=True)
class ConsumerConfig:
    """Every setting of a consumer; build it with ``ConsumerConfig.from_kwargs`` to accept Java spellings."""

    bootstrap_servers: tuple[str, ...] = attrs.field(converter=checks.servers, validator=checks.check_servers)
    """bootstrap.servers: 'host:port' list (or comma-separated string) used to discover the cluster."""
    client_id: str = "asyncconsumer"
    """client.id"""
    client_rack: str = ""
    """client.rack"""
    auto_offset_reset: str = attrs.field(default="latest", validator=checks.reset_strategy)
    """auto.offset.reset: where to start when a partition has no position (or it is out of range): ``earliest``,
    ``latest``, ``none`` or ``by_duration:PT1H`` (KIP-1106: the first record no older than the ISO-8601 duration,
    the log end when every record is older)."""
    isolation_level: str = attrs.field(default="read_uncommitted", validator=checks.one_of(*_ISOLATION))
    """isolation.level"""
    fetch_min_bytes: int = attrs.field(default=1, validator=checks.positive)
    """fetch.min.bytes"""
    fetch_max_wait_ms: int = attrs.field(default=500, validator=checks.non_negative)
    """fetch.max.wait.ms"""
    fetch_max_bytes: int = attrs.field(default=52_428_800, validator=checks.positive)
    """fetch.max.bytes: the most a broker returns for one fetch (it still returns one batch larger than this)."""
    max_partition_fetch_bytes: int = attrs.field(default=1_048_576, validator=checks.positive)
    """max.partition.fetch.bytes"""
    fetch_buffer_bytes: int | None = attrs.field(default=None, validator=attrs.validators.optional(checks.positive))
    """No Java twin: the bound on fetched bytes held for the caller plus what fetches in flight may bring (each
    asks the broker for at most the room left, and at most half the current limit). Exceeded only by a batch larger
    than the room, which a broker returns whole so the consumer makes progress. The limit starts at half the bound
    and doubles to it only when polls keep running the buffer dry while the background waits for room. None (the
    default): the bound follows the partitions assigned, 8 MiB up to 128 partitions and 64 KiB a partition above,
    up to 64 MiB (a fetch round costs per partition, so many partitions need more bytes per round); an integer is
    a fixed bound, the memory budget."""
    receive_message_max_bytes: int = attrs.field(
        default=attrs.Factory(_default_receive_max, takes_self=True), validator=_check_receive_max
    )
    """receive.message.max.bytes (librdkafka's; Java has no such bound): the largest response frame a broker may
    send, and the most one compressed record batch may decompress to. A larger frame closes its connection before
    anything is allocated for it (``ResponseTooLargeError``, raised once by ``poll``; the requests on it are
    retried on a new connection); a larger batch is a ``RecordBatchTooLargeError`` for its partition. Default
    100,000,000, or ``fetch_max_bytes`` + 512 when that is larger; set explicitly, it must be at least that (as
    librdkafka requires)."""
    max_poll_records: int = attrs.field(default=500, validator=checks.positive)
    """max.poll.records"""
    check_crcs: bool = True
    """check.crcs"""
    pause_gc_during_poll: bool = True
    """No Java twin: pause Python's cyclic GC while ``poll`` builds records. Each record is a new tracked object,
    and collections triggered every few hundred of them cost more than decoding (measured 3.7 vs 1.5 us/record)."""
    fetch_sessions: bool = True
    """No Java twin (Java always uses them; franz-go's ``DisableFetchSessions`` is this switch): incremental fetch
    sessions (KIP-227), so a fetch names only the partitions that changed and the broker answers only those with
    something new. An escape hatch: False sends every fetch in full, for a broker or proxy that gets sessions wrong,
    and to measure what sessions save (``benchmarks/bench_fetch_sessions.py``)."""
    enable_metrics_push: bool = True
    """enable.metrics.push: push the consumer's metrics to the brokers when they ask for them (KIP-714 client
    telemetry; a broker asks only when its operator configured a client-metrics subscription and a receiver). False
    sends no telemetry request at all. See docs/observability.md for what is pushed."""
    request_timeout_ms: int = attrs.field(default=30_000, validator=checks.positive)
    """request.timeout.ms"""
    default_api_timeout_ms: int = attrs.field(default=60_000, validator=checks.positive)
    """default.api.timeout.ms: the timeout of calls that take no timeout argument."""
    metadata_max_age_ms: int = attrs.field(default=300_000, validator=checks.positive)
    """metadata.max.age.ms"""
    metadata_recovery_strategy: str = attrs.field(
        default="rebootstrap", converter=checks.lower, validator=checks.one_of("rebootstrap", "none")
    )
    """metadata.recovery.strategy: "rebootstrap" (Java 4.x's default) asks the bootstrap servers for metadata again
    when every broker the consumer knew fails, when none answers metadata for the trigger time below, or when a
    broker answers REBOOTSTRAP_REQUIRED (KIP-899, KIP-1102); "none" keeps asking the known brokers."""
    metadata_recovery_rebootstrap_trigger_ms: int = attrs.field(default=300_000, validator=checks.positive)
    """metadata.recovery.rebootstrap.trigger.ms: how long wanted metadata may fail to come before a rebootstrap."""
    retry_backoff_ms: int = attrs.field(default=100, validator=checks.non_negative)
    """retry.backoff.ms"""
    retry_backoff_max_ms: int = attrs.field(default=1_000, validator=checks.non_negative)
    """retry.backoff.max.ms"""
    reconnect_backoff_ms: int = attrs.field(default=50, validator=checks.non_negative)
    """reconnect.backoff.ms: after a failed connection attempt, counted from the attempt's start (as librdkafka
    does), so an attempt that hung until its setup timeout is followed at once by the next."""
    reconnect_backoff_max_ms: int = attrs.field(default=1_000, validator=checks.non_negative)
    """reconnect.backoff.max.ms"""
    socket_connection_setup_timeout_ms: int = attrs.field(default=10_000, validator=checks.positive)
    """socket.connection.setup.timeout.ms"""
    max_in_flight_requests_per_connection: int = attrs.field(default=5, validator=checks.positive)
    """max.in.flight.requests.per.connection"""
    group_id: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """group.id: the consumer group; required for ``subscribe``, ``commit`` and ``committed``."""
    group_instance_id: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """group.instance.id: a static member id; a restart within the session keeps the partitions."""
    session_timeout_ms: int = attrs.field(default=45_000, validator=checks.positive)
    """session.timeout.ms"""
    heartbeat_interval_ms: int = attrs.field(default=3_000, validator=checks.positive)
    """heartbeat.interval.ms: must be below session.timeout.ms."""
    max_poll_interval_ms: int = attrs.field(default=300_000, validator=checks.positive)
    """max.poll.interval.ms: a caller that does not poll for this long leaves the group."""
    enable_auto_commit: bool = True
    """enable.auto.commit: commit positions every ``auto_commit_interval_ms``, before revocation and on close."""
    auto_commit_interval_ms: int = attrs.field(default=5_000, validator=checks.positive)
    """auto.commit.interval.ms"""
    group_protocol: str = attrs.field(
        default="classic", converter=checks.lower, validator=checks.one_of(*_GROUP_PROTOCOLS)
    )
    """group.protocol: "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848 ConsumerGroupHeartbeat, Kafka 4+)."""
    group_remote_assignor: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """group.remote.assignor: the coordinator-side assignor ("uniform", "range") under group_protocol="consumer";
    None lets the coordinator choose."""
    partition_assignment_strategy: tuple[Any, ...] = attrs.field(
        default=("range",), converter=checks.comma_list, validator=checks.check_strategies
    )
    """partition.assignment.strategy: assignor names ("range", "roundrobin", "cooperative-sticky"), Java class
    names, or ``PartitionAssignor`` objects, in order of preference."""
    security_protocol: str = attrs.field(
        default="PLAINTEXT", converter=checks.upper, validator=checks.one_of(*_SECURITY)
    )
    """security.protocol: "PLAINTEXT", "SSL" (TLS), "SASL_PLAINTEXT" or "SASL_SSL" (SASL inside TLS)."""
    ssl_context: ssl.SSLContext | None = attrs.field(default=None, validator=checks.ssl_context_or_none)
    """No Java twin (Java's ssl.* keys): the TLS context to use as is; None builds one that checks the broker's
    certificate against ``ssl_cafile`` (or the system's CAs) and its host name."""
    ssl_cafile: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """ssl.truststore.location: PEM file of the CAs to trust instead of the system's."""
    ssl_certfile: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """ssl.keystore.location: PEM client certificate, for brokers that require mutual TLS."""
    ssl_keyfile: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """ssl.key.password's key: PEM private key of ``ssl_certfile`` (None: it is inside ``ssl_certfile``)."""
    ssl_check_hostname: bool = True
    """ssl.endpoint.identification.algorithm: False ("") skips the host name check; the CA check stays on."""
    sasl_mechanism: str = attrs.field(
        default="PLAIN", converter=checks.upper, validator=checks.one_of(*_SASL_MECHANISMS)
    )
    """sasl.mechanism: "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER" or "GSSAPI" (Kerberos: the
    ``[gssapi]`` extra)."""
    sasl_username: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """No Java twin (Java's sasl.jaas.config): the SASL user."""
    sasl_password: str | None = attrs.field(default=None, repr=checks.hidden)
    """No Java twin (Java's sasl.jaas.config): the SASL password; never shown in reprs or logs."""
    sasl_oauthbearer_token_provider: Callable[[], Any] | None = attrs.field(
        default=None, repr=False, validator=checks.callable_or_none
    )
    """No Java twin (Java's sasl.login.callback.handler.class): with ``sasl_mechanism="OAUTHBEARER"``, the callable,
    plain or ``async``, that returns an ``OAuthBearerToken`` or a JWT string. It is called when a connection needs
    a token and the one held has lived 80% of its lifetime; a plain one runs in a worker thread."""
    sasl_oauthbearer_token_endpoint_url: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """sasl.oauthbearer.token.endpoint.url: with ``sasl_mechanism="OAUTHBEARER"`` and no token provider, the OIDC
    token endpoint the built-in provider asks with the client-credentials grant."""
    sasl_oauthbearer_client_credentials_client_id: str | None = attrs.field(
        default=None, validator=checks.non_empty_or_none
    )
    """sasl.oauthbearer.client.credentials.client.id: the built-in provider's client id."""
    sasl_oauthbearer_client_credentials_client_secret: str | None = attrs.field(default=None, repr=checks.hidden)
    """sasl.oauthbearer.client.credentials.client.secret: the built-in provider's client secret; never shown."""
    sasl_oauthbearer_scope: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """sasl.oauthbearer.scope: the scope the built-in provider asks for (None: the endpoint's default)."""
    sasl_oauthbearer_extensions: dict[str, str] = attrs.field(factory=dict, converter=checks.extensions)
    """No Java twin (Java's JAAS ``extension_<name>`` options; librdkafka's sasl.oauthbearer.extensions): SASL
    extensions the built-in provider's tokens carry, as a mapping or ``"key=value,key=value"``."""
    sasl_kerberos_service_name: str = attrs.field(default="kafka", validator=checks.non_empty)
    """sasl.kerberos.service.name: with ``sasl_mechanism="GSSAPI"``, the service part of the brokers' Kerberos
    principals (``kafka/broker-host@REALM``)."""
    sasl_kerberos_principal: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """sasl.kerberos.principal (librdkafka; Java's JAAS ``principal``): the client's principal; None: the one the
    credentials cache holds. Required with ``sasl_kerberos_keytab``."""
    sasl_kerberos_keytab: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """sasl.kerberos.keytab (librdkafka; Java's JAAS ``keyTab``): log in with this keytab's key for
    ``sasl_kerberos_principal``; None: use the default credentials cache (a prior ``kinit``)."""
    sasl_kerberos_domain_name: str | None = attrs.field(default=None, validator=checks.non_empty_or_none)
    """No Java twin: the host part of the brokers' service principal; None: each broker's host as connected to."""
    plugins: tuple[str | PluginLike, ...] = attrs.field(
        default=(), converter=checks.comma_list, validator=checks.check_plugin_list
    )
    """No Java twin: request managers to run in the background loop, by installed name (entry-point group
    ``asyncconsumer.managers``, e.g. "lag-monitor") or as ``Plugin(name, factory)`` objects."""
    plugin_options: dict[str, dict[str, Any]] = attrs.field(
        factory=dict, converter=checks.plugin_options, validator=_check_plugin_options
    )
    """No Java twin: options per plugin name, handed to the plugin as ``context.options``."""
    plugin_errors: str = attrs.field(
        default="isolate", converter=checks.lower, validator=checks.one_of(*_PLUGIN_ERRORS)
    )
    """No Java twin: "isolate" switches a failing plugin off and keeps consuming; "fatal" stops the consumer and
    raises the ``PluginError`` from the caller's next call."""
    key_deserializer: Deserializer | None = attrs.field(default=None, validator=checks.callable_or_none)
    """key.deserializer: a callable taking the raw bytes (or None)."""
    value_deserializer: Deserializer | None = attrs.field(default=None, validator=checks.callable_or_none)
    """value.deserializer"""

    @classmethod
    def from_settings(cls, settings: Any = None, /, **kwargs: Any) -> ConsumerConfig:
        """What the consumers' constructors take: bootstrap servers (a string or a list), a mapping of settings
        with Java or Python keys (confluent-kafka's habit), or a ``ConsumerConfig``; plus keyword arguments. A key
        given both in the mapping and as a keyword is a ``ConfigError`` naming it."""
        if isinstance(settings, ConsumerConfig):
            return settings.with_changes(**_canonical(kwargs)) if kwargs else settings
        if not isinstance(settings, Mapping):
            if settings is None:  # AsyncConsumer(bootstrap_servers="h:9092") names it as a keyword
                return cls.from_kwargs(**kwargs)
            if "bootstrap_servers" in kwargs:
                raise ConfigError("bootstrap_servers", "given twice: as the first argument and as a keyword argument")
            return cls.from_kwargs(settings, **kwargs)
        given = _canonical(settings)
        for key in kwargs:
            if canonical_key(key) in given:
                spelled = next(k for k in settings if canonical_key(k) == canonical_key(key))
                raise ConfigError(key, f"given twice: as {spelled!r} in the settings mapping and as a keyword argument")
        return cls.from_kwargs(**{**settings, **kwargs})

    @classmethod
    def from_kwargs(cls, bootstrap_servers: Any = None, **kwargs: Any) -> ConsumerConfig:
        """Builds a config from Pythonic or Java-style keys; an unknown key is a ``ConfigError`` naming it."""
        values = _canonical(kwargs)
        if bootstrap_servers is not None:
            if "bootstrap_servers" in values:
                raise ConfigError("bootstrap_servers", "given twice")
            values["bootstrap_servers"] = bootstrap_servers
        if "bootstrap_servers" not in values:
            raise ConfigError("bootstrap_servers", "is required")
        for key in (
            "fetch_min_bytes",
            "fetch_max_wait_ms",
            "fetch_max_bytes",
            "max_partition_fetch_bytes",
            "fetch_buffer_bytes",
            "receive_message_max_bytes",
            "max_poll_records",
            "request_timeout_ms",
            "default_api_timeout_ms",
            "metadata_max_age_ms",
            "metadata_recovery_rebootstrap_trigger_ms",
            "retry_backoff_ms",
            "retry_backoff_max_ms",
            "reconnect_backoff_ms",
            "reconnect_backoff_max_ms",
            "socket_connection_setup_timeout_ms",
            "max_in_flight_requests_per_connection",
        ):
            if isinstance(values.get(key), str) and values[key].strip().isdigit():
                values[key] = int(values[key])
        for key in (
            "check_crcs",
            "enable_auto_commit",
            "pause_gc_during_poll",
            "fetch_sessions",
            "ssl_check_hostname",
            "enable_metrics_push",
        ):
            if isinstance(values.get(key), str):
                values[key] = checks.boolean(key, values[key])
        for key in ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms", "auto_commit_interval_ms"):
            if isinstance(values.get(key), str) and values[key].strip().isdigit():
                values[key] = int(values[key])
        if checks.lower(values.get("group_protocol")) == "consumer":
            for key in _CLASSIC_ONLY:
                if key in values:  # like Java: set at all, even to the default, is an error
                    raise ConfigError(key, _CLASSIC_ONLY_MESSAGE)
        config = cls(**values)
        if config.heartbeat_interval_ms >= config.session_timeout_ms:
            raise ConfigError(
                "heartbeat_interval_ms",
                f"must be below session_timeout_ms ({config.heartbeat_interval_ms} >= {config.session_timeout_ms})",
            )
        return config

    def __attrs_post_init__(self) -> None:
        checks.check_security(self)
        if self.group_protocol == "consumer":
            for field in attrs.fields(type(self)):
                if field.name in _CLASSIC_ONLY and getattr(self, field.name) != field.default:
                    raise ConfigError(field.name, _CLASSIC_ONLY_MESSAGE)
        elif self.group_remote_assignor is not None:
            raise ConfigError("group_remote_assignor", "applies only to group_protocol='consumer'")

    @property
    def rebootstrap_trigger_ms(self) -> int | None:
        """The metadata manager's rebootstrap trigger under the ``rebootstrap`` strategy; None under ``none``."""
        if self.metadata_recovery_strategy == "rebootstrap":
            return self.metadata_recovery_rebootstrap_trigger_ms
        return None

    def with_changes(self, **changes: Any) -> ConsumerConfig:
        if (
            "fetch_max_bytes" in changes
            and "receive_message_max_bytes" not in changes
            and self.receive_message_max_bytes == _default_receive_max(self)
        ):
            # left at its default, it follows fetch_max_bytes (as librdkafka adjusts it)
            values = {**self.as_dict(), **changes}
            del values["receive_message_max_bytes"]
            return ConsumerConfig(**values)
        return attrs.evolve(self, **changes)

    def as_dict(self) -> Mapping[str, Any]:
        return attrs.asdict(self, recurse=False)


class ConnectionSettings(TypedDict, total=False):
    """The keyword arguments every client takes, the admin clients too: the connection and its security
    (``ConsumerConfig``'s fields say what each does)."""

    bootstrap_servers: str | Sequence[str]
    client_id: str
    receive_message_max_bytes: int
    request_timeout_ms: int
    default_api_timeout_ms: int
    metadata_max_age_ms: int
    metadata_recovery_strategy: Literal["rebootstrap", "none"]
    metadata_recovery_rebootstrap_trigger_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    socket_connection_setup_timeout_ms: int
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
    ssl_context: ssl.SSLContext | None
    ssl_cafile: str | None
    ssl_certfile: str | None
    ssl_keyfile: str | None
    ssl_check_hostname: bool
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"]
    sasl_username: str | None
    sasl_password: str | None
    sasl_oauthbearer_token_provider: Callable[[], Any] | None
    sasl_oauthbearer_token_endpoint_url: str | None
    sasl_oauthbearer_client_credentials_client_id: str | None
    sasl_oauthbearer_client_credentials_client_secret: str | None
    sasl_oauthbearer_scope: str | None
    sasl_oauthbearer_extensions: str | Mapping[str, str]
    sasl_kerberos_service_name: str
    sasl_kerberos_principal: str | None
    sasl_kerberos_keytab: str | None
    sasl_kerberos_domain_name: str | None


class ClientSettings(ConnectionSettings, total=False):
    """The keyword arguments both kinds of consumer take: ``ConnectionSettings``, and fetching and deserialization."""

    client_rack: str
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    fetch_buffer_bytes: int | None
    max_poll_records: int
    check_crcs: bool
    pause_gc_during_poll: bool
    enable_metrics_push: bool
    max_in_flight_requests_per_connection: int
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None


class ConsumerSettings(ClientSettings, total=False):
    """The consumers' keyword arguments, typed for editors and type checkers (PEP 692): ``ClientSettings`` and the
    consumer's own. Java spellings (``"fetch.max.wait.ms"``) go in the settings mapping instead."""

    auto_offset_reset: Literal["earliest", "latest", "none"] | str
    """``"by_duration:PT1H"`` too (KIP-1106)."""
    isolation_level: Literal["read_uncommitted", "read_committed"]
    fetch_sessions: bool
    group_id: str | None
    group_instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    group_protocol: Literal["classic", "consumer"]
    group_remote_assignor: str | None
    partition_assignment_strategy: str | Sequence[str | AssignorLike | type[AssignorLike]]
    plugins: str | Sequence[str | PluginLike]
    plugin_options: Mapping[str, Mapping[str, Any]]
    plugin_errors: Literal["isolate", "fatal"]


class ShareConsumerSettings(ClientSettings, total=False):
    """The share consumers' keyword arguments: ``ClientSettings`` and the share group's own;
    ``SHARE_UNSUPPORTED`` names the consumer settings that do not apply, and why."""

    group_id: str
    share_acknowledgement_mode: Literal["implicit", "explicit"]
    share_acquire_mode: Literal["batch_optimized", "record_limit"]


Settings = str | Sequence[str] | Mapping[str, Any] | ConsumerConfig | None
"""The consumers' first argument: bootstrap servers, a settings mapping (Java or Python keys), or a config."""


SHARE_UNSUPPORTED: Mapping[str, str] = {
    "auto_offset_reset": "a share group's start is the group config share.auto.offset.reset, set on the broker",
    "enable_auto_commit": "a share consumer acknowledges records instead of committing offsets",
    "auto_commit_interval_ms": "a share consumer acknowledges records instead of committing offsets",
    "group_instance_id": "share groups have no static members",
    "isolation_level": "the share group's config share.isolation.level decides, on the broker",
    "partition_assignment_strategy": "the share group coordinator assigns partitions",
    "session_timeout_ms": "the broker's group.share.session.timeout.ms decides",
    "heartbeat_interval_ms": "the broker's group.share.heartbeat.interval.ms decides",
    "max_poll_interval_ms": "a share consumer's records are bounded by their acquisition locks instead",
    "group_protocol": "a share consumer always speaks the share group protocol",
    "group_remote_assignor": "the share group coordinator assigns partitions",
    "plugins": "plugin managers run in consumers only",
    "plugin_options": "plugin managers run in consumers only",
    "plugin_errors": "plugin managers run in consumers only",
    "fetch_sessions": "share sessions are part of the share fetch protocol",
}
"""Consumer settings a share consumer refuses, and why (Java's share consumer refuses the same ones)."""

_ACK_MODES = ("implicit", "explicit")
_ACQUIRE_MODES = ("batch_optimized", "record_limit")


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareConsumerConfig:
    """Every setting of a share consumer: the connection, fetch and security settings of ``ConsumerConfig``
    (``consumer``) and the share group's own."""

    consumer: ConsumerConfig
    share_acknowledgement_mode: str = attrs.field(
        default="implicit", converter=checks.lower, validator=checks.one_of(*_ACK_MODES)
    )
    """share.acknowledgement.mode: "implicit" (a ``poll``, commit or close accepts every record the last ``poll``
    returned) or "explicit" (the caller acknowledges each record; ``poll`` refuses while one is left)."""
    share_acquire_mode: str = attrs.field(
        default="batch_optimized", converter=checks.lower, validator=checks.one_of(*_ACQUIRE_MODES)
    )
    """share.acquire.mode (KIP-1206): "batch_optimized" lets the broker exceed ``max_poll_records`` to keep batches
    whole; "record_limit" never acquires more than that (brokers with ShareFetch v2)."""

    @property
    def group_id(self) -> str:
        assert self.consumer.group_id is not None
        return self.consumer.group_id

    @classmethod
    def from_settings(cls, settings: Any = None, /, **kwargs: Any) -> ShareConsumerConfig:
        """What the share consumers' constructors take: as ``ConsumerConfig.from_settings``, plus the share keys;
        ``group_id`` is required, and a consumer-only setting is a ``ConfigError`` naming it."""
        if isinstance(settings, ShareConsumerConfig):
            if not kwargs:
                return settings
            share = cls._share_keys(kwargs, {})
            cls._refuse_unsupported(kwargs)
            consumer = ConsumerConfig.from_settings(settings.consumer, **kwargs) if kwargs else settings.consumer
            return cls._make(consumer, {**attrs.asdict(settings, recurse=False), **share, "consumer": consumer})
        share_values: dict[str, Any] = {}
        if isinstance(settings, Mapping):
            settings = dict(settings)
            share_values = cls._share_keys(settings, {})
        share_values = cls._share_keys(kwargs, share_values)
        given = list(settings) if isinstance(settings, Mapping) else []
        cls._refuse_unsupported([*given, *kwargs])
        if isinstance(settings, ConsumerConfig):
            defaults = ConsumerConfig.from_kwargs(settings.bootstrap_servers)
            for name in SHARE_UNSUPPORTED:
                if getattr(settings, name) != getattr(defaults, name):
                    raise ConfigError(name, f"does not apply to a share consumer: {SHARE_UNSUPPORTED[name]}")
        consumer = ConsumerConfig.from_settings(settings, **kwargs)
        return cls._make(consumer, {**share_values, "consumer": consumer})

    @staticmethod
    def _share_keys(source: dict[str, Any], taken: dict[str, Any]) -> dict[str, Any]:
        """Moves the share keys out of ``source`` into ``taken`` by their Python names (a key already there was
        given twice); an unknown share key is a ``ConfigError``."""
        names = {f.name for f in attrs.fields(ShareConsumerConfig)} - {"consumer"}
        given = set(taken)
        for key in list(source):
            if not isinstance(key, str) or not canonical_key(key).startswith("share_"):
                continue
            name = canonical_key(key)
            if name in given:
                raise ConfigError(key, "given twice: in the settings mapping and as a keyword argument")
            if name not in names:
                close = difflib.get_close_matches(name, sorted(names), n=2)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(key, f"unknown configuration key{hint}")
            taken[name] = source.pop(key)
        return taken

    @staticmethod
    def _refuse_unsupported(keys: Iterable[Any]) -> None:
        for key in keys:
            if isinstance(key, str) and canonical_key(key) in SHARE_UNSUPPORTED:
                raise ConfigError(key, f"does not apply to a share consumer: {SHARE_UNSUPPORTED[canonical_key(key)]}")

    @classmethod
    def _make(cls, consumer: ConsumerConfig, values: dict[str, Any]) -> ShareConsumerConfig:
        if consumer.group_id is None:
            raise ConfigError("group_id", "is required: a share consumer reads as a member of a share group")
        return cls(**values)


class AdminSettings(ConnectionSettings, total=False):
    """The admin clients' keyword arguments: the connection and security settings the consumers take."""


ADMIN_KEYS = AdminSettings.__optional_keys__
"""The settings an admin client takes; any other consumer setting is a ``ConfigError`` naming it."""


@attrs.define(frozen=True, slots=True, kw_only=True)
class AdminConfig:
    """Every setting of an admin client: the connection and security settings of ``ConsumerConfig`` (``client``),
    checked as the consumers check them; ``client_id`` defaults to ``asyncconsumer-admin``."""

    client: ConsumerConfig

    @classmethod
    def from_settings(cls, settings: Any = None, /, **kwargs: Any) -> AdminConfig:
        """As ``ConsumerConfig.from_settings`` (bootstrap servers, a mapping with Java or Python keys, or a config),
        limited to ``ADMIN_KEYS``."""
        if isinstance(settings, AdminConfig):
            settings = settings.client
        given = list(settings) if isinstance(settings, Mapping) else []
        for key in [*given, *kwargs]:
            if isinstance(key, str) and canonical_key(key) not in ADMIN_KEYS and canonical_key(key) in _CONSUMER_KEYS:
                raise ConfigError(key, "does not apply to an admin client (it takes connection and security settings)")
        named = {canonical_key(k) for k in [*given, *kwargs] if isinstance(k, str)}
        if "client_id" not in named and not isinstance(settings, ConsumerConfig):
            kwargs = {**kwargs, "client_id": "asyncconsumer-admin"}
        # An admin pushes no metrics and runs no group: the consumer settings' defaults for those stay unused.
        return cls(client=ConsumerConfig.from_settings(settings, **kwargs).with_changes(enable_metrics_push=False))


_CONSUMER_KEYS = frozenset(f.name for f in attrs.fields(ConsumerConfig))
