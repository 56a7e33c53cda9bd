"""OffsetFetch (API key 9), v1-9: aiokafka's independent encoders agree for v1-3, the flexible versions (v6-7 one
group at the top level, v8-9 a Groups array) are pinned with bytes computed by hand from Kafka's JSON definitions,
every version round-trips, framed too, fuzzed or cut answers fail only with ``CorruptResponseError``, and one
request goes out at every version (``for_version``). One view of either answer is ``layouts``' (``test_layouts.py``)."""

from __future__ import annotations

import functools
from typing import Any

import attrs
import pytest
from aiokafka.protocol import commit as ak_commit
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncconsumer.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from tests.support.codec import decode, encode
from tests.support.protocol import (
    check_every_truncation_is_corrupt,
    check_fuzzed_responses,
    check_request_matches_aiokafka,
    check_response_matches_aiokafka,
    check_round_trip,
    framed,
    h,
    int16,
    int32,
    int64,
    nullable_text,
    since,
    text,
    tuples,
    versions,
)

VERSIONS = versions(OffsetFetchRequest)


@functools.cache
def requests(v: int) -> st.SearchStrategy[OffsetFetchRequest]:
    if v < 8:
        topics = tuples(st.builds(OffsetFetchRequestTopic, name=text, partition_indexes=tuples(int32)))
        return st.builds(
            OffsetFetchRequest,
            group_id=text,
            topics=st.none() | topics if v >= 2 else topics,
            require_stable=since(v, 7, st.booleans(), False),
        )
    topics = tuples(st.builds(OffsetFetchRequestTopics, name=text, partition_indexes=tuples(int32)))
    group = st.builds(
        OffsetFetchRequestGroup,
        group_id=text,
        member_id=since(v, 9, nullable_text, None),
        member_epoch=since(v, 9, int32, -1),
        topics=st.none() | topics,
    )
    return st.builds(OffsetFetchRequest, groups=tuples(group, min_size=1), require_stable=st.booleans())


@functools.cache
def responses(v: int) -> st.SearchStrategy[OffsetFetchResponse]:
    if v < 8:
        partition = st.builds(
            OffsetFetchResponsePartition,
            partition_index=int32,
            committed_offset=int64,
            committed_leader_epoch=since(v, 5, int32, -1),
            metadata=nullable_text,
            error_code=int16,
        )
        topic = st.builds(OffsetFetchResponseTopic, name=text, partitions=tuples(partition))
        return st.builds(
            OffsetFetchResponse,
            topics=tuples(topic),
            error_code=since(v, 2, int16, 0),
            throttle_time_ms=since(v, 3, int32, 0),
        )
    partitions = st.builds(
        OffsetFetchResponsePartitions,
        partition_index=int32,
        committed_offset=int64,
        committed_leader_epoch=int32,
        metadata=nullable_text,
        error_code=int16,
    )
    topics = st.builds(OffsetFetchResponseTopics, name=text, partitions=tuples(partitions))
    group = st.builds(OffsetFetchResponseGroup, group_id=text, topics=tuples(topics, 2), error_code=int16)
    return st.builds(OffsetFetchResponse, throttle_time_ms=int32, groups=tuples(group, 2))


def test_the_request_class_declares_the_contract() -> None:
    request = OffsetFetchRequest
    assert (request.API_KEY, request.MIN_VERSION, request.MAX_VERSION, request.FLEXIBLE_FROM) == (9, 1, 9, 6)
    assert request.RESPONSE is OffsetFetchResponse


def ak_request(req: OffsetFetchRequest, v: int) -> Any:
    topics = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
    return getattr(ak_commit, f"OffsetFetchRequest_v{v}")(req.group_id, topics)


def ak_response(resp: OffsetFetchResponse, v: int) -> Any:
    topics = [
        (t.name, [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in t.partitions])
        for t in resp.topics
    ]
    cls = getattr(ak_commit, f"OffsetFetchResponse_v{v}")
    if v >= 3:
        return cls(resp.throttle_time_ms, topics, resp.error_code)
    if v == 2:
        return cls(topics, resp.error_code)
    return cls(topics)


@pytest.mark.parametrize("version", [1, 2, 3])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_request_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    request = data.draw(requests(version))
    check_request_matches_aiokafka(OffsetFetchRequest, version, request, ak_request(request, version))


@pytest.mark.parametrize("version", [1, 2, 3])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_response_bytes_match_aiokafka(version: int, data: st.DataObject) -> None:
    response = data.draw(responses(version))
    check_response_matches_aiokafka(OffsetFetchRequest, version, response, ak_response(response, version))


def test_v6_to_v9_request_golden() -> None:
    v6 = h("02 67  00  00")  # GroupId "g", Topics: null (all), tags
    assert encode(OffsetFetchRequest(group_id="g", topics=None), 6) == v6
    assert decode(OffsetFetchRequest, v6, 6) == OffsetFetchRequest(group_id="g", topics=None)
    v8 = h(
        """
        02                          # Groups: compact array of 1
          02 67                     #   GroupId "g"
          02                        #   Topics: compact array of 1
            02 74                   #     Name "t"
            03 00 00 00 00 00 00 00 01  # PartitionIndexes [0, 1]
            00                      #     tagged fields
          00                        #   tagged fields
        01                          # RequireStable true
        00                          # tagged fields
        """
    )
    topics = (OffsetFetchRequestTopics(name="t", partition_indexes=(0, 1)),)
    value = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="g", topics=topics),), require_stable=True)
    assert encode(value, 8) == v8
    assert decode(OffsetFetchRequest, v8, 8) == value
    v9 = h(
        """
        02                          # Groups: compact array of 1
          02 67                     #   GroupId "g"
          03 6d 31                  #   MemberId "m1" (v9+)
          00 00 00 05               #   MemberEpoch 5 (v9+)
          00                        #   Topics: null (all)
          00                        #   tagged fields
        00                          # RequireStable false
        00                          # tagged fields
        """
    )
    value = OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id="g", topics=None, member_id="m1", member_epoch=5),)
    )
    assert encode(value, 9) == v9
    assert decode(OffsetFetchRequest, v9, 9) == value


OFFSET_FETCH_PARTITION = h(
    """
    00 00 00 00                     # PartitionIndex 0
    00 00 00 00 00 00 00 2a         # CommittedOffset 42
    00 00 00 05                     # CommittedLeaderEpoch 5
    00                              # Metadata: null
    00 00                           # ErrorCode
    00                              # tagged fields
    """
)


def test_v7_and_v8_response_golden() -> None:
    partition = OffsetFetchResponsePartition(
        partition_index=0, committed_offset=42, committed_leader_epoch=5, metadata=None, error_code=0
    )
    v7 = (
        h("00 00 00 00  02  02 74  02")  # throttle, Topics [1], Name "t", Partitions [1]
        + OFFSET_FETCH_PARTITION
        + h("00  00 0e  00")  # topic tags, top-level ErrorCode 14 (COORDINATOR_LOAD_IN_PROGRESS), tags
    )
    value7 = OffsetFetchResponse(topics=(OffsetFetchResponseTopic(name="t", partitions=(partition,)),), error_code=14)
    assert encode(value7, 7) == v7
    assert decode(OffsetFetchResponse, v7, 7) == value7
    v8 = (
        h("00 00 00 00  02  02 67  02  02 74  02")  # throttle, Groups [1], "g", Topics [1], "t", Partitions [1]
        + OFFSET_FETCH_PARTITION
        + h("00  00 0e  00  00")  # topic tags, group ErrorCode 14 (after the topics), group tags, tags
    )
    partitions = OffsetFetchResponsePartitions(
        partition_index=0, committed_offset=42, committed_leader_epoch=5, metadata=None, error_code=0
    )
    topics = (OffsetFetchResponseTopics(name="t", partitions=(partitions,)),)
    value8 = OffsetFetchResponse(groups=(OffsetFetchResponseGroup(group_id="g", topics=topics, error_code=14),))
    assert encode(value8, 8) == v8
    assert decode(OffsetFetchResponse, v8, 8) == value8


def test_v1_cannot_ask_for_all_topics() -> None:
    with pytest.raises(ValueError, match="v2"):
        encode(OffsetFetchRequest(group_id="g", topics=None), 1)


def test_a_v8_request_may_ask_for_several_groups() -> None:
    """Our client asks for one group; a v8 request holds any number (an older version cannot, see below)."""
    two_groups = h("03  02 67 00 00  02 68 00 00  00  00")
    assert decode(OffsetFetchRequest, two_groups, 8) == OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id="g"), OffsetFetchRequestGroup(group_id="h"))
    )


def test_one_group_is_framed_at_every_version() -> None:
    """The generated ``for_version``: one group's fields go out as a one-group batch from v8, and back."""
    old = OffsetFetchRequest(
        group_id="g", topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0, 1)),), require_stable=True
    )
    new = OffsetFetchRequest(
        groups=(
            OffsetFetchRequestGroup(
                group_id="g",
                member_id="m",
                member_epoch=3,
                topics=(OffsetFetchRequestTopics(name="t", partition_indexes=(0, 1)),),
            ),
        ),
        require_stable=True,
    )
    for version in range(7, 9):  # the member fields are v9+ (and ignorable)
        assert framed(old, version) == framed(new, version)
    assert framed(new, 9) != framed(old, 9)
    for version in range(1, 7):  # RequireStable is v7+ and not ignorable: Kafka's builder refuses it too
        loose = attrs.evolve(new, require_stable=False)
        assert framed(attrs.evolve(old, require_stable=False), version) == framed(loose, version)
        with pytest.raises(ValueError, match="require_stable needs v7"):
            framed(new, version)
    every_topic = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="g"),))
    assert framed(every_topic, 6) == h("02 67  00  00")  # GroupId "g", Topics: null (all), tags
    with pytest.raises(ValueError, match="v2"):
        framed(every_topic, 1)  # null topics need v2+
    two = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="g"), OffsetFetchRequestGroup(group_id="h")))
    assert framed(two, 8) == h("03  02 67 00 00  02 68 00 00  00  00")
    with pytest.raises(ValueError, match="OffsetFetchRequest v7 takes one of groups, not 2"):
        framed(two, 7)
    both = attrs.evolve(new, group_id="stale")  # the batch wins, and the old layout's fields are cleared
    assert both.for_version(8) == new


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    check_round_trip(OffsetFetchRequest, version, data.draw(requests(version)), data.draw(responses(version)))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_fuzzed_responses_raise_only_corrupt_response_error(version: int, data: st.DataObject) -> None:
    check_fuzzed_responses(OffsetFetchRequest, version, data, data.draw(responses(version), label="response"))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_of_a_response_is_corrupt(version: int) -> None:
    if version >= 8:
        partitions = OffsetFetchResponsePartitions(
            partition_index=0, committed_offset=42, committed_leader_epoch=5, metadata="m"
        )
        topics = (OffsetFetchResponseTopics(name="t", partitions=(partitions,)),)
        response = OffsetFetchResponse(groups=(OffsetFetchResponseGroup(group_id="g", topics=topics),))
    else:
        partition = OffsetFetchResponsePartition(
            partition_index=0, committed_offset=42, committed_leader_epoch=5, metadata="m"
        )
        response = OffsetFetchResponse(topics=(OffsetFetchResponseTopic(name="t", partitions=(partition,)),))
    check_every_truncation_is_corrupt(OffsetFetchRequest, version, response)
