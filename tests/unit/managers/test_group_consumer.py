"""KIP-848's consumer protocol as a kind of membership (``managers/group_consumer.py``): what ``build`` wires from
the configuration into the heartbeat every request goes out in, the pattern as the coordinator takes it, and the API
68 check asked of the connected brokers."""

from __future__ import annotations

import re

from asyncconsumer.errors import KafkaError
from asyncconsumer.managers.group_consumer import build
from asyncconsumer.managers.heartbeat_consumer import ConsumerHeartbeatManager
from asyncconsumer.managers.membership import Membership
from asyncconsumer.managers.membership_consumer import ConsumerMembershipManager
from asyncconsumer.protocol.base import ApiKey
from asyncconsumer.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from tests.support.group_context import Recorder, membership_context


def built(**settings: object) -> tuple[Membership, Recorder, list[object]]:
    """A KIP-848 member of ``g`` subscribed to ``b`` and ``a``, its coordinator found; also what ``check_support``
    answered so far."""
    context, recorder = membership_context(group_protocol="consumer", **settings)
    membership = build(context)
    (find,) = context.coordinator.poll(0).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
    context.subscriptions.subscribe(["b", "a"])
    outcome: list[object] = []
    membership.heartbeat.check_support(outcome.append, outcome.append)
    return membership, recorder, outcome


def first_heartbeat(membership: Membership) -> ConsumerGroupHeartbeatRequest:
    membership.manager.subscribe()
    membership.manager.poll(1)
    (unsent,) = membership.heartbeat.poll(1).unsent_requests
    assert isinstance(unsent.request, ConsumerGroupHeartbeatRequest)
    return unsent.request


def test_build_wires_a_member_the_coordinator_assigns_and_matches_patterns_for() -> None:
    membership, _, _ = built()
    assert isinstance(membership.manager, ConsumerMembershipManager)
    assert isinstance(membership.heartbeat, ConsumerHeartbeatManager)
    assert membership.managers == (membership.manager, membership.heartbeat)
    assert (membership.coordinator_matches_patterns, membership.member_epoch_in_offset_fetch) == (True, True)


def test_the_join_carries_the_sorted_subscription_and_the_configured_settings() -> None:
    membership, _, _ = built(
        max_poll_interval_ms=45_000, client_rack="rack-b", group_remote_assignor="range", group_instance_id="i-1"
    )
    join = first_heartbeat(membership)
    assert join.subscribed_topic_names == ("a", "b")
    assert (join.rebalance_timeout_ms, join.rack_id, join.server_assignor) == (45_000, "rack-b", "range")
    assert (join.group_id, join.instance_id, join.member_epoch) == ("g", "i-1", 0)


def test_no_rack_and_no_assignor_are_sent_as_none() -> None:
    join = first_heartbeat(built()[0])
    assert (join.rack_id, join.server_assignor, join.subscribed_topic_regex) == (None, None, None)


def test_a_pattern_goes_out_as_the_coordinator_takes_it() -> None:
    membership, recorder, _ = built()
    recorder.pattern = re.compile("events-.*", re.IGNORECASE)
    assert first_heartbeat(membership).subscribed_topic_regex == "(?i)events-.*"


def test_subscribe_waits_for_a_connected_broker_then_hears_whether_api_68_is_offered() -> None:
    membership, recorder, outcome = built()
    membership.heartbeat.poll(0)
    assert outcome == []  # no broker connected yet
    recorder.supported[int(ApiKey.CONSUMER_GROUP_HEARTBEAT)] = True
    membership.heartbeat.poll(1)
    assert outcome == [None]

    refused, recorder, outcome = built()
    recorder.supported[int(ApiKey.CONSUMER_GROUP_HEARTBEAT)] = False
    refused.heartbeat.poll(0)
    (error,) = outcome
    assert isinstance(error, KafkaError) and "API 68" in str(error)
