"""The demo's parts that need no broker: the sample producer's records (partition, key, value) and its sealing of
each partition's last record in a batch of its own, and the demo's one error line when the broker cannot start or
the producer is not installed."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import pytest

from asyncconsumer.tools import _demo
from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker


class _Producer:
    """Stands in for aiokafka's producer: each send's future is acknowledged only when the loop next runs."""

    made: list[_Producer] = []

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.sent: list[tuple[str, bytes, bytes, int, int]] = []  # the last: how many sends were acknowledged then
        self.futures: list[asyncio.Future[None]] = []
        self.stopped = False
        _Producer.made.append(self)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        self.stopped = True

    async def send(self, topic: str, *, value: bytes, key: bytes, partition: int) -> asyncio.Future[None]:
        acknowledged = sum(f.done() for f in self.futures)
        self.sent.append((topic, key, value, partition, acknowledged))
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, None)
        self.futures.append(future)
        return future


@pytest.fixture
def producer(monkeypatch: pytest.MonkeyPatch) -> type[_Producer]:
    _Producer.made.clear()
    monkeypatch.setattr("aiokafka.AIOKafkaProducer", _Producer)
    return _Producer


def test_the_sample_producer_sends_record_i_to_partition_i_modulo_partitions(producer: type[_Producer]) -> None:
    asyncio.run(_demo.produce("h:1", "t", 7, 0, 3, readable=True))
    [made] = producer.made
    assert made.stopped
    assert [(topic, key, value, partition) for topic, key, value, partition, _ in made.sent] == [
        ("t", str(i).encode(), f"record {i}".encode(), i % 3) for i in range(7)
    ]


def test_each_partitions_last_record_goes_after_everything_before_it_is_acknowledged(
    producer: type[_Producer],
) -> None:
    asyncio.run(_demo.produce("h:1", "t", 10, 16, 4))
    [made] = producer.made
    acknowledged = [sent[4] for sent in made.sent]
    assert acknowledged[:6] == [0] * 6  # records 0..5 go without waiting
    assert all(n >= 6 for n in acknowledged[6:])  # records 6..9, the last of partitions 2, 3, 0, 1: after 0..5
    assert {len(sent[2]) for sent in made.sent} == {16}


def test_the_demo_says_when_the_broker_cannot_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_broker(**_: object) -> EmbeddedBroker:
        raise BrokerStartError("no tansu binary")

    monkeypatch.setattr(EmbeddedBroker, "start", no_broker)
    args = argparse.Namespace(records=10, size=100, partitions=4)
    assert asyncio.run(_demo.run_demo(args)) == 1
    captured = capsys.readouterr()
    assert captured.out == "asyncconsumer demo\n"
    assert captured.err == "error: the embedded broker could not start: no tansu binary\n"


def test_without_aiokafka_the_demo_names_the_extra_that_brings_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """aiokafka is the sample producer's only, in the ``[demo]`` extra: without it the demo says so, before any
    broker starts."""
    monkeypatch.setitem(sys.modules, "aiokafka", None)  # what `import aiokafka` meets where it is not installed

    def no_start(**_: object) -> EmbeddedBroker:
        raise AssertionError("no broker should start")

    monkeypatch.setattr(EmbeddedBroker, "start", no_start)
    assert asyncio.run(_demo.run_demo(argparse.Namespace(records=10, size=100, partitions=4))) == 1
    assert capsys.readouterr().err == 'error: the sample producer needs aiokafka: pip install "asyncconsumer[demo]"\n'
