"""Position validation after a leader change (KIP-320), driven with hand-built metadata, fetch and
OffsetForLeaderEpoch answers: the fetch manager stops fetching a partition whose leader epoch moved, the
validation manager asks the new leader where the fetched epoch ends, and truncation is resolved as promised."""

from __future__ import annotations

import attrs

from asyncconsumer._state.fetch_buffer import FetchBuffer
from asyncconsumer._state.signal import CallerSignal
from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import (
    ErrorCode,
    KafkaConnectionError,
    LogTruncationError,
    OffsetOutOfRangeError,
    UnsupportedVersionError,
)
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import UnsentRequest
from asyncconsumer.managers.fetch import FetchManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.offsets_validation import OffsetValidationManager
from asyncconsumer.protocol.messages.fetch import FetchableTopicResponse, FetchRequest, FetchResponse, PartitionData
from asyncconsumer.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from asyncconsumer.records import TopicPartition
from tests.support.batches import build_batch
from tests.support.managers import metadata_response, no_jitter, only

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


class Rig:
    """A fetch manager and a validation manager over one subscription state and metadata, as the builder wires
    them."""

    def __init__(self, reset: str = "earliest") -> None:
        cfg = ConsumerConfig.from_kwargs("h:1", auto_offset_reset=reset)
        self.metadata = MetadataManager(["h:1"], 60_000, no_jitter())
        self.set_leaders(leader=1, leader_epoch=0)
        self.subs = SubscriptionState(reset)
        self.buffer = FetchBuffer(16 << 20, CallerSignal(), None)
        self.errors: list[ErrorEvent] = []
        self.fetch = FetchManager(cfg, self.subs, self.metadata, self.buffer, no_jitter(), self.errors.append)
        self.validation = OffsetValidationManager(self.subs, self.metadata, reset, no_jitter(), self.errors.append)

    def set_leaders(self, leader: int | tuple[int, ...], leader_epoch: int, now: int = 0) -> None:
        self.metadata.request_update()
        request = only(self.metadata.poll(now).unsent_requests)
        request.on_response(metadata_response(leader=leader, leader_epoch=leader_epoch), now)

    def fetch_once(self, now: int, records: dict[int, bytes], high_watermark: int = 100) -> UnsentRequest:
        request = only(self.fetch.poll(now).unsent_requests)
        request.on_response(fetch_answer(records, high_watermark), now)
        return request

    def consume_all(self) -> None:
        """The caller takes everything buffered (delivered, as every loop iteration ends), advancing its positions."""
        self.buffer.deliver()
        while (fetched := self.buffer.take()) is not None:
            self.subs.advance(fetched.tp, fetched.epoch, fetched.next_fetch_offset)
            self.buffer.release(fetched)


def fetch_answer(parts: dict[int, bytes], high_watermark: int = 100, error_code: int = 0) -> FetchResponse:
    return FetchResponse(
        responses=(
            FetchableTopicResponse(
                topic="t",
                partitions=tuple(
                    PartitionData(
                        partition_index=p,
                        error_code=error_code,
                        high_watermark=high_watermark,
                        last_stable_offset=high_watermark,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=records,
                    )
                    for p, records in parts.items()
                ),
            ),
        )
    )


def epoch_answer(*ends: tuple[int, int, int, int]) -> OffsetForLeaderEpochResponse:
    """(partition, error code, leader epoch, end offset) per partition."""
    return OffsetForLeaderEpochResponse(
        topics=(
            OffsetForLeaderTopicResult(
                topic="t",
                partitions=tuple(
                    EpochEndOffset(error_code=code, partition=p, leader_epoch=epoch, end_offset=end)
                    for p, code, epoch, end in ends
                ),
            ),
        )
    )


def fetched_partitions(request: UnsentRequest) -> dict[int, tuple[int, int]]:
    """partition -> (fetch offset, current leader epoch)."""
    assert isinstance(request.request, FetchRequest)
    return {p.partition: (p.fetch_offset, p.current_leader_epoch) for t in request.request.topics for p in t.partitions}


def fetched_ten_under_epoch_zero(rig: Rig) -> None:
    rig.subs.assign([TP0])
    rig.subs.seek(TP0, 0)
    request = rig.fetch_once(0, {0: build_batch(0, [b"v%d" % i for i in range(10)], leader_epoch=0)})
    assert fetched_partitions(request) == {0: (0, 0)}


def test_a_new_leader_epoch_stops_fetching_until_the_new_leader_confirms_the_position() -> None:
    rig = Rig()
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    began = rig.fetch.poll(11)
    assert began.unsent_requests == ()  # awaiting validation: not fetched from the new leader yet
    assert began.time_until_next_poll_ms == 0  # the validation manager, polled before it, asks without a sleep
    assert rig.fetch.poll(11).time_until_next_poll_ms > 0  # once
    ask = only(rig.validation.poll(12).unsent_requests)
    assert ask.node_id == 2
    assert isinstance(ask.request, OffsetForLeaderEpochRequest)
    partition = ask.request.topics[0].partitions[0]
    assert (partition.partition, partition.leader_epoch, partition.current_leader_epoch) == (0, 0, 1)
    assert rig.validation.poll(13).unsent_requests == ()  # in flight
    ask.on_response(epoch_answer((0, 0, 0, 10)), 14)  # epoch 0 ends at 10 in the new leader's log: valid
    again = only(rig.fetch.poll(15).unsent_requests)
    assert again.node_id == 2
    assert fetched_partitions(again) == {0: (10, 1)}
    assert rig.errors == []
    assert rig.validation.poll(16).unsent_requests == ()


def test_nothing_fetched_yet_needs_no_validation() -> None:
    rig = Rig()
    rig.subs.assign([TP0])
    rig.subs.seek(TP0, 0)
    rig.fetch_once(0, {0: b""})
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    assert fetched_partitions(only(rig.fetch.poll(11).unsent_requests)) == {0: (0, 1)}
    assert rig.validation.poll(12).unsent_requests == ()


def test_truncation_of_records_not_yet_consumed_refetches_them_from_the_position() -> None:
    rig = Rig()
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(epoch_answer((0, 0, 0, 6)), 13)
    assert rig.subs.position(TP0) == 0
    rig.buffer.deliver()
    stale = rig.buffer.take()  # what the old leader sent is no longer the partition's: the caller drops it
    assert stale is not None
    assert not rig.subs.advance(TP0, stale.epoch, stale.next_fetch_offset)
    assert fetched_partitions(only(rig.fetch.poll(14).unsent_requests)) == {0: (0, 1)}
    assert rig.errors == []


def test_truncation_of_consumed_records_with_a_reset_policy_moves_back_to_the_divergence() -> None:
    rig = Rig(reset="earliest")
    fetched_ten_under_epoch_zero(rig)
    rig.consume_all()
    assert rig.subs.position(TP0) == 10
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(epoch_answer((0, 0, 0, 6)), 13)
    assert rig.subs.position(TP0) == 6
    assert fetched_partitions(only(rig.fetch.poll(14).unsent_requests)) == {0: (6, 1)}
    assert rig.errors == []
    assert rig.validation.truncations == 1


def test_truncation_of_consumed_records_without_a_reset_policy_raises_once_until_a_seek() -> None:
    rig = Rig(reset="none")
    fetched_ten_under_epoch_zero(rig)
    rig.consume_all()
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(epoch_answer((0, 0, 0, 6)), 13)
    error = only_error(rig)
    assert isinstance(error, LogTruncationError)
    assert isinstance(error, OffsetOutOfRangeError)  # as Java's LogTruncationException is one
    assert (error.topic, error.partition, error.offset, error.divergent_offset) == ("t", 0, 10, 6)
    assert "t-0" in str(error) and "offset 10" in str(error) and "offset 6" in str(error)
    assert rig.subs.position(TP0) == 10
    for now in (14, 5_000, 60_000):  # reported once; the partition waits for the caller
        assert rig.validation.poll(now).unsent_requests == ()
        assert rig.fetch.poll(now).unsent_requests == ()
    assert len(rig.errors) == 1
    rig.subs.seek(TP0, 6)
    assert fetched_partitions(only(rig.fetch.poll(60_001).unsent_requests)) == {0: (6, 1)}


def only_error(rig: Rig) -> Exception:
    assert len(rig.errors) == 1, rig.errors
    return rig.errors[0].error


def test_a_leader_that_knows_no_earlier_epoch_resets_by_policy() -> None:
    rig = Rig(reset="latest")
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(epoch_answer((0, 0, -1, -1)), 13)
    assert rig.subs.partitions_awaiting_reset() == {TP0: ("latest", rig.subs.epoch(TP0))}
    assert rig.errors == []


def test_a_leader_that_knows_no_earlier_epoch_without_a_policy_is_a_log_truncation_error() -> None:
    rig = Rig(reset="none")
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(epoch_answer((0, 0, -1, -1)), 13)
    error = only_error(rig)
    assert isinstance(error, LogTruncationError)
    assert error.divergent_offset is None


def test_fenced_leader_epoch_refreshes_metadata_and_retries_after_a_backoff() -> None:
    rig = Rig()
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(
        epoch_answer((0, ErrorCode.FENCED_LEADER_EPOCH, -1, -1)), 20
    )
    assert only(rig.metadata.poll(21).unsent_requests)  # a refresh was asked for
    assert rig.validation.poll(50).unsent_requests == ()  # backing off
    assert only(rig.validation.poll(120).unsent_requests)
    assert rig.errors == []


def test_a_lost_connection_retries_the_validation() -> None:
    rig = Rig()
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(KafkaConnectionError("gone"), 20)
    assert rig.validation.poll(21).unsent_requests == ()
    retry = only(rig.validation.poll(200).unsent_requests)
    retry.on_response(epoch_answer((0, 0, 0, 10)), 201)
    assert fetched_partitions(only(rig.fetch.poll(202).unsent_requests)) == {0: (10, 1)}


def test_the_leader_moving_again_before_the_answer_validates_against_the_newest() -> None:
    rig = Rig()
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    first = only(rig.validation.poll(12).unsent_requests)
    rig.set_leaders(leader=1, leader_epoch=2, now=13)
    first.on_response(epoch_answer((0, ErrorCode.FENCED_LEADER_EPOCH, -1, -1)), 14)
    second = only(rig.validation.poll(500).unsent_requests)
    assert second.node_id == 1
    assert isinstance(second.request, OffsetForLeaderEpochRequest)
    assert second.request.topics[0].partitions[0].current_leader_epoch == 2
    second.on_response(epoch_answer((0, 0, 0, 10)), 501)
    assert fetched_partitions(only(rig.fetch.poll(502).unsent_requests)) == {0: (10, 2)}


def test_a_fetch_answered_by_the_old_leader_after_the_change_is_dropped() -> None:
    rig = Rig()
    fetched_ten_under_epoch_zero(rig)
    in_flight = only(rig.fetch.poll(1).unsent_requests)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)  # starts the validation
    in_flight.on_response(fetch_answer({0: build_batch(10, [b"late"], leader_epoch=0)}), 12)
    rig.consume_all()
    assert rig.subs.position(TP0) == 10  # the old leader's late batch was not taken
    only(rig.validation.poll(13).unsent_requests).on_response(epoch_answer((0, 0, 0, 10)), 14)
    assert fetched_partitions(only(rig.fetch.poll(15).unsent_requests)) == {0: (10, 1)}


def test_a_broker_without_offset_for_leader_epoch_is_trusted() -> None:
    rig = Rig()
    fetched_ten_under_epoch_zero(rig)
    rig.set_leaders(leader=2, leader_epoch=1, now=10)
    rig.fetch.poll(11)
    only(rig.validation.poll(12).unsent_requests).on_response(UnsupportedVersionError("no API 23"), 13)
    assert fetched_partitions(only(rig.fetch.poll(14).unsent_requests)) == {0: (10, 1)}
    assert rig.errors == []


def test_only_the_partitions_whose_leader_moved_wait_for_validation() -> None:
    rig = Rig()
    rig.subs.assign([TP0, TP1])
    rig.subs.seek(TP0, 0)
    rig.subs.seek(TP1, 0)
    rig.fetch_once(0, {0: build_batch(0, [b"a"], leader_epoch=0), 1: build_batch(0, [b"b"], leader_epoch=0)})
    # partition 0 moves to node 2 (epoch 1); partition 1 stays with node 1 at epoch 0
    rig.metadata.request_update()
    answer = metadata_response(leader=(2, 1), leader_epoch=0)
    moved = answer.topics[0].partitions[0]
    parts = (type(moved)(0, 0, 2, 1, (2,), (2,)), answer.topics[0].partitions[1])
    answer = attrs.evolve(answer, topics=(attrs.evolve(answer.topics[0], partitions=parts),))
    only(rig.metadata.poll(10).unsent_requests).on_response(answer, 10)
    request = only(rig.fetch.poll(11).unsent_requests)
    assert request.node_id == 1
    assert fetched_partitions(request) == {1: (1, 0)}  # partition 1 goes on meanwhile
    ask = only(rig.validation.poll(12).unsent_requests)
    assert ask.node_id == 2
