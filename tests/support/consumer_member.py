"""A KIP-848 member driven by hand: its coordinator already found, the membership and heartbeat managers wired to
recording callbacks, a metadata snapshot of topic ``t`` (4 partitions), and hand-built ConsumerGroupHeartbeat
answers, for the consumer-protocol membership and heartbeat manager unit tests."""

from __future__ import annotations

import uuid
from concurrent.futures import Future

from asyncconsumer._state.cluster import Cluster, TopicInfo
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.heartbeat_consumer import ConsumerHeartbeatManager, ConsumerHeartbeatSettings
from asyncconsumer.managers.membership_consumer import ConsumerGroupSettings, ConsumerMembershipManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.records import PartitionInfo, TopicPartition

T_ID, U_ID = uuid.UUID(int=1), uuid.UUID(int=2)
"""The topic ids of ``t`` (known to the metadata) and ``u`` (known only once a test adds it)."""
T0, T1, T2, T3 = (TopicPartition("t", p) for p in range(4))


def cluster(*topics: tuple[str, uuid.UUID, int]) -> Cluster:
    return Cluster(
        topics={
            name: TopicInfo(name, 0, {p: PartitionInfo(name, p, 0, (0,), (0,)) for p in range(n)}, topic_id)
            for name, topic_id, n in topics
        }
    )


class Harness:
    """One member of group ``g`` subscribed to ``t`` (rack ``rack-a``, server assignor ``uniform``)."""

    def __init__(self, *, instance_id: str | None = None, max_poll_interval_ms: int = 300_000) -> None:
        self.coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
        (find,) = self.coordinator.poll(0).unsent_requests
        find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
        self.cluster = cluster(("t", T_ID, 4))
        self.metadata_requests = 0
        self.applied: list[frozenset[TopicPartition]] = []
        self.calls: list[tuple[str, frozenset[TopicPartition], Future[None]]] = []
        self.errors: list[ErrorEvent] = []
        self.topics = ["t"]
        self.regex: str | None = None
        self.last_poll: int | None = None
        self.supported: bool | None = None
        self.membership = ConsumerMembershipManager(
            ConsumerGroupSettings("g", instance_id),
            lambda: self.cluster,
            self.ask_metadata,
            self.applied.append,
            self.listener,
            self.errors.append,
        )
        self.heartbeat = ConsumerHeartbeatManager(
            ConsumerHeartbeatSettings("g", 60_000, max_poll_interval_ms, instance_id, "rack-a", "uniform"),
            self.coordinator,
            self.membership,
            lambda: self.topics,
            lambda: self.regex,
            lambda: self.last_poll,
            ExponentialBackoff(100, 1000, jitter=0),
            self.errors.append,
            lambda: self.supported,
        )

    def ask_metadata(self) -> None:
        self.metadata_requests += 1

    def listener(self, kind: str, partitions: frozenset[TopicPartition]) -> Future[None]:
        future: Future[None] = Future()
        self.calls.append((kind, partitions, future))
        return future

    def finish_callbacks(self) -> None:
        for _, _, future in self.calls:
            if not future.done():
                future.set_result(None)

    def tick(self, now: int) -> list[UnsentRequest]:
        """One loop turn in Kafka's order: membership first, then heartbeat."""
        self.membership.poll(now)
        return list(self.heartbeat.poll(now).unsent_requests)

    def send(self, now: int) -> tuple[ConsumerGroupHeartbeatRequest, UnsentRequest]:
        requests = self.tick(now)
        assert len(requests) == 1, requests
        request = requests[0].request
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        return request, requests[0]

    def join(self, assignment: dict[uuid.UUID, tuple[int, ...]] | None, now: int = 0, epoch: int = 1) -> None:
        self.membership.subscribe()
        request, unsent = self.send(now)
        assert request.member_epoch == 0
        unsent.on_response(answer(epoch, assignment, member_id=request.member_id), now)
        self.membership.poll(now)  # starts reconciling: the assign callback is now pending


def answer(
    epoch: int,
    assignment: dict[uuid.UUID, tuple[int, ...]] | None = None,
    *,
    code: int = 0,
    member_id: str | None = None,
    interval: int = 1000,
    message: str | None = None,
) -> ConsumerGroupHeartbeatResponse:
    given = (
        None
        if assignment is None
        else Assignment(
            topic_partitions=tuple(TopicPartitions(topic_id=t, partitions=p) for t, p in assignment.items())
        )
    )
    return ConsumerGroupHeartbeatResponse(
        error_code=code,
        member_id=member_id,
        member_epoch=epoch,
        heartbeat_interval_ms=interval,
        error_message=message,
        assignment=given,
    )
