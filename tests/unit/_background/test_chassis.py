"""The chassis (``_background/chassis.py``): the node directory, the managers in the order a kind's parts declare
them, what a fatal network error tells the caller, the end of a loop iteration, and the telemetry every kind gets."""

from __future__ import annotations

from typing import Any

import attrs

from asyncconsumer._background.builder import build
from asyncconsumer._background.chassis import POLLED, NodeDirectory, polled_managers
from asyncconsumer._clock import ManualClock
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import AuthenticationError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from tests.support.group_context import answer_metadata


def config(**settings: Any) -> ConsumerConfig:
    return ConsumerConfig.from_kwargs("h:1", **settings)


def test_the_coordinators_own_connection_is_found_before_the_clusters_nodes() -> None:
    parts = build(config(group_id="g"), ManualClock())
    owned, group = parts.owned, parts.owned.group
    assert group is not None
    nodes = NodeDirectory(owned.metadata)
    nodes.use_coordinator(group)
    assert nodes.candidate_nodes() == owned.metadata.candidate_nodes()
    answer_metadata(owned.metadata, {"t": 1})  # node 1 at h:9092
    assert nodes.address(1) == ("h", 9092)
    (find,) = group.coordinator.poll(0).unsent_requests
    find.on_response(
        FindCoordinatorResponse(error_code=0, node_id=1, host="coordinator-host", port=9093, error_message=None), 0
    )
    coordinator = group.coordinator.coordinator
    assert coordinator is not None
    assert nodes.address(coordinator.node_id) == ("coordinator-host", 9093)
    assert nodes.address(1) == ("h", 9092)  # the broker's own connection stays the cluster's
    assert NodeDirectory(owned.metadata).address(coordinator.node_id) is None  # no coordinator registered


def test_a_fatal_network_error_reaches_the_caller_and_fails_what_waits() -> None:
    parts = build(config(), ManualClock())
    failed = AuthenticationError("SASL PLAIN refused by broker 1")
    for listener in parts.owned.delegate._fatal_listeners:
        listener(failed)
    parts.thread._publish(5)  # the end of the loop iteration
    assert parts.background_events.drain() == [ErrorEvent(failed)]


def test_the_end_of_a_loop_iteration_publishes_the_snapshot_then_delivers_what_it_staged() -> None:
    parts = build(config(group_id="g"), ManualClock())
    group = parts.owned.group
    assert group is not None
    seen = parts.signal.seq
    order: list[str] = []
    parts.background_events.stage(ErrorEvent(AuthenticationError("x")))
    (find,) = group.coordinator.poll(0).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=4, host="h", port=9092, error_message=None), 0)
    deliver = parts.background_events.deliver

    def delivering() -> bool:
        order.append(f"deliver, the snapshot naming coordinator {parts.published.current.coordinator_id}")
        return deliver()

    parts.background_events.deliver = delivering  # type: ignore[method-assign]
    parts.thread._publish(1)
    assert order == ["deliver, the snapshot naming coordinator 4"]  # a caller woken by the event sees the snapshot
    assert parts.signal.seq != seen and len(parts.background_events.drain()) == 1


def test_telemetry_reads_the_callers_metrics_and_is_not_built_when_turned_off() -> None:
    assert build(config(enable_metrics_push=False), ManualClock()).owned.telemetry is None
    assert build(config(**{"enable.metrics.push": "false"}), ManualClock()).owned.telemetry is None
    parts = build(config(group_id="g", client_rack="r1", client_id="c9"), ManualClock(5))
    telemetry = parts.owned.telemetry
    assert telemetry is not None
    assert telemetry._read_samples() is None  # nothing to read until the caller's side says how
    assert telemetry._resource() == {"client_id": "c9", "client_rack": "r1", "group_id": "g"}
    assert telemetry.poll(5).unsent_requests == ()  # no broker connected: not even a subscription request


def test_the_loop_polls_a_kind_s_managers_in_the_order_its_parts_declare_them() -> None:
    """A kind adds a manager with one field: POLLED fields are polled in declaration order, a group's managers and a
    dict's values in place, a part that is None (not built) skipped, and other fields never."""

    class Manager:
        def __init__(self, name: str) -> None:
            self.name = name

    class Group:
        managers = (Manager("coordinator"), Manager("commit"))

    @attrs.define(frozen=True, kw_only=True)
    class Parts:
        group: Group = attrs.field(metadata=POLLED)
        first: Manager = attrs.field(metadata=POLLED)
        absent: Manager | None = attrs.field(metadata=POLLED)
        plugins: dict[str, Manager] = attrs.field(metadata=POLLED)
        last: Manager = attrs.field(metadata=POLLED)
        helper: Manager

    parts = Parts(
        group=Group(),
        first=Manager("first"),
        absent=None,
        plugins={"p": Manager("plugin")},
        last=Manager("last"),
        helper=Manager("helper"),
    )
    names = [m.name for m in polled_managers(parts)]  # type: ignore[attr-defined]
    assert names == ["coordinator", "commit", "first", "plugin", "last"]
