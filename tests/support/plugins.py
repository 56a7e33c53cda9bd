"""A plugin's context with nothing running: a metadata manager that already answered (topic ``t``, leaders by
partition on nodes 1 and 2), a fresh subscription state, a metrics store and the background events emitted, for the
plugin unit tests."""

from __future__ import annotations

import uuid
from typing import Any

from asyncconsumer._clock import ManualClock
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.events.background import BackgroundEvent
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.metrics import PluginMetricsStore
from asyncconsumer.plugins import PluginContext
from asyncconsumer.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from asyncconsumer.records import TopicPartition

TP0, TP1, TP2 = (TopicPartition("t", p) for p in range(3))


def metadata(leaders: dict[int, int]) -> MetadataManager:
    manager = MetadataManager(["h:1"], 60_000, ExponentialBackoff(100, 1000, jitter=0.0))
    (request,) = manager.poll(0).unsent_requests
    partitions = tuple(
        MetadataResponsePartition(
            error_code=0,
            partition_index=p,
            leader_id=leader,
            leader_epoch=0,
            replica_nodes=(leader,),
            isr_nodes=(leader,),
        )
        for p, leader in leaders.items()
    )
    request.on_response(
        MetadataResponse(
            brokers=(
                MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092),
                MetadataResponseBroker(node_id=2, host="127.0.0.1", port=9093),
            ),
            topics=(MetadataResponseTopic(error_code=0, name="t", partitions=partitions, topic_id=uuid.uuid4()),),
            cluster_id="c",
            controller_id=1,
        ),
        0,
    )
    return manager


def context(
    leaders: dict[int, int] | None = None, options: dict[str, Any] | None = None, **config: Any
) -> tuple[PluginContext, SubscriptionState, MetadataManager, PluginMetricsStore, list[BackgroundEvent]]:
    subs = SubscriptionState("earliest")
    meta = metadata(leaders if leaders is not None else {0: 1, 1: 2, 2: 1})
    store = PluginMetricsStore()
    events: list[BackgroundEvent] = []
    ctx = PluginContext(
        "lag-monitor",
        options or {},
        ConsumerConfig.from_kwargs("h:1", **config),
        ManualClock(),
        meta,
        subs,
        events.append,
        store,
    )
    return ctx, subs, meta, store, events
