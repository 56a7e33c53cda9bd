"""Apache Kafka with a KIP-714 client-telemetry receiver, for the telemetry tests.

``kafka/TelemetryRecorder.java`` is compiled once with ``javac`` against the broker's jars (``javac.py``) and set as
the broker's ``metric.reporters``; every push it accepts becomes one JSON line in the file the broker config
``telemetry.recorder.file`` names. Subscriptions are client-metrics configs (IncrementalAlterConfigs, resource type
CLIENT_METRICS), set with the project's own admin client.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from asyncconsumer.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from asyncconsumer.tools.admin import CONFIG_SET, AdminClient
from tests.support.javac import CompileError, compiled
from tests.support.kafka_broker import KafkaCluster, KafkaUnavailable, cache_root, fetch_jars

SOURCE = Path(__file__).with_name("kafka") / "TelemetryRecorder.java"
CLIENT_METRICS_RESOURCE = 16
"""IncrementalAlterConfigs' resource type of a client-metrics subscription (Kafka's ``ConfigResource.Type``)."""
MIN_INTERVAL_MS = 100
"""The least ``interval.ms`` Kafka 4.4 accepts for a subscription (``ClientMetricsConfigs``)."""


def recorder_classes(libs: Path) -> Path:
    """The directory holding ``TelemetryRecorder.class``, compiled on first use (one process at a time)."""
    try:
        return compiled([SOURCE], sorted(libs.glob("*.jar")), cache_root() / "telemetry-recorder")
    except CompileError as exc:
        raise KafkaUnavailable(str(exc)) from exc


def start_kafka_with_recorder(pushes: Path, **options: Any) -> KafkaCluster:
    """One Kafka node whose telemetry receiver appends every push to ``pushes``."""
    classes = recorder_classes(fetch_jars())
    settings = {"metric.reporters": "TelemetryRecorder", "telemetry.recorder.file": str(pushes)}
    return KafkaCluster.start(settings=settings, classpath=[classes], **options)


def read_pushes(path: Path, client_id: str | None = None) -> list[dict[str, Any]]:
    """The pushes recorded so far (of ``client_id``'s connections only, when given), oldest first."""
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [p for p in lines if client_id is None or p["client_id"] == client_id]


def values(push: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A push's data points by metric name."""
    out: dict[str, list[dict[str, Any]]] = {}
    for point in push.get("metrics", ()):
        out.setdefault(point["name"], []).append(point)
    return out


async def set_subscription(
    bootstrap_servers: str, name: str, *, metrics: Iterable[str], interval_ms: int, client_id: str | None = None
) -> None:
    """Creates or replaces client-metrics subscription ``name``: ``metrics`` prefixes (``*`` for all), pushed every
    ``interval_ms``, by clients whose client id is ``client_id`` (every client when None)."""
    configs = [
        AlterableConfig(name="metrics", config_operation=CONFIG_SET, value=",".join(metrics)),
        AlterableConfig(name="interval.ms", config_operation=CONFIG_SET, value=str(interval_ms)),
    ]
    if client_id is not None:
        configs.append(AlterableConfig(name="match", config_operation=CONFIG_SET, value=f"client_id={client_id}"))
    request = IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(resource_type=CLIENT_METRICS_RESOURCE, resource_name=name, configs=tuple(configs)),
        )
    )
    async with AdminClient(bootstrap_servers) as admin:
        response = await admin._send(request, None, IncrementalAlterConfigsResponse)
    (answer,) = response.responses
    if answer.error_code:
        raise AssertionError(f"client-metrics subscription {name!r}: error {answer.error_code} {answer.error_message}")
