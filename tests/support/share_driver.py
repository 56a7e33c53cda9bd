"""A share-group member driven by hand: its coordinator already found (broker 1), a ``ShareMembershipManager`` wired
to recording callbacks, and hand-built ShareGroupHeartbeat answers, for the share membership and share consume
manager unit tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from asyncconsumer._state.cluster import Cluster
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.share_membership import ShareMembershipManager
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.protocol.messages.share_group_heartbeat import (
    Assignment,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)
from asyncconsumer.records import TopicPartition
from tests.support.managers import no_jitter


def find_coordinator(coordinator: CoordinatorManager, now: int = 0) -> None:
    (find,) = coordinator.poll(now).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), now)


class ShareMember:
    """One member of share group ``g`` (rack ``rack-a``) over the metadata ``cluster`` returns."""

    def __init__(self, cluster: Callable[[], Cluster]) -> None:
        self.coordinator = CoordinatorManager("g", no_jitter(), lambda e: None)
        find_coordinator(self.coordinator)
        self.metadata_requests = 0
        self.errors: list[ErrorEvent] = []
        self.assignments: list[frozenset[TopicPartition]] = []
        self.membership = ShareMembershipManager(
            "g",
            self.coordinator,
            no_jitter(),
            self.errors.append,
            rack_id="rack-a",
            cluster=cluster,
            request_metadata=self.ask_metadata,
            on_assignment=self.assignments.append,
        )

    def ask_metadata(self) -> None:
        self.metadata_requests += 1

    def send(self, now: int) -> tuple[ShareGroupHeartbeatRequest, UnsentRequest]:
        requests = self.membership.poll(now).unsent_requests
        assert len(requests) == 1, requests
        request = requests[0].request
        assert isinstance(request, ShareGroupHeartbeatRequest)
        return request, requests[0]

    def join(
        self, assignment: dict[uuid.UUID, tuple[int, ...]] | None, now: int = 0, epoch: int = 1, topics: str = "t"
    ) -> None:
        """Subscribes to ``topics`` (comma-separated) and answers the join with ``epoch`` and ``assignment``."""
        self.membership.subscribe(topics.split(","))
        request, unsent = self.send(now)
        assert request.member_epoch == 0
        unsent.on_response(answer(epoch, assignment), now)
        assert self.membership.joined


def answer(
    epoch: int,
    assignment: dict[uuid.UUID, tuple[int, ...]] | None = None,
    *,
    code: int = 0,
    interval: int = 1000,
    message: str | None = None,
) -> ShareGroupHeartbeatResponse:
    given = (
        None
        if assignment is None
        else Assignment(
            topic_partitions=tuple(TopicPartitions(topic_id=t, partitions=p) for t, p in assignment.items())
        )
    )
    return ShareGroupHeartbeatResponse(
        error_code=code, error_message=message, member_epoch=epoch, heartbeat_interval_ms=interval, assignment=given
    )
