"""``close(group_membership=...)`` (KIP-1092) against the brokers: which closes leave the group at once and which keep
the member's place, as the group coordinator itself reports right after the close (DescribeGroups for both
protocols, ShareGroupDescribe for a share group). The revoke callback runs in every case, as in Java."""

from __future__ import annotations

from typing import Any

import pytest

from asyncconsumer import AsyncAdmin, AsyncConsumer, AsyncShareConsumer, GroupMembershipOperation
from asyncconsumer.errors import GroupIdNotFoundError
from asyncconsumer.tools.admin import AdminClient
from tests.conftest import Broker, TopicFactory
from tests.support.groups import RecordingListener, all_partitions, group_consumer, new_group_id
from tests.support.kafka_broker import KafkaCluster
from tests.support.share import new_share_group
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

JOIN_S = 30.0

CASES = [
    pytest.param(None, "default", False, id="dynamic-default-leaves"),
    pytest.param(None, "leave_group", False, id="dynamic-leave_group-leaves"),
    pytest.param(None, "remain_in_group", True, id="dynamic-remain_in_group-stays"),
    pytest.param("static-1", "default", True, id="static-default-stays"),
    pytest.param("static-1", "leave_group", False, id="static-leave_group-leaves"),
    pytest.param("static-1", "remain_in_group", True, id="static-remain_in_group-stays"),
]
"""(group_instance_id, group_membership, whether the coordinator still lists the member after the close)."""


async def members_after_close(
    bootstrap: str, name: str, instance_id: str | None, operation: str, **settings: Any
) -> tuple[str, list[str], RecordingListener]:
    """Joins a group of one on ``name`` (2 partitions), closes with ``operation``; the member's id and the member ids
    the coordinator lists right after the close."""
    group_id = new_group_id()
    listener = RecordingListener()
    consumer: AsyncConsumer
    if settings.get("group_protocol") == "consumer":  # the coordinator sets the timing and assigns
        consumer = AsyncConsumer(
            bootstrap, group_id=group_id, group_instance_id=instance_id, auto_offset_reset="earliest", **settings
        )
    else:
        consumer = group_consumer(bootstrap, group_id, group_instance_id=instance_id, **settings)
    try:
        await consumer.subscribe([name], listener=listener)

        async def joined() -> bool:
            await consumer.poll(timeout_ms=100)
            return consumer.assignment() == all_partitions(name, 2)

        await wait_for_async(joined, JOIN_S, message=lambda: f"assignment {consumer.assignment()}")
        member_id = consumer.group_metadata().member_id
    finally:
        await consumer.close(group_membership=operation)
    async with AsyncAdmin(bootstrap) as admin:
        try:
            described = (await admin.describe_consumer_groups([group_id]))[group_id]
        except GroupIdNotFoundError:  # the last member left a group with no offsets: Kafka drops it
            return member_id, [], listener
    return member_id, [m.member_id for m in described.members], listener


@pytest.mark.parametrize(("instance_id", "operation", "stays"), CASES)
async def test_a_classic_member_leaves_or_keeps_its_place_as_the_close_says(
    broker: Broker, topic: TopicFactory, instance_id: str | None, operation: str, stays: bool
) -> None:
    name = topic(2)
    member_id, listed, listener = await members_after_close(broker.bootstrap_servers, name, instance_id, operation)
    assert member_id
    assert listed == ([member_id] if stays else [])
    assert listener.of("revoked") == [frozenset(all_partitions(name, 2))]  # the callback runs either way


@pytest.mark.kafka_only("Tansu has no ConsumerGroupHeartbeat (API 68)")
@pytest.mark.parametrize(("instance_id", "operation", "stays"), CASES)
async def test_a_kip848_member_leaves_or_keeps_its_place_as_the_close_says(
    broker: Broker, topic: TopicFactory, instance_id: str | None, operation: str, stays: bool
) -> None:
    """Epoch -1 removes the member; -2 (a static member by default, or remaining) keeps its place for the session."""
    name = topic(2)
    member_id, listed, listener = await members_after_close(
        broker.bootstrap_servers, name, instance_id, operation, group_protocol="consumer"
    )
    assert member_id
    assert listed == ([member_id] if stays else [])
    assert listener.of("revoked") == [frozenset(all_partitions(name, 2))]


@pytest.mark.kafka_only("Tansu has no share groups (APIs 76-79)")
@pytest.mark.parametrize(
    ("operation", "stays"),
    [(GroupMembershipOperation.DEFAULT, False), (GroupMembershipOperation.REMAIN_IN_GROUP, True)],
)
async def test_a_share_member_leaves_unless_it_remains(
    broker: Broker, topic: TopicFactory, operation: GroupMembershipOperation, stays: bool
) -> None:
    assert isinstance(broker, KafkaCluster)
    name = topic(2)
    group = new_share_group(broker)
    consumer = AsyncShareConsumer(broker.bootstrap_servers, group_id=group)
    try:
        await consumer.subscribe([name])

        async def joined() -> bool:
            await consumer.poll(100)
            return consumer.metrics().member_id != ""

        await wait_for_async(joined, JOIN_S, message=lambda: "no member id")
        member_id = consumer.metrics().member_id
    finally:
        await consumer.close(group_membership=operation)
    async with AdminClient(
        broker.bootstrap_servers
    ) as admin:  # share groups: the CLI's helper, until AsyncAdmin has them
        described = await admin.describe_share_group(group)
    assert [m.member_id for m in described.members] == ([member_id] if stays else [])
