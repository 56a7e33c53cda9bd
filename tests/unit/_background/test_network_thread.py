"""The background loop, one iteration at a time, with a manual clock: over a recording delegate, and a KIP-848
member built as a consumer is over a delegate that answers at once, whose rebalance work must not wait for a sleep."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio

from asyncconsumer._background import builder
from asyncconsumer._background.control import LoopControl
from asyncconsumer._background.network_thread import ConsumerNetworkThread
from asyncconsumer._background.processor import ApplicationEventProcessor
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.queues import ApplicationEventQueue, BackgroundEventQueue
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaTimeoutError
from asyncconsumer.events.application import SeekEvent, TopicMetadataEvent
from asyncconsumer.events.background import ErrorEvent, RebalanceEvent
from asyncconsumer.managers.base import PollResult, UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import OffsetsManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from asyncconsumer.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from asyncconsumer.protocol.messages.offset_commit import OffsetCommitRequest
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from asyncconsumer.records import TopicPartition


class RecordingDelegate:
    def __init__(self) -> None:
        self.added: list[tuple[UnsentRequest, int]] = []
        self.polls: list[tuple[int, int]] = []

    def add_all(self, requests: Any, now_ms: int) -> None:
        self.added.extend((r, now_ms) for r in requests)

    async def poll(self, timeout_ms: int, now_ms: int) -> None:
        self.polls.append((timeout_ms, now_ms))

    def wakeup(self) -> None:
        pass


class FixedManager:
    def __init__(self, name: str, wait: int, log: list[tuple[str, int]]) -> None:
        self.name, self.wait, self.log = name, wait, log

    def poll(self, now_ms: int) -> PollResult:
        self.log.append((self.name, now_ms))
        return PollResult(self.wait)

    def poll_on_close(self, now_ms: int) -> PollResult:
        return PollResult()


def build(
    clock: ManualClock, managers: list[Any]
) -> tuple[ConsumerNetworkThread, ApplicationEventQueue, RecordingDelegate, SubscriptionState, MetadataManager]:
    subs = SubscriptionState("earliest")
    metadata = MetadataManager(["h:1"], 60_000, ExponentialBackoff(100, 1000, jitter=0))
    background = BackgroundEventQueue(CallerSignal())
    offsets = OffsetsManager(subs, metadata, "read_uncommitted", ExponentialBackoff(100, 1000), background.put)
    app = ApplicationEventQueue()
    delegate = RecordingDelegate()
    processor = ApplicationEventProcessor(subs, metadata, offsets, on_close=lambda e: None, last_error=lambda: None)
    control = LoopControl()
    thread = ConsumerNetworkThread(clock, control, app, background, processor, [metadata, *managers], delegate)  # type: ignore[arg-type]
    return thread, app, delegate, subs, metadata


def test_one_iteration_drains_events_then_polls_managers_in_order_with_one_now() -> None:
    clock = ManualClock(1_000)
    log: list[tuple[str, int]] = []
    thread, app, delegate, subs, _ = build(clock, [FixedManager("a", 700, log), FixedManager("b", 300, log)])
    subs.assign([TopicPartition("t", 0)])
    event = SeekEvent(tp=TopicPartition("t", 0), offset=42, deadline_ms=5_000)
    app.put(event)
    anyio.run(thread.run_once)
    assert event.future.result(0) is None
    assert subs.position(TopicPartition("t", 0)) == 42
    assert log == [("a", 1_000), ("b", 1_000)]
    assert delegate.polls == [(300, 1_000)]  # the nearest manager wait; the metadata request is already sent
    assert isinstance(delegate.added[0][0].request, MetadataRequest)


def test_the_loop_sleeps_until_the_nearest_manager_wants_it_capped_at_five_seconds() -> None:
    clock = ManualClock(0)
    log: list[tuple[str, int]] = []
    thread, _, delegate, _, _metadata = build(clock, [FixedManager("a", 700, log), FixedManager("b", 9_000, log)])
    anyio.run(thread.run_once)  # sends the bootstrap metadata request
    delegate.added[0][0].on_response(_empty_metadata(), 0)
    anyio.run(thread.run_once)
    assert delegate.polls[-1] == (700, 0)
    log.clear()
    thread2, _, delegate2, _, _ = build(clock, [FixedManager("b", 9_000, log)])
    anyio.run(thread2.run_once)
    delegate2.added[0][0].on_response(_empty_metadata(), 0)
    anyio.run(thread2.run_once)
    assert delegate2.polls[-1] == (5_000, 0)


def test_events_past_their_deadline_fail_with_a_timeout() -> None:
    clock = ManualClock(0)
    thread, app, _, _, _ = build(clock, [])
    event = TopicMetadataEvent(topic="t", deadline_ms=100)
    app.put(event)
    anyio.run(thread.run_once)
    assert not event.future.done()
    clock.advance(100)
    anyio.run(thread.run_once)
    error = event.future.exception(0)
    assert isinstance(error, KafkaTimeoutError)
    assert str(error) == "looking up topic 't' timed out"  # what the caller asked, never an internal class name


class HandingOver(FixedManager):
    """Hands work to a manager polled before it (as a membership queues a commit before revoking) and says so
    through ``poll_again``; or stages an event for the caller."""

    def __init__(self, log: list[tuple[str, int]], hand_over: Callable[[], None]) -> None:
        super().__init__("late", 9_000, log)
        self.hand_over = hand_over
        self.times = 1

    def poll(self, now_ms: int) -> PollResult:
        if self.times:
            self.times -= 1
            self.hand_over()
        return super().poll(now_ms)


def test_work_handed_to_a_manager_after_its_turn_is_polled_for_before_the_loop_sleeps() -> None:
    clock = ManualClock(0)
    log: list[tuple[str, int]] = []
    early = FixedManager("early", 700, log)
    thread, _, delegate, _, _ = build(clock, [early])
    thread._managers.append(HandingOver(log, thread._control.poll_again))
    anyio.run(thread.run_once)
    assert delegate.polls == [(0, 0)]  # no sleep: the next iteration polls "early" again at once
    anyio.run(thread.run_once)
    assert delegate.polls[-1] == (700, 0)  # nothing handed over this time: sleep until a manager is due
    assert log == [("early", 0), ("late", 0)] * 2


def test_an_event_staged_for_the_caller_during_the_pass_is_delivered_before_the_loop_sleeps() -> None:
    clock = ManualClock(0)
    log: list[tuple[str, int]] = []
    thread, _, delegate, _, _ = build(clock, [])
    background = thread._background_events
    error = ErrorEvent(KafkaTimeoutError("x"))
    thread._managers.append(HandingOver(log, lambda: background.stage(error)))
    published: list[int] = []

    def publish(now_ms: int) -> None:
        published.append(now_ms)
        background.deliver()

    thread._publish = publish
    anyio.run(thread.run_once)
    assert delegate.polls == [(0, 0)] and published == [0]  # the iteration ends without a sleep
    assert background.drain() == [error]


def _empty_metadata() -> Any:

    return MetadataResponse(brokers=(MetadataResponseBroker(node_id=1, host="h", port=1),), topics=())


# --- work handed over during an iteration: sent, and delivered, before the loop sleeps ---------------------------


class AnsweringDelegate:
    """A broker without latency: each request of a type in ``answers`` is answered in the ``poll`` that sends it,
    its callback run at the end of that poll as the real delegate does (other requests are never answered); a poll
    with nothing to answer sleeps its whole timeout on the manual clock."""

    def __init__(self, clock: ManualClock, answers: dict[type[Any], Callable[[Any], object]]) -> None:
        self.clock = clock
        self.answers = answers
        self.sent: list[tuple[Any, int]] = []
        self._queued: list[UnsentRequest] = []

    def add_all(self, requests: Any, now_ms: int) -> None:
        for unsent in requests:
            self.sent.append((unsent.request, now_ms))
            if type(unsent.request) in self.answers:
                self._queued.append(unsent)

    async def poll(self, timeout_ms: int, now_ms: int) -> None:
        if not self._queued:
            self.clock.advance(timeout_ms)
        queued, self._queued = self._queued, []
        for unsent in queued:
            unsent.on_response(self.answers[type(unsent.request)](unsent.request), self.clock.now_ms())

    def wakeup(self) -> None:
        pass

    def sent_at(self, kind: type[Any]) -> list[int]:
        return [at for request, at in self.sent if isinstance(request, kind)]


class KIP848Member:
    """A KIP-848 member of group ``g`` (auto-commit on), built as a consumer is and driven by the real loop over an
    ``AnsweringDelegate``: the coordinator is node 1, ``t`` has two partitions, every heartbeat is answered with
    ``target`` (``t``'s partitions, member epoch) and the next heartbeat in 250 ms, and every OffsetFetch with
    committed offset 5. OffsetCommits go unanswered."""

    def __init__(self, *, listener: bool) -> None:
        self.clock = ManualClock(1_000)
        self.target: tuple[tuple[int, ...], int] = ((0, 1), 1)
        config = ConsumerConfig.from_kwargs("h:1", group_id="g", group_protocol="consumer")
        self.parts = builder.build(config, self.clock)
        group = self.parts.owned.group
        assert group is not None
        self.delegate = AnsweringDelegate(
            self.clock,
            {
                FindCoordinatorRequest: lambda r: FindCoordinatorResponse(
                    error_code=0, node_id=1, host="h", port=9092, error_message=None
                ),
                MetadataRequest: lambda r: _metadata_of_t(),
                ConsumerGroupHeartbeatRequest: self._heartbeat_answer,
                OffsetFetchRequest: _committed_5,
            },
        )
        self.thread = self.parts.thread
        self.thread._delegate = self.delegate  # type: ignore[assignment]
        group.has_listener = listener
        self.parts.subscriptions.subscribe(["t"])
        self.parts.owned.metadata.set_topics({"t"})
        group.membership.subscribe()

    def _heartbeat_answer(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        partitions, epoch = self.target
        return ConsumerGroupHeartbeatResponse(
            member_id=request.member_id,
            member_epoch=epoch,
            heartbeat_interval_ms=250,
            assignment=Assignment(topic_partitions=(TopicPartitions(topic_id=T_ID, partitions=partitions),)),
        )

    def run_until(self, done: Callable[[], object], *, at_most: int = 20) -> None:
        for _ in range(at_most):
            if done():
                return
            anyio.run(self.thread.run_once)
        raise AssertionError(f"not done after {at_most} loop iterations")

    def heartbeats(self) -> list[tuple[ConsumerGroupHeartbeatRequest, int]]:
        return [(r, at) for r, at in self.delegate.sent if isinstance(r, ConsumerGroupHeartbeatRequest)]


T_ID = uuid.UUID(int=7)


def _metadata_of_t() -> MetadataResponse:
    partition = {"error_code": 0, "leader_id": 1, "leader_epoch": 0, "replica_nodes": (1,), "isr_nodes": (1,)}
    return MetadataResponse(
        brokers=(MetadataResponseBroker(node_id=1, host="h", port=9092),),
        topics=(
            MetadataResponseTopic(
                error_code=0,
                name="t",
                topic_id=T_ID,
                partitions=tuple(MetadataResponsePartition(partition_index=p, **partition) for p in (0, 1)),
            ),
        ),
    )


def _committed_5(request: OffsetFetchRequest) -> OffsetFetchResponse:
    (group,) = request.groups
    return OffsetFetchResponse(
        topics=tuple(
            OffsetFetchResponseTopic(
                name=topic.name,
                partitions=tuple(
                    OffsetFetchResponsePartition(partition_index=p, committed_offset=5, metadata=None)
                    for p in topic.partition_indexes
                ),
            )
            for topic in group.topics
        )
    )


def test_a_listener_event_staged_during_an_iteration_reaches_the_caller_before_the_loop_sleeps() -> None:
    member = KIP848Member(listener=True)
    delivered: list[RebalanceEvent] = []

    def assigned_delivered() -> bool:
        delivered.extend(e for e in member.parts.background_events.drain() if isinstance(e, RebalanceEvent))
        return bool(delivered)

    member.run_until(assigned_delivered)
    (assigned,) = delivered
    assert (assigned.kind, assigned.partitions) == ("assigned", {TopicPartition("t", 0), TopicPartition("t", 1)})
    (joined_at,) = member.delegate.sent_at(ConsumerGroupHeartbeatRequest)  # answered with the assignment at once
    assert member.clock.now_ms() == joined_at  # delivered before the loop slept: not one heartbeat interval later


def test_an_assignment_without_a_listener_is_acknowledged_without_waiting_for_the_heartbeat_interval() -> None:
    member = KIP848Member(listener=False)
    member.run_until(lambda: len(member.heartbeats()) == 2)
    (join, joined_at), (ack, acked_at) = member.heartbeats()
    assert join.member_epoch == 0 and ack.member_epoch == 1
    assert ack.topic_partitions == (TopicPartitions(topic_id=T_ID, partitions=(0, 1)),)  # what it now owns
    assert acked_at == joined_at  # not one heartbeat interval later
    assert member.delegate.sent_at(OffsetFetchRequest) == [joined_at]  # the new partitions' committed offsets too


def test_a_revocations_commit_goes_out_before_the_loop_sleeps_not_with_the_next_heartbeat() -> None:
    member = KIP848Member(listener=False)
    member.run_until(lambda: member.parts.subscriptions.consumed_positions() and len(member.heartbeats()) == 2)
    before = len(member.heartbeats())
    member.target = ((0,), 2)  # t-1 moves: committed before it is revoked (auto-commit)
    member.run_until(lambda: member.delegate.sent_at(OffsetCommitRequest))
    _, revoked_at = member.heartbeats()[before]  # the next heartbeat, answered with the new target
    (commit, sent_at) = next((r, at) for r, at in member.delegate.sent if isinstance(r, OffsetCommitRequest))
    assert {(p.partition_index, p.committed_offset) for p in commit.topics[0].partitions} == {(0, 5), (1, 5)}
    assert sent_at == revoked_at  # not one heartbeat interval later, with the next heartbeat
