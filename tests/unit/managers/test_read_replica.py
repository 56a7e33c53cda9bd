"""Rack-aware fetching (KIP-392) through the fetch manager, with literal timestamps and hand-built responses: the
partition follows the replica its leader names, for a lease of ``metadata_max_age_ms``, and goes back to the leader
when the lease runs out, the leader moves, the replica fails a fetch or answers an error, or leaves the metadata."""

from __future__ import annotations

import uuid

import pytest

from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ErrorCode, KafkaConnectionError, OffsetOutOfRangeError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.protocol.messages.fetch import FetchableTopicResponse, FetchRequest, FetchResponse, PartitionData
from asyncconsumer.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from asyncconsumer.records import TopicPartition
from tests.support.batches import build_batch
from tests.support.managers import no_jitter, only

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
LEASE_MS = 10_000
TOPIC_ID = uuid.uuid4()


def cluster_metadata(
    leader: int = 1, epoch: int = 5, brokers: tuple[int, ...] = (1, 2, 3), offline: tuple[int, ...] = ()
) -> MetadataResponse:
    """Brokers 1-3 in racks r1-r3; partitions 0 and 1 of "t" replicated on all three."""
    return MetadataResponse(
        brokers=tuple(
            MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9090 + n, rack=f"r{n}") for n in brokers
        ),
        topics=(
            MetadataResponseTopic(
                error_code=0,
                name="t",
                partitions=tuple(
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=leader,
                        leader_epoch=epoch,
                        replica_nodes=(1, 2, 3),
                        isr_nodes=(1, 2, 3),
                        offline_replicas=offline,
                    )
                    for p in (0, 1)
                ),
                topic_id=TOPIC_ID,
            ),
        ),
        cluster_id="c",
        controller_id=1,
    )


class Rig:
    """A fetch manager for a consumer in rack r2, over a 3-broker cluster whose leader (node 1) is in r1."""

    def __init__(self, partitions: tuple[TopicPartition, ...] = (TP0,), **config: object) -> None:
        settings: dict[str, object] = {"client_rack": "r2", "metadata_max_age_ms": LEASE_MS, **config}
        cfg = ConsumerConfig.from_kwargs("h:1", **settings)
        self.metadata = MetadataManager(["h:1"], 3_600_000, no_jitter())
        self.set_metadata(cluster_metadata(), 0)
        self.subs = SubscriptionState(cfg.auto_offset_reset)
        self.buffer = FetchBuffer(16 << 20, CallerSignal())
        self.errors: list[ErrorEvent] = []
        self.fetch = FetchManager(cfg, self.subs, self.metadata, self.buffer, no_jitter(), self.errors.append)
        self.subs.assign(list(partitions))
        for tp in partitions:
            self.subs.seek(tp, 0)

    def set_metadata(self, response: MetadataResponse, now: int) -> None:
        self.metadata.request_update()
        only(self.metadata.poll(now).unsent_requests).on_response(response, now)

    def poll(self, now: int) -> UnsentRequest:
        return only(self.fetch.poll(now).unsent_requests)

    def drain(self) -> list[tuple[TopicPartition, int, int]]:
        """What the caller would get: (partition, first offset, next offset) of each completed fetch."""
        taken = []
        self.buffer.deliver()  # as every loop iteration ends
        while (fetched := self.buffer.take()) is not None:
            taken.append((fetched.tp, fetched.fetch_offset, fetched.next_fetch_offset))
            self.buffer.release(fetched)
        return taken


def request_of(sent: UnsentRequest) -> FetchRequest:
    assert isinstance(sent.request, FetchRequest)
    return sent.request


def offsets(sent: UnsentRequest) -> dict[int, int]:
    return {p.partition: p.fetch_offset for t in request_of(sent).topics for p in t.partitions}


def answer(
    parts: dict[int, tuple[int, bytes | None]], *, preferred: int = -1, high_watermark: int = 100
) -> FetchResponse:
    return FetchResponse(
        responses=(
            FetchableTopicResponse(
                topic="t",
                partitions=tuple(
                    PartitionData(
                        partition_index=p,
                        error_code=code,
                        high_watermark=high_watermark,
                        last_stable_offset=high_watermark,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=preferred,
                        records=records,
                    )
                    for p, (code, records) in parts.items()
                ),
            ),
        )
    )


def redirect(rig: Rig, now: int, to: int = 2) -> UnsentRequest:
    """The leader's fetch, answered as Kafka's rack-aware selector does: no records, a replica to read from."""
    sent = rig.poll(now)
    assert sent.node_id == 1
    assert request_of(sent).rack_id == "r2"
    sent.on_response(answer({p: (0, None) for p in offsets(sent)}, preferred=to), now)
    return sent


def test_the_partition_is_fetched_from_the_replica_its_leader_names_for_our_rack() -> None:
    rig = Rig()
    redirect(rig, 0)
    assert rig.drain() == []  # the leader's answer carries no records
    assert rig.fetch.read_replicas.read_replica(TP0, 1) == 2
    follower = rig.poll(1)
    assert follower.node_id == 2
    assert offsets(follower) == {0: 0}  # the redirect did not move the fetch position
    follower.on_response(answer({0: (0, build_batch(0, [b"a", b"b"]))}), 2)
    assert rig.drain() == [(TP0, 0, 2)]
    assert rig.fetch.read_replicas.fetched_from[TP0] == 2
    again = rig.poll(3)
    assert (again.node_id, offsets(again)) == (2, {0: 2})


def test_the_lease_ends_after_metadata_max_age_and_the_leader_is_asked_again() -> None:
    rig = Rig()
    redirect(rig, 100)
    last = rig.poll(100 + LEASE_MS)
    assert last.node_id == 2  # the lease's last moment
    last.on_response(answer({0: (0, None)}), 100 + LEASE_MS)
    back = rig.poll(101 + LEASE_MS)
    assert back.node_id == 1
    assert request_of(back).rack_id == "r2"
    assert rig.fetch.read_replicas.read_replica(TP0, 101 + LEASE_MS) is None


def test_a_seek_keeps_the_lease_as_in_java() -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.subs.seek(TP0, 40)
    sent = rig.poll(1)
    assert (sent.node_id, offsets(sent)) == (2, {0: 40})


def test_a_failed_fetch_to_the_replica_goes_back_to_the_leader_which_serves_it_without_the_rack() -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.poll(1).on_response(KafkaConnectionError("lost the connection to broker 2"), 2)
    assert rig.fetch.read_replicas.read_replica(TP0, 2) is None
    # The leader is asked again and, while the dead replica is still in its ISR, names it again ...
    redirect(rig, 3)
    # ... but a replica that just failed is not read from: the leader is asked without the rack, and serves it.
    assert rig.fetch.read_replicas.read_replica(TP0, 4) is None
    sent = rig.poll(4)
    assert sent.node_id == 1
    assert request_of(sent).rack_id == ""
    sent.on_response(answer({0: (0, build_batch(0, [b"a"]))}), 5)
    assert rig.drain() == [(TP0, 0, 1)]
    assert rig.fetch.read_replicas.fetched_from[TP0] == 1


def test_a_lost_connection_to_the_replica_sends_the_next_fetch_to_the_leader_even_with_none_in_flight() -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.poll(1).on_response(answer({0: (0, build_batch(0, [b"a"]))}), 2)
    # the caller holds the records; meanwhile the network reports the replica's connection closed
    rig.fetch.read_replicas.disconnected(2)
    assert rig.fetch.read_replicas.read_replica(TP0, 3) is None
    sent = rig.poll(3)
    assert (sent.node_id, request_of(sent).rack_id, offsets(sent)) == (1, "", {0: 1})
    # and it stays so: not a blip that the next poll forgets
    sent.on_response(answer({0: (0, build_batch(1, [b"b"]))}), 4)
    assert rig.poll(5).node_id == 1


def test_a_failed_replica_is_read_from_again_once_it_answers_a_fetch() -> None:
    rig = Rig(partitions=(TP0, TP1))
    # node 2 leads partition 1; partition 0 is led by node 1, which names node 2 for our rack
    metadata = cluster_metadata()
    part1 = MetadataResponsePartition(
        error_code=0, partition_index=1, leader_id=2, leader_epoch=5, replica_nodes=(1, 2, 3), isr_nodes=(1, 2, 3)
    )
    topic = metadata.topics[0]
    rig.set_metadata(
        MetadataResponse(
            brokers=metadata.brokers,
            topics=(
                MetadataResponseTopic(
                    error_code=0, name="t", partitions=(topic.partitions[0], part1), topic_id=TOPIC_ID
                ),
            ),
            cluster_id="c",
            controller_id=1,
        ),
        0,
    )
    by_node = {r.node_id: r for r in rig.fetch.poll(0).unsent_requests}
    assert set(by_node) == {1, 2}
    by_node[2].on_response(KafkaConnectionError("lost the connection to broker 2"), 1)
    by_node[1].on_response(answer({0: (0, None)}, preferred=2), 1)
    # node 2 failed a moment ago: partition 0 stays with its leader, asked without the rack
    by_node = {r.node_id: r for r in rig.fetch.poll(2_000).unsent_requests}
    assert request_of(by_node[1]).rack_id == ""
    by_node[1].on_response(answer({0: (0, None)}), 2_001)
    by_node[2].on_response(answer({1: (0, None)}), 2_001)  # node 2 answers again (as partition 1's leader)
    sent = rig.fetch.poll(2_002).unsent_requests  # two fetches: records wait in both partitions
    assert {r.node_id for r in sent} == {2}
    assert {tp: offset for r in sent for tp, offset in offsets(r).items()} == {0: 0, 1: 0}


@pytest.mark.parametrize("code", [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.OFFSET_NOT_AVAILABLE])
def test_a_partition_error_from_the_replica_ends_the_lease_and_refreshes_metadata(code: ErrorCode) -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.poll(1).on_response(answer({0: (code, None)}), 2)
    assert rig.fetch.read_replicas.read_replica(TP0, 2) is None
    assert rig.metadata.poll(3).unsent_requests  # a refresh was asked for
    assert rig.fetch.poll(3).unsent_requests == ()  # the partition backs off, as after any retriable error
    assert rig.poll(2_000).node_id == 1


@pytest.mark.parametrize("reset", ["earliest", "none"])
def test_offset_out_of_range_from_a_lagging_follower_refetches_from_the_leader_without_a_reset(reset: str) -> None:
    rig = Rig(auto_offset_reset=reset)
    rig.subs.seek(TP0, 70)
    redirect(rig, 0)
    follower = rig.poll(1)
    assert follower.node_id == 2
    follower.on_response(answer({0: (ErrorCode.OFFSET_OUT_OF_RANGE, None)}, high_watermark=60), 2)
    assert rig.errors == []
    assert rig.subs.position(TP0) == 70  # no reset
    leader = rig.poll(2)  # at once: no backoff
    assert (leader.node_id, offsets(leader)) == (1, {0: 70})
    assert request_of(leader).rack_id == "r2"
    # from the leader the same error is the partition's own, handled as always
    leader.on_response(answer({0: (ErrorCode.OFFSET_OUT_OF_RANGE, None)}), 3)
    if reset == "none":
        assert [type(e.error) for e in rig.errors] == [OffsetOutOfRangeError]
    else:
        assert rig.subs.position(TP0) is None  # awaiting the reset


def test_a_replica_missing_from_the_metadata_is_not_read_from_until_it_is_back() -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.set_metadata(cluster_metadata(brokers=(1, 3)), 1)
    sent = rig.poll(2)
    assert (sent.node_id, request_of(sent).rack_id) == (1, "")
    assert rig.fetch.read_replicas.read_replica(TP0, 2) is None
    sent.on_response(answer({0: (0, build_batch(0, [b"a"]))}), 3)
    # our metadata may be older than the leader's word: a refresh was asked for, once, not at every fetch
    only(rig.metadata.poll(4).unsent_requests).on_response(cluster_metadata(brokers=(1, 3)), 4)
    rig.poll(5).on_response(answer({0: (0, None)}), 5)
    assert rig.metadata.poll(6).unsent_requests == ()
    rig.set_metadata(cluster_metadata(), 6)  # node 2 is back
    assert rig.fetch.read_replicas.read_replica(TP0, 7) == 2
    assert rig.poll(7).node_id == 2  # the lease still stands


def test_an_offline_replica_is_not_read_from() -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.set_metadata(cluster_metadata(offline=(2,)), 1)
    sent = rig.poll(2)
    assert (sent.node_id, request_of(sent).rack_id) == (1, "")


@pytest.mark.parametrize(("leader", "epoch"), [(3, 6), (1, 6)])
def test_a_new_leader_or_leader_epoch_ends_the_lease(leader: int, epoch: int) -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.set_metadata(cluster_metadata(leader=leader, epoch=epoch), 1)
    sent = rig.poll(2)
    assert (sent.node_id, request_of(sent).rack_id) == (leader, "r2")
    assert rig.fetch.read_replicas.read_replica(TP0, 2) is None


def test_a_partition_unassigned_and_assigned_again_starts_from_its_leader() -> None:
    rig = Rig()
    redirect(rig, 0)
    rig.subs.assign([TP1])
    rig.subs.seek(TP1, 0)
    rig.poll(1).on_response(answer({1: (0, None)}), 1)
    rig.subs.assign([TP0])
    rig.subs.seek(TP0, 0)
    assert rig.poll(2).node_id == 1


def test_without_a_client_rack_fetches_name_no_rack() -> None:
    rig = Rig(client_rack="")
    assert request_of(rig.poll(0)).rack_id == ""
