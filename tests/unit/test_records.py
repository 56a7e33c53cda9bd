"""The values users handle (``records.py``): partitions that print as Kafka names them, records, the offsets and
metadata answers, and ``ConsumerRecords``, a mapping per partition that also iterates every record in order."""

from __future__ import annotations

import attrs
import pytest

from asyncconsumer.records import (
    AcknowledgeType,
    ConsumerRecord,
    ConsumerRecords,
    GroupMembershipOperation,
    GroupMetadata,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionInfo,
    ShareRecord,
    ShareRecords,
    TimestampType,
    TopicPartition,
)

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def record(tp: TopicPartition, offset: int) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, offset, 1_000, TimestampType.CREATE_TIME, None, b"v", (), 0, -1, 1)


def test_a_topic_partition_prints_as_kafka_names_it_and_is_a_plain_pair() -> None:
    tp = TopicPartition("events", 3)
    assert str(tp) == "events-3"
    assert tp == ("events", 3) and hash(tp) == hash(("events", 3))
    topic, partition = tp
    assert (topic, partition) == ("events", 3)
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 1)])[0] == ("a", 1)


def test_a_record_knows_its_partition_and_keeps_its_headers_as_a_tuple() -> None:
    one = ConsumerRecord("t", 1, 5, 10, TimestampType.LOG_APPEND_TIME, b"k", b"v", (("h", None),), 2, 1, 1)
    assert one.topic_partition == T1
    assert one.headers == (("h", None),)
    assert (TimestampType.NO_TIMESTAMP, TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME) == (-1, 0, 1)


def test_consumer_records_are_a_mapping_per_partition_and_iterate_records_partition_by_partition() -> None:
    batch = ConsumerRecords({T1: [record(T1, 7), record(T1, 8)], T0: [record(T0, 3)]})
    assert len(batch) == 2 and batch.partitions() == {T0, T1}
    assert [r.offset for r in batch[T1]] == [7, 8]
    assert list(batch) == [T1, T0]  # the order the fetches came in
    assert [(r.partition, r.offset) for r in batch.records()] == [(1, 7), (1, 8), (0, 3)]
    assert batch.count() == 3
    assert batch and not batch.is_empty()
    assert dict(batch.items()) == {T1: batch[T1], T0: batch[T0]}
    assert repr(batch) == "ConsumerRecords({'t-1': 2, 't-0': 1})"
    with pytest.raises(KeyError):
        batch[TopicPartition("t", 9)]


def test_no_records_is_empty_and_false() -> None:
    nothing = ConsumerRecords({})
    assert not nothing and nothing.is_empty()
    assert (nothing.count(), list(nothing.records()), len(nothing)) == (0, [], 0)


def test_the_answers_are_frozen_values_with_their_defaults() -> None:
    assert OffsetAndMetadata(5) == OffsetAndMetadata(5, "", None)
    assert GroupMetadata("g", -1, "") == GroupMetadata("g", -1, "", None)
    assert OffsetAndTimestamp(3, 100).leader_epoch is None
    info = PartitionInfo("t", 0, 1, (1, 2), (1,))
    assert (info.offline_replicas, info.leader_epoch) == ((), None)
    for value in (OffsetAndMetadata(5), GroupMetadata("g", 1, "m"), OffsetAndTimestamp(3, 100), info):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            value.offset = 1  # type: ignore[union-attr, misc]
    assert len({OffsetAndMetadata(5, "a"), OffsetAndMetadata(5, "a")}) == 1  # hashable, by value


def share_record(tp: TopicPartition, offset: int, delivery_count: int = 1) -> ShareRecord:
    return ShareRecord(
        tp.topic, tp.partition, offset, 1_000, TimestampType.CREATE_TIME, None, b"v", (), 0, -1, 1, delivery_count
    )


def test_a_share_record_has_a_consumer_records_fields_and_its_delivery_count() -> None:
    one = share_record(T1, 4, delivery_count=3)
    assert one.topic_partition == T1
    assert one.delivery_count == 3
    assert ShareRecord._fields == (*ConsumerRecord._fields, "delivery_count")
    assert ShareRecord(*record(T0, 2), 1) == share_record(T0, 2)


def test_share_records_are_a_mapping_per_partition_that_iterates_every_record() -> None:
    batch = ShareRecords({T1: [share_record(T1, 7), share_record(T1, 8, 2)], T0: [share_record(T0, 3)]})
    assert batch.partitions() == {T0, T1}
    assert [r.offset for r in batch.records()] == [7, 8, 3]
    assert [r.delivery_count for r in batch[T1]] == [1, 2]
    assert batch.count() == 3 and len(batch) == 2 and not batch.is_empty()
    assert repr(batch) == "ShareRecords({'t-1': 2, 't-0': 1})"
    nothing = ShareRecords({})
    assert not nothing and nothing.is_empty() and nothing.count() == 0 and list(nothing.records()) == []


def test_acknowledge_types_are_kafkas_wire_values() -> None:
    assert [(t.name, int(t)) for t in AcknowledgeType] == [("ACCEPT", 1), ("RELEASE", 2), ("REJECT", 3), ("RENEW", 4)]
    assert AcknowledgeType(2) is AcknowledgeType.RELEASE


def test_a_group_membership_operation_is_taken_by_name_in_any_case_and_anything_else_is_refused() -> None:
    assert GroupMembershipOperation.parse("remain_in_group") is GroupMembershipOperation.REMAIN_IN_GROUP
    assert GroupMembershipOperation.parse("LEAVE_GROUP") is GroupMembershipOperation.LEAVE_GROUP
    assert GroupMembershipOperation.parse(GroupMembershipOperation.DEFAULT) is GroupMembershipOperation.DEFAULT
    with pytest.raises(ValueError, match=r"group_membership must be .*'remain_in_group', got 'stay'"):
        GroupMembershipOperation.parse("stay")
    with pytest.raises(ValueError, match="got 1"):
        GroupMembershipOperation.parse(1)  # type: ignore[arg-type]
