"""The public admin client (``AsyncAdmin``, ``Admin``) against both brokers: topics created, described, grown and
deleted; a consumer group listed (by type too), described, its offsets read, altered and deleted, and the group
deleted; offsets listed by time; the cluster described. Refusals are typed and change nothing: an active group's
offsets, a group with members, a topic that exists, one that does not. Where Tansu 0.6 lacks an API or a check, the
test is an expected failure there, naming it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from asyncconsumer import Admin, AsyncAdmin, OffsetAndMetadata, TopicPartition
from asyncconsumer.admin import AlterConfigOp, ConfigResource, ConfigSource, NewTopic
from asyncconsumer.errors import (
    GroupIdNotFoundError,
    InvalidConfigError,
    InvalidOffsetError,
    InvalidPartitionsError,
    NonEmptyGroupError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from asyncconsumer.sync import Consumer
from tests.conftest import Broker, TopicFactory, unique_topic_name
from tests.support.groups import group_consumer, new_group_id
from tests.support.produce import ProduceHelper, Record
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


async def test_topics_are_created_described_grown_and_deleted(broker: Broker) -> None:
    name = unique_topic_name("admin-topics")
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        await admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])
        assert name in await admin.list_topics()
        described = (await admin.describe_topics([name]))[name]
        assert [p.partition for p in described.partitions] == [0, 1]
        assert all(p.leader >= 0 and p.replicas == (p.leader,) for p in described.partitions)
        with pytest.raises(TopicAlreadyExistsError, match=name):
            await admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])
        await admin.delete_topics([name])
        await wait_for_async(
            lambda: _gone(admin, name), 30, message=lambda: f"topic {name} still listed after delete_topics"
        )
        with pytest.raises(UnknownTopicOrPartitionError, match=name):
            await admin.delete_topics([name])


@pytest.mark.xfail_on_tansu("has no CreatePartitions (API 37)", raises=UnsupportedVersionError)
async def test_partitions_are_added_to_a_topic(broker: Broker, topic: TopicFactory) -> None:
    name = topic(2)
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        await admin.create_partitions({name: 3})
        grown = (await admin.describe_topics([name]))[name]
        assert [p.partition for p in grown.partitions] == [0, 1, 2]
        with pytest.raises(InvalidPartitionsError, match=name):
            await admin.create_partitions({name: 2})


async def _gone(admin: AsyncAdmin, name: str) -> bool:
    return name not in await admin.list_topics()


async def test_a_groups_offsets_are_read_and_altered_and_the_group_deleted(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    await produce.values_async(name, 20, 2)
    group_id = new_group_id()
    tp0, tp1 = TopicPartition(name, 0), TopicPartition(name, 1)
    with Consumer(broker.bootstrap_servers, group_id=group_id, enable_auto_commit=False) as consumer:
        consumer.commit({tp0: 4, tp1: 7})
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        listed = {g.group_id: g for g in await admin.list_groups()}
        assert listed[group_id].type == "classic"  # offsets only, no member ever joined: protocol type "" on Kafka
        described = (await admin.describe_consumer_groups([group_id]))[group_id]
        assert (described.state, described.members) == ("Empty", ())
        committed = await admin.list_consumer_group_offsets(group_id)
        assert {tp: o.offset for tp, o in committed.items()} == {tp0: 4, tp1: 7}

        await admin.alter_consumer_group_offsets(group_id, {tp0: 1, tp1: OffsetAndMetadata(9)})
        moved = await admin.list_consumer_group_offsets(group_id)
        assert (moved[tp0].offset, moved[tp1].offset) == (1, 9)
        with pytest.raises(InvalidOffsetError, match=f"{name}-0"):
            await admin.alter_consumer_group_offsets(group_id, {tp0: -3})

        await admin.delete_consumer_groups([group_id])
        assert group_id not in {g.group_id for g in await admin.list_groups()}
        assert await admin.list_consumer_group_offsets(group_id) == {}


@pytest.mark.xfail_on_tansu("describes a group it does not know as Empty (Kafka: Dead, or GROUP_ID_NOT_FOUND)")
async def test_describing_an_unknown_group_names_it(broker: Broker) -> None:
    group_id = new_group_id()
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        with pytest.raises(GroupIdNotFoundError, match=group_id):
            await admin.describe_consumer_groups([group_id])
        with pytest.raises(GroupIdNotFoundError, match=group_id):
            await admin.delete_consumer_groups([group_id])


@pytest.mark.xfail_on_tansu("ignores ListGroups v5's TypesFilter (KIP-1043): a share filter lists classic groups")
async def test_groups_are_listed_by_type(broker: Broker, topic: TopicFactory) -> None:
    name = topic(1)
    group_id = new_group_id()
    with Consumer(broker.bootstrap_servers, group_id=group_id, enable_auto_commit=False) as consumer:
        consumer.commit({TopicPartition(name, 0): 1})
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        assert group_id in {g.group_id for g in await admin.list_groups(types=["classic"])}
        assert group_id not in {g.group_id for g in await admin.list_groups(types=["share", "consumer"])}
        with pytest.raises(ValueError, match="'queue' is not a group type"):
            await admin.list_groups(types=["queue"])


async def test_an_active_group_refuses_new_offsets_and_keeps_its_own(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    await produce.values_async(name, 10, 1)
    group_id = new_group_id()
    tp = TopicPartition(name, 0)
    member = group_consumer(broker.bootstrap_servers, group_id)
    try:
        await member.subscribe([name])

        async def joined() -> bool:
            await member.poll(timeout_ms=100)
            return member.assignment() == {tp}

        await wait_for_async(joined, 30, message=lambda: "the member got no assignment")
        await member.commit({tp: 5})
        async with AsyncAdmin(broker.bootstrap_servers) as admin:
            with pytest.raises(NonEmptyGroupError, match=f"group '{group_id}' is Stable with 1 member"):
                await admin.alter_consumer_group_offsets(group_id, {tp: 0})
            assert (await admin.list_consumer_group_offsets(group_id))[tp].offset == 5
    finally:
        await member.close()


@pytest.mark.xfail_on_tansu("deletes a group that has members (Kafka answers NON_EMPTY_GROUP)")
async def test_a_group_with_members_is_not_deleted(broker: Broker, topic: TopicFactory) -> None:
    name = topic(1)
    group_id = new_group_id()
    member = group_consumer(broker.bootstrap_servers, group_id)
    try:
        await member.subscribe([name])

        async def joined() -> bool:
            await member.poll(timeout_ms=100)
            return bool(member.assignment())

        await wait_for_async(joined, 30, message=lambda: "the member got no assignment")
        async with AsyncAdmin(broker.bootstrap_servers) as admin:
            with pytest.raises(NonEmptyGroupError, match=group_id):
                await admin.delete_consumer_groups([group_id])
            described = (await admin.describe_consumer_groups([group_id]))[group_id]
            assert len(described.members) == 1
    finally:
        await member.close()


@pytest.mark.xfail_on_tansu("has no OffsetDelete (API 47)", raises=UnsupportedVersionError)
async def test_some_of_a_groups_offsets_are_deleted(broker: Broker, topic: TopicFactory) -> None:
    name = topic(2)
    tp0, tp1 = TopicPartition(name, 0), TopicPartition(name, 1)
    group_id = new_group_id()
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        await admin.alter_consumer_group_offsets(group_id, {tp0: 2, tp1: 3})
        await admin.delete_consumer_group_offsets(group_id, [tp0])
        assert {tp: o.offset for tp, o in (await admin.list_consumer_group_offsets(group_id)).items()} == {tp1: 3}


@pytest.mark.xfail_on_tansu("keeps no metadata with a committed offset")
async def test_altered_offsets_keep_their_metadata(broker: Broker, topic: TopicFactory) -> None:
    tp = TopicPartition(topic(1), 0)
    group_id = new_group_id()
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        await admin.alter_consumer_group_offsets(group_id, {tp: OffsetAndMetadata(3, "moved by hand")})
        assert await admin.list_consumer_group_offsets(group_id) == {tp: OffsetAndMetadata(3, "moved by hand")}


@pytest.mark.xfail_on_tansu(
    "answers ListOffsets with a timestamp with the partition's first offset whatever the timestamp (as in "
    "test_consumer.py's offsets_for_times test)"
)
async def test_offsets_are_listed_at_the_ends_and_by_time(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    base = int(time.time() * 1000) - 3_600_000
    produce.batches(name, [[Record(b"r%d" % i, partition=0, timestamp_ms=base + i * 60_000)] for i in range(10)])
    tp = TopicPartition(name, 0)
    with Admin(broker.bootstrap_servers) as admin:  # the blocking face: the same methods, waited for where called
        assert admin.list_offsets({tp: "earliest"}) == {tp: 0}
        assert admin.list_offsets({tp: "latest"}) == {tp: 10}
        assert admin.list_offsets({tp: base + 4 * 60_000 - 1}) == {tp: 4}
        assert admin.list_offsets({tp: base + 3_600_000}) == {tp: None}  # every record is older
        with pytest.raises(UnknownTopicOrPartitionError, match=f"{name}-7"):
            admin.list_offsets({TopicPartition(name, 7): "earliest"})


async def test_the_cluster_is_described(broker: Broker) -> None:
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        cluster = await admin.describe_cluster()
    assert cluster.brokers and all(b.port > 0 for b in cluster.brokers)
    assert str(cluster.brokers[0].port) in broker.bootstrap_servers or len(cluster.brokers) > 1


@pytest.mark.xfail_on_tansu(
    "describes only the configs set on a topic (none of its defaults: no retention.ms before one is set), each as "
    "DEFAULT_CONFIG of type STRING, and a topic that does not exist as one with no configs",
    raises=KeyError,
)
async def test_a_topics_configs_are_described_altered_validated_and_put_back(
    broker: Broker, topic: TopicFactory
) -> None:
    name = topic(1)
    resource = ConfigResource("topic", name)
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        before = (await admin.describe_configs([resource]))[resource]["retention.ms"]
        assert before.source is not ConfigSource.DYNAMIC_TOPIC_CONFIG
        await admin.incremental_alter_configs(
            {resource: [AlterConfigOp("retention.ms", "3600000")]}, validate_only=True
        )
        assert (await admin.describe_configs([resource]))[resource]["retention.ms"] == before  # only checked
        await admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "3600000")]})
        altered = (await admin.describe_configs([resource]))[resource]["retention.ms"]
        assert (altered.value, altered.source) == ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
        await admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", op="delete")]})
        assert (await admin.describe_configs([resource]))[resource]["retention.ms"] == before
        missing = ConfigResource("topic", unique_topic_name("admin-no-such"))
        with pytest.raises(UnknownTopicOrPartitionError, match=missing.name):
            await admin.describe_configs([resource, missing])


@pytest.mark.xfail_on_tansu(
    "keeps any topic config value (retention.ms=soon) and any name", raises=pytest.fail.Exception
)
async def test_a_bad_config_value_is_refused_naming_the_key_and_nothing_changes(
    broker: Broker, topic: TopicFactory
) -> None:
    name = topic(1)
    resource = ConfigResource("topic", name)
    with Admin(broker.bootstrap_servers) as admin:  # the blocking face
        before = admin.describe_configs([resource])[resource]
        with pytest.raises(InvalidConfigError, match=r"retention\.ms"):
            admin.incremental_alter_configs(
                {resource: [AlterConfigOp("segment.ms", "600000"), AlterConfigOp("retention.ms", "soon")]}
            )
        with pytest.raises(InvalidConfigError, match=r"no\.such\.config"):
            admin.incremental_alter_configs({resource: [AlterConfigOp("no.such.config", "1")]})
        assert admin.describe_configs([resource])[resource] == before  # a resource changes whole or not at all


@pytest.mark.kafka_only("group configs (KIP-848, KIP-932, KIP-1191) and client-metrics subscriptions (KIP-714)")
async def test_group_and_client_metrics_configs_are_set_described_bounded_and_deleted(broker: Broker) -> None:
    group = ConfigResource("group", new_group_id())
    subscription = ConfigResource("client_metrics", f"sub-{new_group_id()}")
    set_group = {
        "consumer.session.timeout.ms": "50000",
        "share.auto.offset.reset": "by_duration:PT1H",
        "errors.deadletterqueue.topic.name": "dlq.orders",
    }
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        await admin.incremental_alter_configs(
            {
                group: [AlterConfigOp(k, v) for k, v in set_group.items()],
                subscription: [
                    AlterConfigOp("metrics", "org.apache.kafka.consumer."),
                    AlterConfigOp("interval.ms", "60000"),
                ],
            }
        )
        described = await admin.describe_configs([group, subscription])
        assert {k: (described[group][k].value, described[group][k].source) for k in set_group} == {
            k: (v, ConfigSource.GROUP_CONFIG) for k, v in set_group.items()
        }
        assert described[subscription]["metrics"].value == "org.apache.kafka.consumer."
        assert described[subscription]["interval.ms"].source is ConfigSource.CLIENT_METRICS_CONFIG
        with pytest.raises(
            InvalidConfigError, match=r"consumer\.session\.timeout\.ms must be in the range 6000 to 60000"
        ):
            await admin.incremental_alter_configs({group: [AlterConfigOp("consumer.session.timeout.ms", "1")]})
        assert (await admin.describe_configs([group]))[group]["consumer.session.timeout.ms"].value == "50000"
        await admin.incremental_alter_configs({group: [AlterConfigOp("consumer.session.timeout.ms", op="delete")]})
        back = (await admin.describe_configs([group]))[group]["consumer.session.timeout.ms"]
        assert back.source is not ConfigSource.GROUP_CONFIG


@pytest.mark.xfail_on_tansu("describes a broker as having no configs", raises=KeyError)
async def test_a_brokers_configs_are_asked_of_that_broker(broker: Broker) -> None:
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        node = (await admin.describe_cluster()).brokers[0].id
        resource = ConfigResource("broker", str(node))
        configs = (await admin.describe_configs([resource], include_synonyms=True))[resource]
    assert configs["num.partitions"].value is not None


async def test_a_groups_lag_is_each_committed_partition_against_its_log_end(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.batches(name, [[Record(b"r%d" % i)] for i in range(5)], partition=0)  # one record a batch: see Tansu's
    group = new_group_id()  # ListOffsets in test_consumer.py
    with Consumer(broker.bootstrap_servers, group_id=group, enable_auto_commit=False) as consumer:
        consumer.commit({TopicPartition(name, 0): 2, TopicPartition(name, 1): 0})
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        rows = await admin.list_consumer_group_lag(group)
        with pytest.raises(GroupIdNotFoundError, match="no-such-group"):
            await admin.list_consumer_group_lag(f"no-such-group-{group}")
    assert [(str(r.partition), r.committed, r.log_end_offset, r.lag, r.member) for r in rows] == [
        (f"{name}-0", 2, 5, 3, None),
        (f"{name}-1", 0, 0, 0, None),
    ]


@pytest.mark.kafka_only("share groups (KIP-932); Tansu 0.6 has none")
async def test_a_share_group_is_described_with_its_members_and_each_partitions_start_offset(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    from asyncconsumer import AsyncShareConsumer

    name = topic(2)
    for p in (0, 1):
        produce.batches(name, [[Record(b"r%d" % i)] for i in range(3)], partition=p)
    group = new_group_id()
    tps = [TopicPartition(name, p) for p in (0, 1)]
    async with AsyncAdmin(broker.bootstrap_servers) as admin:
        resource = ConfigResource("group", group)
        await admin.incremental_alter_configs({resource: [AlterConfigOp("share.auto.offset.reset", "earliest")]})

        async def applied() -> bool:  # a broker applies the controller's record a moment after the answer
            return (await admin.describe_configs([resource]))[resource]["share.auto.offset.reset"].value == "earliest"

        await wait_for_async(applied, 30, message="the group's share.auto.offset.reset described as earliest")
        async with AsyncShareConsumer(broker.bootstrap_servers, group_id=group) as member:
            await member.subscribe([name])
            got = 0

            async def read_all() -> bool:
                nonlocal got
                got += (await member.poll(timeout_ms=200)).count()
                return got >= 6

            await wait_for_async(read_all, 60, message=lambda: f"{got} of 6 records")
            await member.commit_sync()

            seen: dict[TopicPartition, Any] = {}

            async def settled() -> bool:
                offsets = await admin.list_share_group_offsets(group)
                seen.update(offsets)
                # every record acknowledged: no lag; the start offset the broker stores may trail the acknowledgements
                return offsets.keys() == set(tps) and all(
                    o.lag == 0 and o.start_offset is not None and 0 <= o.start_offset <= 3 for o in offsets.values()
                )

            await wait_for_async(
                settled,
                30,
                message=lambda: f"no lag once the 3 records of each partition are acknowledged: {seen}",
            )
            described = (await admin.describe_share_groups([group]))[group]
            assert described.state == "Stable" and described.group_epoch >= 1
            [running] = described.members
            assert running.assignment == frozenset(tps) and running.subscribed_topics == (name,)
            assert (await admin.list_share_group_offsets(group, [tps[1]])).keys() == {tps[1]}
        with pytest.raises(GroupIdNotFoundError, match="no-such"):
            await admin.describe_share_groups([f"no-such-{group}"])
