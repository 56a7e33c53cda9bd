"""The offsets manager driven with literal timestamps and hand-built responses: resets through ListOffsets, and
offset lookups for the caller."""

from __future__ import annotations

from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.errors import KafkaError, UnknownTopicOrPartitionError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets import UNKNOWN_TOPIC_GRACE_MS, OffsetsManager, reset_timestamp
from asyncconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from asyncconsumer.records import OffsetAndTimestamp, TopicPartition
from tests.support.managers import metadata_response, no_jitter, only

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def offsets_fixture(
    strategy: str = "earliest",
) -> tuple[OffsetsManager, MetadataManager, SubscriptionState, list[ErrorEvent]]:
    metadata = MetadataManager(["h:1"], 60_000, no_jitter())
    only(metadata.poll(0).unsent_requests).on_response(metadata_response(), 0)
    subs = SubscriptionState(strategy)
    errors: list[ErrorEvent] = []
    return OffsetsManager(subs, metadata, "read_uncommitted", no_jitter(), errors.append), metadata, subs, errors


def list_offsets_answer(offsets: dict[TopicPartition, int], error_code: int = 0) -> ListOffsetsResponse:
    return ListOffsetsResponse(
        topics=(
            ListOffsetsTopicResponse(
                name="t",
                partitions=tuple(
                    ListOffsetsPartitionResponse(
                        partition_index=tp.partition, error_code=error_code, timestamp=-1, offset=o
                    )
                    for tp, o in offsets.items()
                ),
            ),
        )
    )


def test_new_assignment_is_reset_through_list_offsets_to_the_leader() -> None:
    manager, _, subs, _ = offsets_fixture("earliest")
    subs.assign([TP0, TP1])
    request = only(manager.poll(10).unsent_requests)
    assert request.node_id == 1
    assert isinstance(request.request, ListOffsetsRequest)
    sent = {(p.partition_index, p.timestamp) for t in request.request.topics for p in t.partitions}
    assert sent == {(0, -2), (1, -2)}
    assert manager.poll(11).unsent_requests == ()  # already in flight
    request.on_response(list_offsets_answer({TP0: 5, TP1: 7}), 12)
    assert subs.position(TP0) == 5
    assert subs.position(TP1) == 7


def test_a_reset_answer_is_ignored_if_the_caller_sought_meanwhile() -> None:
    manager, _, subs, _ = offsets_fixture("latest")
    subs.assign([TP0])
    request = only(manager.poll(0).unsent_requests)
    subs.seek(TP0, 3)
    request.on_response(list_offsets_answer({TP0: 99}), 1)
    assert subs.position(TP0) == 3


def test_retriable_reset_error_retries_after_backoff() -> None:
    manager, _metadata, subs, errors = offsets_fixture()
    subs.assign([TP0])
    only(manager.poll(0).unsent_requests).on_response(list_offsets_answer({TP0: -1}, error_code=6), 10)
    assert manager.poll(50).unsent_requests == ()
    assert only(manager.poll(110).unsent_requests)
    assert errors == []


def test_list_offsets_job_completes_with_offsets_and_timestamps() -> None:
    manager, _, _, _ = offsets_fixture()
    results: list[object] = []
    manager.list_offsets({TP0: 1000, TP1: 1000}, results.append, results.append)
    request = only(manager.poll(0).unsent_requests)
    request.on_response(
        ListOffsetsResponse(
            topics=(
                ListOffsetsTopicResponse(
                    name="t",
                    partitions=(
                        ListOffsetsPartitionResponse(
                            partition_index=0, error_code=0, timestamp=1001, offset=4, leader_epoch=0
                        ),
                        ListOffsetsPartitionResponse(
                            partition_index=1, error_code=0, timestamp=-1, offset=-1, leader_epoch=-1
                        ),
                    ),
                ),
            )
        ),
        5,
    )
    assert results == [{TP0: OffsetAndTimestamp(4, 1001, 0), TP1: None}]


def test_list_offsets_for_an_unknown_topic_fails_naming_it() -> None:
    manager, metadata, _, _ = offsets_fixture()
    errors: list[KafkaError] = []
    manager.list_offsets({TopicPartition("nope", 0): -1}, lambda r: None, errors.append)
    assert manager.poll(0).unsent_requests == ()
    only(metadata.poll(1).unsent_requests).on_response(metadata_response("nope", error_code=3), 2)
    manager.poll(3)
    assert len(errors) == 1
    assert isinstance(errors[0], UnknownTopicOrPartitionError)
    assert "nope" in str(errors[0])


def test_list_offsets_for_a_missing_partition_fails_naming_it() -> None:
    manager, _, _, _ = offsets_fixture()
    errors: list[KafkaError] = []
    manager.list_offsets({TopicPartition("t", 9): -1}, lambda r: None, errors.append)
    manager.poll(0)
    assert isinstance(errors[0], UnknownTopicOrPartitionError)
    assert "partition 9" in str(errors[0])


def test_an_assigned_topic_a_broker_does_not_know_yet_is_reported_only_once_it_stays_unknown() -> None:
    """A broker that has not caught up with a topic just created answers UNKNOWN_TOPIC_OR_PARTITION: the reset waits
    and retries; the caller hears of the topic only when it stays unknown for the grace period, and then once."""
    manager, metadata, subs, errors = offsets_fixture()
    subs.assign([TopicPartition("new", 0)])
    assert manager.poll(0).unsent_requests == ()
    only(metadata.poll(1).unsent_requests).on_response(metadata_response("new", error_code=3), 2)
    result = manager.poll(3)
    assert result.unsent_requests == () and errors == []
    assert result.time_until_next_poll_ms <= UNKNOWN_TOPIC_GRACE_MS
    manager.poll(3 + UNKNOWN_TOPIC_GRACE_MS - 1)
    assert errors == []
    manager.poll(3 + UNKNOWN_TOPIC_GRACE_MS)
    assert len(errors) == 1 and isinstance(errors[0].error, UnknownTopicOrPartitionError)
    assert "new" in str(errors[0].error)
    manager.poll(10 + 2 * UNKNOWN_TOPIC_GRACE_MS)
    assert len(errors) == 1


def test_a_topic_that_appears_within_the_grace_is_reset_without_an_error() -> None:
    manager, metadata, subs, errors = offsets_fixture()
    tp = TopicPartition("new", 0)
    subs.assign([tp])
    manager.poll(0)
    only(metadata.poll(1).unsent_requests).on_response(metadata_response("new", error_code=3), 2)
    manager.poll(3)
    only(metadata.poll(500).unsent_requests).on_response(metadata_response("new"), 501)
    request = only(manager.poll(502).unsent_requests)
    request.on_response(
        ListOffsetsResponse(
            topics=(
                ListOffsetsTopicResponse(
                    name="new",
                    partitions=(ListOffsetsPartitionResponse(partition_index=0, error_code=0, timestamp=-1, offset=3),),
                ),
            )
        ),
        503,
    )
    assert subs.position(tp) == 3
    manager.poll(3 + UNKNOWN_TOPIC_GRACE_MS)
    assert errors == []


# --- by_duration (KIP-1106) --------------------------------------------------------------------------------------
WALL_MS = 1_800_000_000_000
"""The Unix milliseconds at the manager's ``now_ms`` 0 (its ``unix_offset_ms``)."""


def _by_duration(strategy: str) -> tuple[OffsetsManager, SubscriptionState]:
    metadata = MetadataManager(["h:1"], 60_000, no_jitter())
    only(metadata.poll(0).unsent_requests).on_response(metadata_response(), 0)
    subs = SubscriptionState(strategy)
    manager = OffsetsManager(subs, metadata, "read_uncommitted", no_jitter(), [].append, unix_offset_ms=WALL_MS)
    return manager, subs


def _timestamps(request: object) -> dict[int, int]:
    assert isinstance(request, ListOffsetsRequest)
    return {p.partition_index: p.timestamp for t in request.topics for p in t.partitions}


def test_a_by_duration_reset_asks_for_the_first_record_since_now_less_the_duration() -> None:
    manager, subs = _by_duration("by_duration:PT1H30M")
    subs.assign([TP0, TP1])
    request = only(manager.poll(10).unsent_requests)
    since = WALL_MS + 10 - 90 * 60_000
    assert _timestamps(request.request) == {0: since, 1: since}
    request.on_response(list_offsets_answer({TP0: 40, TP1: 3}), 12)
    assert (subs.position(TP0), subs.position(TP1)) == (40, 3)


def test_a_by_duration_reset_no_record_answers_goes_to_the_log_end_at_once() -> None:
    """Kafka answers offset -1 when every record is older than the timestamp: the partition starts at the log end
    (a second lookup, LATEST), with no backoff, and never at the first offset."""
    manager, subs = _by_duration("by_duration:P1D")
    subs.assign([TP0, TP1])
    first = only(manager.poll(10).unsent_requests)
    first.on_response(list_offsets_answer({TP0: -1, TP1: 8}), 11)
    assert subs.position(TP0) is None and subs.position(TP1) == 8
    again = only(manager.poll(11).unsent_requests)
    assert _timestamps(again.request) == {0: -1}  # LATEST
    again.on_response(list_offsets_answer({TP0: 120}), 12)
    assert subs.position(TP0) == 120


def test_a_later_by_duration_reset_of_the_partition_looks_the_time_up_again() -> None:
    manager, subs = _by_duration("by_duration:PT10M")
    subs.assign([TP0])
    only(manager.poll(10).unsent_requests).on_response(list_offsets_answer({TP0: -1}), 11)
    only(manager.poll(11).unsent_requests).on_response(list_offsets_answer({TP0: 50}), 12)
    subs.request_reset([TP0], "by_duration:PT10M")  # as an out-of-range fetch does
    assert _timestamps(only(manager.poll(13).unsent_requests).request) == {0: WALL_MS + 13 - 600_000}


def test_each_strategy_asks_for_its_timestamp() -> None:
    assert reset_timestamp("earliest", WALL_MS) == -2
    assert reset_timestamp("latest", WALL_MS) == -1
    assert reset_timestamp("by_duration:PT1M", WALL_MS) == WALL_MS - 60_000
    assert reset_timestamp("by_duration:PT1M", 1_000) == 0  # never before the epoch
    assert reset_timestamp("none", WALL_MS) is None
    assert reset_timestamp("committed", WALL_MS) is None
