"""The data source's options, checked before a query starts: the names of Spark's own Kafka source.

``kafka.*`` options go to our consumer's configuration (``kafka.bootstrap.servers`` -> ``bootstrap.servers``); the
Java security settings Spark users write (``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.location`` ...) are
translated to ours. Everything else must be one of the source options below. A mistake is a ``ConfigError`` naming
the option. docs/spark.md's option table says, option by option, what Spark's source does and what this one does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from asyncconsumer._logs import get_logger
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError

log = get_logger("asyncconsumer.spark")

EARLIEST = -2
"""In per-partition offset JSON: the partition's earliest offset (as Spark's Kafka source)."""
LATEST = -1
"""In per-partition offset JSON: the partition's latest offset."""

OffsetSpec = str | dict[str, dict[int, int]]
"""``"earliest"``, ``"latest"``, or topic -> partition -> offset (-2 earliest, -1 latest)."""

_SUBSCRIPTIONS = ("subscribe", "subscribepattern", "assign")
_STREAMING_ONLY = ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay")
"""Spark's source ignores these in batch queries with a warning; so does this one."""
_KNOWN = frozenset(
    {
        *_SUBSCRIPTIONS,
        *_STREAMING_ONLY,
        "startingoffsets",
        "endingoffsets",
        "startingtimestamp",
        "endingtimestamp",
        "startingoffsetsbytimestamp",
        "endingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
        "minpartitions",
        "maxrecordsperpartition",
        "includeheaders",
        "failondataloss",
        "groupidprefix",
        "kafkaconsumer.polltimeoutms",
        "fetchoffset.numretries",
        "fetchoffset.retryintervalms",
        "arrowbatchrows",
        "usearrow",
        "polltimeoutms",
    }
)
_REJECTED_KAFKA = {
    "enable.auto.commit": "the source keeps offsets in Spark's checkpoint and never commits (as Spark's source)",
    "auto.offset.reset": "set startingOffsets to earliest or latest instead (as Spark's source)",
    "key.deserializer": "keys are bytes; deserialize them with DataFrame operations (as Spark's source)",
    "value.deserializer": "values are bytes; deserialize them with DataFrame operations (as Spark's source)",
    "interceptor.classes": "interceptors could change records (refused by Spark's source too)",
    "ssl.truststore.certificates": "give the CA certificates as a PEM file: kafka.ssl.truststore.location",
    "ssl.keystore.certificate.chain": "give the key and chain as a PEM file: kafka.ssl.keystore.location",
    "ssl.keystore.key": "give the key and chain as a PEM file: kafka.ssl.keystore.location",
    "ssl.key.password": "asyncconsumer reads unencrypted PEM keys only",
    "ssl.keystore.password": "asyncconsumer reads unencrypted PEM keys only",
    "ssl.truststore.password": "a PEM trust store has no password",
}
"""``kafka.*`` settings refused, with why."""
_GROUP_KEYS = ("group.id",)
"""Accepted and not given to our consumers: see ``_consumer_settings``."""
_JAAS = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*(?P<rest>.*?);?\s*$")
_JAAS_OPTION = re.compile(r'\s*(?P<key>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')
_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
_LOGIN_MODULES = {
    _KRB5_MODULE: ("GSSAPI",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    _OAUTH_MODULE: ("OAUTHBEARER",),
}
_OAUTH_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
"""Java's client-credentials login handler: what our built-in OAUTHBEARER provider does."""
_OAUTH_JAAS = {
    "clientId": "sasl.oauthbearer.client.credentials.client.id",
    "clientSecret": "sasl.oauthbearer.client.credentials.client.secret",
    "scope": "sasl.oauthbearer.scope",
}
"""The OAuthBearerLoginModule options Java's login handler reads, as our settings (Kafka 4.1's own names)."""
_KRB5_IGNORED = frozenset({"storeKey", "doNotPrompt", "debug", "isInitiator", "refreshKrb5Config", "renewTGT"})
"""Krb5LoginModule options with no bearing on a client's login here (the library renews from the keytab itself)."""
_SECRETS = ("sasl.password", "sasl.oauthbearer.client.credentials.client.secret")
_DURATION = re.compile(r"^\s*(\d+)\s*(us|ms|s|sec|m|min|h|d)?\s*$")
_DURATION_MS = {"us": 0.001, "ms": 1, None: 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000}
_DURATION_MS |= {"h": 3_600_000, "d": 86_400_000}


def _hide_password(consumer: dict[str, Any]) -> str:
    return repr({k: ("***" if k in _SECRETS else v) for k, v in consumer.items()})


@attrs.define(frozen=True, slots=True)
class SourceOptions:
    """Everything a reader needs, plain data only: it is pickled to Spark's executors."""

    consumer: dict[str, Any] = attrs.field(repr=_hide_password)
    """Our consumer's settings (Java-style keys), security translated from Spark's Java names."""
    subscribe: tuple[str, ...] | None = None
    pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: OffsetSpec = "latest"
    ending: OffsetSpec = "latest"
    starting_timestamp: int | None = None
    starting_by_timestamp: dict[str, dict[int, int]] | None = None
    ending_timestamp: int | None = None
    ending_by_timestamp: dict[str, dict[int, int]] | None = None
    by_timestamp_strategy: str = "error"
    """startingOffsetsByTimestampStrategy: a starting timestamp no record is at or after fails ("error") or starts
    at the latest offset ("latest")."""
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    """maxTriggerDelay: a batch below minOffsetsPerTrigger is held back at most this long (Spark's default 15m)."""
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    fetch_offset_retries: int = 3
    """fetchOffset.numRetries: attempts at a driver-side offset lookup before its error is raised."""
    fetch_offset_retry_interval_ms: int = 1_000
    """fetchOffset.retryIntervalMs: the wait between those attempts."""
    arrow_batch_rows: int = 500_000
    use_arrow: bool = True
    poll_timeout_ms: int = 120_000
    """pollTimeoutMs (or Spark's kafkaConsumer.pollTimeoutMs): an executor's read fails after this long without
    progress; the default is Spark's (spark.network.timeout, 120 s)."""


def parse_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Checks every option and returns them typed; raises ``ConfigError`` naming the first bad one."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    kafka: dict[str, str] = {}
    for key, value in lowered.items():
        if key.startswith("kafka."):
            kafka[key[len("kafka.") :]] = value
        elif key not in _KNOWN and key != "path":
            raise ConfigError(key, f"unknown option; the source takes kafka.* and {', '.join(sorted(_KNOWN))}")
    consumer = _consumer_settings(kafka)
    given = [k for k in _SUBSCRIPTIONS if k in lowered]
    if len(given) != 1:
        raise ConfigError("subscribe", f"exactly one of subscribe, subscribePattern, assign is required; got {given}")
    values: dict[str, Any] = {"consumer": consumer}
    if "subscribe" in lowered:
        topics = tuple(t.strip() for t in lowered["subscribe"].split(",") if t.strip())
        if not topics:
            raise ConfigError("subscribe", "needs at least one topic name")
        values["subscribe"] = topics
    elif "subscribepattern" in lowered:
        pattern = lowered["subscribepattern"].strip()
        if not pattern:
            raise ConfigError("subscribePattern", "is empty")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError("subscribePattern", f"not a regular expression: {exc}") from exc
        values["pattern"] = pattern
    else:
        values["assign"] = _assign(lowered["assign"])
    values.update(_offset_options(lowered, streaming=streaming))
    values.update(_trigger_options(lowered, streaming=streaming))
    for key, name, field, minimum in (
        ("minpartitions", "minPartitions", "min_partitions", 1),
        ("maxrecordsperpartition", "maxRecordsPerPartition", "max_records_per_partition", 1),
        ("fetchoffset.numretries", "fetchOffset.numRetries", "fetch_offset_retries", 1),
        ("fetchoffset.retryintervalms", "fetchOffset.retryIntervalMs", "fetch_offset_retry_interval_ms", 0),
        ("arrowbatchrows", "arrowBatchRows", "arrow_batch_rows", 1),
    ):
        if key in lowered:
            values[field] = _integer(name, lowered[key], minimum)
    values.update(_poll_timeout(lowered))
    for key, field in (
        ("includeheaders", "include_headers"),
        ("failondataloss", "fail_on_data_loss"),
        ("usearrow", "use_arrow"),
    ):
        if key in lowered:
            values[field] = _boolean(key, lowered[key])
    if "groupidprefix" in lowered and not lowered["groupidprefix"].strip():
        raise ConfigError("groupIdPrefix", "is empty")
    return SourceOptions(**values)


def include_headers(options: Mapping[str, str]) -> bool:
    """The one option the schema depends on."""
    for key, value in options.items():
        if str(key).lower() == "includeheaders":
            return _boolean("includeHeaders", str(value))
    return False


def _consumer_settings(kafka: dict[str, str]) -> dict[str, Any]:
    """``kafka.*`` options (without the prefix) as our consumer's settings, checked by ``ConsumerConfig``.

    ``group.id`` (and the source option ``groupIdPrefix``) are accepted and not passed on. Spark's source gives its
    consumers a group id but assigns partitions and never commits, so the id never reaches a group coordinator; our
    consumer, given a group id, would look its coordinator up at once (one more request, and the group's DESCRIBE
    ACL). Group offsets for monitoring are ``commit_batch``/``with_group_commit``'s job.
    """
    for name, why in _REJECTED_KAFKA.items():
        if name in kafka:
            raise ConfigError(f"kafka.{name}", f"is not supported: {why}")
    if "group.id" in kafka:
        log.warning("spark.group_id_unused", group_id=kafka["group.id"])
    consumer = {k: v for k, v in kafka.items() if k not in _GROUP_KEYS}
    consumer.update(_jaas(consumer.pop("sasl.jaas.config", None), consumer))
    consumer.update(_store("truststore", consumer, "ssl.cafile"))
    consumer.update(_store("keystore", consumer, "ssl.certfile"))
    if "ssl.endpoint.identification.algorithm" in consumer:
        algorithm = consumer.pop("ssl.endpoint.identification.algorithm").strip().lower()
        if algorithm not in ("", "https"):
            raise ConfigError(
                "kafka.ssl.endpoint.identification.algorithm", f'must be "https" or "", got {algorithm!r}'
            )
        consumer["ssl.check.hostname"] = "true" if algorithm == "https" else "false"
    if "bootstrap.servers" not in consumer:
        raise ConfigError("kafka.bootstrap.servers", "is required")
    try:
        ConsumerConfig.from_kwargs(**consumer)
    except ConfigError as exc:
        raise ConfigError(f"kafka.{exc.key}", str(exc)) from exc
    return consumer


def _jaas(text: str | None, consumer: dict[str, str]) -> dict[str, str]:
    """``sasl.jaas.config`` (Java's ``<LoginModule> required username="..." password="...";``) as our
    ``sasl.username``/``sasl.password`` (SCRAM, PLAIN), OAUTHBEARER's or Kerberos's settings, matching
    ``sasl.mechanism``."""
    if text is None:
        return {}
    key = "kafka.sasl.jaas.config"
    match = _JAAS.match(text)
    if match is None:
        raise ConfigError(key, 'expected "<LoginModule class> required username=\\"...\\" password=\\"...\\";"')
    module = match["module"]
    if module not in _LOGIN_MODULES:
        raise ConfigError(
            key, f"login module {module} is not supported; asyncconsumer speaks SCRAM, PLAIN, OAUTHBEARER and GSSAPI"
        )
    mechanism = consumer.get("sasl.mechanism", "GSSAPI").strip().upper()  # Java's default mechanism is GSSAPI
    if mechanism not in _LOGIN_MODULES[module]:
        raise ConfigError(key, f"{module.rsplit('.', 1)[-1]} does not serve kafka.sasl.mechanism={mechanism}")
    rest = match["rest"]
    found: dict[str, str] = {}
    position = 0
    while position < len(rest.rstrip()):
        option = _JAAS_OPTION.match(rest, position)
        if option is None:
            raise ConfigError(key, f"cannot read the login module options at {rest[position : position + 20]!r}")
        value = option["quoted"] if option["quoted"] is not None else option["bare"]
        found[option["key"]] = re.sub(r"\\(.)", r"\1", value)
        position = option.end()
    if module == _OAUTH_MODULE:
        return _oauth_jaas(found, consumer)
    if module == _KRB5_MODULE:
        return _krb5_jaas(found, consumer)
    for name in ("username", "password"):
        if name not in found:
            raise ConfigError(key, f"has no {name}")
        if f"sasl.{name}" in consumer:
            raise ConfigError(f"kafka.sasl.{name}", "given twice: also in kafka.sasl.jaas.config")
    return {"sasl.username": found["username"], "sasl.password": found["password"]}


def _oauth_jaas(found: dict[str, str], consumer: dict[str, str]) -> dict[str, str]:
    """OAuthBearerLoginModule's options with Java's client-credentials login handler (``clientId``,
    ``clientSecret``, ``scope``, ``extension_<name>``) as our built-in provider's settings. The handler class is
    Java's; any other (a custom one, or the unsecured-JWT default) is Java code we cannot run."""
    handler = consumer.pop("sasl.login.callback.handler.class", "").strip()
    if handler != _OAUTH_LOGIN_HANDLER:
        raise ConfigError(
            "kafka.sasl.login.callback.handler.class",
            f"must be {_OAUTH_LOGIN_HANDLER} (the client-credentials grant) for OAUTHBEARER; "
            + ("custom handlers are Java classes" if handler else "Java's unsecured-token default is for tests"),
        )
    settings: dict[str, str] = {}
    extensions: list[str] = []
    for option, value in found.items():
        if option.startswith("extension_"):
            extensions.append(f"{option.removeprefix('extension_')}={value}")
        elif option in _OAUTH_JAAS:
            if _OAUTH_JAAS[option] in consumer:
                raise ConfigError(f"kafka.{_OAUTH_JAAS[option]}", "given twice: also in kafka.sasl.jaas.config")
            settings[_OAUTH_JAAS[option]] = value
        else:
            raise ConfigError("kafka.sasl.jaas.config", f"OAuthBearerLoginModule option {option!r} is not supported")
    if extensions:
        settings["sasl.oauthbearer.extensions"] = ",".join(extensions)
    return settings


def _krb5_jaas(found: dict[str, str], consumer: dict[str, str]) -> dict[str, str]:
    """Krb5LoginModule's options as our Kerberos settings: ``useKeyTab=true`` with ``keyTab`` and ``principal`` is
    a keytab login; otherwise the default credentials cache (``useTicketCache``). Kafka's own JAAS option
    ``serviceName`` is ``sasl.kerberos.service.name``. As in Java, ``keyTab`` counts only with ``useKeyTab=true``."""
    key = "kafka.sasl.jaas.config"
    settings: dict[str, str] = {}
    flags: dict[str, bool] = {}
    for name in ("useKeyTab", "useTicketCache"):
        if name in found:
            text = found.pop(name).strip().lower()
            if text not in ("true", "false"):
                raise ConfigError(key, f"Krb5LoginModule option {name} must be true or false, got {text!r}")
            flags[name] = text == "true"
    for option, value in found.items():
        ours = {"principal": "sasl.kerberos.principal", "serviceName": "sasl.kerberos.service.name"}.get(option)
        if option == "keyTab":
            if flags.get("useKeyTab"):
                ours = "sasl.kerberos.keytab"
            else:
                continue
        if ours is not None:
            if ours in consumer and consumer[ours] != value:
                raise ConfigError(f"kafka.{ours}", "given twice: also in kafka.sasl.jaas.config")
            settings[ours] = value
        elif option == "ticketCache":
            raise ConfigError(key, "Krb5LoginModule option 'ticketCache' is not supported: set KRB5CCNAME instead")
        elif option not in _KRB5_IGNORED:
            raise ConfigError(key, f"Krb5LoginModule option {option!r} is not supported")
    if flags.get("useKeyTab") and "sasl.kerberos.keytab" not in settings:
        raise ConfigError(key, "useKeyTab=true needs keyTab (the default keytab is not looked up)")
    return settings


def _store(kind: str, consumer: dict[str, str], ours: str) -> dict[str, str]:
    """``ssl.<kind>.location`` as our PEM file setting ``ours``; only ``ssl.<kind>.type=PEM`` (Java's default is
    JKS, which Python's ssl module cannot read)."""
    location = consumer.pop(f"ssl.{kind}.location", None)
    store_type = consumer.pop(f"ssl.{kind}.type", None)
    if location is None:
        if store_type is not None and store_type.strip().upper() != "PEM":
            raise ConfigError(f"kafka.ssl.{kind}.type", f"{store_type} is not supported; asyncconsumer reads PEM files")
        return {}
    if store_type is None or store_type.strip().upper() != "PEM":
        spelled = "JKS (Java's default)" if store_type is None else store_type
        convert = "keytool -exportcert -rfc" if kind == "truststore" else "openssl pkcs12 -nodes"
        raise ConfigError(
            f"kafka.ssl.{kind}.type",
            f"{spelled} is not supported: asyncconsumer reads PEM files; convert the store ({convert}) and set "
            f"kafka.ssl.{kind}.type=PEM",
        )
    if ours in consumer:
        raise ConfigError(f"kafka.{ours}", f"given twice: also as kafka.ssl.{kind}.location")
    return {ours: location}


def _offset_options(lowered: Mapping[str, str], *, streaming: bool) -> dict[str, Any]:
    """Where reading starts and (batch) ends: offsets, timestamps, and the no-match strategy. As Spark's source, a
    timestamp option wins over the offsets option of the same end (startingTimestamp > startingOffsetsByTimestamp >
    startingOffsets)."""
    values: dict[str, Any] = {}
    starting = _offsets("startingOffsets", lowered.get("startingoffsets", "latest" if streaming else "earliest"))
    if not streaming and (starting == "latest" or _has(starting, LATEST)):
        raise ConfigError("startingOffsets", "cannot be latest (-1) in a batch query")
    values["starting"] = starting
    ends = [n for n in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp") if n.lower() in lowered]
    if streaming and ends:
        raise ConfigError(ends[0], "is for batch queries only")
    if "endingoffsets" in lowered:
        values["ending"] = _offsets("endingOffsets", lowered["endingoffsets"])
        if values["ending"] == "earliest" or _has(values["ending"], EARLIEST):
            raise ConfigError("endingOffsets", "cannot be earliest (-2)")
    for end in ("starting", "ending"):
        if f"{end}timestamp" in lowered:
            values[f"{end}_timestamp"] = _integer(f"{end}Timestamp", lowered[f"{end}timestamp"], 0)
        if f"{end}offsetsbytimestamp" in lowered:
            values[f"{end}_by_timestamp"] = _offsets_json(
                f"{end}OffsetsByTimestamp", lowered[f"{end}offsetsbytimestamp"]
            )
    if "startingoffsetsbytimestampstrategy" in lowered:
        strategy = lowered["startingoffsetsbytimestampstrategy"].strip().lower()
        if strategy not in ("error", "latest"):
            raise ConfigError("startingOffsetsByTimestampStrategy", f'must be "error" or "latest", got {strategy!r}')
        values["by_timestamp_strategy"] = strategy
    first, last = values["starting"], values.get("ending")
    by_time = ("startingtimestamp", "startingoffsetsbytimestamp", "endingtimestamp", "endingoffsetsbytimestamp")
    if isinstance(first, dict) and isinstance(last, dict) and not any(k in lowered for k in by_time):
        _check_range("startingOffsets", first, last)
    return values


def _check_range(name: str, start: dict[str, dict[int, int]], end: dict[str, dict[int, int]]) -> None:
    """Per-partition starting and ending offsets name the same partitions, each start at or before its end."""
    starts = {(t, p): o for t, parts in start.items() for p, o in parts.items()}
    ends = {(t, p): o for t, parts in end.items() for p, o in parts.items()}
    if starts.keys() != ends.keys():
        raise ConfigError(name, f"names partitions {sorted(starts)} but endingOffsets names {sorted(ends)}")
    for tp, offset in starts.items():
        if offset >= 0 and ends[tp] >= 0 and offset > ends[tp]:
            raise ConfigError(name, f"{tp[0]}-{tp[1]}: starts at {offset}, after its ending offset {ends[tp]}")


def _trigger_options(lowered: Mapping[str, str], *, streaming: bool) -> dict[str, Any]:
    """maxOffsetsPerTrigger, minOffsetsPerTrigger and maxTriggerDelay: streaming only (a batch query logs that it
    ignores them, as Spark's source)."""
    if not streaming:
        for key in _STREAMING_ONLY:
            if key in lowered:
                log.warning("spark.option_ignored_in_batch", option=key)
        return {}
    values: dict[str, Any] = {}
    if "maxoffsetspertrigger" in lowered:
        values["max_offsets_per_trigger"] = _integer("maxOffsetsPerTrigger", lowered["maxoffsetspertrigger"], 1)
    if "minoffsetspertrigger" in lowered:
        values["min_offsets_per_trigger"] = _integer("minOffsetsPerTrigger", lowered["minoffsetspertrigger"], 1)
    if "maxtriggerdelay" in lowered:
        values["max_trigger_delay_ms"] = _duration_ms("maxTriggerDelay", lowered["maxtriggerdelay"])
    low, high = values.get("min_offsets_per_trigger"), values.get("max_offsets_per_trigger")
    if low is not None and high is not None and low > high:
        raise ConfigError("minOffsetsPerTrigger", f"{low} is above maxOffsetsPerTrigger ({high})")
    return values


def _poll_timeout(lowered: Mapping[str, str]) -> dict[str, int]:
    """pollTimeoutMs, or Spark's name for it, kafkaConsumer.pollTimeoutMs (both: they must agree)."""
    given = {
        name: _integer(name, lowered[name.lower()], 1)
        for name in ("kafkaConsumer.pollTimeoutMs", "pollTimeoutMs")
        if name.lower() in lowered
    }
    if len(set(given.values())) > 1:
        raise ConfigError("pollTimeoutMs", f"disagrees with kafkaConsumer.pollTimeoutMs: {given}")
    return {"poll_timeout_ms": next(iter(given.values()))} if given else {}


def _duration_ms(name: str, text: str) -> int:
    """Spark's time strings: ``500`` (ms), ``500ms``, ``10s``, ``5m``/``5min``, ``1h``, ``1d``."""
    match = _DURATION.match(text.lower())
    if match is None:
        raise ConfigError(name, f"must be a duration like 500ms, 10s, 5m, 1h; got {text!r}")
    return int(int(match[1]) * _DURATION_MS[match[2]])


def _has(spec: OffsetSpec, value: int) -> bool:
    return isinstance(spec, dict) and any(value in parts.values() for parts in spec.values())


def _integer(name: str, text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(name, f"must be an integer, got {text!r}") from None
    if value < minimum:
        raise ConfigError(name, f"must be >= {minimum}, got {value}")
    return value


def _boolean(name: str, text: str) -> bool:
    if text.strip().lower() not in ("true", "false"):
        raise ConfigError(name, f"must be true or false, got {text!r}")
    return text.strip().lower() == "true"


def _json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(name, f"is not valid JSON: {exc}") from exc


def _assign(text: str) -> dict[str, tuple[int, ...]]:
    raw = _json("assign", text)
    if not isinstance(raw, dict) or not raw:
        raise ConfigError("assign", 'must be JSON like {"topic": [0, 1]}')
    out: dict[str, tuple[int, ...]] = {}
    for topic, parts in raw.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and p >= 0 for p in parts):
            raise ConfigError("assign", f"topic {topic!r}: partitions must be a list of integers >= 0")
        out[topic] = tuple(sorted(set(parts)))
    return out


def _offsets_json(name: str, text: str) -> dict[str, dict[int, int]]:
    raw = _json(name, text)
    if not isinstance(raw, dict):
        raise ConfigError(name, 'must be "earliest", "latest" or JSON like {"topic": {"0": 23, "1": -2}}')
    out: dict[str, dict[int, int]] = {}
    for topic, parts in raw.items():
        if not isinstance(parts, dict):
            raise ConfigError(name, f"topic {topic!r}: expected an object of partition -> offset")
        out[topic] = {}
        for partition, offset in parts.items():
            if not str(partition).isdigit() or not isinstance(offset, int) or offset < -2:
                raise ConfigError(name, f"{topic}-{partition}: offset must be an integer >= -2, got {offset!r}")
            out[topic][int(partition)] = offset
    return out


def _offsets(name: str, text: str) -> OffsetSpec:
    stripped = text.strip()
    if stripped.lower() in ("earliest", "latest"):
        return stripped.lower()
    return _offsets_json(name, stripped)
