"""The data source's options, checked before a query starts: the names of Spark's own Kafka source.

``kafka.*`` options go to our consumer's configuration (``kafka.bootstrap.servers`` -> ``bootstrap.servers``);
everything else must be one of the source options below. A mistake is a ``ConfigError`` naming the option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError

EARLIEST = -2
"""In per-partition offset JSON: the partition's earliest offset (as Spark's Kafka source)."""
LATEST = -1
"""In per-partition offset JSON: the partition's latest offset."""

OffsetSpec = str | dict[str, dict[int, int]]
"""``"earliest"``, ``"latest"``, or topic -> partition -> offset (-2 earliest, -1 latest)."""

_SUBSCRIPTIONS = ("subscribe", "subscribepattern", "assign")
_KNOWN = frozenset(
    {
        *_SUBSCRIPTIONS,
        "startingoffsets",
        "endingoffsets",
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
        "endingtimestamp",
        "endingoffsetsbytimestamp",
        "maxoffsetspertrigger",
        "minpartitions",
        "includeheaders",
        "failondataloss",
        "arrowbatchrows",
        "usearrow",
        "polltimeoutms",
    }
)
_CLIENT_OWNED = frozenset({"group.id", "enable.auto.commit", "auto.offset.reset"})
"""Consumer settings the source decides itself (offsets live in Spark's checkpoint), as Spark's Kafka source."""


@attrs.define(frozen=True, slots=True)
class SourceOptions:
    """Everything a reader needs, plain data only: it is pickled to Spark's executors."""

    consumer: dict[str, Any]
    subscribe: tuple[str, ...] | None = None
    pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: OffsetSpec = "latest"
    ending: OffsetSpec = "latest"
    starting_timestamp: int | None = None
    starting_by_timestamp: dict[str, dict[int, int]] | None = None
    starting_timestamp_strategy: str = "error"
    """``startingOffsetsByTimestampStrategy``: no offset at or after the timestamp is an error, or the latest."""
    ending_timestamp: int | None = None
    ending_by_timestamp: dict[str, dict[int, int]] | None = None
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    arrow_batch_rows: int = 500_000
    use_arrow: bool = True
    poll_timeout_ms: int = 120_000


def parse_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Checks every option and returns them typed; raises ``ConfigError`` naming the first bad one."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    consumer: dict[str, Any] = {}
    for key, value in lowered.items():
        if key.startswith("kafka."):
            name = key[len("kafka.") :]
            if name in _CLIENT_OWNED:
                raise ConfigError(key, "is not supported: the source keeps offsets in Spark's checkpoint")
            consumer[name] = value
        elif key not in _KNOWN and key != "path":
            raise ConfigError(key, f"unknown option; the source takes kafka.* and {', '.join(sorted(_KNOWN))}")
    if "bootstrap.servers" not in consumer:
        raise ConfigError("kafka.bootstrap.servers", "is required")
    try:
        ConsumerConfig.from_kwargs(**consumer)
    except ConfigError as exc:
        raise ConfigError(f"kafka.{exc.key}", str(exc)) from exc
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
        try:
            re.compile(lowered["subscribepattern"])
        except re.error as exc:
            raise ConfigError("subscribePattern", f"not a regular expression: {exc}") from exc
        values["pattern"] = lowered["subscribepattern"]
    else:
        values["assign"] = _assign(lowered["assign"])
    values["starting"] = _offsets(
        "startingOffsets", lowered.get("startingoffsets", "latest" if streaming else "earliest")
    )
    if "endingoffsets" in lowered:
        if streaming:
            raise ConfigError("endingOffsets", "is for batch queries only")
        values["ending"] = _offsets("endingOffsets", lowered["endingoffsets"])
        if values["ending"] == "earliest" or _has(values["ending"], EARLIEST):
            raise ConfigError("endingOffsets", "cannot be earliest (-2)")
    if "startingtimestamp" in lowered and "startingoffsetsbytimestamp" in lowered:
        raise ConfigError("startingTimestamp", "give startingTimestamp or startingOffsetsByTimestamp, not both")
    if "startingtimestamp" in lowered:
        values["starting_timestamp"] = _integer("startingTimestamp", lowered["startingtimestamp"], 0)
    if "startingoffsetsbytimestamp" in lowered:
        values["starting_by_timestamp"] = _offsets_json(
            "startingOffsetsByTimestamp", lowered["startingoffsetsbytimestamp"]
        )
    if "startingoffsetsbytimestampstrategy" in lowered:
        strategy = lowered["startingoffsetsbytimestampstrategy"].strip().lower()
        if strategy not in ("error", "latest"):
            raise ConfigError("startingOffsetsByTimestampStrategy", f"must be error or latest, got {strategy!r}")
        values["starting_timestamp_strategy"] = strategy
    for key, name in (("endingtimestamp", "endingTimestamp"), ("endingoffsetsbytimestamp", "endingOffsetsByTimestamp")):
        if key in lowered and streaming:
            raise ConfigError(name, "is for batch queries only")
    if "endingtimestamp" in lowered and "endingoffsetsbytimestamp" in lowered:
        raise ConfigError("endingTimestamp", "give endingTimestamp or endingOffsetsByTimestamp, not both")
    if "endingtimestamp" in lowered:
        values["ending_timestamp"] = _integer("endingTimestamp", lowered["endingtimestamp"], 0)
    if "endingoffsetsbytimestamp" in lowered:
        values["ending_by_timestamp"] = _offsets_json("endingOffsetsByTimestamp", lowered["endingoffsetsbytimestamp"])
    if "maxoffsetspertrigger" in lowered:
        if not streaming:
            raise ConfigError("maxOffsetsPerTrigger", "is for streaming queries only")
        values["max_offsets_per_trigger"] = _integer("maxOffsetsPerTrigger", lowered["maxoffsetspertrigger"], 1)
    if "minpartitions" in lowered:
        values["min_partitions"] = _integer("minPartitions", lowered["minpartitions"], 1)
    if "arrowbatchrows" in lowered:
        values["arrow_batch_rows"] = _integer("arrowBatchRows", lowered["arrowbatchrows"], 1)
    if "polltimeoutms" in lowered:
        values["poll_timeout_ms"] = _integer("pollTimeoutMs", lowered["polltimeoutms"], 1)
    for key, field in (
        ("includeheaders", "include_headers"),
        ("failondataloss", "fail_on_data_loss"),
        ("usearrow", "use_arrow"),
    ):
        if key in lowered:
            values[field] = _boolean(key, lowered[key])
    return SourceOptions(**values)


def include_headers(options: Mapping[str, str]) -> bool:
    """The one option the schema depends on."""
    for key, value in options.items():
        if str(key).lower() == "includeheaders":
            return _boolean("includeHeaders", str(value))
    return False


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
