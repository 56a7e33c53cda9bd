"""Log events a user meets on an ordinary path, against the real brokers: a subscription to a topic that does not
exist is warned of once (``subscription.topic_unknown``), and a normal close logs no failure (a fetch still out is
``fetch.cancelled``, not ``fetch.failed``)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from asyncconsumer import AsyncConsumer, TopicPartition
from asyncconsumer._background import group as group_module
from asyncconsumer._background import network_thread as network_thread_module
from asyncconsumer.managers import commit as commit_module
from asyncconsumer.managers import coordinator as coordinator_module
from asyncconsumer.managers import fetch as fetch_module
from asyncconsumer.managers import heartbeat_classic, heartbeat_consumer, membership_classic, membership_consumer
from asyncconsumer.managers import metadata as metadata_module
from asyncconsumer.managers import offsets as offsets_module
from asyncconsumer.network import connection as connection_module
from asyncconsumer.network import delegate as delegate_module
from tests.conftest import Broker, TopicFactory
from tests.support.consume import consume_until
from tests.support.logs import captured_events, events_named
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

CLOSE_PATH = (
    fetch_module,
    commit_module,
    coordinator_module,
    metadata_module,
    offsets_module,
    membership_classic,
    membership_consumer,
    heartbeat_classic,
    heartbeat_consumer,
    group_module,
    network_thread_module,
    delegate_module,
    connection_module,
)
"""The modules whose events a close could log: the managers, the group, the loop and the network."""


async def _warned_once_of_the_missing_topic(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, monkeypatch: pytest.MonkeyPatch, **settings: Any
) -> None:
    existing = topic(1)
    produced = await produce.values_async(existing, 5, 1)
    missing = f"no-such-topic-{uuid.uuid4().hex[:10]}"
    with captured_events(monkeypatch, group_module, metadata_module) as events:
        async with AsyncConsumer(
            broker.bootstrap_servers, group_id=f"g-{missing}", auto_offset_reset="earliest", **settings
        ) as consumer:
            await consumer.subscribe([existing, missing])
            got = await consume_until(consumer, len(produced[0]), timeout_s=30, poll_s=0.2)

            async def polled_until_warned() -> bool:
                await consumer.poll(timeout_ms=100)
                return bool(events_named(events, "subscription.topic_unknown"))

            await wait_for_async(polled_until_warned, 20, message="subscription.topic_unknown")
            refreshes = len(events_named(events, "metadata.updated"))

            async def three_more_refreshes() -> bool:  # the unknown topic is asked about again every second
                await consumer.poll(timeout_ms=100)
                return len(events_named(events, "metadata.updated")) >= refreshes + 3

            await wait_for_async(three_more_refreshes, 20, message="three more metadata refreshes")
    assert [r.offset for r in got] == [r.offset for r in produced[0]]  # the topic that exists is consumed
    warned = events_named(events, "subscription.topic_unknown")
    assert [(e["log_level"], e["topics"], e["group"]) for e in warned] == [("warning", [missing], f"g-{missing}")]


async def test_subscribing_to_a_topic_that_does_not_exist_warns_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _warned_once_of_the_missing_topic(broker, topic, produce, monkeypatch)


@pytest.mark.kafka_only("Tansu has no ConsumerGroupHeartbeat (API 68)")
async def test_a_kip848_member_subscribing_to_a_topic_that_does_not_exist_warns_once(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _warned_once_of_the_missing_topic(broker, topic, produce, monkeypatch, group_protocol="consumer")


@pytest.mark.parametrize("how", ["assign", "subscribe"])
async def test_a_normal_close_logs_no_failure(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Caught up, the consumer's next fetch waits at the broker (up to ``fetch_max_wait_ms``, long here so that it
    is surely out when the close comes); the close abandons it."""
    name = topic(2)
    produced = await produce.values_async(name, 20, 2)
    group: dict[str, Any] = {"group_id": f"g-{name}"} if how == "subscribe" else {}
    with captured_events(monkeypatch, *CLOSE_PATH) as events:
        async with AsyncConsumer(
            broker.bootstrap_servers, auto_offset_reset="earliest", fetch_max_wait_ms=20_000, **group
        ) as consumer:
            if how == "subscribe":
                await consumer.subscribe([name])
            else:
                await consumer.assign([TopicPartition(name, p) for p in range(2)])
            got = await consume_until(consumer, 20, timeout_s=30, poll_s=0.2)
            assert (await consumer.poll(timeout_ms=200)).count() == 0
            closing_from = len(events)
            started = time.monotonic()
        closed_in_s = time.monotonic() - started
    assert len(got) == sum(len(records) for records in produced.values())
    assert events_named(events, "fetch.completed") != []  # it fetched, and the capture heard the fetch manager
    at_close = events[closing_from:]
    assert [e for e in at_close if e["event"].endswith(".failed") or e["log_level"] in ("warning", "error")] == []
    assert events_named(at_close, "coordinator.lost") == []  # the close hung up on it; nothing was lost
    cancelled = events_named(at_close, "fetch.cancelled")
    assert cancelled != []
    assert {e["log_level"] for e in cancelled} == {"debug"}
    assert closed_in_s < 10  # the fetch waiting at the broker did not hold the close up
