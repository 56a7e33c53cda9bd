"""One consumer's parts, built and wired (``_background/builder.py``) with nothing running: configured names
resolved here (so a bad one fails the constructor), the membership picked by ``group_protocol``, the managers in
loop order, the coordinator's own connection in the node directory, and what a lost connection or a fatal error
tells the other parts."""

from __future__ import annotations

from typing import Any

import pytest

from asyncconsumer._background.builder import MEMBERSHIPS, NodeDirectory, build, resolve_assignors
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer.assignors import CooperativeStickyAssignor, RangeAssignor
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import AuthenticationError, ConfigError, KafkaConnectionError, ResponseTooLargeError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.membership_classic import ClassicMembershipManager
from asyncconsumer.managers.membership_consumer import ConsumerMembershipManager
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from tests.support.group_context import answer_metadata


def config(**settings: Any) -> ConsumerConfig:
    return ConsumerConfig.from_kwargs("h:1", **settings)


def test_everything_is_built_and_nothing_runs() -> None:
    parts = build(config(fetch_buffer_bytes=8 << 20), ManualClock())
    assert not parts.thread.alive
    assert parts.owned.group is None and parts.owned.plugins == {} and parts.plugin_metrics == {}
    assert isinstance(parts.buffer, FetchBuffer) and parts.buffer.limit == 4 << 20  # starts at half the bound
    assert parts.subscriptions.subscription is None and not parts.app_events and not parts.background_events


def test_a_bad_assignor_or_plugin_name_fails_the_build_naming_its_key() -> None:
    with pytest.raises(ConfigError) as assignor:
        build(config(partition_assignment_strategy="sticky-ish"), ManualClock())
    assert assignor.value.key == "partition_assignment_strategy"
    with pytest.raises(ConfigError) as plugin:
        build(config(plugins=["no-such-plugin"]), ManualClock())
    assert plugin.value.key == "plugins"


def test_assignors_are_resolved_in_preference_order_as_new_instances() -> None:
    settings = config(partition_assignment_strategy=["cooperative-sticky", "range"])
    first, second = resolve_assignors(settings), resolve_assignors(settings)
    assert [type(a) for a in first] == [CooperativeStickyAssignor, RangeAssignor]
    assert first[0] is not second[0]  # assignors keep per-consumer state


def test_the_group_protocol_picks_the_kind_of_membership() -> None:
    assert set(MEMBERSHIPS) == {"classic", "consumer"}
    classic = build(config(group_id="g"), ManualClock()).owned.group
    kip848 = build(config(group_id="g", group_protocol="consumer"), ManualClock()).owned.group
    assert classic is not None and isinstance(classic.membership, ClassicMembershipManager)
    assert kip848 is not None and isinstance(kip848.membership, ConsumerMembershipManager)


def test_the_loop_polls_the_group_first_then_metadata_offsets_validation_fetch_the_plugins_then_telemetry() -> None:
    parts = build(config(group_id="g", plugins=["lag-monitor"]), ManualClock())
    owned, group = parts.owned, parts.owned.group
    assert group is not None and owned.telemetry is not None
    expected = [
        *group.managers,
        owned.metadata,
        owned.offsets,
        owned.validation,
        owned.fetch,
        owned.plugins["lag-monitor"],
        owned.telemetry,
    ]
    assert parts.thread._managers == expected  # the thread polls them in the order the builder gave
    assert set(parts.plugin_metrics) == {"lag-monitor"}


def test_the_coordinators_own_connection_is_found_before_the_clusters_nodes() -> None:
    parts = build(config(group_id="g"), ManualClock())
    owned, group = parts.owned, parts.owned.group
    assert group is not None
    nodes = NodeDirectory(owned.metadata, group)
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
    assert NodeDirectory(owned.metadata, None).address(coordinator.node_id) is None


def test_a_lost_connection_asks_for_metadata_and_one_to_a_too_large_response_is_reported_once() -> None:
    parts = build(config(group_id="g"), ManualClock())
    owned = parts.owned
    answer_metadata(owned.metadata, {"t": 1})
    assert owned.metadata.poll(1).unsent_requests == ()  # fresh: nothing to ask
    group = owned.group
    assert group is not None
    (find,) = group.coordinator.poll(0).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
    coordinator = group.coordinator.coordinator
    assert coordinator is not None
    for listener in owned.delegate._disconnect_listeners:
        listener(coordinator.node_id, KafkaConnectionError("gone"))
    assert owned.metadata.poll(2).unsent_requests != ()  # a refresh was asked for
    assert group.coordinator.coordinator is None  # its connection closed: found again
    assert not parts.background_events  # a plain disconnect is retried, not reported
    too_large = ResponseTooLargeError("broker 1 at h:9092", 10_000, 1_000)
    for listener in owned.delegate._disconnect_listeners:
        listener(1, too_large)
    assert not parts.background_events  # staged: the caller hears it when the loop iteration ends
    parts.thread._publish(5)
    assert parts.background_events.drain() == [ErrorEvent(too_large)]


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
