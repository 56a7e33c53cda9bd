"""The embedded Tansu broker, the session fixtures and the produce helpers, checked with aiokafka's consumer."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.client import AIOKafkaClient

from asyncconsumer.tools.embedded_broker import BrokerCommandError, BrokerStartError, EmbeddedBroker, free_port
from tests.conftest import Broker, TopicFactory
from tests.support.produce import ProducedRecord, ProduceHelper, Record, value_for

pytestmark = pytest.mark.broker


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


async def consume_all(
    bootstrap: str, topic: str, expected: dict[int, int], timeout_s: float = 15.0
) -> dict[int, list[ProducedRecord]]:
    """Read ``expected[partition]`` records from the start of each partition with a manually assigned consumer."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest", check_crcs=True
    )
    await consumer.start()
    got: dict[int, list[ProducedRecord]] = {p: [] for p in expected}
    try:
        consumer.assign([TopicPartition(topic, p) for p in expected])

        async def drain() -> None:
            while any(len(got[p]) < n for p, n in expected.items()):
                batches = await consumer.getmany(timeout_ms=200)
                for tp, records in batches.items():
                    got[tp.partition].extend(
                        ProducedRecord(
                            topic=r.topic,
                            partition=r.partition,
                            offset=r.offset,
                            key=r.key,
                            value=r.value,
                            headers=tuple(r.headers),
                            timestamp_ms=r.timestamp,
                        )
                        for r in records
                    )

        await asyncio.wait_for(drain(), timeout_s)
    finally:
        await consumer.stop()
    return got


def test_session_broker_round_trips_records(broker: Broker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(partitions=3)
    produced = produce.values(
        name,
        30,
        3,
        value_size=40,
        key=lambda i: f"k{i}".encode(),
        headers=lambda i: [("index", str(i).encode()), ("empty", None)],
    )

    assert sorted(produced) == [0, 1, 2]
    assert [len(records) for records in produced.values()] == [10, 10, 10]
    for partition, records in produced.items():
        assert [r.offset for r in records] == list(range(10))
        assert [r.value for r in records] == [value_for(i, 40) for i in range(partition, 30, 3)]

    consumed = asyncio.run(consume_all(broker.bootstrap_servers, name, {0: 10, 1: 10, 2: 10}))
    # What the helper reports is exactly what the broker stores: offsets, keys, values, headers, timestamps.
    assert consumed == produced


def test_topic_factory_makes_unique_topics_with_the_partitions_asked(broker: Broker, topic: TopicFactory) -> None:
    first, second = topic(partitions=2), topic(partitions=5)
    assert first != second

    async def partitions_of() -> tuple[set[int] | None, set[int] | None]:
        client = AIOKafkaClient(bootstrap_servers=broker.bootstrap_servers)
        await client.bootstrap()
        try:
            cluster = await client.fetch_all_metadata()
            return cluster.partitions_for_topic(first), cluster.partitions_for_topic(second)
        finally:
            await client.close()

    assert asyncio.run(partitions_of()) == ({0, 1}, {0, 1, 2, 3, 4})


def test_produce_batches_controls_batch_boundaries_and_end_offset(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(partitions=1)
    batches = produce.batches(name, [[f"a{i}".encode() for i in range(10)], [Record(value=b"last", key=b"k")]])

    assert [[r.offset for r in batch] for batch in batches] == [list(range(10)), [10]]
    assert batches[1][0].key == b"k"

    async def end_offset() -> tuple[int, int | None]:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest")
        await consumer.start()
        try:
            tp = TopicPartition(name, 0)
            consumer.assign([tp])
            records = await consumer.getmany(tp, timeout_ms=5000)
            assert [r.offset for r in records.get(tp, [])][:1] == [0]
            return (await consumer.end_offsets([tp]))[tp], consumer.highwater(tp)
        finally:
            await consumer.stop()

    # With the last batch a single record, ListOffsets LATEST is the log end even on Tansu (see shared notes).
    assert asyncio.run(end_offset()) == (11, 11)


@pytest.mark.anyio
async def test_produce_helpers_work_inside_a_running_loop(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(partitions=2)
    synchronous = produce(name, [b"x", b"y"], partition=1)  # runs on a helper thread: a loop is running here
    asynchronous = await produce.produce_async(name, [Record(value=b"z", partition=0)])

    assert [(r.partition, r.offset, r.value) for r in synchronous] == [(1, 0, b"x"), (1, 1, b"y")]
    assert [(r.partition, r.offset, r.value) for r in asynchronous] == [(0, 0, b"z")]
    consumed = await consume_all(broker.bootstrap_servers, name, {0: 1, 1: 2})
    assert [r.value for r in consumed[1]] == [b"x", b"y"]


def test_start_and_stop_a_broker_of_its_own(broker: Broker) -> None:
    with EmbeddedBroker.start() as own:
        assert own.port != broker.port
        assert own.advertised_port == own.port
        assert own.bootstrap_servers == f"127.0.0.1:{own.port}"
        assert os.path.basename(own.binary).startswith("tansu")
        assert own.running and _pid_alive(own.pid) and _accepts(own.port)
        own.create_topic("mine", partitions=2)
        with pytest.raises(BrokerCommandError, match="already exists"):
            own.create_topic("mine", partitions=2)
        pid, port, log_path = own.pid, own.port, own.log_path
        assert log_path.exists()

    assert not own.running
    assert not _pid_alive(pid)
    assert not _accepts(port)
    assert not log_path.exists()
    own.stop()  # idempotent
    with pytest.raises(BrokerCommandError, match="not running"):
        own.create_topic("late")


def test_advertised_port_is_what_clients_are_told(broker: Broker) -> None:
    advertised = free_port()
    with EmbeddedBroker.start(advertised_port=advertised) as own:
        assert own.advertised_port == advertised != own.port
        assert own.bootstrap_servers == f"127.0.0.1:{advertised}"

        async def broker_addresses() -> set[tuple[str, int]]:
            # Bootstrap through the listener port: metadata then names the advertised port.
            client = AIOKafkaClient(bootstrap_servers=f"127.0.0.1:{own.port}")
            await client.bootstrap()
            try:
                return {(b.host, b.port) for b in client.cluster.brokers()}
            finally:
                await client.close()

        assert asyncio.run(broker_addresses()) == {("127.0.0.1", advertised)}


def test_a_broker_that_exits_at_once_reports_its_log() -> None:
    with pytest.raises(BrokerStartError, match="unexpected argument") as failure:
        EmbeddedBroker.start(extra_args=["--no-such-flag"], startup_timeout_s=5.0)
    assert "exited with code" in str(failure.value)


def test_a_taken_port_fails_with_address_in_use() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(BrokerStartError, match="Address in use"):
            EmbeddedBroker.start(port=port, startup_timeout_s=5.0)


def test_broker_unavailable_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import _broker_unavailable

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no broker"):
        _broker_unavailable("no broker")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="no broker"):
        _broker_unavailable("no broker")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        _broker_unavailable("no broker")
