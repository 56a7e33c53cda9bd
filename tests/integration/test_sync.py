"""The blocking ``Consumer``: same behaviour as the async one, from plain code with no event loop."""

from __future__ import annotations

import threading

import pytest

from asyncconsumer import ClientClosedError, Consumer, TopicPartition
from tests.conftest import Broker, TopicFactory
from tests.support.consume import consume_blocking
from tests.support.produce import ProduceHelper, Record

pytestmark = pytest.mark.broker


def test_sync_consumer_reads_everything_and_seeks(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(3)
    produced = produce.values(name, 600, 3, key=lambda i: b"%d" % i)
    with Consumer(broker.bootstrap_servers, auto_offset_reset="earliest", value_deserializer=bytes.decode) as consumer:
        partitions = [TopicPartition(name, p) for p in range(3)]
        consumer.assign(partitions)
        assert consumer.assignment() == set(partitions)
        got = consume_blocking(consumer, 600)
        assert sorted((r.partition, r.offset) for r in got) == sorted(
            (p, r.offset) for p, recs in produced.items() for r in recs
        )
        assert all(isinstance(r.value, str) for r in got)
        assert consumer.end_offsets(partitions)[partitions[0]] >= 1
        assert consumer.beginning_offsets(partitions) == dict.fromkeys(partitions, 0)
        assert [consumer.position(tp) for tp in partitions] == [200, 200, 200]
        consumer.seek(partitions[1], 150)
        again = consume_blocking(consumer, 50)
        assert [(r.partition, r.offset) for r in again] == [(1, o) for o in range(150, 200)]
        consumer.pause(partitions[0])
        assert consumer.paused() == {partitions[0]}
        consumer.resume(partitions[0])
        assert consumer.paused() == set()
        assert [p.partition for p in consumer.partitions_for(name)] == [0, 1, 2]
    with pytest.raises(ClientClosedError):
        consumer.poll()


def test_iterating_a_sync_consumer_yields_records_in_order(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produce(name, [Record(b"r%d" % i, partition=0) for i in range(30)])
    got = []
    with Consumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(name, 0)])
        for record in consumer:
            got.append(record.value)
            if len(got) == 30:
                break
    assert got == [b"r%d" % i for i in range(30)]


def test_sync_consumers_in_several_threads_each_read_their_partition(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    produce.values(name, 400, 2)
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def run(partition: int) -> None:
        try:
            with Consumer(broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
                consumer.assign([TopicPartition(name, partition)])
                results[partition] = [r.offset for r in consume_blocking(consumer, 200)]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(p,)) for p in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert results == {0: list(range(200)), 1: list(range(200))}


def test_calls_before_start_start_the_consumer(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(1)
    produce.values(name, 10, 1)
    consumer = Consumer(broker.bootstrap_servers, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(name, 0)])  # no start(): as with Java's and confluent-kafka's consumers
    try:
        got = 0
        for _ in range(50):
            got += consumer.poll(timeout_ms=200).count()
            if got >= 10:
                break
        assert got == 10
    finally:
        consumer.close()
