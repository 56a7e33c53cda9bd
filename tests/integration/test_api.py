"""The API as Kafka users expect it, against the real broker: no explicit start, Java settings, ``wakeup`` with
nothing lost, ``enforce_rebalance``, ``current_lag``, and timeouts that say what timed out once the broker is gone."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from asyncconsumer import (
    AsyncConsumer,
    Consumer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    KafkaTimeoutError,
    TopicPartition,
    WakeupError,
)
from asyncconsumer.tools.embedded_broker import EmbeddedBroker
from tests.conftest import TopicFactory
from tests.support.consume import by_partition
from tests.support.groups import new_group_id
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for

SHORT_SESSION = {"session_timeout_ms": 6_000, "heartbeat_interval_ms": 500}
"""A short first join on Tansu, which holds a new group's first join for half the session timeout."""


def test_a_consumer_with_java_settings_needs_no_start(topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(2)
    produce.values(name, 200, 2)
    group = new_group_id()
    consumer = Consumer(
        {
            "bootstrap.servers": produce.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([name])  # no start(), no context manager
    try:
        records: list[ConsumerRecord] = []
        wait_for(lambda: records.extend(consumer.poll(500).records()) or len(records) >= 200, 60)
        assert by_partition(records) == {0: list(range(100)), 1: list(range(100))}
        consumer.commit()
        committed = consumer.committed([TopicPartition(name, 0), TopicPartition(name, 1)])
        assert {tp.partition: c.offset for tp, c in committed.items() if c is not None} == {0: 100, 1: 100}
    finally:
        consumer.close()


def test_an_async_consumer_made_before_the_loop_consumes_without_start(
    topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.values(name, 100, 2)
    consumer = AsyncConsumer(produce.bootstrap, auto_offset_reset="earliest")  # no loop runs yet

    async def consume() -> list[ConsumerRecord]:
        records: list[ConsumerRecord] = []
        try:
            await consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
            for _ in range(100):
                records.extend((await consumer.poll(500)).records())
                if len(records) >= 100:
                    break
        finally:
            await consumer.close()
        return records

    assert by_partition(asyncio.run(consume())) == {0: list(range(50)), 1: list(range(50))}


def test_wakeups_between_polls_lose_and_repeat_nothing(topic: TopicFactory, produce: ProduceHelper) -> None:
    """Every fifth poll is preceded by a ``wakeup()`` from another thread: that poll raises, and the records before
    and after it are every record once, in order."""
    name = topic(2)
    produce.values(name, 2_000, 2)
    consumer = Consumer(produce.bootstrap, auto_offset_reset="earliest", max_poll_records=25)
    consumer.assign([TopicPartition(name, 0), TopicPartition(name, 1)])
    records: list[ConsumerRecord] = []
    woken = raised = 0
    try:
        for i in range(10_000):
            if i % 5 == 4:
                waker = threading.Thread(target=consumer.wakeup)
                waker.start()
                waker.join()
                woken += 1
            try:
                records.extend(consumer.poll(1_000).records())
            except WakeupError:
                raised += 1
            if len(records) >= 2_000:
                break
    finally:
        consumer.close()
    assert raised == woken > 0  # each wakeup made exactly the next poll raise
    assert by_partition(records) == {0: list(range(1_000)), 1: list(range(1_000))}


class Recording(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, frozenset[TopicPartition]]] = []

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("revoked", frozenset(partitions)))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("assigned", frozenset(partitions)))


def test_enforce_rebalance_rejoins_and_loses_nothing(topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(2)
    produce.values(name, 1_000, 2)
    listener = Recording()
    consumer = Consumer(produce.bootstrap, group_id=new_group_id(), auto_offset_reset="earliest", **SHORT_SESSION)
    consumer.subscribe([name], listener=listener)
    records: list[ConsumerRecord] = []
    try:
        wait_for(lambda: records.extend(consumer.poll(200, max_records=100).records()) or len(records) >= 300, 60)
        before = consumer.metrics().rebalances
        assigned_before = sum(1 for kind, _ in listener.calls if kind == "assigned")
        consumer.enforce_rebalance("a test asked")
        wait_for(
            lambda: (
                records.extend(consumer.poll(200, max_records=100).records())
                or sum(1 for kind, _ in listener.calls if kind == "assigned") > assigned_before
            ),
            60,
            message=lambda: f"no new assignment after enforce_rebalance: {listener.calls}",
        )
        wait_for(lambda: records.extend(consumer.poll(200).records()) or len(records) >= 1_000, 60)
        assert consumer.metrics().rebalances > before
        assert ("revoked", frozenset({TopicPartition(name, 0), TopicPartition(name, 1)})) in listener.calls
    finally:
        consumer.close()
    assert by_partition(records) == {0: list(range(500)), 1: list(range(500))}


def test_current_lag_is_what_remains_after_the_position(topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(1)
    produce.values(name, 300, 1)
    tp = TopicPartition(name, 0)
    consumer = Consumer(produce.bootstrap, auto_offset_reset="earliest")
    consumer.assign([tp])
    try:
        taken = 0
        while taken < 120:
            taken += consumer.poll(1_000, max_records=120 - taken).count()
        assert consumer.position(tp) == 120
        assert consumer.current_lag(tp) == 180  # the high watermark of the last fetch, minus the position
    finally:
        consumer.close()


# --- the broker gone: every timeout says what timed out and why --------------------------------------------------


CALLS: dict[str, tuple[Callable[[Any], Any], str]] = {
    # t-0 was sought to its end with no broker to ask, so a commit of the positions names only t-1
    "commit": (lambda c: c.commit(timeout_ms=1_500), "offset commit for 1 partition of group 'gone' timed out"),
    "committed": (
        lambda c: c.committed([TopicPartition("t", 0)], timeout_ms=1_500),
        "offset fetch for 1 partition of group 'gone' timed out",
    ),
    "position": (lambda c: c.position(TopicPartition("t", 0), timeout_ms=1_500), "looking up the position of t-0"),
    "offsets_for_times": (
        lambda c: c.offsets_for_times({TopicPartition("t", 0): 0}, timeout_ms=1_500),
        "looking up offsets of t-0 timed out",
    ),
}


def _check_timeout(error: BaseException, expected: str, port: int, call: str) -> None:
    message = f"{call}: {error}"
    assert isinstance(error, KafkaTimeoutError), f"{call}: {error!r}"
    assert str(error).startswith(expected), message
    assert f"127.0.0.1:{port}" in message and "last error: " in message, message
    assert "background thread did not answer" not in message and "Event" not in message, message


def test_blocking_calls_with_the_broker_gone_raise_the_backgrounds_own_timeout() -> None:
    """Each call in turn, on one consumer whose broker went away after it joined and committed."""
    broker = EmbeddedBroker.start()
    try:
        broker.create_topic("t", 2)
        ProduceHelper(broker.bootstrap_servers).values("t", 20, 2)
        consumer = Consumer(broker.bootstrap_servers, group_id="gone", auto_offset_reset="earliest", **SHORT_SESSION)
        consumer.subscribe(["t"])
        records: list[ConsumerRecord] = []
        wait_for(lambda: records.extend(consumer.poll(200).records()) or len(records) >= 20, 60)
        consumer.commit()
    finally:
        broker.stop()
    consumer.seek_to_end(TopicPartition("t", 0))  # the position must be looked up again, from no broker
    try:
        for call, (do, expected) in CALLS.items():
            with pytest.raises(KafkaTimeoutError) as raised:
                do(consumer)
            _check_timeout(raised.value, expected, broker.port, call)
    finally:
        consumer.close(timeout_ms=1_000)


def test_async_calls_with_the_broker_gone_raise_the_backgrounds_own_timeout() -> None:
    broker = EmbeddedBroker.start()

    async def scenario() -> None:
        consumer = AsyncConsumer(
            broker.bootstrap_servers, group_id="gone", auto_offset_reset="earliest", **SHORT_SESSION
        )
        try:
            await consumer.subscribe(["t"])
            seen = 0
            for _ in range(300):
                seen += (await consumer.poll(200)).count()
                if seen >= 20:
                    break
            assert seen == 20
            await consumer.commit()
            broker.stop()
            await consumer.seek_to_end(TopicPartition("t", 0))
            for call, (do, expected) in CALLS.items():
                with pytest.raises(KafkaTimeoutError) as raised:
                    await do(consumer)
                _check_timeout(raised.value, expected, broker.port, call)
        finally:
            await consumer.close(timeout_ms=1_000)

    try:
        broker.create_topic("t", 2)
        ProduceHelper(broker.bootstrap_servers).values("t", 20, 2)
        asyncio.run(scenario())
    finally:
        broker.stop()
