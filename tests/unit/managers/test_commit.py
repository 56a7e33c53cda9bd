"""The commit manager: OffsetFetch/OffsetCommit jobs against a hand-driven coordinator, with literal times."""

from __future__ import annotations

from typing import Any

import pytest

from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import CommitFailedError, KafkaConnectionError, KafkaError, KafkaTimeoutError
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.commit import NO_GENERATION, CommitManager, Generation
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.protocol.messages.find_coordinator import FindCoordinatorResponse
from asyncconsumer.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from asyncconsumer.records import OffsetAndMetadata, TopicPartition

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def setup(generation: Generation = NO_GENERATION) -> tuple[CommitManager, CoordinatorManager]:
    coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
    (find,) = coordinator.poll(0).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
    return CommitManager(coordinator, lambda: generation, ExponentialBackoff(100, 1000, jitter=0)), coordinator


def one(requests: tuple[UnsentRequest, ...]) -> UnsentRequest:
    assert len(requests) == 1, requests
    return requests[0]


def fetched(offsets: dict[TopicPartition, int], error_code: int = 0) -> OffsetFetchResponse:
    return OffsetFetchResponse(
        topics=(
            OffsetFetchResponseTopic(
                name="t",
                partitions=tuple(
                    OffsetFetchResponsePartition(
                        partition_index=tp.partition,
                        committed_offset=o,
                        committed_leader_epoch=3,
                        metadata="m",
                        error_code=error_code,
                    )
                    for tp, o in offsets.items()
                ),
            ),
        )
    )


def committed_answer(error_code: int = 0) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=(
            OffsetCommitResponseTopic(
                name="t", partitions=(OffsetCommitResponsePartition(partition_index=0, error_code=error_code),)
            ),
        )
    )


def test_fetch_committed_asks_the_coordinator_and_reads_offsets() -> None:
    manager, coordinator = setup()
    results: list[Any] = []
    manager.fetch_committed((TP0, TP1), 10_000, results.append, results.append)
    request = one(manager.poll(0).unsent_requests)
    assert coordinator.coordinator is not None and request.node_id == coordinator.coordinator.node_id
    assert isinstance(request.request, OffsetFetchRequest) and request.request.groups[0].group_id == "g"
    request.on_response(fetched({TP0: 42, TP1: -1}), 5)
    assert results == [{TP0: OffsetAndMetadata(42, "m", 3), TP1: None}]


def test_commit_sends_generation_member_and_offsets() -> None:
    manager, _ = setup(Generation(7, "member-1", "static-1"))
    done: list[Any] = []
    manager.commit({TP0: OffsetAndMetadata(10, "meta", 2)}, 10_000, done.append, done.append)
    request = one(manager.poll(0).unsent_requests)
    sent = request.request
    assert isinstance(sent, OffsetCommitRequest)
    assert (sent.generation_id_or_member_epoch, sent.member_id, sent.group_instance_id) == (7, "member-1", "static-1")
    partition = sent.topics[0].partitions[0]
    assert (partition.committed_offset, partition.committed_leader_epoch, partition.committed_metadata) == (
        10,
        2,
        "meta",
    )
    request.on_response(committed_answer(), 1)
    assert done == [None]
    assert manager.pending == 0
    assert manager.poll(2).unsent_requests == ()


def test_a_moved_coordinator_is_forgotten_and_the_job_retried_after_backoff() -> None:
    manager, coordinator = setup()
    done: list[Any] = []
    manager.commit({TP0: OffsetAndMetadata(1)}, 10_000, done.append, done.append)
    one(manager.poll(0).unsent_requests).on_response(committed_answer(error_code=16), 10)  # NOT_COORDINATOR
    assert coordinator.coordinator is None
    assert manager.poll(200).unsent_requests == ()  # no coordinator yet
    (find,) = coordinator.poll(200).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=2, host="h2", port=9092, error_message=None), 201)
    retry = one(manager.poll(202).unsent_requests)
    retry.on_response(committed_answer(), 203)
    assert done == [None]


def test_a_lost_connection_retries_and_a_load_in_progress_waits() -> None:
    manager, coordinator = setup()
    results: list[Any] = []
    manager.fetch_committed((TP0,), 10_000, results.append, results.append)
    one(manager.poll(0).unsent_requests).on_response(KafkaConnectionError("gone"), 1)
    assert coordinator.coordinator is None
    (find,) = coordinator.poll(1).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 2)
    assert manager.poll(50).unsent_requests == ()  # backoff 100 ms from t=1
    one(manager.poll(101).unsent_requests).on_response(OffsetFetchResponse(error_code=14), 102)
    assert results == []
    one(manager.poll(400).unsent_requests).on_response(fetched({TP0: 5}), 401)
    assert results == [{TP0: OffsetAndMetadata(5, "m", 3)}]


def test_commit_latency_is_the_accepted_attempt_s_round_trip_and_failures_count_no_commit() -> None:
    manager, _ = setup()
    done: list[Any] = []
    assert (manager.commit_latency.summary(), manager.commits) == ((None, None), 0)
    manager.commit({TP0: OffsetAndMetadata(1)}, 10_000, done.append, done.append)
    one(manager.poll(0).unsent_requests).on_response(committed_answer(error_code=14), 40)  # retried after backoff
    assert (manager.commit_latency.summary(), manager.commits) == ((None, None), 0)
    one(manager.poll(200).unsent_requests).on_response(committed_answer(), 230)
    assert (manager.commit_latency.summary(), manager.commits) == ((30.0, 30), 1)
    manager.commit({TP0: OffsetAndMetadata(2)}, 10_000, done.append, done.append)
    one(manager.poll(300).unsent_requests).on_response(committed_answer(), 310)
    assert (manager.commit_latency.summary(), manager.commits) == ((20.0, 30), 2)
    manager.fetch_committed((TP0,), 10_000, done.append, done.append)
    one(manager.poll(400).unsent_requests).on_response(fetched({TP0: 2}), 900)  # a fetch is no commit
    assert (manager.commit_latency.summary(), manager.commits) == ((20.0, 30), 2)


@pytest.mark.parametrize("code", [22, 25, 27, 82, 110])
def test_a_commit_the_group_no_longer_accepts_fails_with_commit_failed(code: int) -> None:
    manager, _ = setup(Generation(3, "m"))
    errors: list[KafkaError] = []
    manager.commit({TP0: OffsetAndMetadata(1)}, 10_000, lambda r: None, errors.append)
    one(manager.poll(0).unsent_requests).on_response(committed_answer(error_code=code), 1)
    assert len(errors) == 1 and isinstance(errors[0], CommitFailedError)
    assert manager.poll(500).unsent_requests == ()  # not retried


def test_jobs_fail_with_a_timeout_at_their_deadline() -> None:
    manager, coordinator = setup()
    coordinator.mark_unknown("test")
    errors: list[KafkaError] = []
    manager.fetch_committed((TP0,), 1_000, lambda r: None, errors.append)
    assert manager.poll(0).unsent_requests == ()
    assert manager.poll(0).time_until_next_poll_ms <= 1_000
    manager.poll(1_000)
    assert len(errors) == 1 and isinstance(errors[0], KafkaTimeoutError)


def test_a_job_that_never_found_the_coordinator_names_why_when_it_times_out() -> None:
    coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
    network_error = KafkaConnectionError("cannot connect to bootstrap server h:1: connection refused")
    manager = CommitManager(
        coordinator,
        lambda: NO_GENERATION,
        ExponentialBackoff(100, 1000, jitter=0),
        last_network_error=lambda: network_error,
    )
    errors: list[KafkaError] = []
    manager.fetch_committed((TP0,), 1_000, lambda r: None, errors.append)
    manager.poll(1_000)
    assert str(errors[0]) == (
        "offset fetch for 1 partition of group 'g' timed out before it was sent (the group coordinator was not "
        "found; last error: cannot connect to bootstrap server h:1: connection refused)"
    )
    (find,) = coordinator.poll(2_000).unsent_requests  # the coordinator's own failure, when there is one, wins
    find.on_response(
        KafkaConnectionError("lost the connection to broker 1 at h:2: connection reset by the peer"), 2_000
    )
    manager.commit({TP0: OffsetAndMetadata(5)}, 3_000, lambda r: None, errors.append)
    manager.poll(3_000)
    assert str(errors[1]).endswith("last error: lost the connection to broker 1 at h:2: connection reset by the peer)")
    assert str(errors[1]).startswith("offset commit for 1 partition of group 'g' timed out before it was sent")


def test_a_stale_member_epoch_is_retried_with_the_epoch_the_member_has_by_then() -> None:
    """KIP-848: a commit built before the member's epoch moved on is answered STALE_MEMBER_EPOCH and resent."""
    coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
    (find,) = coordinator.poll(0).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
    generation = [Generation(4, "m")]
    manager = CommitManager(coordinator, lambda: generation[0], ExponentialBackoff(100, 1000, jitter=0))
    done: list[Any] = []
    manager.commit({TP0: OffsetAndMetadata(1)}, 10_000, done.append, done.append)
    one(manager.poll(0).unsent_requests).on_response(committed_answer(error_code=113), 1)
    assert done == []
    generation[0] = Generation(5, "m")
    retry = one(manager.poll(200).unsent_requests)
    assert isinstance(retry.request, OffsetCommitRequest) and retry.request.generation_id_or_member_epoch == 5
    retry.on_response(committed_answer(), 201)
    assert done == [None]


def test_offset_fetch_names_the_member_and_epoch_only_for_a_kip848_group() -> None:
    for kip848, expected in ((False, (None, -1)), (True, ("m", 6))):
        coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
        (find,) = coordinator.poll(0).unsent_requests
        find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
        manager = CommitManager(
            coordinator,
            lambda: Generation(6, "m"),
            ExponentialBackoff(100, 1000, jitter=0),
            member_epoch_in_fetch=kip848,
        )
        manager.fetch_committed((TP0,), 10_000, lambda r: None, lambda e: None)
        sent = one(manager.poll(0).unsent_requests).request
        assert isinstance(sent, OffsetFetchRequest)
        assert (sent.groups[0].member_id, sent.groups[0].member_epoch) == expected


# --- auto-commit, and switching it off and on at run time -----------------------------------------------------------


def auto_setup(interval_ms: int | None = 1_000) -> tuple[CommitManager, CoordinatorManager, SubscriptionState]:
    """A member of generation 3 that owns t-0 at position 7, with auto-commit every ``interval_ms`` (None: off)."""
    coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
    (find,) = coordinator.poll(0).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
    subs = SubscriptionState("earliest")
    subs.subscribe(["t"])
    subs.assign_from_group([TP0])
    subs.seek(TP0, 7)
    manager = CommitManager(
        coordinator,
        lambda: Generation(3, "m"),
        ExponentialBackoff(100, 1000, jitter=0),
        subscriptions=subs,
        auto_commit_interval_ms=interval_ms,
    )
    return manager, coordinator, subs


def commits(requests: tuple[UnsentRequest, ...]) -> list[tuple[int, int]]:
    """(partition, offset) of every OffsetCommit among ``requests``."""
    return [
        (p.partition_index, p.committed_offset)
        for u in requests
        if isinstance(u.request, OffsetCommitRequest)
        for t in u.request.topics
        for p in t.partitions
    ]


def test_auto_commit_commits_the_positions_every_interval() -> None:
    manager, _, _ = auto_setup()
    assert manager.auto_commit_enabled
    assert manager.poll(0).time_until_next_poll_ms == 1_000  # the first interval counts from the first poll
    assert commits(manager.poll(999).unsent_requests) == []
    request = one(manager.poll(1_000).unsent_requests)
    assert commits((request,)) == [(0, 7)]
    request.on_response(committed_answer(), 1_001)
    assert commits(manager.poll(1_999).unsent_requests) == []
    assert commits(manager.poll(2_000).unsent_requests) == [(0, 7)]


def test_switched_off_nothing_is_auto_committed_on_the_interval_nor_on_close_and_switched_on_it_is_again() -> None:
    manager, _, _ = auto_setup()
    manager.poll(0)
    quiet: list[int] = []
    manager.set_auto_commit(None, on_quiet=lambda: quiet.append(1))
    assert quiet == [1]  # nothing was in flight
    assert not manager.auto_commit_enabled
    assert manager.commit_positions(1) is False  # the group's commit-before-revoke asks it: nothing to do
    for now in (1_000, 5_000, 60_000):
        result = manager.poll(now)
        assert commits(result.unsent_requests) == []
    assert commits(manager.poll_on_close(60_001).unsent_requests) == []  # the close's last auto-commit too
    manager.set_auto_commit(1_000)
    assert manager.auto_commit_enabled
    assert commits(manager.poll(60_002).unsent_requests) == []  # the interval counts from being switched on
    assert commits(manager.poll(61_002).unsent_requests) == [(0, 7)]


def test_switching_off_drops_an_auto_commit_not_yet_sent_and_its_callback_still_runs() -> None:
    manager, coordinator, _ = auto_setup()
    coordinator.mark_unknown("test")  # the commit-before-revoke waits for a coordinator
    results: list[object] = []
    assert manager.commit_positions(0, on_done=results.append)
    manager.set_auto_commit(None)
    assert len(results) == 1 and isinstance(results[0], KafkaError)  # the revocation goes on
    assert manager.pending == 0
    (find,) = coordinator.poll(1).unsent_requests
    find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 1)
    assert commits(manager.poll(2).unsent_requests) == []  # never sent


def test_switching_off_is_quiet_once_the_auto_commit_in_flight_is_answered_and_it_is_never_retried() -> None:
    manager, _, _ = auto_setup()
    manager.poll(0)
    in_flight = one(manager.poll(1_000).unsent_requests)
    quiet: list[int] = []
    manager.set_auto_commit(None, on_quiet=lambda: quiet.append(1))
    assert quiet == []  # an auto-commit is out: a commit after the switch could still be overwritten
    manager.commit({TP0: OffsetAndMetadata(3)}, 10_000, lambda r: None, lambda e: None)  # the caller's own
    assert commits(manager.poll(1_001).unsent_requests) == [(0, 3)]
    assert quiet == []
    in_flight.on_response(committed_answer(error_code=15), 1_002)  # COORDINATOR_NOT_AVAILABLE: retriable
    manager.poll(1_003)
    assert quiet == [1]
    assert commits(manager.poll(5_000).unsent_requests) == []  # the auto-commit was not retried


def test_an_explicit_commit_is_untouched_by_switching_auto_commit_off() -> None:
    manager, _, _ = auto_setup()
    done: list[object] = []
    manager.commit({TP0: OffsetAndMetadata(5)}, 10_000, done.append, done.append)
    manager.set_auto_commit(None)
    request = one(manager.poll(0).unsent_requests)
    assert commits((request,)) == [(0, 5)]
    request.on_response(committed_answer(), 1)
    assert done == [None]


# --- commits made under a membership (the network-faults issue's second and third defects) ------------------------
class Member:
    """A commit manager of a group member holding t-0, whose generation and fencing the test drives."""

    def __init__(self) -> None:
        self.generation = Generation(5, "m")
        self.fenced: list[int] = []
        self.done: list[Any] = []
        self.subs = SubscriptionState("earliest")
        self.subs.subscribe(["t"])
        self.subs.assign_from_group([TP0])
        self.subs.seek(TP0, 10)  # consumed up to 10: no committed offset to look up
        coordinator = CoordinatorManager("g", ExponentialBackoff(100, 1000, jitter=0), lambda e: None)
        (find,) = coordinator.poll(0).unsent_requests
        find.on_response(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092, error_message=None), 0)
        self.manager = CommitManager(
            coordinator,
            lambda: self.generation,
            ExponentialBackoff(100, 1000, jitter=0),
            subscriptions=self.subs,
            on_fenced=self.on_fenced,
        )

    def on_fenced(self, code: int) -> None:
        assert self.done == [], "the member is fenced before the caller hears of the failed commit"
        self.fenced.append(code)

    def commit(self) -> None:
        self.manager.commit({TP0: OffsetAndMetadata(10)}, 10_000, self.done.append, self.done.append)


def test_a_commit_retried_after_the_member_was_fenced_is_never_sent() -> None:
    """Once fenced the member holds no generation: the retry would have gone out as a standalone commit (generation
    -1), which Kafka accepts while the group is empty. It fails instead, naming why."""
    member = Member()
    member.commit()
    one(member.manager.poll(0).unsent_requests).on_response(KafkaConnectionError("gone"), 1)
    member.generation = NO_GENERATION  # a heartbeat fenced the member meanwhile
    assert member.manager.poll(500).unsent_requests == ()
    (error,) = member.done
    assert isinstance(error, CommitFailedError) and "not a member of its group" in str(error)
    assert "gone" in str(error)  # the attempt that failed before is named too


def test_a_commit_is_not_retried_once_its_partition_was_given_away_and_back() -> None:
    """Same member, but the partition left its assignment in between (another member may have committed it)."""
    member = Member()
    member.commit()
    one(member.manager.poll(0).unsent_requests).on_response(KafkaConnectionError("gone"), 1)
    member.subs.assign_from_group([])
    member.subs.assign_from_group([TP0])
    member.generation = Generation(7, "m")
    sent = member.manager.poll(500).unsent_requests
    assert [r for r in sent if not isinstance(r.request, OffsetFetchRequest)] == []  # only the new position's lookup
    assert isinstance(member.done[0], CommitFailedError) and "another member" in str(member.done[0])


def test_a_commit_is_retried_in_a_new_generation_that_kept_its_partitions() -> None:
    """A cooperative rebalance (or a KIP-848 epoch bump) that left the partition with the member: the retry carries
    the generation the member holds now."""
    member = Member()
    member.commit()
    one(member.manager.poll(0).unsent_requests).on_response(committed_answer(error_code=14), 1)  # loading
    member.generation = Generation(6, "m")
    retry = one(member.manager.poll(500).unsent_requests)
    assert isinstance(retry.request, OffsetCommitRequest) and retry.request.generation_id_or_member_epoch == 6
    retry.on_response(committed_answer(), 501)
    assert member.done == [None]


@pytest.mark.parametrize("code", [22, 25, 110])  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
def test_a_commit_the_coordinator_refuses_for_the_member_s_own_generation_fences_the_member(code: int) -> None:
    member = Member()
    member.commit()
    one(member.manager.poll(0).unsent_requests).on_response(committed_answer(error_code=code), 1)
    assert member.fenced == [code]
    assert isinstance(member.done[0], CommitFailedError)


def test_a_refusal_of_an_older_generation_does_not_fence_the_member_it_is_now() -> None:
    """The member rejoined while the commit was out: the refusal is of the old generation (Java's
    ``generationUnchanged``), so only the commit fails."""
    member = Member()
    member.commit()
    sent = one(member.manager.poll(0).unsent_requests)
    member.generation = Generation(6, "m")
    sent.on_response(committed_answer(error_code=22), 1)
    assert member.fenced == []
    assert isinstance(member.done[0], CommitFailedError)


def test_a_consumer_with_a_manual_assignment_commits_without_a_generation() -> None:
    """No subscription: the partitions are the caller's own, and the standalone commit (generation -1) is right."""
    manager, _ = setup()
    subs = SubscriptionState("earliest")
    subs.assign([TP0])
    manager._subs = subs
    done: list[Any] = []
    manager.commit({TP0: OffsetAndMetadata(3)}, 10_000, done.append, done.append)
    request = one(manager.poll(0).unsent_requests)
    assert isinstance(request.request, OffsetCommitRequest) and request.request.generation_id_or_member_epoch == -1
