"""What both faces share (``_caller/core.py``), tested on the core itself where no thread is needed: the lazy
start under a lock, ``poll``'s argument checks, the background's events taken in order (callbacks before an error,
which is raised once), what the caller reads of the published snapshot, and the lag without a request."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from asyncconsumer import (
    ClientClosedError,
    Consumer,
    ConsumerRebalanceListener,
    GroupMetadata,
    IllegalStateError,
    KafkaConnectionError,
    TopicPartition,
    WakeupError,
)
from asyncconsumer._caller.core import ConsumerCore, to_partition
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.snapshot import BackgroundSnapshot, NodeOutage
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.events.application import PolledEvent
from asyncconsumer.events.background import CallbackEvent, ErrorEvent, RebalanceEvent
from asyncconsumer.metrics import UnreachableNode
from tests.support.no_broker import REFUSED

TP = TopicPartition("t", 0)


def core(**settings: Any) -> ConsumerCore:
    """A core that is never started: its parts are built, its thread is not."""
    return ConsumerCore(ConsumerConfig.from_kwargs(REFUSED, **settings), ManualClock(1_000))


def test_concurrent_first_calls_start_one_background_thread() -> None:
    def network_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "asyncconsumer-network"}

    before = network_threads()  # other tests' consumers may still be finishing
    consumer = Consumer(REFUSED)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def first_call() -> None:
        barrier.wait()
        try:
            consumer.pause(*())  # needs the background, asks nothing of the broker
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    try:
        assert errors == []
        assert network_threads() - before == {consumer._core.parts.thread._thread}
    finally:
        consumer.close(timeout_ms=1_000)


@pytest.mark.parametrize(("timeout", "error"), [(-1, ValueError), (-0.5, ValueError), ("1000", TypeError)])
def test_a_bad_poll_timeout_is_rejected_at_once(timeout: Any, error: type[Exception]) -> None:
    consumer = Consumer(REFUSED)
    consumer.assign([TP])
    started = time.monotonic()
    with pytest.raises(error, match="timeout_ms"):
        consumer.poll(timeout)
    assert time.monotonic() - started < 1
    consumer.close(timeout_ms=1_000)


# --- group calls without a group ----------------------------------------------------------------------------------


def test_enforce_rebalance_needs_a_group_subscription() -> None:
    consumer = Consumer(REFUSED, group_id="g")
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.enforce_rebalance()
    consumer.close()


def test_current_lag_is_unknown_before_a_fetch_and_illegal_for_an_unassigned_partition() -> None:
    consumer = Consumer(REFUSED)
    with pytest.raises(IllegalStateError, match="not assigned"):
        consumer.current_lag(TP)
    consumer.assign([TP])
    assert consumer.current_lag(("t", 0)) is None
    consumer.close(timeout_ms=1_000)


# --- arguments ----------------------------------------------------------------------------------------------------


def test_a_partition_is_a_topic_partition_or_a_topic_and_partition_pair() -> None:
    assert to_partition(TP) is TP
    assert to_partition(("t", 3)) == TopicPartition("t", 3)
    for bad in (("t", "3"), ["t", 3], ("t", 3, 0), "t-3", (3, "t")):
        with pytest.raises(TypeError, match=r"expected a TopicPartition or \(topic, partition\)"):
            to_partition(bad)


def test_a_known_position_is_answered_without_starting_the_background() -> None:
    c = core()
    c.subscriptions.assign([TP])
    c.subscriptions.seek(TP, 42)
    assert c.position(TP, None).result(0) == 42
    assert not c.started


# --- what the background tells the caller -----------------------------------------------------------------------


def test_an_error_is_raised_at_once_and_the_events_after_it_wait_in_order() -> None:
    c = core()
    error = KafkaConnectionError("the broker went away")
    first, second = CallbackEvent(lambda: None), CallbackEvent(lambda: None)
    for event in (ErrorEvent(error), first, second):
        c.parts.background_events.put(event)
    with pytest.raises(KafkaConnectionError) as raised:
        c.take_background_events()
    assert raised.value is error
    assert c.take_background_events() == [first, second]
    assert c.take_background_events() == []


def test_callbacks_before_an_error_run_first_and_the_error_is_raised_on_the_next_call_then_the_rest() -> None:
    c = core()
    first, after = CallbackEvent(lambda: None), CallbackEvent(lambda: None)
    error = KafkaConnectionError("the broker went away")
    for event in (first, ErrorEvent(error), after):
        c.parts.background_events.put(event)
    assert c.take_background_events() == [first]
    with pytest.raises(KafkaConnectionError) as raised:
        c.take_background_events()
    assert raised.value is error
    assert c.take_background_events() == [after]


def test_a_rebalance_event_calls_the_listener_with_a_set_of_its_own_and_done_wakes_the_group() -> None:
    class Recording(ConsumerRebalanceListener):
        def __init__(self) -> None:
            self.seen: list[tuple[str, set[TopicPartition]]] = []

        def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            self.seen.append(("assigned", partitions))

    c = core(group_id="g")
    listener = Recording()
    c.listener = listener
    done: Future[None] = Future()
    event = RebalanceEvent("assigned", frozenset([TP]), done)
    (callback,) = c.callbacks_for(event)
    callback()
    assert listener.seen == [("assigned", {TP})] and isinstance(listener.seen[0][1], set)
    c.callback_done(event)
    assert done.result(0) is None
    c.listener = None  # no listener: the default one, which does nothing
    assert [f() for f in c.callbacks_for(RebalanceEvent("revoked", frozenset([TP]), Future()))] == [None]


class Calls(ConsumerRebalanceListener):
    """Appends ``(name, kind, partitions)`` to a list shared with other listeners, so their order shows."""

    def __init__(self, name: str, calls: list[tuple[str, str, set[TopicPartition]]]) -> None:
        self.name = name
        self.calls = calls

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append((self.name, "revoked", partitions))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append((self.name, "assigned", partitions))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.calls.append((self.name, "lost", partitions))


@pytest.mark.parametrize("kind", ["assigned", "revoked", "lost"])
def test_the_rebalance_hook_runs_before_the_listener_each_with_a_set_of_its_own(kind: str) -> None:
    c = core(group_id="g")
    calls: list[tuple[str, str, set[TopicPartition]]] = []
    c.rebalance_hook = Calls("hook", calls)
    c.listener = Calls("listener", calls)
    for callback in c.callbacks_for(RebalanceEvent(kind, frozenset([TP]), Future())):
        callback()
    assert [(name, k) for name, k, _ in calls] == [("hook", kind), ("listener", kind)]
    assert calls[0][2] == calls[1][2] == {TP} and calls[0][2] is not calls[1][2]
    c.listener = None
    assert len(c.callbacks_for(RebalanceEvent(kind, frozenset([TP]), Future()))) == 2  # the hook, the default


def test_a_commit_callback_is_not_given_to_the_rebalance_hook() -> None:
    c = core(group_id="g")
    c.rebalance_hook = Calls("hook", [])
    ran: list[int] = []
    (callback,) = c.callbacks_for(CallbackEvent(lambda: ran.append(1)))
    callback()
    assert ran == [1]


def test_group_metadata_is_the_published_snapshot() -> None:
    c = core(group_id="g", group_instance_id="i-1")
    assert c.group_metadata() == GroupMetadata("g", -1, "", None)
    c.parts.published.current = BackgroundSnapshot(generation_id=7, member_id="m-1", group_instance_id="i-1")
    assert c.group_metadata() == GroupMetadata("g", 7, "m-1", "i-1")
    with pytest.raises(IllegalStateError, match="set group_id"):
        core().group_metadata()


def test_metrics_show_the_unreachable_nodes_dated_and_aged_while_the_outage_lasts() -> None:
    c = core(group_id="g")
    assert c.metrics().unreachable_nodes == {}
    outage = NodeOutage(host="h", port=9, since_ms=400, failed_at_ms=900, failures=2, last_error="connection refused")
    c.parts.published.current = BackgroundSnapshot(unreachable_nodes={3: outage})
    c.wall_clock = lambda: 1_700_000_000_000  # type: ignore[method-assign]
    (shown,) = c.metrics().unreachable_nodes.items()
    assert shown == (3, UnreachableNode("h", 9, 1_700_000_000_000 - 600, 600, 2, "connection refused"))
    c.clock.advance(1_000)  # type: ignore[attr-defined]
    assert c.metrics().unreachable_nodes[3].unreachable_for_ms == 1_600  # it lasts: it ages
    c.parts.published.current = BackgroundSnapshot()  # it connected again
    assert c.metrics().unreachable_nodes == {}


def test_a_poll_stamps_the_callers_activity_and_asks_to_rejoin_only_when_the_member_left_for_it() -> None:
    c = core(group_id="g")
    c.note_poll()
    assert c.parts.activity.last_poll_ms == 1_000
    assert not c.parts.app_events  # still in the group: nothing to tell the background
    c.parts.published.current = BackgroundSnapshot(rejoin_on_poll=True)
    c.note_poll()
    (event,) = c.parts.app_events.drain()
    assert isinstance(event, PolledEvent)
    plain = core()
    plain.note_poll()
    assert plain.parts.activity.last_poll_ms is None  # no group, no poll interval to keep


def test_the_lag_is_the_high_watermark_or_under_read_committed_the_last_stable_offset() -> None:
    for isolation, expected in (("read_uncommitted", 6), ("read_committed", 2)):
        c = core(isolation_level=isolation)
        c.subscriptions.assign([TP])
        c.subscriptions.seek(TP, 4)
        epoch = c.subscriptions.epoch(TP)
        assert epoch is not None
        assert c.subscriptions.fetched(TP, epoch, 4, 4, high_watermark=10, last_stable_offset=6, log_start_offset=0)
        assert c.current_lag(TP) == expected
        c.subscriptions.seek(TP, 12)
        assert c.current_lag(TP) == 0  # never negative


def test_wakeup_is_raised_once_per_call_to_wakeup() -> None:
    c = core()
    c.check_wakeup()
    c.wakeup()
    with pytest.raises(WakeupError, match="nothing consumed is lost"):
        c.check_wakeup()
    c.check_wakeup()


def test_a_revoke_callback_before_leaving_exists_only_for_a_listener_with_partitions() -> None:
    c = core(group_id="g")
    assert c.revoke_callbacks_before_leaving() == []  # no listener
    revoked: list[set[TopicPartition]] = []

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
            revoked.append(partitions)

    c.listener = Listener()
    assert c.revoke_callbacks_before_leaving() == []  # not subscribed
    c.subscriptions.subscribe(["t"])
    assert c.revoke_callbacks_before_leaving() == []  # nothing assigned yet
    c.subscriptions.assign_from_group([TP])
    (callback,) = c.revoke_callbacks_before_leaving()
    callback()
    assert revoked == [{TP}]


def test_before_leaving_the_rebalance_hook_revokes_first_with_or_without_a_listener() -> None:
    c = core(group_id="g")
    calls: list[tuple[str, str, set[TopicPartition]]] = []
    c.rebalance_hook = Calls("hook", calls)
    c.subscriptions.subscribe(["t"])
    c.subscriptions.assign_from_group([TP])
    for callback in c.revoke_callbacks_before_leaving():
        callback()
    assert calls == [("hook", "revoked", {TP})]
    c.listener = Calls("listener", calls)
    for callback in c.revoke_callbacks_before_leaving():
        callback()
    assert [name for name, _, _ in calls] == ["hook", "hook", "listener"]


def test_set_auto_commit_changes_the_callers_flag_at_once_and_the_background_answers() -> None:
    c = core(group_id="g")
    assert c.auto_commit is True  # the config's enable_auto_commit
    try:
        future = c.set_auto_commit(False)
        assert c.auto_commit is False  # before the background answers: close() and unsubscribe() read it
        assert future.result(5) is None  # no coordinator, so no auto-commit in flight: quiet at once
        assert c.set_auto_commit(True).result(5) is None and c.auto_commit is True
        with pytest.raises(TypeError, match="bool"):
            c.set_auto_commit(1)  # type: ignore[arg-type]
    finally:
        closing = c.close(1_000)
        if closing is not None:
            closing.result(5)
        c.finish_close(5)


def test_a_resume_wakes_a_waiting_poll_so_what_the_pause_kept_is_handed_out_at_once() -> None:
    c = core()
    try:
        c.assign([TP]).result(5)
        c.set_paused([TP], True).result(5)
        seen = c.parts.signal.seq
        c.set_paused([TP], True).result(5)
        assert c.parts.signal.seq == seen  # a pause wakes nobody
        c.set_paused([TP], False).result(5)
        assert c.parts.signal.wait(seen, 5)  # the resume did (a poll waiting on it re-collects)
    finally:
        closing = c.close(1_000)
        if closing is not None:
            closing.result(5)
        c.finish_close(5)


def test_set_rebalance_hook_installs_it_at_once_and_the_background_answers() -> None:
    c = core(group_id="g")
    hook = Calls("hook", [])
    try:
        assert c.set_rebalance_hook(hook).result(5) is None
        assert c.rebalance_hook is hook
        assert c.set_rebalance_hook(None).result(5) is None
        assert c.rebalance_hook is None
        with pytest.raises(TypeError, match="ConsumerRebalanceListener"):
            c.set_rebalance_hook(object())  # type: ignore[arg-type]
    finally:
        closing = c.close(1_000)
        if closing is not None:
            closing.result(5)
        c.finish_close(5)
    with pytest.raises(ClientClosedError):
        c.set_rebalance_hook(hook)
    with pytest.raises(ClientClosedError):
        c.set_auto_commit(False)


def test_the_background_telemetry_reads_the_same_metrics_the_caller_sees() -> None:
    c = core(group_id="g")
    read = c.parts.metrics_reader.read
    assert read is not None
    assert read() == c.metrics()
