"""What a kind of membership is built from, by hand (``managers/membership.py``'s ``MembershipContext``), and a
metadata manager answered with chosen topics, for the unit tests of the group wiring and the two memberships."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from asyncconsumer._background.control import LoopControl
from asyncconsumer._background.group import ConsumerGroup, GroupContext
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.queues import BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.snapshot import CallerActivity
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.assignors import assignor_for
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ErrorCode, KafkaError
from asyncconsumer.events.background import BackgroundEvent, ErrorEvent, RebalanceEvent
from asyncconsumer.managers import group_classic, group_consumer
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.membership import MembershipContext
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.consumer_protocol import encode_assignment
from asyncconsumer.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
)
from asyncconsumer.protocol.messages.consumer_protocol import (
    TopicPartition as WireTopicPartition,
)
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from asyncconsumer.protocol.messages.sync_group import SyncGroupResponse
from asyncconsumer.records import TopicPartition
from tests.support.classic_member import joined
from tests.support.consumer_member import answer


def answer_metadata(
    metadata: MetadataManager,
    topics: Mapping[str, int],
    *,
    unknown: Iterable[str] = (),
    internal: Iterable[str] = (),
    now_ms: int = 0,
) -> None:
    """Asks ``metadata`` for a refresh and answers it: ``topics`` (name -> partition count, all led by node 1; those
    in ``internal`` marked internal) and ``unknown`` topics the broker says do not exist. The manager's listeners hear
    it, as on a real answer."""
    internal = set(internal)
    metadata.request_update()
    (request,) = metadata.poll(now_ms).unsent_requests
    answered = tuple(
        MetadataResponseTopic(
            error_code=0,
            name=name,
            partitions=tuple(
                MetadataResponsePartition(
                    error_code=0, partition_index=p, leader_id=1, leader_epoch=0, replica_nodes=(1,), isr_nodes=(1,)
                )
                for p in range(count)
            ),
            topic_id=uuid.uuid4(),
            is_internal=name in internal,
        )
        for name, count in topics.items()
    ) + tuple(
        MetadataResponseTopic(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name=name, partitions=())
        for name in unknown
    )
    request.on_response(
        MetadataResponse(brokers=(MetadataResponseBroker(node_id=1, host="h", port=9092),), topics=answered), now_ms
    )


class Recorder:
    """A membership's host (``MembershipHost``) that records what the membership hands back: errors, applied
    assignments, listener calls."""

    def __init__(self) -> None:
        self.errors: list[ErrorEvent] = []
        self.applied: list[frozenset[TopicPartition]] = []
        self.calls: list[tuple[str, frozenset[TopicPartition]]] = []
        self.polled_at_ms: int | None = None
        self.pattern: re.Pattern[str] | None = None
        self.supported: dict[int, bool] = {}

    def apply_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        self.applied.append(partitions)

    def call_listener(self, kind: str, partitions: frozenset[TopicPartition]) -> Future[None]:
        self.calls.append((kind, partitions))
        done: Future[None] = Future()
        done.set_result(None)
        return done

    def report(self, event: ErrorEvent) -> None:
        self.errors.append(event)

    def last_poll_ms(self) -> int | None:
        return self.polled_at_ms

    def supports_api(self, key: int) -> bool | None:
        return self.supported.get(key)


def membership_context(**settings: Any) -> tuple[MembershipContext, Recorder]:
    """A context for group ``g`` (settings as ``ConsumerConfig`` keyword arguments), its coordinator not yet found
    and its metadata not yet answered."""
    config = ConsumerConfig.from_kwargs("h:1", group_id="g", **settings)
    backoff = ExponentialBackoff(100, 1000, jitter=0)
    recorder = Recorder()
    context = MembershipContext(
        config=config,
        group_id="g",
        subscriptions=SubscriptionState(config.auto_offset_reset),
        metadata=MetadataManager(["h:1"], 60_000, backoff),
        coordinator=CoordinatorManager("g", backoff, recorder.errors.append),
        assignors=[assignor_for(name) for name in config.partition_assignment_strategy],
        backoff=backoff,
        host=recorder,
    )
    return context, recorder


class Brokers:
    """The network as the group sees it (``group.Brokers``): no broker connected, no connection error."""

    def __init__(self) -> None:
        self.supported: dict[int, bool] = {}

    def supports_api(self, key: int) -> bool | None:
        return self.supported.get(key)

    def last_connection_error(self) -> KafkaError | None:
        return None


class WiredGroup:
    """A ``ConsumerGroup`` with the shared parts it was given, and what it sends the caller's side."""

    def __init__(self, **settings: Any) -> None:
        config = ConsumerConfig.from_kwargs("h:1", group_id="g", **settings)
        self.subscriptions = SubscriptionState(config.auto_offset_reset)
        self.metadata = MetadataManager(["h:1"], 60_000, ExponentialBackoff(100, 1000, jitter=0))
        self.clock = ManualClock()
        self.events = BackgroundEventQueue(CallerSignal())
        self.control = LoopControl()
        self.group = ConsumerGroup(
            GroupContext(
                config=config,
                clock=self.clock,
                subscriptions=self.subscriptions,
                activity=CallerActivity(),
                metadata=self.metadata,
                assignors=[assignor_for(name) for name in config.partition_assignment_strategy],
                membership=group_consumer.build if config.group_protocol == "consumer" else group_classic.build,
                events=self.events,
                brokers=Brokers(),
                control=self.control,
            )
        )
        self._seen: list[BackgroundEvent] = []

    def _staged(self) -> list[BackgroundEvent]:
        """Everything the group staged for the caller so far (delivered here, as at the end of a loop iteration)."""
        self.events.deliver()
        self._seen.extend(self.events.drain())
        return self._seen

    @property
    def errors(self) -> list[ErrorEvent]:
        return [e for e in self._staged() if isinstance(e, ErrorEvent)]

    @property
    def asked(self) -> list[RebalanceEvent]:
        return [e for e in self._staged() if isinstance(e, RebalanceEvent)]

    def find_coordinator(self, node_id: int = 1, now_ms: int = 0) -> None:
        (find,) = self.group.coordinator.poll(now_ms).unsent_requests
        find.on_response(
            FindCoordinatorResponse(error_code=0, node_id=node_id, host="h", port=9092, error_message=None), now_ms
        )

    def join_as_leader(self, *, listener: bool) -> None:
        """Subscribes to ``t`` (two partitions) and goes through JoinGroup and SyncGroup as member ``m-1``, the
        group's leader, given both partitions in generation 5; with a listener, the assign callback is left to the
        test."""
        self.group.has_listener = listener
        self.subscriptions.subscribe(["t"])
        answer_metadata(self.metadata, {"t": 2})
        self.find_coordinator()
        membership = self.group.membership
        membership.subscribe()
        (join_group,) = membership.poll(1).unsent_requests
        join_group.on_response(joined("m-1", leader="m-1"), 1)
        (sync_group,) = membership.poll(2).unsent_requests
        sync_group.on_response(
            SyncGroupResponse(
                error_code=0,
                assignment=encode_assignment(
                    ConsumerProtocolAssignment(assigned_partitions=(WireTopicPartition(topic="t", partitions=(0, 1)),))
                ),
            ),
            2,
        )

    def join_as_kip848_member(self, *, listener: bool) -> None:
        """Subscribes to ``t`` (two partitions) and joins on KIP-848's protocol (``group_protocol="consumer"``), given
        both partitions at epoch 5; with a listener, the assign callback is left to the test."""
        self.group.has_listener = listener
        self.subscriptions.subscribe(["t"])
        answer_metadata(self.metadata, {"t": 2})
        self.find_coordinator()
        topic_id = self.metadata.cluster.topics["t"].topic_id
        self.group.membership.subscribe()
        (heartbeat,) = self.group.heartbeat.poll(1).unsent_requests
        request = heartbeat.request
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        heartbeat.on_response(answer(5, {topic_id: (0, 1)}, member_id=request.member_id), 1)
        self.group.membership.poll(2)  # reconciles: the partitions are applied, the assign callback asked for
        if not listener:
            assert self.subscriptions.assigned() == {TopicPartition("t", 0), TopicPartition("t", 1)}

    def finish_rebalance_callbacks(self) -> None:
        """What the caller's ``poll`` does with every rebalance event it was sent: run it (no listener here), done."""
        for event in self.asked:
            if not event.done.done():
                event.done.set_result(None)
