"""Plugins against the real broker: discovered through installed entry points, polled by the real loop.

``tests/plugin_example`` is a separate distribution (installed by the README's test command) whose entry points
are ``api-probe``, ``fails-on-response`` and ``missing-factory``; ``lag-monitor`` comes from this package's own.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from asyncconsumer import AsyncConsumer, ClientClosedError, Consumer, ConsumerMetrics, PluginError, TopicPartition
from asyncconsumer.plugins import Plugin, PluginContext, PollResult, installed_plugins
from tests.conftest import Broker, TopicFactory
from tests.support.produce import ProduceHelper, Record
from tests.support.waiting import wait_for, wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

EXAMPLE_DISTRIBUTION = "tests/plugin_example (pip install -e ./tests/plugin_example, as the README's test command does)"


def require_example_plugins() -> None:
    missing = {"api-probe", "fails-on-response", "missing-factory"} - set(installed_plugins())
    assert not missing, f"the example plugin distribution is not installed: {EXAMPLE_DISTRIBUTION}"


def batches_ending_in_one(partition: int, count: int) -> list[list[Record]]:
    """``count`` records whose last batch holds one record (Tansu answers LATEST with the last batch's base + 1)."""
    head = [Record(b"p%d-%d" % (partition, i), partition=partition) for i in range(count - 1)]
    tail = [[Record(b"p%d-last" % partition, partition=partition)]]
    return [head, *tail] if head else tail


async def wait_for_metrics(
    consumer: AsyncConsumer, predicate: Any, what: str, timeout: float = 15.0
) -> ConsumerMetrics:
    """Polls (so callbacks run and the loop is busy as in real use) until ``predicate(metrics)`` holds."""
    last: list[ConsumerMetrics] = []

    async def check() -> ConsumerMetrics | None:
        await consumer.poll(timeout_ms=20)
        last[:] = [consumer.metrics()]
        return last[0] if predicate(last[0]) else None

    return await wait_for_async(
        check, timeout, message=lambda: f"{what}; last metrics: {last[-1].plugins if last else None}"
    )


async def test_entry_point_plugin_from_another_distribution_is_polled_against_the_broker(
    broker: Broker, topic: TopicFactory
) -> None:
    require_example_plugins()
    name = topic(3)
    async with AsyncConsumer(
        broker.bootstrap_servers, plugins=["api-probe"], plugin_options={"api-probe": {"interval_ms": 50}}
    ) as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(3)])
        metrics = await wait_for_metrics(
            consumer, lambda m: m.plugins["api-probe"].values.get("probes", 0) >= 3, "three ApiVersions answers"
        )
    probe = metrics.plugins["api-probe"]
    assert probe.failed is None
    assert probe.values["fetch_max_version"] >= 4  # Tansu's real answer: it speaks Fetch v4+
    assert probe.values["assigned_partitions"] == 3  # the context's assignment view
    assert probe.values.get("errors", 0) == 0


async def test_lag_monitor_reports_lag_of_paused_partitions_and_follows_consumption(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    tp0, tp1 = TopicPartition(name, 0), TopicPartition(name, 1)
    await produce.batches_async(name, batches_ending_in_one(0, 30), partition=0)
    await produce.batches_async(name, batches_ending_in_one(1, 12), partition=1)
    async with AsyncConsumer(
        broker.bootstrap_servers,
        auto_offset_reset="earliest",
        plugins=["lag-monitor"],
        plugin_options={"lag-monitor": {"interval_ms": 50}},
    ) as consumer:
        await consumer.assign([tp0, tp1])
        await consumer.pause(tp0, tp1)
        await consumer.seek(tp0, 5)
        await consumer.seek(tp1, 0)

        def lags(m: ConsumerMetrics) -> dict[TopicPartition, float]:
            return {tp: v["lag"] for tp, v in m.plugins["lag-monitor"].partitions.items() if "lag" in v}

        # Paused: nothing is fetched, so only the monitor knows the lag.
        metrics = await wait_for_metrics(consumer, lambda m: lags(m) == {tp0: 25, tp1: 12}, "lag of the paused")
        monitor = metrics.plugins["lag-monitor"]
        assert monitor.partitions[tp0]["log_end_offset"] == 30
        assert monitor.values["lag_total"] == 37
        assert monitor.values["lag_max"] == 25
        assert metrics.partitions[tp0].high_watermark is None  # never fetched

        await consumer.resume(tp0, tp1)
        got = 0
        deadline = time.monotonic() + 20
        while got < 37:
            assert time.monotonic() < deadline, f"only {got} of 37 records"
            got += (await consumer.poll(timeout_ms=500)).count()
        await wait_for_metrics(consumer, lambda m: lags(m) == {tp0: 0, tp1: 0}, "lag 0 after consuming")

        # New data for a paused partition shows up as lag without being fetched.
        await consumer.pause(tp1)
        await produce.batches_async(name, batches_ending_in_one(1, 7), partition=1)
        metrics = await wait_for_metrics(consumer, lambda m: lags(m).get(tp1) == 7, "lag 7 on paused partition 1")
        assert metrics.plugins["lag-monitor"].values["rounds"] >= 3

        # Unassigned partitions disappear from the plugin's metrics.
        await consumer.assign([tp0])
        metrics = await wait_for_metrics(
            consumer, lambda m: set(m.plugins["lag-monitor"].partitions) == {tp0}, "only partition 0 left"
        )
        assert lags(metrics) == {tp0: 0}


class RaisingManager:
    """Raises from ``poll`` on its third call."""

    def __init__(self, context: PluginContext) -> None:
        self.context = context
        self.calls = 0

    def poll(self, now_ms: int) -> PollResult:
        self.calls += 1
        if self.calls == 3:
            raise ValueError("broken on purpose")
        return PollResult(10)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()


async def test_a_failing_plugin_is_isolated_and_the_consumer_keeps_consuming(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, caplog: pytest.LogCaptureFixture
) -> None:
    require_example_plugins()
    name = topic(2)
    produced = await produce.values_async(name, 400, 2)
    caplog.set_level(logging.ERROR, logger="asyncconsumer.plugins")
    async with AsyncConsumer(
        broker.bootstrap_servers,
        auto_offset_reset="earliest",
        plugins=[Plugin("raiser", RaisingManager), "fails-on-response", "missing-factory", "lag-monitor"],
        plugin_options={"fails-on-response": {"interval_ms": 20}, "lag-monitor": {"interval_ms": 50}},
    ) as consumer:
        await consumer.assign([TopicPartition(name, p) for p in range(2)])
        seen: set[tuple[int, int]] = set()
        deadline = time.monotonic() + 20
        while len(seen) < 400:
            assert time.monotonic() < deadline, f"only {len(seen)} of 400 records"
            seen |= {(r.partition, r.offset) for r in (await consumer.poll(timeout_ms=500)).records()}
        metrics = await wait_for_metrics(
            consumer,
            lambda m: (
                all(m.plugins[n].failed for n in ("raiser", "fails-on-response", "missing-factory"))
                and m.plugins["lag-monitor"].values.get("rounds", 0) >= 2
            ),
            "three failed plugins and a working lag monitor",
        )
    assert seen == {(r.partition, r.offset) for recs in produced.values() for r in recs}
    plugins = metrics.plugins
    assert "broken on purpose" in str(plugins["raiser"].failed)
    assert "fails-on-response always fails" in str(plugins["fails-on-response"].failed)
    assert "API_VERSIONS response callback" in str(plugins["fails-on-response"].failed)
    assert "no_such_factory" in str(plugins["missing-factory"].failed)
    assert plugins["lag-monitor"].failed is None
    failed_events = [r.getMessage() for r in caplog.records if "plugin.failed" in r.getMessage()]
    for plugin in ("raiser", "fails-on-response", "missing-factory"):
        assert sum(f"plugin='{plugin}'" in e for e in failed_events) == 1, failed_events  # once, naming it


async def test_fatal_plugin_errors_stop_the_consumer_with_the_plugins_error(
    broker: Broker, topic: TopicFactory
) -> None:
    name = topic(1)
    consumer = AsyncConsumer(
        broker.bootstrap_servers, plugins=[Plugin("raiser", RaisingManager)], plugin_errors="fatal"
    )
    await consumer.start()
    raised: list[PluginError] = []
    try:  # the plugin may have failed already: then this call is the first to hear it
        await consumer.assign([TopicPartition(name, 0)])
    except PluginError as exc:
        raised.append(exc)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            await consumer.poll(timeout_ms=100)
        except PluginError as exc:  # the assign's own failure, or the error the thread stopped with
            raised.append(exc)
            break
        except ClientClosedError:
            break  # the assign took the error the thread stopped with
    assert raised, "no call raised the plugin's error"
    assert [e.plugin for e in raised] == ["raiser"] * len(raised)
    assert "plugin 'raiser': poll raised ValueError" in str(raised[0])
    with pytest.raises(ClientClosedError, match="raiser"):
        await consumer.poll(timeout_ms=10)
    await consumer.close()


def test_fatal_plugin_that_cannot_load_fails_the_constructor(broker: Broker) -> None:
    require_example_plugins()
    with pytest.raises(PluginError, match=r"missing-factory.*no_such_factory") as raised:
        Consumer(broker.bootstrap_servers, plugins=["missing-factory"], plugin_errors="fatal")
    assert raised.value.plugin == "missing-factory"


def test_blocking_consumer_runs_plugins_too(broker: Broker, topic: TopicFactory) -> None:
    require_example_plugins()
    name = topic(1)
    with Consumer(
        broker.bootstrap_servers, plugins=["api-probe"], plugin_options={"api-probe": {"interval_ms": 50}}
    ) as consumer:
        consumer.assign([TopicPartition(name, 0)])

        def probes() -> float:
            consumer.poll(timeout_ms=10)
            return consumer.metrics().plugins["api-probe"].values.get("probes", 0)

        assert wait_for(lambda: probes() >= 2, 15, message="two ApiVersions answers through the blocking Consumer")
