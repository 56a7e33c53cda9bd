"""The metadata manager driven with literal timestamps and hand-built responses: bootstrap, refresh, retries, unknown
topics."""

from __future__ import annotations

import attrs

from asyncconsumer.errors import ErrorCode, KafkaConnectionError
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.protocol.messages.metadata import MetadataRequest
from asyncconsumer.records import TopicPartition
from tests.support.managers import metadata_response, no_jitter, only

TP0 = TopicPartition("t", 0)


def test_metadata_bootstraps_then_refreshes_after_max_age() -> None:
    manager = MetadataManager(["127.0.0.1:9092", "[::1]:9093"], metadata_max_age_ms=10_000, backoff=no_jitter())
    assert manager.address(-1) == ("127.0.0.1", 9092)
    assert manager.address(-2) == ("::1", 9093)
    assert manager.candidate_nodes() == [-1, -2]
    first = only(manager.poll(0).unsent_requests)
    assert isinstance(first.request, MetadataRequest)
    assert first.node_id is None
    assert manager.poll(1).unsent_requests == ()  # one in flight at a time
    first.on_response(metadata_response(), 5)
    assert manager.cluster.leader_for(TP0) == 1
    assert manager.candidate_nodes() == [1, 2]
    result = manager.poll(6)
    assert result.unsent_requests == ()
    assert result.time_until_next_poll_ms == 9_999
    assert only(manager.poll(10_005).unsent_requests)


def test_metadata_retries_with_backoff_after_a_failure() -> None:
    manager = MetadataManager(["h:1"], metadata_max_age_ms=60_000, backoff=no_jitter(100))
    only(manager.poll(0).unsent_requests).on_response(KafkaConnectionError("down"), 10)
    assert manager.poll(50).unsent_requests == ()
    assert manager.poll(50).time_until_next_poll_ms == 60
    assert only(manager.poll(110).unsent_requests)


def test_metadata_records_unknown_topics_and_answers_waiters() -> None:
    manager = MetadataManager(["h:1"], metadata_max_age_ms=60_000, backoff=no_jitter())
    answers: list[object] = []
    manager.await_topic("missing", answers.append, answers.append)
    request = only(manager.poll(0).unsent_requests)
    assert isinstance(request.request, MetadataRequest)
    assert tuple(t.name for t in request.request.topics or ()) == ("missing",)
    request.on_response(metadata_response("missing", error_code=3), 1)
    assert "missing" in manager.cluster.unknown_topics
    assert len(answers) == 1 and "missing" not in answers[0].topics  # type: ignore[attr-defined]


def test_metadata_asks_again_at_the_backoff_maximum_while_a_wanted_topic_is_unknown() -> None:
    manager = MetadataManager(["h:1"], metadata_max_age_ms=60_000, backoff=no_jitter(100))  # maximum 1,000 ms
    manager.set_topics(["missing"])
    only(manager.poll(0).unsent_requests).on_response(metadata_response("missing", error_code=3), 10)
    assert manager.poll(500).unsent_requests == ()
    assert manager.poll(500).time_until_next_poll_ms == 510
    only(manager.poll(1_010).unsent_requests).on_response(metadata_response("missing"), 1_020)
    assert "missing" not in manager.cluster.unknown_topics
    assert manager.poll(2_100).unsent_requests == ()  # known now: back to metadata_max_age_ms
    assert manager.poll(2_100).time_until_next_poll_ms == 58_920


def test_a_rebootstrap_puts_the_bootstrap_servers_first_until_metadata_answers() -> None:
    manager = MetadataManager(["boot:9092"], 60_000, no_jitter(), rebootstrap_trigger_ms=300_000)
    only(manager.poll(0).unsent_requests).on_response(metadata_response(), 1)
    assert manager.candidate_nodes() == [1, 2]
    manager.rebootstrap("every known broker failed")
    manager.rebootstrap("again, while it is under way: counted once")
    assert manager.rebootstrapping and manager.rebootstraps == 1
    assert manager.candidate_nodes() == [-1, 1, 2]
    only(manager.poll(2).unsent_requests).on_response(metadata_response(), 3)
    assert not manager.rebootstrapping and manager.candidate_nodes() == [1, 2]


def test_the_none_strategy_never_rebootstraps() -> None:
    manager = MetadataManager(["boot:9092"], 1_000, no_jitter(), rebootstrap_trigger_ms=None)
    only(manager.poll(0).unsent_requests).on_response(metadata_response(), 1)
    manager.rebootstrap("every known broker failed")
    assert not manager.rebootstrapping and manager.candidate_nodes() == [1, 2]


def test_wanted_metadata_that_does_not_come_for_the_trigger_time_rebootstraps() -> None:
    manager = MetadataManager(["boot:9092"], 60_000, no_jitter(100), rebootstrap_trigger_ms=5_000)
    only(manager.poll(0).unsent_requests).on_response(metadata_response(), 1)
    manager.request_update()
    now = 10
    while now < 4_900:  # every attempt fails (the brokers hang up)
        for request in manager.poll(now).unsent_requests:
            request.on_response(KafkaConnectionError("down"), now + 1)
        now += 100
        assert not manager.rebootstrapping
    while not manager.rebootstrapping:
        for request in manager.poll(now).unsent_requests:
            request.on_response(KafkaConnectionError("down"), now + 1)
        now += 100
    assert 5_010 <= now <= 5_200 and manager.candidate_nodes()[0] == -1


def test_rebootstrap_required_from_a_broker_rebootstraps() -> None:
    manager = MetadataManager(["boot:9092"], 60_000, no_jitter(), rebootstrap_trigger_ms=300_000)
    only(manager.poll(0).unsent_requests).on_response(metadata_response(), 1)
    manager.request_update()
    stale = attrs.evolve(metadata_response(), error_code=ErrorCode.REBOOTSTRAP_REQUIRED)
    only(manager.poll(2).unsent_requests).on_response(stale, 3)
    assert manager.rebootstrapping and manager.candidate_nodes()[0] == -1
