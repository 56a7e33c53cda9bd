"""The share consumers' faces (``share.py``) without a broker: construction, argument checks, the state rules that
need no answer, and closing one never used."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from asyncconsumer import (
    AcknowledgeType,
    AsyncShareConsumer,
    ConfigError,
    IllegalStateError,
    ShareConsumer,
    ShareRecord,
    WakeupError,
)

NOWHERE = "127.0.0.1:1"


def record(offset: int = 0) -> ShareRecord:
    return ShareRecord("t", 0, offset, 0, 0, None, b"v", (), None, -1, 1, 1)


def test_both_faces_take_java_keys_and_refuse_a_consumer_only_setting() -> None:
    consumer = ShareConsumer({"bootstrap.servers": NOWHERE, "group.id": "g", "share.acknowledgement.mode": "explicit"})
    assert consumer.config.share_acknowledgement_mode == "explicit"
    assert consumer.config.group_id == "g"
    with pytest.raises(ConfigError, match="enable_auto_commit: does not apply to a share consumer"):
        AsyncShareConsumer(NOWHERE, group_id="g", enable_auto_commit=False)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="group_id"):
        ShareConsumer(NOWHERE)


def test_poll_before_subscribe_and_a_bad_timeout_are_refused_before_anything_starts() -> None:
    consumer = ShareConsumer(NOWHERE, group_id="g")
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.poll(0)
    with pytest.raises(ValueError, match="timeout_ms"):
        consumer.poll(-1)
    with pytest.raises(TypeError, match="list of topic names"):
        consumer.subscribe("topic")  # type: ignore[arg-type]
    assert not consumer._core.started
    consumer.close()


def test_acknowledge_needs_explicit_mode_and_a_record_the_last_poll_returned() -> None:
    implicit = ShareConsumer(NOWHERE, group_id="g")
    with pytest.raises(IllegalStateError, match=r"share\.acknowledgement\.mode=explicit"):
        implicit.acknowledge(record())
    explicit = ShareConsumer(NOWHERE, group_id="g", share_acknowledgement_mode="explicit")
    with pytest.raises(IllegalStateError, match="t-0 offset 3 is not waiting"):
        explicit.acknowledge(record(3), AcknowledgeType.REJECT)
    with pytest.raises(TypeError, match="AcknowledgeType"):
        explicit._core.in_flight = {record().topic_partition: {0}}
        explicit.acknowledge(record(), 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("face", [ShareConsumer, AsyncShareConsumer])
def test_acknowledge_takes_the_type_by_keyword_and_defaults_to_accept(face: type[Any]) -> None:
    consumer = face(NOWHERE, group_id="g", share_acknowledgement_mode="explicit")
    consumer._core.in_flight = {record().topic_partition: {0, 1}}
    consumer.acknowledge(record(0), type=AcknowledgeType.RELEASE)
    consumer.acknowledge(record(1))
    assert consumer._core.acks == {record().topic_partition: {0: 2, 1: 1}}
    assert consumer._core.in_flight == {}
    with pytest.raises(TypeError, match="got tuple"):
        consumer.acknowledge(("t", 0, 1))


def test_commit_with_nothing_owed_answers_at_once_without_starting() -> None:
    consumer = ShareConsumer(NOWHERE, group_id="g")
    assert consumer.commit_sync() == {}
    assert not consumer._core.started
    consumer.commit_async()
    assert consumer.metrics().records_in_flight == 0
    assert consumer.acquisition_lock_timeout_ms() is None


def test_wakeup_interrupts_a_blocking_poll_from_another_thread() -> None:
    consumer = ShareConsumer(NOWHERE, group_id="g", request_timeout_ms=1_000)
    consumer.subscribe(["t"])
    threading.Timer(0.2, consumer.wakeup).start()
    try:
        with pytest.raises(WakeupError):
            consumer.poll(30_000)
    finally:
        consumer.close(timeout_ms=1_000)


@pytest.mark.anyio
async def test_an_async_consumer_closed_unused_ends_its_iteration() -> None:
    consumer = AsyncShareConsumer(NOWHERE, group_id="g")
    assert consumer.subscription() == set()
    await consumer.close()
    with pytest.raises(StopAsyncIteration):
        await consumer.__anext__()
