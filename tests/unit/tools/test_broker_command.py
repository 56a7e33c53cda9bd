"""``asyncconsumer broker`` without a broker: its one error line when Tansu cannot start, and, for a sample topic,
when the sample producer (aiokafka, the ``[demo]`` extra) is not installed."""

from __future__ import annotations

import argparse
import sys

import pytest

from asyncconsumer.tools._broker_command import run_broker
from asyncconsumer.tools._common import EXIT_ERROR
from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker


def test_the_broker_command_says_when_the_broker_cannot_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_broker(**_: object) -> EmbeddedBroker:
        raise BrokerStartError("no tansu binary")

    monkeypatch.setattr(EmbeddedBroker, "start", no_broker)
    assert run_broker(argparse.Namespace(port=0, topic=None, partitions=1, records=0)) == EXIT_ERROR
    assert capsys.readouterr().err == "error: the embedded broker could not start: no tansu binary\n"


def test_a_sample_topic_without_aiokafka_names_the_extra_before_any_broker_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "aiokafka", None)  # what `import aiokafka` meets where it is not installed

    def no_start(**_: object) -> EmbeddedBroker:
        raise AssertionError("no broker should start")

    monkeypatch.setattr(EmbeddedBroker, "start", no_start)
    assert run_broker(argparse.Namespace(port=0, topic="events", partitions=2, records=10)) == EXIT_ERROR
    assert capsys.readouterr().err == 'error: the sample producer needs aiokafka: pip install "asyncconsumer[demo]"\n'
