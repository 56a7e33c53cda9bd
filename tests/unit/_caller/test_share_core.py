"""What both share consumers share (``_caller/share_core.py``), on a core whose background never starts: the records
in flight and the acknowledgements made of them, explicit mode's rules (``poll`` refused while a record is left,
each record acknowledged once, only records ``poll`` returned, ``RENEW`` keeping a record in flight), implicit mode's
(each ``poll`` or commit accepts what is in flight, ``acknowledge()`` refused), what a commit sends, gaps and
released records from the collector, and the background's events taken up to the first error."""

from __future__ import annotations

from typing import Any

import pytest

from asyncconsumer._caller.share_core import ShareCore
from asyncconsumer._clock import ManualClock
from asyncconsumer._state.fetch_buffer import CompletedFetch
from asyncconsumer._state.snapshot import NodeOutage, ShareSnapshot
from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.errors import ClientClosedError, IllegalStateError, KafkaConnectionError, KafkaError
from asyncconsumer.events.background import AcknowledgedEvent, ErrorEvent
from asyncconsumer.events.share import ShareAcknowledgeEvent
from asyncconsumer.metrics import UnreachableNode
from asyncconsumer.protocol.messages.share_fetch import AcquiredRecords
from asyncconsumer.records import AcknowledgeType, ShareRecord, TimestampType, TopicPartition
from tests.support.batches import build_batch
from tests.support.no_broker import REFUSED

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
A = AcknowledgeType


def core(mode: str = "explicit", **settings: Any) -> ShareCore:
    """A core that is never started (``start`` does nothing): events it submits wait in its queue."""
    config = ShareConsumerConfig.from_settings(REFUSED, group_id="g", share_acknowledgement_mode=mode, **settings)
    c = ShareCore(config, ManualClock(1_000))
    c.start = lambda: None  # type: ignore[method-assign]
    c.subscribed = frozenset({"t"})
    return c


def record(tp: TopicPartition, offset: int) -> ShareRecord:
    return ShareRecord(tp.topic, tp.partition, offset, 0, TimestampType.CREATE_TIME, None, b"v", (), 0, -1, 1, 1)


def received(c: ShareCore, tp: TopicPartition, *offsets: int) -> list[ShareRecord]:
    """As if the last ``poll`` returned these records."""
    c.in_flight.setdefault(tp, set()).update(offsets)
    return [record(tp, o) for o in offsets]


def submitted(c: ShareCore) -> list[ShareAcknowledgeEvent]:
    events = c.parts.app_events.drain()
    assert all(isinstance(e, ShareAcknowledgeEvent) for e in events), events
    return [e for e in events if isinstance(e, ShareAcknowledgeEvent)]


# --- explicit mode -------------------------------------------------------------------------------------------------


def test_explicit_mode_refuses_poll_while_a_record_is_not_acknowledged() -> None:
    c = core()
    first, second = received(c, T0, 3, 4)
    with pytest.raises(IllegalStateError, match="2 record"):
        c.begin_poll(0)
    c.acknowledge(first, A.ACCEPT)
    with pytest.raises(IllegalStateError, match="1 record"):
        c.begin_poll(0)
    c.acknowledge(second, A.REJECT)
    assert c.in_flight == {}
    c.begin_poll(0)  # every record acknowledged: allowed
    assert c.acks == {T0: {3: 1, 4: 3}}  # not sent: the background is not running


def test_a_record_is_acknowledged_once() -> None:
    c = core()
    (r,) = received(c, T0, 7)
    c.acknowledge(r, A.RELEASE)
    with pytest.raises(IllegalStateError, match="offset 7 is not waiting"):
        c.acknowledge(r, A.ACCEPT)
    assert c.acks == {T0: {7: 2}}
    assert c.acknowledged[A.RELEASE] == 1 and c.acknowledged[A.ACCEPT] == 0


def test_a_record_the_last_poll_did_not_return_cannot_be_acknowledged() -> None:
    c = core()
    received(c, T0, 1)
    with pytest.raises(IllegalStateError, match="did not return it"):
        c.acknowledge(record(T0, 2), A.ACCEPT)
    with pytest.raises(IllegalStateError):
        c.acknowledge(record(T1, 1), A.ACCEPT)
    assert c.acks == {} and c.in_flight == {T0: {1}}


def test_renew_keeps_the_record_in_flight_until_another_type_acknowledges_it() -> None:
    c = core()
    (r,) = received(c, T0, 5)
    c.acknowledge(r, A.RENEW)
    assert c.in_flight == {T0: {5}} and c.acks == {T0: {5: 4}}
    with pytest.raises(IllegalStateError):
        c.begin_poll(0)  # renewed is not acknowledged
    c.acknowledge(r, A.RENEW)  # renewing again is allowed
    c.acknowledge(r, A.ACCEPT)
    assert c.in_flight == {} and c.acks == {T0: {5: 1}}  # not sent yet: the accept replaces the renew
    assert (c.acknowledged[A.RENEW], c.acknowledged[A.ACCEPT]) == (2, 1)


def test_acknowledge_checks_its_arguments() -> None:
    c = core()
    received(c, T0, 1)
    with pytest.raises(TypeError, match="ShareRecord"):
        c.acknowledge((T0, 1), A.ACCEPT)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="AcknowledgeType"):
        c.acknowledge(record(T0, 1), 1)  # type: ignore[arg-type]


def test_an_explicit_commit_sends_what_was_acknowledged_and_leaves_the_rest_in_flight() -> None:
    c = core()
    first, _ = received(c, T0, 1, 2)
    c.acknowledge(first, A.ACCEPT)
    future = c.commit(5_000)
    (event,) = submitted(c)
    assert event.commit and event.acks == {T0: {1: 1}} and event.deadline_ms == 6_000
    assert event.future is future
    assert c.acks == {} and c.in_flight == {T0: {2}}


# --- implicit mode -------------------------------------------------------------------------------------------------


def test_implicit_mode_refuses_acknowledge() -> None:
    c = core("implicit")
    (r,) = received(c, T0, 1)
    with pytest.raises(IllegalStateError, match="explicit"):
        c.acknowledge(r, A.ACCEPT)


def test_implicit_poll_and_commit_accept_everything_in_flight() -> None:
    c = core("implicit")
    received(c, T0, 1, 2)
    c.begin_poll(0)
    assert c.in_flight == {} and c.acks == {T0: {1: 1, 2: 1}}
    received(c, T1, 9)
    c.commit(None)
    (event,) = submitted(c)
    assert event.acks == {T0: {1: 1, 2: 1}, T1: {9: 1}} and event.deadline_ms == 1_000 + 60_000
    assert c.acknowledged[A.ACCEPT] == 3


def test_a_commit_with_nothing_to_send_completes_at_once_without_an_event() -> None:
    c = core("implicit")
    assert c.commit(1_000).result(0) == {}
    assert submitted(c) == []


# --- poll ----------------------------------------------------------------------------------------------------------


def test_poll_checks_its_argument_and_the_subscription() -> None:
    c = core()
    with pytest.raises(ValueError, match="timeout_ms"):
        c.begin_poll(-1)
    with pytest.raises(TypeError, match="timeout_ms"):
        c.begin_poll(True)
    c.subscribed = frozenset()
    with pytest.raises(IllegalStateError, match="subscribe"):
        c.begin_poll(0)
    c.subscribed = frozenset({"t"})
    assert c.begin_poll(250) == 1_250  # the deadline, on the core's clock


def test_records_polled_are_in_flight_and_gaps_become_acknowledgements() -> None:
    c = core()
    batch = build_batch(0, [b"a", b"b"])
    acquired = (AcquiredRecords(0, 3, 1),)
    c.parts.buffer.add_all([CompletedFetch(T0, 0, 0, 4, memoryview(batch), -1, acquired=acquired)])
    c.parts.buffer.deliver()
    records = c.poll_once()
    assert [r.offset for r in records.records()] == [0, 1]
    assert c.in_flight == {T0: {0, 1}}
    assert c.acks == {T0: {2: 0, 3: 0}}  # acquired offsets with no record: acknowledged as gaps
    assert c.metrics().records_in_flight == 2
    telemetry = c.parts.owned.telemetry
    assert telemetry is not None  # the background's KIP-714 pushes read this core's metrics()
    pushed = {s.name: s.value for s in telemetry._read_samples() or ()}
    assert pushed["org.apache.kafka.consumer.share.fetch.manager.records.consumed.total"] == 2


def test_metrics_show_the_unreachable_nodes_while_the_outage_lasts() -> None:
    c = core()
    assert c.metrics().unreachable_nodes == {}
    outage = NodeOutage(host="h", port=9, since_ms=200, failed_at_ms=700, failures=1, last_error="timed out")
    c.parts.published.current = ShareSnapshot(unreachable_nodes={-1: outage})
    c.wall_clock = lambda: 50_000  # type: ignore[method-assign]
    assert c.metrics().unreachable_nodes == {-1: UnreachableNode("h", 9, 49_200, 800, 1, "timed out")}
    c.parts.published.current = ShareSnapshot()
    assert c.metrics().unreachable_nodes == {}


def test_a_record_that_cannot_be_deserialized_is_released_and_its_error_raised() -> None:
    def strict(value: bytes | None) -> bytes:
        if value == b"bad":
            raise ValueError("no")
        return value or b""

    c = core(value_deserializer=strict)
    batch = build_batch(0, [b"bad"])
    c.parts.buffer.add_all([CompletedFetch(T0, 0, 0, 1, memoryview(batch), -1, acquired=(AcquiredRecords(0, 0, 1),))])
    c.parts.buffer.deliver()
    with pytest.raises(KafkaError, match="deserializ"):
        c.poll_once()
    assert c.acks == {T0: {0: 2}} and c.in_flight == {}


# --- the background's events -----------------------------------------------------------------------------------


def test_background_events_are_taken_up_to_the_first_error_which_is_raised_next() -> None:
    c = core()
    failed = KafkaConnectionError("gone")
    fatal = KafkaError("fatal")
    queue = c.parts.background_events
    for event in (
        AcknowledgedEvent(T0, frozenset({1}), None),
        AcknowledgedEvent(T1, frozenset({2}), failed),
        ErrorEvent(fatal),
        AcknowledgedEvent(T0, frozenset({3}), None),
    ):
        queue.put(event)
    results = c.take_background_events()
    assert [(e.tp, e.error) for e in results] == [(T0, None), (T1, failed)]
    assert c.acknowledgement_errors == 1
    with pytest.raises(KafkaError, match="fatal"):
        c.take_background_events()
    (later,) = c.take_background_events()
    assert later.offsets == {3}


def test_the_commit_callback_gets_one_partitions_offsets_and_error() -> None:
    c = core()
    event = AcknowledgedEvent(T0, frozenset({1, 2}), None)
    assert c.callback_for(event) is None
    calls: list[tuple[dict[TopicPartition, set[int]], KafkaError | None]] = []
    c.callback = lambda offsets, error: calls.append((offsets, error))
    run = c.callback_for(event)
    assert run is not None
    run()
    assert calls == [({T0: {1, 2}}, None)]


# --- lifecycle -----------------------------------------------------------------------------------------------------


def test_a_closed_core_refuses_every_call_and_closes_once() -> None:
    c = core()
    (r,) = received(c, T0, 1)
    assert c.prepare_close() is None  # never started: nothing to send
    assert c.close(1_000) is None
    assert c.close(1_000) is None
    for call in (lambda: c.begin_poll(0), lambda: c.acknowledge(r, A.ACCEPT), lambda: c.commit(None)):
        with pytest.raises(ClientClosedError):
            call()


def test_subscribe_checks_topic_names() -> None:
    c = core()
    with pytest.raises(TypeError, match="list of topic names"):
        c.subscribe("t")
    with pytest.raises(TypeError, match="non-empty"):
        c.subscribe([""])


def test_a_poll_hands_over_its_acknowledgements_before_it_asks_for_a_fetch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fetch a poll allows must carry the acknowledgements it made: they are queued before the demand moves,
    marked with the poll, and the demand says they are on their way (the background may see either first)."""
    monkeypatch.setattr(ShareCore, "running", property(lambda self: True))
    c = core("implicit")
    received(c, T0, 1, 2)
    polls_when_queued: list[int] = []
    put = c.parts.app_events.put

    def recording(event: Any, wake: bool = True) -> None:
        polls_when_queued.append(c.parts.demand.polls)
        assert c.parts.demand.acks_poll == 1
        put(event, wake=wake)

    c.parts.app_events.put = recording  # type: ignore[method-assign]
    c.begin_poll(0)
    assert polls_when_queued == [0] and c.parts.demand.polls == 1
    (event,) = submitted(c)
    assert event.acks == {T0: {1: 1, 2: 1}} and not event.commit and event.poll == 1


def test_a_poll_while_the_caller_holds_records_does_not_wake_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mid-batch polls hand out what is held and no fetch is due for them: their acknowledgements wait for the
    background's next turn (ShareConsumeManager turns within ACK_RIDE_MS while records are held). The poll that
    finds nothing held wakes it, for its fetch."""
    monkeypatch.setattr(ShareCore, "running", property(lambda self: True))
    c = core("implicit")
    woken: list[int] = []
    c.parts.app_events.set_wakeup(lambda: woken.append(1))
    c.parts.thread.wakeup = lambda: woken.append(2)  # type: ignore[method-assign]
    received(c, T0, 1, 2)
    c.parts.demand.held = 500
    c.begin_poll(0)
    (quiet,) = submitted(c)
    assert quiet.acks == {T0: {1: 1, 2: 1}} and woken == []
    received(c, T0, 3)
    c.parts.demand.held = 0
    c.begin_poll(0)
    assert [e.acks for e in submitted(c)] == [{T0: {3: 1}}] and woken == [1]
    c.begin_poll(0)  # nothing to acknowledge: the poll itself wakes the background
    assert woken == [1, 2]


def test_acknowledgements_land_in_the_batch_not_yet_sent_across_commits_and_polls() -> None:
    """``acknowledge`` remembers its last partition's mappings; a commit that takes the acknowledgements, a
    partition whose records are all acknowledged, and the next poll's records must not leave it writing to old ones."""
    c = core()
    received(c, T0, 1, 2, 3)
    c.acknowledge(record(T0, 1), A.ACCEPT)
    c.commit(None)
    (sent,) = submitted(c)
    assert sent.acks == {T0: {1: 1}}
    c.acknowledge(record(T0, 2), A.REJECT)
    assert c.acks == {T0: {2: 3}}
    c.acknowledge(record(T0, 3), A.ACCEPT)
    assert c.in_flight == {}
    received(c, T0, 4)  # the next poll's records
    c.acknowledge(record(T0, 4), A.RELEASE)
    received(c, T1, 7)
    c.acknowledge(record(T1, 7), A.ACCEPT)
    assert c.acks == {T0: {2: 3, 3: 1, 4: 2}, T1: {7: 1}} and c.in_flight == {}
    with pytest.raises(IllegalStateError, match="not waiting"):
        c.acknowledge(record(T1, 7), A.ACCEPT)
    assert list(c.acknowledged) == [0, 3, 1, 1, 0]
