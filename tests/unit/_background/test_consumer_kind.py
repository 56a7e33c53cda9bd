"""The consumer on the chassis (``_background/consumer_kind.py``): configured names resolved while it is built (so
a bad one fails the constructor), the membership picked by ``group_protocol``, the managers in loop order, and what a
lost connection tells its parts."""

from __future__ import annotations

from typing import Any

import pytest

from asyncconsumer._background.builder import build
from asyncconsumer._background.consumer_kind import MEMBERSHIPS, resolve_assignors
from asyncconsumer._clock import ManualClock
from asyncconsumer.assignors import CooperativeStickyAssignor, RangeAssignor
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError, KafkaConnectionError, ResponseTooLargeError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.membership_classic import ClassicMembershipManager
from asyncconsumer.managers.membership_consumer import ConsumerMembershipManager
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from tests.support.group_context import answer_metadata


def config(**settings: Any) -> ConsumerConfig:
    return ConsumerConfig.from_kwargs("h:1", **settings)


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
