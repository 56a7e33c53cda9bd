"""KIP-848's consumer group protocol as a kind of membership: the coordinator assigns, the member reconciles.

Every request is a ConsumerGroupHeartbeat (``heartbeat_consumer.py``); the membership manager only applies what the
coordinator sent (``membership_consumer.py``). A pattern subscription goes to the coordinator as a regular
expression, which it matches against topic names itself.
"""

from __future__ import annotations

from asyncconsumer._patterns import server_side_regex
from asyncconsumer.managers.heartbeat_consumer import ConsumerHeartbeatManager, ConsumerHeartbeatSettings
from asyncconsumer.managers.membership import Membership, MembershipContext
from asyncconsumer.managers.membership_consumer import ConsumerGroupSettings, ConsumerMembershipManager
from asyncconsumer.protocol.base import ApiKey


def build(context: MembershipContext) -> Membership:
    """A KIP-848 member and the heartbeat manager that carries its every request."""
    config = context.config
    membership = ConsumerMembershipManager(
        ConsumerGroupSettings(context.group_id, config.group_instance_id),
        lambda: context.metadata.cluster,
        context.metadata.request_update,
        context.host.apply_assignment,
        context.host.call_listener,
        context.host.report,
    )

    def subscribed_regex() -> str | None:
        pattern = context.host.pattern
        return None if pattern is None else server_side_regex(pattern)

    heartbeat = ConsumerHeartbeatManager(
        ConsumerHeartbeatSettings(
            context.group_id,
            rebalance_timeout_ms=config.max_poll_interval_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            group_instance_id=config.group_instance_id,
            rack_id=config.client_rack or None,
            server_assignor=config.group_remote_assignor,
        ),
        context.coordinator,
        membership,
        lambda: sorted(context.subscriptions.subscription or ()),
        subscribed_regex,
        context.host.last_poll_ms,
        context.backoff,
        context.host.report,
        lambda: context.host.supports_api(int(ApiKey.CONSUMER_GROUP_HEARTBEAT)),
    )
    return Membership(
        manager=membership,
        heartbeat=heartbeat,
        coordinator_matches_patterns=True,
        member_epoch_in_offset_fetch=True,
    )
