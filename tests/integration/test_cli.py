"""The ``asyncconsumer`` command, run as a subprocess against the real broker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from asyncconsumer.embedded_broker import EmbeddedBroker
from tests.conftest import TopicFactory
from tests.produce import ProduceHelper, Record

pytestmark = pytest.mark.broker


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "asyncconsumer.cli", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_demo_starts_a_broker_produces_consumes_and_reports() -> None:
    result = run_cli("demo", "--records", "4000", "--partitions", "2")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "produced    4,000 records" in out
    assert "consumed    4,000 records" in out
    assert "records/s" in out
    assert "demo-0" in out and "committed offset 2,000" in out
    assert "group       'asyncconsumer-demo': joined as" in out
    assert "embedded_broker" not in out  # logs stay out of the report


def test_consume_prints_records_as_json(broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper) -> None:
    name = topic(1)
    produce(name, [Record(b"value-%d" % i, key=b"k%d" % i, partition=0) for i in range(10)])
    result = run_cli(
        "consume",
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic",
        name,
        "--from-beginning",
        "--max-messages",
        "5",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["offset"], r["key"], r["value"]) for r in lines] == [(i, f"k{i}", f"value-{i}") for i in range(5)]


def test_consume_of_a_missing_topic_says_so_and_fails(broker: EmbeddedBroker) -> None:
    result = run_cli("consume", "--bootstrap-server", broker.bootstrap_servers, "--topic", "no-such-topic-here")
    assert result.returncode == 2
    assert "no-such-topic-here" in result.stderr
    assert result.stdout == ""


def test_consume_from_an_unreachable_server_prints_one_error_line() -> None:
    from asyncconsumer.embedded_broker import free_port

    result = run_cli(
        "consume", "--bootstrap-server", f"127.0.0.1:{free_port()}", "--topic", "t", "--timeout-ms", "1500", timeout=30
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "127.0.0.1" in errors[0]


def test_consume_with_a_group_commits_what_it_printed(
    broker: EmbeddedBroker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produce(name, [Record(b"g-%d" % i, partition=0) for i in range(10)])
    group = f"cli-{name}"
    args = [
        "consume",
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--topic",
        name,
        "--from-beginning",
        "--group",
        group,
        "--max-messages",
        "4",
        "--format",
        "json",
        "--property",
        "session.timeout.ms=6000",
        "--property",
        "heartbeat_interval_ms=500",
    ]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert [json.loads(line)["offset"] for line in first.stdout.splitlines()] == [0, 1, 2, 3]
    second = run_cli(*args)  # the same group resumes after what the first run printed
    assert second.returncode == 0, second.stderr
    assert [json.loads(line)["offset"] for line in second.stdout.splitlines()] == [4, 5, 6, 7]
