"""A classic group member driven by hand: a coordinator already found, a ClassicMembershipManager wired to recording
callbacks, and hand-built JoinGroup answers, for the classic membership and heartbeat manager unit tests."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.member_state import MemberState
from asyncconsumer.managers.membership_classic import ClassicMembershipManager, GroupSettings
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.consumer_protocol import encode_assignment, encode_subscription
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.protocol.messages.join_group import (
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from asyncconsumer.protocol.messages.sync_group import SyncGroupResponse
from asyncconsumer.records import TopicPartition


class Harness:
    """One member of group ``g`` (topic ``t``, the range assignor), its coordinator already found; as the leader it
    gives every member partitions 0 and 1."""

    def __init__(self, instance_id: str | None = None) -> None:
        self.coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
        (find,) = self.coordinator.poll(0).unsent_requests
        find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
        self.applied: list[frozenset[TopicPartition]] = []
        self.calls: list[tuple[str, frozenset[TopicPartition], Future[None]]] = []
        self.errors: list[ErrorEvent] = []
        self.leader_inputs: list[tuple[str, Sequence[JoinGroupResponseMember]]] = []
        self.stale: str | None = None
        self.ready = True
        """What ``ready_to_join`` answers: whether the metadata covers the subscription."""
        """What ``stale_assignment`` answers: a reason to rejoin, or None."""
        self.manager = ClassicMembershipManager(
            GroupSettings("g", 10_000, 30_000, 30_000, instance_id),
            self.coordinator,
            lambda: [
                JoinGroupRequestProtocol(
                    name="range", metadata=encode_subscription(ConsumerProtocolSubscription(topics=("t",)))
                )
            ],
            self.leader_assign,
            self.applied.append,
            self.listener,
            ExponentialBackoff(100, 1000, jitter=0),
            self.errors.append,
            stale_assignment=lambda: self.stale,
            ready_to_join=lambda: self.ready,
        )

    def leader_assign(self, protocol: str, members: Sequence[JoinGroupResponseMember]) -> dict[str, bytes]:
        self.leader_inputs.append((protocol, members))
        return {
            m.member_id: encode_assignment(
                ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),))
            )
            for m in members
        }

    def listener(self, kind: str, partitions: frozenset[TopicPartition]) -> Future[None]:
        future: Future[None] = Future()
        self.calls.append((kind, partitions, future))
        return future

    def one(self, now: int) -> UnsentRequest:
        requests = self.manager.poll(now).unsent_requests
        assert len(requests) == 1, requests
        return requests[0]

    def join_as_leader(self, now: int = 0) -> None:
        self.manager.subscribe()
        join = self.one(now)
        join.on_response(joined("m-1", leader="m-1"), now)
        sync = self.one(now)
        sync.on_response(
            SyncGroupResponse(
                error_code=0,
                assignment=encode_assignment(
                    ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),))
                ),
            ),
            now,
        )
        self.calls[-1][2].set_result(None)
        self.manager.poll(now)
        assert self.manager.state is MemberState.STABLE

    def join_as_follower(self) -> None:
        """Joins and syncs as a follower given both partitions; the assign callback is left pending."""
        self.manager.subscribe()
        self.one(0).on_response(joined("m-1", leader="m-2"), 1)
        self.one(2).on_response(
            SyncGroupResponse(
                error_code=0,
                assignment=encode_assignment(
                    ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),))
                ),
            ),
            3,
        )


def joined(member: str, leader: str, generation: int = 5, code: int = 0) -> JoinGroupResponse:
    members = (
        (
            JoinGroupResponseMember(
                member_id=member,
                group_instance_id=None,
                metadata=encode_subscription(ConsumerProtocolSubscription(topics=("t",))),
            ),
        )
        if member == leader
        else ()
    )
    return JoinGroupResponse(
        error_code=code,
        generation_id=generation,
        protocol_type="consumer",
        protocol_name="range",
        leader=leader,
        member_id=member,
        members=members,
    )
