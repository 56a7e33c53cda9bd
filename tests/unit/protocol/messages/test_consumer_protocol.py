"""The generated consumer protocol structs (``messages/consumer_protocol.py``), without the version prefix their
framing adds (``test_consumer_protocol.py`` one level up): what each version carries and drops, and the one
``TopicPartition`` class Subscription and Assignment share."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
)
from tests.support.codec import decode, encode
from tests.support.protocol import blob, h, int32, nullable_text, text, tuples

FULL = ConsumerProtocolSubscription(
    topics=("t",),
    user_data=b"u",
    owned_partitions=(TopicPartition(topic="t", partitions=(0,)),),
    generation_id=7,
    rack_id="r",
)


def test_each_version_adds_one_field_and_drops_the_newer_ones() -> None:
    v0 = h("00 00 00 01  00 01 74  00 00 00 01 75")  # Topics ["t"], UserData "u"
    assert encode(FULL, 0) == v0
    v1 = v0 + h("00 00 00 01  00 01 74  00 00 00 01 00 00 00 00")  # OwnedPartitions [("t", [0])]
    assert encode(FULL, 1) == v1
    v2 = v1 + h("00 00 00 07")  # GenerationId 7
    assert encode(FULL, 2) == v2
    assert encode(FULL, 3) == v2 + h("00 01 72")  # RackId "r"
    assert decode(ConsumerProtocolSubscription, v0, 0) == ConsumerProtocolSubscription(topics=("t",), user_data=b"u")


def test_subscription_and_assignment_share_one_topic_partition_class() -> None:
    """Kafka declares TopicPartition in both schemas, the same fields (the subscription's from v1, where it is used):
    one class, so an owned partition and an assigned one are the same kind of value."""
    assignment = ConsumerProtocolAssignment(assigned_partitions=FULL.owned_partitions)
    assert encode(assignment, 0) == h("00 00 00 01  00 01 74  00 00 00 01 00 00 00 00  ff ff ff ff")
    assert decode(ConsumerProtocolAssignment, encode(assignment, 0), 0) == assignment


def test_null_user_data_and_empty_topics() -> None:
    assert encode(ConsumerProtocolSubscription(), 0) == h("00 00 00 00  ff ff ff ff")
    with pytest.raises(Exception, match="null where a non-nullable array"):
        decode(ConsumerProtocolSubscription, h("ff ff ff ff  ff ff ff ff"), 0)


@pytest.mark.parametrize("version", range(4))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    partitions = tuples(st.builds(TopicPartition, topic=text, partitions=tuples(int32)))
    assignment = data.draw(
        st.builds(ConsumerProtocolAssignment, assigned_partitions=partitions, user_data=st.none() | blob)
    )
    assert decode(ConsumerProtocolAssignment, encode(assignment, version), version) == assignment
    subscription = data.draw(
        st.builds(
            ConsumerProtocolSubscription,
            topics=tuples(text),
            user_data=st.none() | blob,
            owned_partitions=partitions if version >= 1 else st.just(()),
            generation_id=int32 if version >= 2 else st.just(-1),
            rack_id=nullable_text if version >= 3 else st.none(),
        )
    )
    assert decode(ConsumerProtocolSubscription, encode(subscription, version), version) == subscription
