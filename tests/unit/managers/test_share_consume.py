"""ShareFetch and ShareAcknowledge (``managers/share_consume.py``) driven with literal times and hand-built answers:
nothing before the member joined, one request per leader in a share session (epoch 0, then 1, 2...), the
acknowledgements riding on the next fetch once the session is open (as runs), a commit's ShareAcknowledge sent at
once and its per-partition results, session and connection losses (and acknowledgements of records a lost session
acquired failing, never reaching their next delivery), acquired records handed to the fetch buffer, no fetch while
the buffer holds records, and what ``fail_all`` answers."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from asyncconsumer._state.fetch_buffer import CompletedFetch
from asyncconsumer._state.share_fetch_buffer import ShareFetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.snapshot import ShareDemand
from asyncconsumer.errors import (
    ClientClosedError,
    ErrorCode,
    InvalidRecordStateError,
    KafkaConnectionError,
    KafkaError,
    TopicAuthorizationFailedError,
    UnsupportedVersionError,
)
from asyncconsumer.events.background import AcknowledgedEvent, BackgroundEvent, ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.share_acks import GAP
from asyncconsumer.managers.share_consume import (
    ACK_FETCH_WAIT_MS,
    ACK_RIDE_MS,
    AHEAD_LOCKS_PER_PARTITION,
    ShareConsumeManager,
    ShareFetchSettings,
)
from asyncconsumer.protocol.messages import share_acknowledge as ack_api
from asyncconsumer.protocol.messages import share_fetch as fetch_api
from asyncconsumer.records import TopicPartition
from tests.support.batches import build_batch
from tests.support.managers import metadata_response, no_jitter, only
from tests.support.share_driver import ShareMember, answer

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
SETTINGS = ShareFetchSettings(
    group_id="g",
    max_wait_ms=500,
    min_bytes=1,
    max_bytes=1 << 20,
    partition_max_bytes=1 << 16,
    max_records=100,
    acquire_mode=1,
    request_timeout_ms=30_000,
)


class Consumer:
    """A share consumer's manager over topic ``t``: partition 0 led by broker 1, partition 1 by broker ``leader1``."""

    def __init__(self, leader1: int = 2, settings: ShareFetchSettings = SETTINGS) -> None:
        self.metadata = MetadataManager(["h:1"], 60_000, no_jitter())
        only(self.metadata.poll(0).unsent_requests).on_response(metadata_response(leader=(1, leader1)), 0)
        topic_id = self.metadata.cluster.topics["t"].topic_id
        assert topic_id is not None
        self.topic_id = topic_id
        self.member = ShareMember(lambda: self.metadata.cluster)
        self.buffer = ShareFetchBuffer(1 << 20, CallerSignal())
        self.woken = 0
        self.buffer.set_space_waiter(self.wake)
        self.events: list[BackgroundEvent] = []
        self.demand = ShareDemand()
        self.demand.waiting_until_ms = 1 << 60  # a caller waiting in poll throughout, unless a test says otherwise
        self.manager = ShareConsumeManager(
            settings, self.member.membership, self.metadata, self.buffer, self.events.append, no_jitter(), self.demand
        )
        self.commits: list[dict[TopicPartition, KafkaError | None]] = []

    def wake(self) -> None:
        self.woken += 1

    def join(self, *partitions: int) -> None:
        self.member.join({self.topic_id: partitions or (0, 1)})

    def poll(self, now: int) -> dict[int | None, UnsentRequest]:
        """The requests of one poll, by node."""
        requests = self.manager.poll(now).unsent_requests
        by_node = {u.node_id: u for u in requests}
        assert len(by_node) == len(requests), "two requests to one node"
        return by_node

    def opened(self, *partitions: int) -> None:
        """Joined with ``partitions`` (default both) and every leader's session open (epoch 1 next)."""
        self.join(*partitions)
        for unsent in self.poll(0).values():
            assert fetch_request(unsent).share_session_epoch == 0
            unsent.on_response(fetched(self.topic_id), 1)

    def metadata_wanted(self, now: int) -> bool:
        return bool(self.metadata.poll(now).unsent_requests)

    def acks(self) -> list[AcknowledgedEvent]:
        return [e for e in self.events if isinstance(e, AcknowledgedEvent)]

    def errors(self) -> list[ErrorEvent]:
        return [e for e in self.events if isinstance(e, ErrorEvent)]


def fetch_request(unsent: UnsentRequest) -> fetch_api.ShareFetchRequest:
    assert isinstance(unsent.request, fetch_api.ShareFetchRequest), unsent.request
    return unsent.request


def ack_request(unsent: UnsentRequest) -> ack_api.ShareAcknowledgeRequest:
    assert isinstance(unsent.request, ack_api.ShareAcknowledgeRequest), unsent.request
    return unsent.request


def fetched(topic_id: Any, *parts: fetch_api.PartitionData, **fields: Any) -> fetch_api.ShareFetchResponse:
    return fetch_api.ShareFetchResponse(
        responses=(fetch_api.ShareFetchableTopicResponse(topic_id=topic_id, partitions=parts),) if parts else (),
        **fields,
    )


def part(
    partition: int, records: bytes = b"", acquired: tuple[tuple[int, int, int], ...] = (), **fields: Any
) -> fetch_api.PartitionData:
    return fetch_api.PartitionData(
        partition_index=partition,
        records=memoryview(records),
        acquired_records=tuple(fetch_api.AcquiredRecords(a, b, c) for a, b, c in acquired),
        **fields,
    )


def acknowledged(topic_id: Any, *parts: tuple[int, int], **fields: Any) -> ack_api.ShareAcknowledgeResponse:
    """``parts``: (partition, error code)."""
    return ack_api.ShareAcknowledgeResponse(
        responses=(
            ack_api.ShareAcknowledgeTopicResponse(
                topic_id=topic_id,
                partitions=tuple(ack_api.PartitionData(partition_index=p, error_code=code) for p, code in parts),
            ),
        ),
        **fields,
    )


def batches(request: fetch_api.ShareFetchRequest) -> dict[int, tuple[tuple[int, int, tuple[int, ...]], ...]]:
    """Each named partition's acknowledgement batches as (first, last, types)."""
    return {
        p.partition_index: tuple(
            (b.first_offset, b.last_offset, b.acknowledge_types) for b in p.acknowledgement_batches
        )
        for topic in request.topics
        for p in topic.partitions
    }


# --- fetching ------------------------------------------------------------------------------------------------------


def test_nothing_is_fetched_before_the_member_joined() -> None:
    c = Consumer()
    assert c.poll(0) == {}
    c.member.membership.subscribe(["t"])
    assert c.poll(1) == {}  # joining: a ShareFetch would name an unknown member


def test_one_share_fetch_per_leader_opens_a_session_and_each_answer_raises_its_epoch() -> None:
    c = Consumer()
    c.join()
    first = c.poll(0)
    assert set(first) == {1, 2}
    request = fetch_request(first[1])
    assert (request.group_id, request.member_id, request.share_session_epoch) == ("g", c.member.membership.member_id, 0)
    # the buffer's room (1 MiB, fetch_buffer_bytes) is shared by the two brokers fetched from
    assert (request.max_wait_ms, request.min_bytes, request.max_bytes, request.max_records) == (500, 1, 1 << 19, 100)
    assert (request.batch_size, request.share_acquire_mode, request.is_renew_ack) == (100, 1, False)
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in request.topics] == [(c.topic_id, [0])]
    assert batches(fetch_request(first[2])) == {1: ()}
    assert first[1].timeout_ms == 30_500  # the request timeout plus the broker's wait
    assert c.poll(1) == {}  # one request in flight per broker
    first[1].on_response(fetched(c.topic_id), 2)
    again = c.poll(3)
    assert set(again) == {1}  # broker 2 is still answering
    assert fetch_request(again[1]).share_session_epoch == 1
    assert fetch_request(again[1]).topics == ()  # the session holds partition 0 already
    again[1].on_response(fetched(c.topic_id), 4)
    assert fetch_request(c.poll(5)[1]).share_session_epoch == 2
    assert c.manager.fetches == 4


def test_a_partition_no_longer_assigned_is_forgotten_and_a_new_one_named() -> None:
    c = Consumer(leader1=1)  # both partitions on broker 1
    c.join(0)
    only(tuple(c.poll(0).values())).on_response(fetched(c.topic_id), 1)
    _, heartbeat = c.member.send(1_000)
    heartbeat.on_response(answer(1, {c.topic_id: (1,)}), 1_001)
    request = fetch_request(c.poll(1_002)[1])
    assert request.share_session_epoch == 1
    assert batches(request) == {1: ()}
    assert [(t.topic_id, t.partitions) for t in request.forgotten_topics_data] == [(c.topic_id, (0,))]


def test_acquired_records_reach_the_fetch_buffer_with_their_ranges() -> None:
    c = Consumer()
    c.join()
    records = build_batch(10, [b"a", b"b", b"c"])
    sent = c.poll(0)
    sent[1].on_response(
        fetched(c.topic_id, part(0, records, ((10, 11, 1), (12, 12, 3))), acquisition_lock_timeout_ms=30_000), 1
    )
    assert c.manager.acquisition_lock_timeout_ms == 30_000 and c.manager.records_acquired == 3
    assert c.buffer.buffered_bytes == len(records)
    c.buffer.deliver()
    fetch = c.buffer.take()
    assert isinstance(fetch, CompletedFetch)
    assert (fetch.tp, fetch.fetch_offset, fetch.next_fetch_offset, bytes(fetch.records)) == (T0, 10, 13, records)
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in fetch.acquired] == [(10, 11, 1), (12, 12, 3)]


def test_records_without_acquired_ranges_are_not_buffered() -> None:
    c = Consumer()
    c.join()
    c.poll(0)[1].on_response(fetched(c.topic_id, part(0, build_batch(0, [b"a"]))), 1)
    assert c.buffer.buffered_bytes == 0 and c.manager.records_acquired == 0


def test_no_fetch_while_the_buffer_holds_records_and_the_callers_release_wakes_the_background() -> None:
    c = Consumer()
    c.join()
    sent = c.poll(0)
    sent[1].on_response(fetched(c.topic_id, part(0, build_batch(0, [b"a"]), ((0, 0, 1),))), 1)
    assert c.poll(2) == {}  # broker 2 still answering, broker 1 waits for the caller
    sent[2].on_response(fetched(c.topic_id), 3)
    assert c.poll(4) == {}  # not broker 2 either: records wait for the caller
    c.buffer.deliver()
    fetch = c.buffer.take()
    assert fetch is not None
    c.buffer.release(fetch)
    assert c.woken == 1
    assert set(c.poll(5)) == {1, 2}


def test_a_partition_without_a_known_leader_asks_for_metadata() -> None:
    c = Consumer(leader1=3)  # broker 3 is not in the metadata
    assert not c.metadata_wanted(0)
    c.join()
    assert set(c.poll(0)) == {1}
    assert c.metadata_wanted(1)


# --- acknowledgements riding on fetches -------------------------------------------------------------------------


def test_acknowledgements_wait_for_the_session_to_open_then_ride_on_the_next_fetch_as_runs() -> None:
    c = Consumer()
    c.join()
    c.manager.acknowledge({T0: {0: ACCEPT, 1: ACCEPT, 2: ACCEPT, 5: RELEASE, 6: REJECT, 7: GAP, 9: ACCEPT}})
    opening = c.poll(0)
    assert fetch_request(opening[1]).share_session_epoch == 0
    assert batches(fetch_request(opening[1])) == {0: ()}  # the broker refuses acknowledgements at epoch 0
    assert c.manager.acknowledgements_sent == 0
    opening[1].on_response(fetched(c.topic_id), 1)
    assert c.acks() == []
    riding = fetch_request(c.poll(2)[1])
    assert riding.share_session_epoch == 1
    assert batches(riding) == {0: ((0, 2, (ACCEPT,)), (5, 7, (RELEASE, REJECT, GAP)), (9, 9, (ACCEPT,)))}
    assert c.manager.acknowledgements_sent == 7
    # for a caller that holds nothing: the broker answers as their locks free, and a drained topic holds their
    # confirmation ACK_FETCH_WAIT_MS at most, not fetch_max_wait_ms
    assert riding.max_wait_ms == ACK_FETCH_WAIT_MS


def test_a_fetch_carrying_acknowledgements_waits_no_longer_than_fetch_max_wait_ms() -> None:
    c = Consumer(settings=attrs.evolve(SETTINGS, max_wait_ms=ACK_FETCH_WAIT_MS - 5))
    c.opened()
    c.manager.acknowledge({T0: {3: ACCEPT}})
    assert fetch_request(c.poll(2)[1]).max_wait_ms == ACK_FETCH_WAIT_MS - 5


def test_a_polls_acknowledgements_ride_on_its_fetch_when_the_background_sees_them_before_the_poll() -> None:
    """The caller sends a poll's acknowledgements, then counts the poll: the background may see them first. They
    do not go alone (a round trip more, and the fetch after them finds their locks still held)."""
    c = Consumer(leader1=1, settings=BATCH_OPTIMIZED)
    c.opened()
    c.demand.held = 1  # the caller holds records: nothing goes unless a poll asks for it
    c.demand.waiting_until_ms = 0
    c.demand.acks_poll = c.demand.polls + 1
    c.manager.acknowledge({T0: {7: ACCEPT}}, poll=c.demand.polls + 1)  # seen before the poll counts itself
    (carrying,) = c.poll(3).values()
    assert batches(fetch_request(carrying)) == {0: ((7, 7, (ACCEPT,)),)}
    assert c.manager.acknowledgements_sent == 1


def test_a_poll_seen_before_its_acknowledgements_fetches_only_once_they_arrive() -> None:
    c = Consumer(leader1=1, settings=BATCH_OPTIMIZED)
    c.opened()
    c.demand.acks_poll = c.demand.polls + 1  # the caller sent them, then counted the poll
    c.demand.polls += 1
    assert c.poll(3) == {}  # a fetch now would go without them
    c.manager.acknowledge({T0: {7: ACCEPT}}, poll=c.demand.polls)
    (carrying,) = c.poll(4).values()
    assert batches(fetch_request(carrying)) == {0: ((7, 7, (ACCEPT,)),)}


def test_each_partitions_acknowledgements_are_answered_once_with_the_fetchs_acknowledge_error() -> None:
    c = Consumer(leader1=1)
    c.opened()
    c.manager.acknowledge({T0: {3: ACCEPT}, T1: {4: ACCEPT, 5: ACCEPT}})
    sent = c.poll(2)[1]
    assert batches(fetch_request(sent)) == {0: ((3, 3, (ACCEPT,)),), 1: ((4, 5, (ACCEPT,)),)}
    sent.on_response(fetched(c.topic_id, part(0), part(1, acknowledge_error_code=ErrorCode.INVALID_RECORD_STATE)), 3)
    ok, failed = sorted(c.acks(), key=lambda e: e.tp)
    assert (ok.tp, ok.offsets, ok.error) == (T0, frozenset({3}), None)
    assert (failed.tp, failed.offsets) == (T1, frozenset({4, 5}))
    assert isinstance(failed.error, InvalidRecordStateError)
    assert c.manager.acknowledgement_errors == 1
    assert c.errors() == []


def test_renewing_acknowledgements_mark_the_request() -> None:
    c = Consumer()
    c.opened()
    c.manager.acknowledge({T0: {3: RENEW}})
    assert fetch_request(c.poll(2)[1]).is_renew_ack


def test_acknowledgements_for_a_broker_with_nothing_to_fetch_go_alone() -> None:
    c = Consumer()
    c.opened()
    _, heartbeat = c.member.send(1_000)
    heartbeat.on_response(answer(1, {c.topic_id: (1,)}), 1_001)  # partition 0 (broker 1) is no longer assigned
    c.manager.acknowledge({T0: {8: ACCEPT}})
    sent = c.poll(1_002)
    request = ack_request(sent[1])
    assert request.share_session_epoch == 1
    assert [(p.partition_index, p.acknowledgement_batches) for t in request.topics for p in t.partitions] == [
        (0, (ack_api.AcknowledgementBatch(8, 8, (ACCEPT,)),))
    ]


# --- commits ---------------------------------------------------------------------------------------------------


def test_a_commit_sends_share_acknowledge_at_once_and_completes_with_every_partitions_result() -> None:
    c = Consumer()
    c.opened()
    sent = c.poll(2)  # fetches in flight: the commit waits for them, then goes before any new fetch
    c.manager.acknowledge({T1: {0: RELEASE}})  # waiting for a fetch: the commit takes it along
    c.manager.acknowledge({T0: {0: ACCEPT, 1: ACCEPT}}, c.commits.append)
    assert c.poll(3) == {}
    sent[1].on_response(fetched(c.topic_id, part(0, build_batch(2, [b"x"]), ((2, 2, 1),))), 4)
    sent[2].on_response(fetched(c.topic_id), 4)
    commit = c.poll(5)  # the buffer holds records: no fetch, but the commit goes
    assert set(commit) == {1, 2}
    one, two = ack_request(commit[1]), ack_request(commit[2])
    assert (one.group_id, one.member_id, one.share_session_epoch, one.is_renew_ack) == (
        "g",
        c.member.membership.member_id,
        2,
        False,
    )
    assert [(t.topic_id, t.partitions) for t in one.topics] == [
        (c.topic_id, (ack_api.AcknowledgePartition(0, (ack_api.AcknowledgementBatch(0, 1, (ACCEPT,)),)),))
    ]
    assert [p.partition_index for t in two.topics for p in t.partitions] == [1]
    commit[1].on_response(acknowledged(c.topic_id, (0, 0)), 6)
    assert c.commits == []  # partition 1 is not answered yet
    commit[2].on_response(acknowledged(c.topic_id, (1, ErrorCode.INVALID_RECORD_STATE)), 7)
    (results,) = c.commits
    assert results[T0] is None and "INVALID_RECORD_STATE" in str(results[T1])
    assert sorted((e.tp, e.offsets, e.error is None) for e in c.acks()) == [
        (T0, frozenset({0, 1}), True),
        (T1, frozenset({0}), False),
    ]
    c.buffer.deliver()
    held = c.buffer.take()
    assert held is not None
    c.buffer.release(held)
    after = c.poll(8)
    assert [fetch_request(after[n]).share_session_epoch for n in (1, 2)] == [3, 3]  # the acknowledge raised them


def test_a_polls_acknowledgements_made_after_a_commit_go_with_it_when_they_name_the_same_partition() -> None:
    c = Consumer()
    c.opened(0)
    sent = c.poll(2)[1]  # a fetch in flight: the commit waits for it
    c.manager.acknowledge({T0: {1: ACCEPT}}, c.commits.append)
    c.manager.acknowledge({T0: {2: RELEASE}})  # the next poll's, before the commit went
    sent.on_response(fetched(c.topic_id), 3)
    commit = ack_request(c.poll(4)[1])
    assert [(p.partition_index, p.acknowledgement_batches) for t in commit.topics for p in t.partitions] == [
        (0, (ack_api.AcknowledgementBatch(1, 2, (ACCEPT, RELEASE)),))
    ]


def test_a_commit_with_nothing_to_send_completes_at_once() -> None:
    c = Consumer()
    c.manager.acknowledge({}, c.commits.append)
    assert c.commits == [{}]


def test_a_commit_to_a_broker_without_a_session_opens_one_with_a_minimal_fetch_first() -> None:
    c = Consumer()
    c.join()
    sent = c.poll(0)
    sent[1].on_response(fetched(c.topic_id, part(0, build_batch(0, [b"a"]), ((0, 0, 1),))), 1)
    sent[2].on_response(UnsupportedVersionError("no"), 1)  # broker 2's session did not open
    c.events.clear()
    c.manager.acknowledge({T1: {7: ACCEPT}}, c.commits.append)
    opening = c.poll(101)  # after the backoff
    assert set(opening) == {2}
    request = fetch_request(opening[2])  # the buffer holds records: the least that opens a session
    assert (request.share_session_epoch, request.max_wait_ms, request.max_records, request.max_bytes) == (0, 0, 1, 1)
    assert batches(request) == {1: ()}
    opening[2].on_response(fetched(c.topic_id), 102)
    commit = c.poll(103)
    assert ack_request(commit[2]).share_session_epoch == 1
    commit[2].on_response(acknowledged(c.topic_id, (1, 0)), 104)
    assert c.commits == [{T1: None}]


def test_a_partition_error_on_acknowledge_asks_for_metadata_when_the_leader_moved() -> None:
    c = Consumer()
    c.opened()
    c.manager.acknowledge({T0: {1: ACCEPT}}, c.commits.append)
    assert not c.metadata_wanted(2)
    c.poll(2)[1].on_response(acknowledged(c.topic_id, (0, ErrorCode.NOT_LEADER_OR_FOLLOWER)), 3)
    assert c.metadata_wanted(4)
    assert "NOT_LEADER_OR_FOLLOWER" in str(c.commits[0][T0])


# --- losing the session -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH])
def test_a_lost_session_starts_over_at_epoch_zero_and_fails_the_acknowledgements_it_carried(code: int) -> None:
    c = Consumer()
    c.opened()
    c.manager.acknowledge({T0: {4: ACCEPT}})
    c.poll(2)[1].on_response(fetched(c.topic_id, error_code=code), 3)
    (event,) = c.acks()
    assert event.tp == T0 and event.offsets == {4} and ErrorCode(code).name in str(event.error)
    assert c.errors() == []  # the caller hears of it through the acknowledgement only
    again = fetch_request(c.poll(4)[1])
    assert again.share_session_epoch == 0 and batches(again) == {0: ()}


def test_a_lost_session_on_a_commit_fails_the_commit() -> None:
    c = Consumer()
    c.opened()
    c.manager.acknowledge({T0: {4: ACCEPT}}, c.commits.append)
    c.poll(2)[1].on_response(acknowledged(c.topic_id, error_code=ErrorCode.SHARE_SESSION_NOT_FOUND), 3)
    (results,) = c.commits
    assert "SHARE_SESSION_NOT_FOUND" in str(results[T0])
    assert fetch_request(c.poll(4)[1]).share_session_epoch == 0


def test_a_lost_connection_starts_the_session_over_fails_what_it_carried_and_asks_for_metadata() -> None:
    c = Consumer()
    c.opened()
    c.manager.acknowledge({T0: {4: ACCEPT}})
    assert not c.metadata_wanted(2)
    lost = KafkaConnectionError("node 1 went away")
    c.poll(2)[1].on_response(lost, 3)
    (event,) = c.acks()
    assert event.error is lost
    assert c.metadata_wanted(4)
    assert fetch_request(c.poll(103)[1]).share_session_epoch == 0  # after the backoff
    assert c.errors() == []


def decoded(c: Consumer) -> None:
    """The caller takes what is buffered (and decodes it): the buffer is empty again."""
    c.buffer.deliver()
    fetch = c.buffer.take()
    assert fetch is not None
    c.buffer.release(fetch)


def test_an_acknowledgement_waiting_when_its_session_is_lost_fails_and_never_reaches_the_records_handed_out_again() -> (
    None
):
    """KIP-932: a share session that ends releases what it acquired (Kafka 4.4 does so as the connection closes), and
    the broker may hand the same records to this member again in its next session, with a higher delivery count. An
    acknowledgement of the first delivery sent there would be taken for the second, which the caller has not seen
    yet: it fails instead (the network-fault suite saw offsets accepted, then delivered again)."""
    c = Consumer()
    c.opened(0)
    records = build_batch(533, [b"a", b"b", b"c"])
    c.poll(2)[1].on_response(fetched(c.topic_id, part(0, records, ((533, 535, 1),))), 3)
    decoded(c)
    ahead = c.poll(4)[1]  # the next fetch goes as the caller decodes (and is black-holed)
    c.manager.acknowledge({T0: dict.fromkeys(range(533, 536), ACCEPT)})  # waits: one request in flight per broker
    ahead.on_response(KafkaConnectionError("request to node 1 timed out; closing the connection"), 4_504)
    assert c.acks() == []  # the fetch carried none
    opening = c.poll(4_604)[1]  # after the backoff: the next session
    assert fetch_request(opening).share_session_epoch == 0
    opening.on_response(fetched(c.topic_id, part(0, records, ((533, 535, 2),))), 4_700)  # the same records again
    decoded(c)
    riding = fetch_request(c.poll(4_701)[1])
    assert riding.share_session_epoch == 1
    assert batches(riding) == {}, "the first delivery's acknowledgement rode on the next session"
    (stale,) = c.acks()
    assert (stale.tp, stale.offsets) == (T0, frozenset(range(533, 536)))
    assert isinstance(stale.error, InvalidRecordStateError) and "share session" in str(stale.error)


def test_a_record_held_across_a_lost_session_is_acknowledged_in_vain_and_its_next_delivery_for_real() -> None:
    """The caller still held records (decoded, not returned yet) when their session was lost, and the next session
    acquired them again before the caller acknowledged them: that acknowledgement fails, the next delivery's goes."""
    c = Consumer(settings=BATCH_OPTIMIZED)
    c.opened(0)
    records = build_batch(10, [b"a", b"b"])
    c.poll(2)[1].on_response(fetched(c.topic_id, part(0, records, ((10, 11, 1),))), 3)
    decoded(c)
    c.demand.held = 2  # the caller holds both
    c.poll(4)[1].on_response(KafkaConnectionError("closed by the peer"), 5)  # the fetch ahead: the session is lost
    c.poll(105)[1].on_response(fetched(c.topic_id, part(0, records, ((10, 11, 2),))), 106)  # acquired again
    c.manager.acknowledge({T0: {10: ACCEPT, 11: ACCEPT}})  # the first delivery, returned and accepted at last
    decoded(c)  # then the second is decoded, and held
    ahead = c.poll(107)[1]
    assert batches(fetch_request(ahead)) == {}, "the first delivery's acknowledgement rode on the next session"
    (stale,) = c.acks()
    assert stale.offsets == {10, 11} and isinstance(stale.error, InvalidRecordStateError)
    c.events.clear()
    c.manager.acknowledge({T0: {10: ACCEPT, 11: REJECT}})  # the second delivery
    ahead.on_response(fetched(c.topic_id), 108)
    carrying = c.poll(109)[1]
    assert batches(fetch_request(carrying)) == {0: ((10, 11, (ACCEPT, REJECT)),)}
    carrying.on_response(fetched(c.topic_id, part(0)), 110)
    assert [(e.offsets, e.error) for e in c.acks()] == [({10, 11}, None)]


def test_acknowledgements_a_lost_request_carried_leave_the_next_delivery_of_their_records_to_be_acknowledged() -> None:
    """What a lost request carried fails with it (the broker may or may not have taken it); the records it named,
    if delivered again, are acknowledged as usual."""
    c = Consumer()
    c.opened(0)
    records = build_batch(0, [b"a"])
    c.poll(2)[1].on_response(fetched(c.topic_id, part(0, records, ((0, 0, 1),))), 3)
    decoded(c)
    c.manager.acknowledge({T0: {0: ACCEPT}})
    lost = KafkaConnectionError("closed by the peer")
    c.poll(4)[1].on_response(lost, 5)  # the fetch carrying the acknowledgement
    assert [(e.offsets, e.error) for e in c.acks()] == [({0}, lost)]
    c.poll(105)[1].on_response(fetched(c.topic_id, part(0, records, ((0, 0, 2),))), 106)
    decoded(c)
    c.manager.acknowledge({T0: {0: ACCEPT}})
    carrying = c.poll(107)[1]
    assert batches(fetch_request(carrying)) == {0: ((0, 0, (ACCEPT,)),)}
    carrying.on_response(fetched(c.topic_id, part(0)), 108)
    assert [(e.offsets, e.error) for e in c.acks()][1:] == [({0}, None)]


def test_a_broker_without_share_fetch_is_told_to_the_caller() -> None:
    c = Consumer()
    c.join()
    c.poll(0)[1].on_response(UnsupportedVersionError("node 1 does not support SHARE_FETCH"), 1)
    (event,) = c.errors()
    assert isinstance(event.error, UnsupportedVersionError)


@pytest.mark.parametrize(("where", "fatal"), [("request", True), ("partition", True), ("partition-moved", False)])
def test_errors_that_cannot_be_retried_reach_the_caller_and_a_moved_leader_asks_for_metadata(
    where: str, fatal: bool
) -> None:
    c = Consumer()
    c.join()
    sent = c.poll(0)[1]
    if where == "request":
        sent.on_response(fetched(c.topic_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED), 1)
    elif where == "partition":
        sent.on_response(fetched(c.topic_id, part(0, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)), 1)
    else:
        sent.on_response(fetched(c.topic_id, part(0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)), 1)
    assert [type(e.error) for e in c.errors()] == ([TopicAuthorizationFailedError] if fatal else [])
    assert c.metadata_wanted(2) is (where == "partition-moved")


# --- closing ---------------------------------------------------------------------------------------------------


def test_fail_all_answers_every_acknowledgement_and_commit_still_waiting() -> None:
    c = Consumer()
    c.opened()
    c.manager.acknowledge({T0: {1: ACCEPT}}, c.commits.append)
    commit = c.poll(2)
    commit[1].on_response(acknowledged(c.topic_id, (0, 0)), 3)
    assert c.commits == [{T0: None}]
    c.manager.acknowledge({T1: {2: ACCEPT}})  # waiting for a fetch
    c.manager.acknowledge({T0: {3: REJECT}}, c.commits.append)  # a commit not sent yet
    closed = ClientClosedError("the share consumer is closed")
    c.events.clear()
    c.manager.fail_all(closed)
    assert c.commits[1] == {T0: closed, T1: closed}  # the waiting acknowledgements went with the commit
    assert sorted(((e.tp, e.offsets, e.error) for e in c.acks()), key=lambda t: t[0]) == [
        (T0, frozenset({3}), closed),
        (T1, frozenset({2}), closed),
    ]
    assert batches(fetch_request(c.poll(4)[1])) == {}  # nothing is left to send


# --- backoff and stranded acknowledgements ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        fetched(None, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED),
        KafkaConnectionError("refused"),
        "partition",
    ],
    ids=["request error", "connection", "partition error"],
)
def test_a_broker_whose_fetch_failed_is_asked_again_only_after_a_backoff(failure: object) -> None:
    c = Consumer()
    c.join()
    sent = c.poll(0)[1]
    if failure == "partition":
        failure = fetched(c.topic_id, part(0, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    sent.on_response(failure, 10)
    waiting = c.manager.poll(11)
    assert 1 not in {u.node_id for u in waiting.unsent_requests}  # not once per loop iteration
    assert waiting.time_until_next_poll_ms <= 99
    assert 1 in c.poll(110)  # the backoff (100 ms) is over


def test_the_backoff_grows_while_a_broker_keeps_failing_and_ends_with_a_success() -> None:
    c = Consumer()
    c.join()
    c.poll(0)[1].on_response(KafkaConnectionError("refused"), 0)
    c.poll(100)[1].on_response(KafkaConnectionError("refused"), 100)
    assert 1 not in c.poll(250)  # 200 ms now
    c.poll(300)[1].on_response(fetched(c.topic_id), 300)
    assert 1 in c.poll(300)


def test_acknowledgements_for_a_broker_without_a_session_and_nothing_to_fetch_fail_instead_of_waiting() -> None:
    c = Consumer()
    c.opened()
    sent = c.poll(2)
    sent[1].on_response(KafkaConnectionError("gone"), 3)  # broker 1's session is lost
    sent[2].on_response(fetched(c.topic_id), 3)
    _, heartbeat = c.member.send(1_000)
    heartbeat.on_response(answer(1, {c.topic_id: (1,)}), 1_001)  # and partition 0 is no longer assigned
    c.events.clear()
    c.manager.acknowledge({T0: {5: ACCEPT}}, c.commits.append)
    sent = c.poll(1_002)
    assert 1 not in sent
    sent[2].on_response(fetched(c.topic_id), 1_002)
    (results,) = c.commits
    assert "SHARE_SESSION_NOT_FOUND" in str(results[T0])
    (event,) = c.acks()
    assert event.tp == T0 and event.offsets == {5} and event.error is results[T0]
    c.manager.acknowledge({T1: {1: ACCEPT}}, c.commits.append)  # a later commit does not wait for partition 0
    c.poll(1_003)[2].on_response(acknowledged(c.topic_id, (1, 0)), 1_004)
    assert c.commits[1] == {T1: None}


def test_nothing_is_fetched_for_a_caller_that_does_not_poll_and_each_poll_allows_one_fetch_per_broker() -> None:
    c = Consumer()
    c.join()
    c.demand.waiting_until_ms = 0  # the caller is not in poll
    assert c.poll(0) == {}
    c.demand.polls += 1  # a poll began (and returned at once)
    first = c.poll(1)
    assert sorted(first) == [1, 2]
    for unsent in first.values():
        unsent.on_response(fetched(c.topic_id), 2)
    assert c.poll(3) == {}, "one fetch per poll, not more, once the caller left it"
    c.demand.waiting_until_ms = 10  # a caller waiting in poll until 10: fetches go on
    assert sorted(c.poll(4)) == [1, 2]


def test_acknowledgements_the_answer_leaves_out_are_reported_failed() -> None:
    c = Consumer(leader1=1)
    c.opened()
    c.manager.acknowledge({T0: {3: ACCEPT}, T1: {4: ACCEPT}})
    sent = c.poll(2)[1]
    sent.on_response(fetched(c.topic_id, part(0)), 3)  # nothing said about partition 1
    by_tp = {e.tp: e.error for e in c.acks()}
    assert by_tp[T0] is None
    assert isinstance(by_tp[T1], KafkaError) and "did not answer for t-1" in str(by_tp[T1])


def test_nothing_is_fetched_once_the_caller_is_leaving() -> None:
    c = Consumer()
    c.join()
    c.demand.polls += 1
    c.demand.leaving = True  # close() or unsubscribe() settled what was delivered: released records stay released
    assert c.poll(0) == {}


def test_record_limit_fetches_nothing_while_the_caller_holds_decoded_records_and_acknowledgements_go_alone() -> None:
    """share.acquire.mode=record_limit asks for at most max.poll.records locked at a time: no fetch ahead of the
    caller, and the acknowledgements that free the locks go at once."""
    c = Consumer(leader1=1)
    c.opened()
    c.demand.held = 300
    c.manager.acknowledge({T0: {3: ACCEPT}})
    (sent,) = c.poll(2).values()
    assert ack_request(sent).topics[0].partitions[0].partition_index == 0
    sent.on_response(acknowledged(c.topic_id, (0, 0)), 3)
    assert c.poll(4) == {}
    c.demand.held = 0
    (fetch,) = c.poll(5).values()
    assert fetch_request(fetch).share_session_epoch == 2


BATCH_OPTIMIZED = attrs.evolve(SETTINGS, acquire_mode=0)


def test_batch_optimized_fetches_one_ahead_of_the_records_the_caller_holds_without_waiting() -> None:
    """While the caller works through a fetch's records the next is fetched, so its round trip is not waited out;
    it does not long-poll (a drained topic or locked partitions would hold the next acknowledgements behind it)."""
    c = Consumer(leader1=1, settings=BATCH_OPTIMIZED)
    c.opened()
    c.demand.held = 300
    c.demand.waiting_until_ms = 0
    c.demand.polls += 1
    (ahead,) = c.poll(2).values()
    request = fetch_request(ahead)
    assert (request.share_session_epoch, request.max_wait_ms, request.max_records) == (1, 0, 100)
    ahead.on_response(fetched(c.topic_id), 3)
    assert c.poll(4) == {}  # one fetch per poll of the caller
    c.demand.held = 0
    c.demand.polls += 1
    (again,) = c.poll(5).values()
    assert fetch_request(again).max_wait_ms == 500  # nothing held, nothing carried: it may wait for records


def answered_once(values: list[bytes]) -> Consumer:
    """A batch_optimized consumer whose first fetch (partition 0, broker 1) was answered with ``values``, all
    acquired, at 3; its answer waits in the buffer."""
    c = Consumer(leader1=1, settings=BATCH_OPTIMIZED)
    c.opened()
    c.demand.polls += 1
    (first,) = c.poll(2).values()
    last = len(values) - 1
    first.on_response(fetched(c.topic_id, part(0, build_batch(0, values), ((0, last, 1),))), 3)
    return c


def test_batch_optimized_fetches_nothing_while_a_fetch_waits_in_the_buffer() -> None:
    c = answered_once([b"a", b"b", b"c"])
    c.demand.held = 3
    c.demand.polls += 1
    assert c.poll(4) == {}  # the fetch not yet taken by the caller holds the next one back


def test_batch_optimized_fetches_again_as_an_answer_arrives_for_a_caller_that_holds_nothing() -> None:
    """The next fetch goes before the caller decodes the answer (it would wait for the GIL the decoding caller
    holds), without long-polling, and with the acknowledgements of the caller's last poll."""
    c = answered_once([b"a", b"b", b"c"])
    c.manager.acknowledge({T0: {9: ACCEPT}})  # the caller's last poll's records, sent as it began this one
    (ahead,) = c.poll(4).values()
    request = fetch_request(ahead)
    assert (request.share_session_epoch, request.max_wait_ms) == (2, 0)
    assert batches(request) == {0: ((9, 9, (ACCEPT,)),)}
    ahead.on_response(fetched(c.topic_id, part(0, build_batch(3, [b"d"]), ((3, 3, 1),))), 5)
    c.demand.polls += 1
    assert c.poll(6) == {}  # two answers wait for the caller: nothing more is fetched


def test_batch_optimized_acknowledgements_wait_for_the_fetch_the_callers_decoding_frees() -> None:
    """While the caller holds records and an answer waits in the buffer, the fetch its poll asked for goes as soon
    as it decodes that answer: the acknowledgements wait to ride on it, not taking the broker's one request in
    flight, for at most ACK_RIDE_MS."""
    c = answered_once([b"a", b"b", b"c"])
    c.demand.held = 300
    c.demand.waiting_until_ms = 0
    c.demand.polls += 1
    c.manager.acknowledge({T0: {7: ACCEPT}})
    result = c.manager.poll(4)
    assert result.unsent_requests == () and result.time_until_next_poll_ms == ACK_RIDE_MS
    c.buffer.deliver()
    fetch = c.buffer.take()
    assert fetch is not None
    c.buffer.release(fetch)
    assert c.woken == 1  # the caller decoded the answer: the background is woken
    (carrying,) = c.poll(5).values()
    assert batches(fetch_request(carrying)) == {0: ((7, 7, (ACCEPT,)),)}
    assert fetch_request(carrying).max_wait_ms == 0


def test_batch_optimized_acknowledgements_go_alone_when_the_fetch_does_not_come_within_the_ride_time() -> None:
    c = answered_once([b"a"])
    c.demand.held = 300  # a slow caller: the answer stays undecoded
    c.demand.polls += 1
    c.manager.acknowledge({T0: {7: ACCEPT}})
    assert c.poll(4) == {}
    assert c.poll(4 + ACK_RIDE_MS - 1) == {}
    (alone,) = c.poll(4 + ACK_RIDE_MS).values()
    assert [p.partition_index for t in ack_request(alone).topics for p in t.partitions] == [0]


def test_batch_optimized_fetches_ahead_only_while_the_records_ahead_leave_the_partitions_locks_to_take() -> None:
    """Kafka locks at most share.partition.max.record.locks (2,000 by default) records a partition: a fetch ahead of
    more than AHEAD_LOCKS_PER_PARTITION unfinished records a partition would find few left to take."""
    c = Consumer(leader1=1, settings=BATCH_OPTIMIZED)
    c.opened(0)  # one partition
    c.demand.polls += 1
    (first,) = c.poll(2).values()
    many = AHEAD_LOCKS_PER_PARTITION + 200
    first.on_response(fetched(c.topic_id, part(0, build_batch(0, [b"v"] * many), ((0, many - 1, 1),))), 3)
    assert c.poll(4) == {}  # the answer's records alone are above the line: no fetch on arrival
    c.buffer.deliver()
    fetch = c.buffer.take()
    assert fetch is not None
    c.buffer.release(fetch)
    c.demand.held = many  # decoded, none returned yet
    c.demand.polls += 1
    assert c.poll(5) == {}
    c.demand.held = many - 500  # one poll returned 500
    c.demand.polls += 1
    (ahead,) = c.poll(6).values()
    assert fetch_request(ahead).max_wait_ms == 0


def test_while_the_caller_holds_records_the_manager_turns_within_the_ride_time() -> None:
    """The caller's mid-batch polls queue their acknowledgements without waking the background."""
    c = Consumer(leader1=1, settings=BATCH_OPTIMIZED)
    c.opened()
    c.demand.waiting_until_ms = 0
    assert c.manager.poll(3).time_until_next_poll_ms > ACK_RIDE_MS
    c.demand.held = 10
    assert c.manager.poll(4).time_until_next_poll_ms <= ACK_RIDE_MS


def test_a_fenced_member_s_commit_waits_for_the_rejoin_and_reports_what_the_broker_says() -> None:
    """The network-faults issue asks the commit paths of a fenced member again for share groups: acknowledgements
    committed while the member is fenced are not sent, nor reported as done, until it is in the group again; then
    they go under its member id and each partition's result is the broker's own (a lock the broker released after
    the fence is INVALID_RECORD_STATE, never a success the client made up)."""
    c = Consumer()
    c.opened()
    heartbeat, unsent = c.member.send(1000)
    unsent.on_response(answer(-1, code=ErrorCode.FENCED_MEMBER_EPOCH), 1001)
    assert not c.member.membership.joined
    c.manager.acknowledge({T0: {0: ACCEPT}}, c.commits.append)
    assert c.poll(1002) == {} and c.commits == [] and c.acks() == []
    rejoin, unsent = c.member.send(1003)
    assert rejoin.member_epoch == 0 and rejoin.member_id == heartbeat.member_id
    unsent.on_response(answer(3, {c.topic_id: (0, 1)}), 1004)
    sent = c.poll(1005)
    commit = ack_request(sent[1])  # the commit goes at once, on the session kept for broker 1
    assert commit.member_id == heartbeat.member_id
    sent[1].on_response(acknowledged(c.topic_id, (0, ErrorCode.INVALID_RECORD_STATE)), 1006)
    (results,) = c.commits
    assert results[T0] is not None and "INVALID_RECORD_STATE" in str(results[T0])


def test_share_fetches_ask_for_no_more_than_the_buffer_s_room_and_wait_for_room_to_go() -> None:
    """``fetch_buffer_bytes`` bounds a share consumer as it bounds a consumer: every ShareFetch is reserved in the
    buffer while it is out, and none goes while less than one partition's worth is free."""
    c = Consumer(settings=attrs.evolve(SETTINGS, acquire_mode=0))  # batch_optimized: fetches ahead of the caller
    c.join()
    first = c.poll(0)
    assert sum(fetch_request(u).max_bytes for u in first.values()) <= 1 << 20
    assert c.buffer.reserved_bytes == sum(fetch_request(u).max_bytes for u in first.values())
    first[1].on_response(fetched(c.topic_id, part(0, build_batch(0, [b"x" * 1000] * 980), ((0, 979, 1),))), 1)
    assert c.buffer.reserved_bytes == fetch_request(first[2]).max_bytes  # answered: its reservation is settled
    first[2].on_response(fetched(c.topic_id), 1)
    c.buffer.deliver()
    assert c.buffer.buffered_bytes > (1 << 20) - (1 << 16)  # the answer filled the buffer
    c.demand.polls += 1
    assert c.poll(2) == {}  # less than one partition's worth (64 KiB) is free: nothing more is fetched
