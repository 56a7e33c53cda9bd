"""The consumer protocol's framing (``protocol/consumer_protocol.py``): an int16 version before the generated
subscription or assignment. aiokafka's independent encoders agree for v0, v3 is pinned with bytes computed by hand,
newer versions read as our newest, every version round-trips, and garbage fails only with ``CorruptResponseError``."""

from __future__ import annotations

import contextlib
import functools
import struct

import pytest
from aiokafka.coordinator import protocol as ak_consumer_protocol
from aiokafka.protocol import group as ak_group
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.errors import CorruptResponseError
from asyncconsumer.protocol.consumer_protocol import (
    ASSIGNMENT_VERSION,
    SUBSCRIPTION_VERSION,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from tests.support.protocol import blob, h, int32, nullable_text, since, text, tuples

topic_partitions = tuples(st.builds(TopicPartition, topic=text, partitions=tuples(int32)))


@functools.cache
def subscription(v: int) -> st.SearchStrategy[ConsumerProtocolSubscription]:
    return st.builds(
        ConsumerProtocolSubscription,
        topics=tuples(text),
        user_data=st.none() | blob,
        owned_partitions=since(v, 1, topic_partitions, ()),
        generation_id=since(v, 2, int32, -1),
        rack_id=since(v, 3, nullable_text, None),
    )


assignment = st.builds(ConsumerProtocolAssignment, assigned_partitions=topic_partitions, user_data=st.none() | blob)


def test_the_newest_versions_are_kafkas() -> None:
    assert (SUBSCRIPTION_VERSION, ASSIGNMENT_VERSION) == (3, 3)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_v0_matches_aiokafka(data: st.DataObject) -> None:
    sub = data.draw(subscription(0))
    theirs = ak_consumer_protocol.ConsumerProtocolMemberMetadata(0, list(sub.topics), sub.user_data).encode()
    assert encode_subscription(sub, 0) == theirs
    assert decode_subscription(theirs) == sub
    # aiokafka's JoinGroup-level ProtocolMetadata is the same v0 layout.
    assert ak_group.ProtocolMetadata(0, list(sub.topics), sub.user_data).encode() == theirs

    asg = data.draw(assignment)
    pairs = [(t.topic, list(t.partitions)) for t in asg.assigned_partitions]
    theirs = ak_consumer_protocol.ConsumerProtocolMemberAssignment(0, pairs, asg.user_data).encode()
    assert encode_assignment(asg, 0) == theirs
    assert decode_assignment(theirs) == asg
    assert ak_group.MemberAssignment(0, pairs, asg.user_data).encode() == theirs


def test_v3_golden() -> None:
    sub = h(
        """
        00 03                       # version 3
        00 00 00 01  00 01 74       # Topics ["t"]
        ff ff ff ff                 # UserData: null
        00 00 00 01                 # OwnedPartitions: 1
          00 01 74                  #   Topic "t"
          00 00 00 01 00 00 00 00   #   Partitions [0]
        00 00 00 07                 # GenerationId 7
        00 01 72                    # RackId "r"
        """
    )
    value = ConsumerProtocolSubscription(
        topics=("t",),
        user_data=None,
        owned_partitions=(TopicPartition(topic="t", partitions=(0,)),),
        generation_id=7,
        rack_id="r",
    )
    assert encode_subscription(value, 3) == encode_subscription(value) == sub
    assert decode_subscription(sub) == value
    asg = h(
        """
        00 03                       # version 3
        00 00 00 01                 # AssignedPartitions: 1
          00 01 74                  #   Topic "t"
          00 00 00 02 00 00 00 00 00 00 00 01  # Partitions [0, 1]
        00 00 00 01 75              # UserData b"u"
        """
    )
    value_a = ConsumerProtocolAssignment(
        assigned_partitions=(TopicPartition(topic="t", partitions=(0, 1)),), user_data=b"u"
    )
    assert encode_assignment(value_a, 3) == encode_assignment(value_a) == asg
    assert decode_assignment(asg) == value_a


def test_a_subscription_from_a_newer_version_reads_known_fields() -> None:
    value = ConsumerProtocolSubscription(
        topics=("t",),
        user_data=b"u",
        owned_partitions=(TopicPartition(topic="t", partitions=(1,)),),
        generation_id=4,
        rack_id="r",
    )
    newer = struct.pack(">h", 7) + encode_subscription(value, 3)[2:] + b"\x00\x01future fields"
    assert decode_subscription(newer) == value
    # Older layouts ignore trailing bytes as well, as Kafka's reader does.
    assert decode_subscription(encode_subscription(value, 0) + b"\xff\xff") == ConsumerProtocolSubscription(
        topics=("t",), user_data=b"u"
    )
    asg = ConsumerProtocolAssignment(assigned_partitions=(TopicPartition(topic="t", partitions=(0,)),))
    assert decode_assignment(struct.pack(">h", 9) + encode_assignment(asg, 3)[2:] + b"more") == asg


def test_edge_cases() -> None:
    assert decode_assignment(b"") == ConsumerProtocolAssignment(assigned_partitions=())
    with pytest.raises(CorruptResponseError):
        decode_subscription(b"")
    with pytest.raises(CorruptResponseError):
        decode_subscription(h("ff ff  00 00 00 00  ff ff ff ff"))  # version -1
    with pytest.raises(CorruptResponseError):
        decode_assignment(h("00 00  00 00 00 01  00 02 ff fe  00 00 00 00  ff ff ff ff"))  # invalid UTF-8
    with pytest.raises(ValueError, match="outside"):
        encode_subscription(ConsumerProtocolSubscription(topics=()), 4)
    with pytest.raises(ValueError, match="outside"):
        encode_assignment(ConsumerProtocolAssignment(assigned_partitions=()), -1)


@pytest.mark.parametrize("version", range(4))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    sub = data.draw(subscription(version))
    encoded = encode_subscription(sub, version)
    assert struct.unpack_from(">h", encoded)[0] == version
    assert decode_subscription(encoded) == sub
    assert decode_subscription(memoryview(encoded)) == sub
    asg = data.draw(assignment)
    assert decode_assignment(encode_assignment(asg, version)) == asg


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fuzzed_bytes_raise_only_corrupt_response_error(data: st.DataObject) -> None:
    version = data.draw(st.integers(0, 3), label="version")
    for encoded, decoder in (
        (encode_subscription(data.draw(subscription(version)), version), decode_subscription),
        (encode_assignment(data.draw(assignment), version), decode_assignment),
    ):
        candidates = [data.draw(st.binary(max_size=48), label="garbage"), encoded[: data.draw(st.integers(0, 40))]]
        rnd = data.draw(st.randoms(use_true_random=False), label="mutations")
        mutated = bytearray(encoded)
        for _ in range(rnd.randint(1, 4)):
            mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
        candidates.append(bytes(mutated))
        for candidate in candidates:
            with contextlib.suppress(CorruptResponseError):
                decoder(candidate)
