"""Plugins without a broker: config checks, the guard around a plugin's manager, the context's views, and the
lag monitor driven sans-I/O with literal timestamps and hand-built ListOffsets answers."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from asyncconsumer import Consumer
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError, KafkaConnectionError, PluginError
from asyncconsumer.events.background import BackgroundEvent, CallbackEvent, ErrorEvent
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.metrics import PluginMetricsStore
from asyncconsumer.plugins import Plugin, PluginContext, installed_plugins
from asyncconsumer.plugins.guard import GuardedManager
from asyncconsumer.plugins.lag_monitor import LagMonitor, create
from asyncconsumer.plugins.loader import load_plugins
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from asyncconsumer.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from asyncconsumer.records import TopicPartition

TP0, TP1, TP2 = (TopicPartition("t", p) for p in range(3))
NOT_LEADER_OR_FOLLOWER = 6


# --- config ----------------------------------------------------------------------------------------------------


def test_unknown_plugin_name_is_a_config_error_listing_the_installed_ones() -> None:
    ConsumerConfig.from_kwargs("h:1", plugins=["nope"])  # the config checks only the shape
    with pytest.raises(ConfigError, match=r"unknown plugin 'nope'; installed: .*lag-monitor") as raised:
        Consumer("h:1", plugins=["nope"])  # names are looked up where the consumer is built
    assert raised.value.key == "plugins"


def test_plugins_accept_names_plugin_objects_and_a_java_style_string() -> None:
    direct = Plugin("mine", lambda ctx: LagMonitor(ctx))
    assert ConsumerConfig.from_kwargs("h:1", plugins=["lag-monitor", direct]).plugins == ("lag-monitor", direct)
    assert ConsumerConfig.from_kwargs("h:1", plugins="lag-monitor").plugins == ("lag-monitor",)
    assert "lag-monitor" in installed_plugins()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"plugins": ["lag-monitor", "lag-monitor"]}, "'lag-monitor' is enabled twice"),
        ({"plugins": [Plugin("x", LagMonitor), Plugin("x", LagMonitor)]}, "'x' is enabled twice"),
        ({"plugins": [42]}, "installed plugin's name or a Plugin, got int"),
        ({"plugin_options": {"lag-monitor": {}}}, "'lag-monitor' is not enabled"),
        ({"plugins": ["lag-monitor"], "plugin_options": {"lag-monitor": 5}}, "must be a dict"),
        ({"plugin_errors": "ignore"}, "'isolate', 'fatal'"),
    ],
)
def test_bad_plugin_settings_are_config_errors_naming_the_key(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig.from_kwargs("h:1", **kwargs)


def test_a_plugin_needs_a_name_and_a_callable_factory() -> None:
    with pytest.raises(ConfigError, match="non-empty string"):
        Plugin("", LagMonitor)
    with pytest.raises(ConfigError, match="factory must be callable"):
        Plugin("x", 3)  # type: ignore[arg-type]


# --- the guard ---------------------------------------------------------------------------------------------------


class Scripted:
    """A manager whose ``poll`` does what the test says."""

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls = 0

    def poll(self, now_ms: int) -> PollResult:
        self.calls += 1
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome  # type: ignore[no-any-return]

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()


def test_a_manager_that_raises_is_switched_off_and_its_metrics_say_why() -> None:
    store = PluginMetricsStore()
    manager = Scripted(ValueError("boom"))
    guarded = GuardedManager("p", manager, store, fatal=False)
    assert guarded.poll(0) == PollResult()
    assert guarded.poll(1) == PollResult()
    assert manager.calls == 1  # never called again
    assert guarded.failed is not None and guarded.failed.plugin == "p"
    assert isinstance(guarded.failed.__cause__, ValueError)
    assert store.snapshot().failed == "plugin 'p': poll raised ValueError('boom')"


def test_a_manager_returning_something_else_than_a_poll_result_is_a_failure() -> None:
    guarded = GuardedManager("p", Scripted(None), PluginMetricsStore(), fatal=False)
    assert guarded.poll(0) == PollResult()
    assert "returned NoneType, not PollResult" in str(guarded.failed)


def test_fatal_mode_raises_the_plugin_error() -> None:
    guarded = GuardedManager("p", Scripted(RuntimeError("x")), PluginMetricsStore(), fatal=True)
    with pytest.raises(PluginError, match="plugin 'p': poll raised RuntimeError"):
        guarded.poll(0)


def test_response_callbacks_are_guarded_too() -> None:
    answered: list[object] = []

    def callback(result: object, now_ms: int) -> None:
        answered.append(result)
        raise KeyError("in callback")

    request = UnsentRequest(ListOffsetsRequest(topics=(), replica_id=-1), 1, callback)
    guarded = GuardedManager("p", Scripted(PollResult(5, (request,))), PluginMetricsStore(), fatal=False)
    result = guarded.poll(0)
    assert result.time_until_next_poll_ms == 5
    (wrapped,) = result.unsent_requests
    assert (wrapped.request, wrapped.node_id) == (request.request, 1)
    wrapped.on_response("answer", 3)
    assert answered == ["answer"]
    assert "LIST_OFFSETS response callback raised KeyError" in str(guarded.failed)
    wrapped.on_response("late", 4)  # a switched-off plugin hears nothing more
    assert answered == ["answer"]


# --- loading and the context -----------------------------------------------------------------------------------


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


def test_context_views_are_read_only_copies_and_speaking_up_makes_background_events() -> None:
    ctx, subs, _, _, events = context()
    subs.assign([TP0])
    subs.seek(TP0, 4)
    view = ctx.assignment()
    assert view == frozenset([TP0]) and isinstance(view, frozenset)
    assert ctx.position(TP0) == 4 and ctx.position(TP1) is None
    assert ctx.positions() == {TP0: 4}
    assert ctx.leader_for(TP1) == 2
    with pytest.raises(TypeError):
        ctx.options["x"] = 1  # type: ignore[index]
    error = KafkaConnectionError("x")
    ctx.report_error(error)
    ctx.call_on_caller(lambda: None)
    assert isinstance(events[0], ErrorEvent) and events[0].error is error
    assert isinstance(events[1], CallbackEvent)


def test_loader_switches_off_a_factory_that_fails_but_raises_bad_options() -> None:
    _, subs, meta, _, events = context()

    def bad_factory(c: PluginContext) -> object:
        return object()

    config = ConsumerConfig.from_kwargs("h:1", plugins=[Plugin("odd", bad_factory)])  # type: ignore[arg-type]
    loaded = load_plugins(config, ManualClock(), meta, subs, events.append)
    guarded, store = loaded["odd"]
    assert "lacks poll, poll_on_close" in str(store.snapshot().failed)
    assert guarded.poll(0) == PollResult()

    config = ConsumerConfig.from_kwargs("h:1", plugins=["lag-monitor"], plugin_options={"lag-monitor": {"interval": 5}})
    with pytest.raises(ConfigError, match="lag-monitor: unknown option"):
        load_plugins(config, ManualClock(), meta, subs, events.append)


# --- the lag monitor -------------------------------------------------------------------------------------------


def answer(offsets: dict[TopicPartition, int], error_code: int = 0) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=(
            ListOffsetsTopicResponse(
                name="t",
                partitions=tuple(
                    ListOffsetsPartitionResponse(
                        partition_index=tp.partition, error_code=error_code, timestamp=-1, offset=o
                    )
                    for tp, o in offsets.items()
                ),
            ),
        )
    )


def by_node(result: PollResult) -> dict[int | None, UnsentRequest]:
    return {u.node_id: u for u in result.unsent_requests}


def test_lag_monitor_asks_each_leader_once_per_interval_and_publishes_lag() -> None:
    ctx, subs, _, store, _ = context(options={"interval_ms": 1000})
    monitor = create(ctx)
    subs.assign([TP0, TP1, TP2])
    for tp, offset in ((TP0, 10), (TP1, 0), (TP2, 3)):
        subs.seek(tp, offset)
    sent = by_node(monitor.poll(0))
    assert set(sent) == {1, 2}
    asked = {
        (t.name, p.partition_index, p.timestamp)
        for u in sent.values()
        for t in u.request.topics  # type: ignore[attr-defined]
        for p in t.partitions
    }
    assert asked == {("t", 0, -1), ("t", 1, -1), ("t", 2, -1)}
    assert monitor.poll(1).unsent_requests == ()  # the round is in flight
    sent[1].on_response(answer({TP0: 25, TP2: 3}), 5)
    assert store.snapshot().values == {}  # published when the round is complete
    sent[2].on_response(answer({TP1: 7}), 6)
    snap = store.snapshot()
    assert {tp: m["lag"] for tp, m in snap.partitions.items()} == {TP0: 15, TP1: 7, TP2: 0}
    assert snap.partitions[TP0]["log_end_offset"] == 25
    assert snap.values == {"lag_total": 22, "lag_max": 15, "partitions": 3, "rounds": 1}

    result = monitor.poll(500)
    assert result.unsent_requests == () and result.time_until_next_poll_ms == 500
    assert len(monitor.poll(1000).unsent_requests) == 2


def test_lag_monitor_retries_next_round_and_refreshes_metadata_when_the_leader_moved() -> None:
    ctx, subs, meta, store, _ = context(leaders={0: 1}, options={"interval_ms": 100})
    monitor = create(ctx)
    subs.assign([TP0])
    subs.seek(TP0, 2)
    meta.poll(0)  # nothing due: metadata is fresh
    (request,) = monitor.poll(0).unsent_requests
    request.on_response(answer({TP0: -1}, NOT_LEADER_OR_FOLLOWER), 1)
    assert store.snapshot().partitions == {}
    assert meta.poll(2).unsent_requests  # a refresh was asked for
    (request,) = monitor.poll(100).unsent_requests
    request.on_response(KafkaConnectionError("gone"), 101)
    (request,) = monitor.poll(200).unsent_requests
    request.on_response(answer({TP0: 9}), 201)
    assert store.snapshot().partitions == {TP0: {"lag": 7, "log_end_offset": 9}}


def test_lag_monitor_forgets_partitions_that_are_no_longer_assigned() -> None:
    ctx, subs, _, store, _ = context(leaders={0: 1, 1: 1}, options={"interval_ms": 100})
    monitor = create(ctx)
    subs.assign([TP0, TP1])
    subs.seek(TP0, 0)
    subs.seek(TP1, 0)
    (request,) = monitor.poll(0).unsent_requests
    request.on_response(answer({TP0: 4, TP1: 6}), 1)
    assert set(store.snapshot().partitions) == {TP0, TP1}
    subs.assign([TP1])
    monitor.poll(2)
    assert set(store.snapshot().partitions) == {TP1}
    assert store.snapshot().values["lag_total"] == 6


def test_lag_monitor_uses_the_last_stable_offset_under_read_committed_and_checks_its_interval() -> None:
    ctx, subs, _, _, _ = context(leaders={0: 1}, isolation_level="read_committed")
    subs.assign([TP0])
    (request,) = LagMonitor(ctx).poll(0).unsent_requests
    assert request.request.isolation_level == 1  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="interval_ms must be an integer >= 10, got 0"):
        LagMonitor(ctx, interval_ms=0)
