"""What the threads tell each other without an event (``_state/snapshot.py``): an immutable snapshot replaced whole,
and the caller's last poll."""

from __future__ import annotations

import attrs
import pytest

from asyncconsumer._state.snapshot import BackgroundSnapshot, CallerActivity, NodeOutage, Published, unreachable_nodes
from asyncconsumer.metrics import UnreachableNode
from asyncconsumer.records import TopicPartition


def test_the_first_snapshot_says_nothing_is_known_yet() -> None:
    snapshot = Published().current
    assert snapshot == BackgroundSnapshot()
    assert (snapshot.generation_id, snapshot.member_id, snapshot.coordinator_id) == (-1, "", None)
    assert (snapshot.read_replicas, snapshot.fetched_from) == ({}, {})
    assert snapshot.rejoin_on_poll is False


def test_a_snapshot_cannot_be_changed_in_place_not_even_its_mappings() -> None:
    snapshot = BackgroundSnapshot(rebalances=2)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        snapshot.rebalances = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.read_replicas[TopicPartition("t", 0)] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        BackgroundSnapshot(2)  # type: ignore[misc]  # keyword arguments only: fields cannot be swapped by position


def test_a_reader_keeps_the_snapshot_it_took_while_the_writer_replaces_it() -> None:
    published = Published()
    taken = published.current
    published.current = BackgroundSnapshot(rebalances=1, member_id="m-1")
    assert taken.rebalances == 0 and published.current.member_id == "m-1"
    with pytest.raises(AttributeError):
        published.other = 1  # type: ignore[attr-defined]  # slots: one reference, nothing else


def test_the_callers_activity_starts_unknown() -> None:
    activity = CallerActivity()
    assert activity.last_poll_ms is None
    activity.last_poll_ms = 5
    assert activity.last_poll_ms == 5


def test_an_outage_is_shown_dated_by_the_wall_clock_and_aged_by_the_consumers_clock() -> None:
    outage = NodeOutage(host="h", port=9, since_ms=1_000, failed_at_ms=4_000, failures=3, last_error="timed out")
    # the consumer's clock reads 6_500 when the wall clock says 1_700_000_010_000: it failed 5.5 s before
    shown = outage.seen_at(6_500, 1_700_000_010_000)
    assert shown == UnreachableNode("h", 9, 1_700_000_004_500, 5_500, 3, "timed out")
    assert outage.seen_at(500, 10).unreachable_for_ms == 0  # never negative, whatever the clocks say
    other = NodeOutage(host="g", port=8, since_ms=6_000, failed_at_ms=6_000, failures=1, last_error="refused")
    assert list(unreachable_nodes({3: outage, -1: other}, 6_500, 10_000)) == [-1, 3]
    assert unreachable_nodes({}, 6_500, 10_000) == {}
