"""tests/support/network_faults.py's checks, on hand-made histories: each must fail on the history it exists to catch
(a lie of ``commit()``, an offset moving back, a redelivery a commit covered, a record out of order, records handed
out after a fencing), and pass on a history that is fine. And ``__consumer_offsets`` records decoded as Kafka writes
them."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from tests.support.cluster_load import GroupMember, Reader, Seen
from tests.support.network_faults import (
    check_commits_landed,
    check_fenced_stops,
    check_never_back,
    check_order,
    check_redelivery_covered,
    decode_offset_commit,
    led_by,
    not_led_by,
)


def string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def offset_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + string(group) + string(topic) + struct.pack(">i", partition)


def offset_value(offset: int, version: int = 3) -> bytes:
    # version, offset, leader epoch, metadata, commit timestamp (OffsetCommitValue v3)
    return struct.pack(">hqi", version, offset, 5) + string("") + struct.pack(">q", 1_700_000_000_000)


def test_offset_commit_records_are_decoded_and_the_topics_other_records_skipped() -> None:
    assert decode_offset_commit(offset_key("g", "t", 4), offset_value(1234)) == ("g", "t", 4, 1234)
    assert decode_offset_commit(offset_key("g", "t", 0, version=0), offset_value(7, version=1)) == ("g", "t", 0, 7)
    group_metadata_key = struct.pack(">h", 2) + string("g")
    assert decode_offset_commit(group_metadata_key, b"\x00\x03anything") is None
    assert decode_offset_commit(offset_key("g", "t", 4), None) is None  # a tombstone
    assert decode_offset_commit(None, offset_value(1)) is None


def test_a_commit_reported_successful_must_be_in_kafka() -> None:
    landed = {("g", 0): [10, 20], ("g", 1): [5]}
    check_commits_landed("m", "g", [(1.0, {0: 20, 1: 5})], landed)
    with pytest.raises(AssertionError, match="reported success for 1 offset"):
        check_commits_landed("m", "g", [(1.0, {0: 20}), (2.0, {1: 9})], landed)


def test_committed_offsets_moving_back_are_caught_per_group() -> None:
    check_never_back("g", {("g", 0): [1, 5, 5, 9], ("h", 0): [9, 1]})  # another group's history is not this one's
    with pytest.raises(AssertionError, match=r"\(0, 9, 4\)"):
        check_never_back("g", {("g", 0): [1, 9, 4]})


def test_a_redelivery_is_fine_unless_a_successful_commit_covered_it() -> None:
    reads = [(1.0, 0, 0), (1.1, 0, 1), (3.0, 0, 1)]  # offset 1 read again at 3.0
    assert check_redelivery_covered("g", reads, [(2.0, {0: 1})]) == 1  # the commit said "next is 1": not covered
    with pytest.raises(AssertionError, match="0/1 again after 2 was committed"):
        check_redelivery_covered("g", reads, [(2.0, {0: 2})])
    assert check_redelivery_covered("g", reads, [(4.0, {0: 2})]) == 1  # committed only after the second read


def reader(offsets: list[tuple[float, int, int]]) -> Reader:
    r = Reader("r")
    r.seen = [Seen(at, p, o, o) for at, p, o in offsets]
    return r


def test_order_holds_within_each_stretch_of_ownership() -> None:
    check_order(reader([(1.0, 0, 0), (1.1, 1, 0), (1.2, 0, 1), (1.3, 1, 1)]))
    with pytest.raises(AssertionError, match="offset 3 after 1"):
        check_order(reader([(1.0, 0, 0), (1.1, 0, 1), (1.2, 0, 3)]))  # one skipped
    with pytest.raises(AssertionError, match="offset 0 after 1"):
        check_order(reader([(1.0, 0, 0), (1.1, 0, 1), (1.2, 0, 0)]))  # back, while still owned
    lost = [(1.15, "lost", frozenset({0}))]
    check_order(reader([(1.0, 0, 0), (1.1, 0, 1), (1.2, 0, 0)]), lost)  # back after losing it: from the commit


def member(events: list[tuple[float, str, frozenset[int]]], errors: list[tuple[float, str]], reads: list[float]) -> Any:
    m = GroupMember.__new__(GroupMember)  # its histories only: no consumer is started
    Reader.__init__(m, "m")
    m.events, m.commit_errors = events, errors
    m.seen = [Seen(at, 0, i, i) for i, at in enumerate(reads)]
    return m


def test_records_handed_out_after_a_commit_rejected_as_fenced_are_caught() -> None:
    fenced = [(2.0, "CommitFailedError: the group rebalanced or fenced this member: [UNKNOWN_MEMBER_ID (25)]")]
    check_fenced_stops(member([(2.5, "lost", frozenset({0}))], fenced, [1.0, 3.0]))  # the next poll lost it first
    with pytest.raises(AssertionError, match="1 record"):
        check_fenced_stops(member([(3.5, "lost", frozenset({0}))], fenced, [1.0, 3.0]))
    in_progress = [(2.0, "CommitFailedError: ...: [REBALANCE_IN_PROGRESS (27)]")]
    check_fenced_stops(member([], in_progress, [1.0, 3.0]))  # not a fencing: the member keeps its partitions


def test_each_node_leads_two_partitions() -> None:
    assert [led_by(n) for n in (1, 2, 3)] == [[0, 3], [1, 4], [2, 5]]
    assert not_led_by(2) == [0, 2, 3, 5]
