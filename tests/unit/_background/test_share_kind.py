"""One share consumer's parts, built and wired (``_background/share_kind.py``) with nothing running: the share
settings handed to the managers, the managers in loop order, and the snapshot each iteration publishes."""

from __future__ import annotations

from asyncconsumer._background.builder import build_share
from asyncconsumer._clock import ManualClock
from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.errors import KafkaError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.records import TopicPartition


def test_everything_is_built_and_nothing_runs() -> None:
    config = ShareConsumerConfig.from_settings(
        "h:1", group_id="g", client_rack="r1", max_poll_records=42, share_acquire_mode="record_limit"
    )
    parts = build_share(config, ManualClock())
    assert not parts.thread.alive
    assert not parts.app_events and not parts.background_events and len(parts.buffer) == 0
    owned = parts.owned
    assert owned.membership.group_id == "g" and owned.coordinator.group_id == "g"
    assert owned.membership.state.value == "unsubscribed"
    settings = owned.consume._settings
    assert (settings.group_id, settings.max_records, settings.acquire_mode) == ("g", 42, 1)
    assert owned.telemetry is not None  # KIP-714 pushes are on by default, as a consumer's
    assert parts.thread._managers == [
        owned.coordinator, owned.membership, owned.metadata, owned.consume, owned.telemetry
    ]  # fmt: skip


def test_telemetry_reads_the_share_consumers_metrics_and_names_its_member() -> None:
    parts = build_share(ShareConsumerConfig.from_settings("h:1", group_id="g", client_id="c"), ManualClock())
    telemetry = parts.owned.telemetry
    assert telemetry is not None
    assert telemetry._read_samples() is None  # nothing to read before the caller's side sets its metrics()
    parts.owned.membership.member_id = "m-1"
    parts.thread._publish(0)
    assert telemetry._resource() == {"client_id": "c", "group_id": "g", "group_member_id": "m-1"}
    off = build_share(ShareConsumerConfig.from_settings("h:1", group_id="g", enable_metrics_push=False), ManualClock())
    assert off.owned.telemetry is None and off.thread._managers[-1] is off.owned.consume


def test_each_iteration_publishes_the_members_state_then_delivers_what_it_staged() -> None:
    parts = build_share(ShareConsumerConfig.from_settings("h:1", group_id="g"), ManualClock())
    before = parts.published.current
    assert before.member_id == "" and before.member_state == "unsubscribed"
    owned = parts.owned
    owned.membership.subscribe(["t"])
    owned.membership.assignment = frozenset({TopicPartition("t", 0)})
    staged = ErrorEvent(KafkaError("x"))
    parts.background_events.stage(staged)
    assert parts.background_events.drain() == []  # staged: the caller does not see it yet
    parts.thread._publish(0)
    assert parts.background_events.drain() == [staged]
    snapshot = parts.published.current
    assert snapshot.member_id == owned.membership.member_id and snapshot.member_state == "joining"
    assert snapshot.assignment == {TopicPartition("t", 0)} and snapshot.coordinator_id is None
    assert (snapshot.share_fetches, snapshot.acquisition_lock_timeout_ms) == (0, None)
