"""The KIP-848 coordinator shim, driven request by request on raw sockets in front of a real Tansu broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from asyncconsumer.protocol.layouts import offsets_for_group
from asyncconsumer.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from asyncconsumer.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from asyncconsumer.protocol.wire import ZERO_UUID
from tests.conftest import Kip848Broker
from tests.support.kip848_shim import (
    API_CONSUMER_GROUP_HEARTBEAT,
    COORDINATOR_LOAD_IN_PROGRESS,
    FENCED_MEMBER_EPOCH,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNSUPPORTED_ASSIGNOR,
    Kip848Shim,
    TopicPartition,
)
from tests.support.produce import Record
from tests.support.raw_client import RawClient
from tests.support.waiting import wait_for

pytestmark = pytest.mark.broker

API_PRODUCE = 0
API_METADATA = 3
API_OFFSET_COMMIT = 8
API_OFFSET_FETCH = 9
API_API_VERSIONS = 18


def metadata(client: RawClient, topics: tuple[str, ...] | None = None) -> MetadataResponse:
    answer = client.call(
        MetadataRequest(
            topics=None if topics is None else tuple(MetadataRequestTopic(name=t) for t in topics),
            allow_auto_topic_creation=False,
        ),
        12,
    )
    assert isinstance(answer, MetadataResponse)
    return answer


class Member:
    """One KIP-848 member on its own connection; keeps its epoch and the topic id map."""

    def __init__(self, address: str, group_id: str, topic_ids: dict[uuid.UUID, str], name: str) -> None:
        self.client = RawClient(address, name)
        self.group_id = group_id
        self.member_id = uuid.uuid4().hex  # v1: the member makes its own id
        self.epoch = 0
        self.topic_ids = topic_ids
        self.assignment: frozenset[TopicPartition] = frozenset()
        """What the shim last told this member."""

    def heartbeat(
        self,
        *,
        topics: tuple[str, ...] | None = None,
        owned: frozenset[TopicPartition] | None = None,
        epoch: int | None = None,
        assignor: str | None = None,
        version: int = 1,
    ) -> ConsumerGroupHeartbeatResponse:
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.epoch if epoch is None else epoch,
            rebalance_timeout_ms=30_000 if topics is not None else -1,
            subscribed_topic_names=topics,
            server_assignor=assignor,
            topic_partitions=None if owned is None else self._by_id(owned),
        )
        answer = self.client.call(request, version)
        assert isinstance(answer, ConsumerGroupHeartbeatResponse)
        if answer.error_code == 0 and answer.member_epoch >= 0:
            self.epoch = answer.member_epoch
            if answer.member_id:
                self.member_id = answer.member_id
            if answer.assignment is not None:
                self.assignment = frozenset(
                    (self.topic_ids[tp.topic_id], p) for tp in answer.assignment.topic_partitions for p in tp.partitions
                )
        return answer

    def join(self, topics: tuple[str, ...], **kwargs: object) -> ConsumerGroupHeartbeatResponse:
        answer = self.heartbeat(topics=topics, owned=frozenset(), epoch=0, **kwargs)  # type: ignore[arg-type]
        assert answer.error_code == 0, answer
        return answer

    def _by_id(self, owned: frozenset[TopicPartition]) -> tuple[TopicPartitions, ...]:
        ids = {name: topic_id for topic_id, name in self.topic_ids.items()}
        by_topic: dict[str, list[int]] = {}
        for name, p in owned:
            by_topic.setdefault(name, []).append(p)
        return tuple(
            TopicPartitions(topic_id=ids[name], partitions=tuple(sorted(ps))) for name, ps in sorted(by_topic.items())
        )

    def close(self) -> None:
        self.client.close()


def assert_exclusive(shim: Kip848Shim, group_id: str) -> None:
    """No partition is assigned to two members, nor assigned to one while another may still hold it (pending its
    revocation, or reported owned)."""
    views = list(shim.members(group_id).values())
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            assert not a.assigned & (b.assigned | b.pending_revocation | b.owned), (a, b)
            assert not b.assigned & (a.assigned | a.pending_revocation | a.owned), (a, b)


@pytest.fixture
def setup(kip848_broker: Kip848Broker) -> Iterator[tuple[Kip848Broker, str, dict[uuid.UUID, str]]]:
    """(broker, a 4-partition topic, topic id -> name as seen through the shim)."""
    name = kip848_broker.create_topic(4)
    client = RawClient(kip848_broker.bootstrap_servers)
    try:
        answer = metadata(client)
    finally:
        client.close()
    yield kip848_broker, name, {t.topic_id: t.name for t in answer.topics if t.name is not None}


def every(topic: str, partitions: int = 4) -> frozenset[TopicPartition]:
    return frozenset((topic, p) for p in range(partitions))


# --- forwarding -----------------------------------------------------------------------------------------------


def test_api_versions_advertise_consumer_group_heartbeat_unless_told_not_to(kip848_broker: Kip848Broker) -> None:
    client = RawClient(kip848_broker.bootstrap_servers)
    try:
        for version in (0, 3):
            answer = client.call(ApiVersionsRequest(), version)
            assert isinstance(answer, ApiVersionsResponse) and answer.error_code == 0
            keys = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            assert keys[API_CONSUMER_GROUP_HEARTBEAT] == (0, 1)
            assert keys[API_METADATA][1] >= 12  # the rest is Tansu's own list
        kip848_broker.shim.set_advertise_api68(False)
        answer = client.call(ApiVersionsRequest(), 3)
        assert isinstance(answer, ApiVersionsResponse) and answer.error_code == 0
        listed = {k.api_key for k in answer.api_keys}
        assert API_CONSUMER_GROUP_HEARTBEAT not in listed and API_METADATA in listed
    finally:
        client.close()
    assert kip848_broker.shim.counts[API_API_VERSIONS] == 3


def test_metadata_is_forwarded_with_topic_ids_and_points_back_at_the_shim(kip848_broker: Kip848Broker) -> None:
    name = kip848_broker.create_topic(3)
    client = RawClient(kip848_broker.bootstrap_servers)
    try:
        answer = metadata(client, (name,))
    finally:
        client.close()
    (topic,) = answer.topics
    assert (topic.error_code, topic.name, len(topic.partitions)) == (0, name, 3)
    assert topic.topic_id != ZERO_UUID
    assert [b.port for b in answer.brokers] == [kip848_broker.shim.port]
    assert kip848_broker.shim.counts[API_METADATA] == 1


def test_a_real_client_produces_through_the_shim(kip848_broker: Kip848Broker) -> None:
    """aiokafka reads the rewritten ApiVersions answer and its Produce requests are relayed untouched."""
    name = kip848_broker.create_topic(2)
    produced = kip848_broker.produce(name, [Record(b"x", partition=0), Record(b"y", partition=1)])
    assert sorted((r.partition, r.offset) for r in produced) == [(0, 0), (1, 0)]
    counts = kip848_broker.shim.counts
    assert counts[API_API_VERSIONS] >= 1 and counts[API_PRODUCE] >= 1


def test_dropped_connections_are_closed(kip848_broker: Kip848Broker) -> None:
    client = RawClient(kip848_broker.bootstrap_servers)
    try:
        metadata(client)  # forwarded, so the upstream side is open too
        assert kip848_broker.shim.drop_connections() == 1
        assert client.closed_by_peer()
    finally:
        client.close()
    wait_for(lambda: kip848_broker.shim.active_connections == 0, 5, message="the shim forgets the connection")


# --- groups -----------------------------------------------------------------------------------------------------


def test_two_members_split_the_partitions_and_a_moved_partition_waits_for_its_release(
    setup: tuple[Kip848Broker, str, dict[uuid.UUID, str]],
) -> None:
    broker, topic, ids = setup
    shim, group = broker.shim, f"g-{uuid.uuid4().hex[:8]}"
    a = Member(broker.bootstrap_servers, group, ids, "a")
    b = Member(broker.bootstrap_servers, group, ids, "b")
    try:
        joined = a.join((topic,))
        assert (joined.member_id, joined.member_epoch, joined.heartbeat_interval_ms) == (a.member_id, 1, 250)
        assert a.assignment == every(topic)
        assert a.heartbeat(owned=a.assignment).assignment is None  # nothing new to say
        assert shim.group_epoch(group) == 1

        b.join((topic,))
        assert shim.group_epoch(group) == 2
        assert b.epoch == 2 and b.assignment == frozenset()  # a still holds everything
        assert_exclusive(shim, group)

        # a is told to give up half; it keeps its epoch until it reports having done so
        answer = a.heartbeat()
        assert answer.assignment is not None and answer.member_epoch == 1
        kept = a.assignment
        assert len(kept) == 2 and kept < every(topic)
        moving = every(topic) - kept
        assert shim.members(group)[b.member_id].target == moving

        # b asks again while a has not reported the release: still nothing
        assert b.heartbeat(owned=frozenset()).assignment is None and b.assignment == frozenset()
        assert_exclusive(shim, group)

        # a reports the release: it takes the group epoch, and b gets the moved partitions
        answer = a.heartbeat(owned=kept)
        assert (answer.member_epoch, answer.assignment) == (2, None)
        assert b.heartbeat().assignment is not None and b.assignment == moving
        assert_exclusive(shim, group)
        views = shim.members(group)
        assert {m.member_epoch for m in views.values()} == {2}
        assert views[a.member_id].assigned | views[b.member_id].assigned == every(topic)
    finally:
        a.close()
        b.close()


def test_a_partition_revoked_before_its_owner_acknowledged_it_waits_for_an_owned_list_without_it(
    setup: tuple[Kip848Broker, str, dict[uuid.UUID, str]],
) -> None:
    """A member may hold what it was sent without having reported it yet (it reports owned partitions once its
    callbacks ran, and a heartbeat in between leaves the field out, as unchanged). Revoked then, those partitions
    stay its own, pending revocation, until a heartbeat lists what it owns without them, as in Kafka's
    CurrentAssignmentBuilder, where a null owned list never acknowledges a revocation."""
    broker, topic, ids = setup
    shim, group = broker.shim, f"g-{uuid.uuid4().hex[:8]}"
    a, b, c = (Member(broker.bootstrap_servers, group, ids, name) for name in "abc")
    for name, m in zip("abc", (a, b, c), strict=True):
        m.member_id = f"{name}-{uuid.uuid4().hex}"  # the assignor ranges over members sorted by id
    try:
        a.join((topic,))
        a.heartbeat(owned=a.assignment)
        b.join((topic,))  # reports owning nothing, explicitly
        a.heartbeat()
        a.heartbeat(owned=a.assignment)
        assert b.heartbeat().assignment is not None and b.assignment == {(topic, 2), (topic, 3)}
        # b holds 2 and 3 now, but has not said so: its heartbeats leave the owned list out

        c.join((topic,))
        assert b.heartbeat().assignment is not None and b.assignment == {(topic, 2)}
        views = shim.members(group)
        assert views[b.member_id].pending_revocation == {(topic, 3)} and views[b.member_id].member_epoch == 2
        assert c.heartbeat(owned=frozenset()).assignment is None and c.assignment == frozenset()
        assert_exclusive(shim, group)

        assert b.heartbeat(owned=every(topic) - a.assignment).member_epoch == 2  # still owns 3
        assert c.heartbeat().assignment is None and c.assignment == frozenset()
        assert_exclusive(shim, group)

        assert b.heartbeat(owned=b.assignment).member_epoch == 3  # let go of 3
        assert shim.members(group)[b.member_id].pending_revocation == frozenset()
        assert c.heartbeat().assignment is not None and c.assignment == {(topic, 3)}
        assert_exclusive(shim, group)
    finally:
        for m in (a, b, c):
            m.close()


def test_a_leaving_member_bumps_the_epoch_and_the_other_gets_everything(
    setup: tuple[Kip848Broker, str, dict[uuid.UUID, str]],
) -> None:
    broker, topic, ids = setup
    shim, group = broker.shim, f"g-{uuid.uuid4().hex[:8]}"
    a = Member(broker.bootstrap_servers, group, ids, "a")
    b = Member(broker.bootstrap_servers, group, ids, "b")
    try:
        a.join((topic,))
        a.heartbeat(owned=a.assignment)
        b.join((topic,))
        a.heartbeat()
        a.heartbeat(owned=a.assignment)
        b.heartbeat()
        b.heartbeat(owned=b.assignment)
        assert a.assignment and b.assignment and not a.assignment & b.assignment
        before = shim.group_epoch(group)

        left = a.heartbeat(epoch=-1)
        assert (left.error_code, left.member_id, left.member_epoch) == (0, a.member_id, -1)
        assert shim.group_epoch(group) == before + 1
        assert set(shim.members(group)) == {b.member_id}

        answer = b.heartbeat()
        assert answer.assignment is not None
        assert b.assignment == every(topic) and b.epoch == before + 1
    finally:
        a.close()
        b.close()


def test_v0_join_gets_a_generated_member_id_and_unknown_assignors_are_refused(
    setup: tuple[Kip848Broker, str, dict[uuid.UUID, str]],
) -> None:
    broker, topic, ids = setup
    group = f"g-{uuid.uuid4().hex[:8]}"
    m = Member(broker.bootstrap_servers, group, ids, "v0")
    try:
        m.member_id = ""
        refused = m.heartbeat(topics=(topic,), owned=frozenset(), epoch=0, assignor="sticky-ish", version=0)
        assert refused.error_code == UNSUPPORTED_ASSIGNOR
        assert broker.shim.members(group) == {}
        joined = m.heartbeat(topics=(topic,), owned=frozenset(), epoch=0, assignor="range", version=0)
        assert joined.error_code == 0 and joined.member_id
        assert set(broker.shim.members(group)) == {joined.member_id}
        assert m.assignment == every(topic)
        recorded = broker.shim.heartbeats
        assert [(g, mid, version) for g, mid, _, version in recorded[-1:]] == [(group, joined.member_id, 0)]
        assert recorded[-1][2].server_assignor == "range"
    finally:
        m.close()


def test_fence_and_injected_errors(setup: tuple[Kip848Broker, str, dict[uuid.UUID, str]]) -> None:
    broker, topic, ids = setup
    shim, group = broker.shim, f"g-{uuid.uuid4().hex[:8]}"
    m = Member(broker.bootstrap_servers, group, ids, "m")
    try:
        m.join((topic,))
        epoch = shim.group_epoch(group)
        shim.fail_heartbeats(COORDINATOR_LOAD_IN_PROGRESS, count=2)
        assert [m.heartbeat().error_code for _ in range(3)] == [COORDINATOR_LOAD_IN_PROGRESS] * 2 + [0]
        assert shim.group_epoch(group) == epoch

        assert shim.fence(m.member_id) == group
        assert shim.members(group) == {} and shim.group_epoch(group) == epoch + 1
        assert m.heartbeat().error_code == FENCED_MEMBER_EPOCH
        assert m.heartbeat().error_code == UNKNOWN_MEMBER_ID  # fenced once, then simply unknown
        m.join((topic,))
        assert m.epoch == epoch + 2 and m.assignment == every(topic)

        wrong = m.heartbeat(epoch=m.epoch + 5)
        assert wrong.error_code == FENCED_MEMBER_EPOCH and shim.members(group) == {}
    finally:
        m.close()


def test_a_silent_member_expires(setup: tuple[Kip848Broker, str, dict[uuid.UUID, str]]) -> None:
    broker, topic, ids = setup
    shim, group = broker.shim, f"g-{uuid.uuid4().hex[:8]}"
    shim.session_timeout_ms = 600
    a = Member(broker.bootstrap_servers, group, ids, "a")
    b = Member(broker.bootstrap_servers, group, ids, "b")
    try:
        a.join((topic,))
        a.heartbeat(owned=a.assignment)
        b.join((topic,))
        # only b keeps heartbeating; once a's session runs out b is given everything
        wait_for(
            lambda: b.heartbeat(owned=b.assignment).error_code == 0 and b.assignment == every(topic),
            10,
            interval=0.1,
            message=lambda: f"b has {sorted(b.assignment)}",
        )
        assert set(shim.members(group)) == {b.member_id}
    finally:
        a.close()
        b.close()


def test_a_topic_created_after_joining_is_assigned(kip848_broker: Kip848Broker) -> None:
    shim, group = kip848_broker.shim, f"g-{uuid.uuid4().hex[:8]}"
    name = f"later-{uuid.uuid4().hex[:8]}"
    ids: dict[uuid.UUID, str] = {}
    m = Member(kip848_broker.bootstrap_servers, group, ids, "m")
    try:
        m.join((name,))
        assert m.assignment == frozenset()
        kip848_broker.create_topic(2, name=name)
        client = RawClient(kip848_broker.bootstrap_servers)
        try:
            ids.update({t.topic_id: t.name for t in metadata(client, (name,)).topics if t.name is not None})
        finally:
            client.close()
        wait_for(lambda: m.heartbeat().error_code == 0 and m.assignment == every(name, 2), 10, interval=0.05)
        assert m.epoch == shim.group_epoch(group) == 2
    finally:
        m.close()


# --- offsets ----------------------------------------------------------------------------------------------------


def commit(client: RawClient, group: str, member_id: str, epoch: int, topic: str, offset: int) -> int:
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member_id,
        topics=(
            OffsetCommitRequestTopic(
                name=topic,
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_leader_epoch=3, committed_metadata="m"
                    ),
                ),
            ),
        ),
    )
    answer = client.call(request, 9)
    assert isinstance(answer, OffsetCommitResponse)
    ((partition,),) = [t.partitions for t in answer.topics]
    return partition.error_code


def test_commit_and_fetch_round_trip_with_epoch_checks(
    setup: tuple[Kip848Broker, str, dict[uuid.UUID, str]],
) -> None:
    broker, topic, ids = setup
    shim, group = broker.shim, f"g-{uuid.uuid4().hex[:8]}"
    a = Member(broker.bootstrap_servers, group, ids, "a")
    b = Member(broker.bootstrap_servers, group, ids, "b")
    client = RawClient(broker.bootstrap_servers, "committer")
    try:
        a.join((topic,))
        a.heartbeat(owned=a.assignment)
        assert commit(client, group, a.member_id, 1, topic, 10) == 0
        b.join((topic,))
        a.heartbeat()
        a.heartbeat(owned=a.assignment)
        assert a.epoch == 2

        assert commit(client, group, a.member_id, 1, topic, 11) == STALE_MEMBER_EPOCH
        assert commit(client, group, a.member_id, 3, topic, 12) == FENCED_MEMBER_EPOCH
        assert commit(client, group, "nobody", 2, topic, 13) == UNKNOWN_MEMBER_ID
        assert shim.committed(group) == {(topic, 0): 10}
        assert commit(client, group, a.member_id, 2, topic, 14) == 0
        assert commit(client, group, "", -1, topic, 15) == 0  # no membership: a plain commit
        assert shim.committed(group) == {(topic, 0): 15}

        for version in (5, 8, 9):
            answer = client.call(
                OffsetFetchRequest(
                    group_id=group, topics=(OffsetFetchRequestTopic(name=topic, partition_indexes=(0, 1)),)
                ),
                version,
            )
            assert isinstance(answer, OffsetFetchResponse)
            fetched = offsets_for_group(answer, group)
            assert fetched.error_code == 0
            ((name, partitions),) = [(t.name, t.partitions) for t in fetched.topics]
            assert name == topic
            assert [(p.partition_index, p.committed_offset, p.committed_leader_epoch) for p in partitions] == [
                (0, 15, 3),
                (1, -1, -1),
            ]
        everything = client.call(OffsetFetchRequest(group_id=group, topics=None), 9)
        assert isinstance(everything, OffsetFetchResponse)
        assert [
            (t.name, [p.committed_offset for p in t.partitions]) for t in offsets_for_group(everything, group).topics
        ] == [(topic, [15])]
    finally:
        a.close()
        b.close()
        client.close()
    counts = shim.counts
    assert counts[API_OFFSET_COMMIT] == 6 and counts[API_OFFSET_FETCH] == 4
