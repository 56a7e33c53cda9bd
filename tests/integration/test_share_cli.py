"""``asyncconsumer share-consume`` and ``share-groups describe`` run as subprocesses: on Kafka, records printed with
their delivery counts, a release that brings them back at delivery 2, a member described while it runs, and the
start offsets and lag once it accepted; on Tansu, which has no share groups, one error line naming the API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import Broker, TopicFactory
from tests.support.cli import run_cli
from tests.support.kafka_broker import KafkaCluster
from tests.support.produce import ProduceHelper, Record
from tests.support.share import new_share_group
from tests.support.waiting import wait_for

pytestmark = pytest.mark.broker

KAFKA_ONLY = pytest.mark.kafka_only("Tansu has no share groups (APIs 76-79)")


def kafka_of(broker: Broker) -> KafkaCluster:
    assert isinstance(broker, KafkaCluster)
    return broker


def share_consume(broker: Broker, group: str, topic: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "share-consume", "--bootstrap-server", broker.bootstrap_servers, "--group", group, "--topic", topic, *args
    )


def describe(broker: Broker, group: str) -> dict[str, Any]:
    result = run_cli(
        "share-groups", "describe", group, "--bootstrap-server", broker.bootstrap_servers, "--format", "json"
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


@KAFKA_ONLY
def test_share_consume_prints_delivery_counts_and_a_release_brings_the_records_back(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(1)
    produce(name, [Record(b"v%d" % i, key=b"k%d" % i, partition=0) for i in range(5)])
    group = new_share_group(kafka_of(broker))

    released = share_consume(broker, group, name, "--ack", "release", "--max-messages", "5", "--format", "json")
    assert released.returncode == 0, released.stderr
    first = [json.loads(line) for line in released.stdout.splitlines()]
    assert [(r["offset"], r["key"], r["value"], r["delivery_count"]) for r in first] == [
        (i, f"k{i}", f"v{i}", 1) for i in range(5)
    ]

    accepted = share_consume(broker, group, name, "--max-messages", "5")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.splitlines() == [f"{name}-0@{i} (delivery 2)\tk{i}\tv{i}" for i in range(5)]
    assert "Traceback" not in accepted.stderr
    # accepted: nothing left to deliver, no lag
    offsets = wait_for(
        lambda: (d := describe(broker, group))["start_offsets"] and d["total_lag"] == 0 and d,
        timeout=30,
        interval=0.2,
        message="the group's lag is 0",
    )
    [row] = offsets["start_offsets"]
    assert (row["topic"], row["partition"], row["lag"], row["error"]) == (name, 0, 0, None)
    assert 0 <= row["start_offset"] <= 5


@KAFKA_ONLY
def test_share_groups_describe_shows_the_running_member_then_start_offsets_and_lag(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper
) -> None:
    name = topic(2)
    for partition in (0, 1):
        produce(name, [Record(b"p%d-%d" % (partition, i), partition=partition) for i in range(3)])
    group = new_share_group(kafka_of(broker))
    command = ["share-consume", "--bootstrap-server", broker.bootstrap_servers, "--group", group, "--topic", name]
    proc = subprocess.Popen(
        [sys.executable, "-m", "asyncconsumer.tools.cli", *command, "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        printed = [json.loads(proc.stdout.readline()) for _ in range(6)]  # blocks until printed (pytest timeout)
        assert sorted((r["partition"], r["offset"], r["delivery_count"]) for r in printed) == [
            (p, o, 1) for p in (0, 1) for o in range(3)
        ]
        running = wait_for(
            lambda: (d := describe(broker, group))["state"] == "Stable" and d["members"] and d,
            timeout=30,
            interval=0.2,
            message="the share group is stable with a member",
        )
        [member] = running["members"]
        assert (member["client_id"], member["subscribed_topics"]) == ("asyncconsumer-cli", [name])
        assert member["partitions"] == [{"topic": name, "partition": p} for p in (0, 1)]
        assert running["assignor"] == "simple" and running["group_epoch"] >= 1
        text = run_cli("share-groups", "describe", group, "--bootstrap-server", broker.bootstrap_servers)
        assert text.returncode == 0, text.stderr
        assert f"share group {group}: Stable" in text.stdout and member["member_id"] in text.stdout
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert stdout == "" and "Traceback" not in stderr
    after = wait_for(
        lambda: (d := describe(broker, group))["members"] == [] and d["total_lag"] == 0 and d,
        timeout=30,
        interval=0.2,
        message="the member left, its acknowledgements committed",
    )
    rows = {r["partition"]: (r["lag"], r["error"]) for r in after["start_offsets"]}
    assert rows == {0: (0, None), 1: (0, None)}
    assert all(0 <= r["start_offset"] <= 3 for r in after["start_offsets"])


@KAFKA_ONLY
def test_share_groups_describe_of_an_unknown_group_prints_one_line(broker: Broker) -> None:
    result = run_cli("share-groups", "describe", "no-such-share-group", "--bootstrap-server", broker.bootstrap_servers)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: share group 'no-such-share-group' does not exist: Group no-such-share-group not found."
    ]


def test_share_consume_of_a_missing_topic_says_so_and_fails(broker: Broker) -> None:
    result = share_consume(broker, "g", "no-such-topic-here")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["error: topic 'no-such-topic-here' does not exist"]
    assert result.stdout == ""


@pytest.mark.tansu_only("the Kafka leg reads from share groups")
def test_a_broker_without_share_groups_is_one_error_line_naming_the_api(broker: Broker, topic: TopicFactory) -> None:
    name = topic(1)
    consumed = share_consume(broker, "g", name)
    described = run_cli("share-groups", "describe", "g", "--bootstrap-server", broker.bootstrap_servers)
    for result, api in ((consumed, "SHARE_GROUP_HEARTBEAT (API 76)"), (described, "SHARE_GROUP_DESCRIBE (API 77)")):
        assert result.returncode == 1
        assert result.stdout == ""
        [line] = result.stderr.splitlines()
        assert line.startswith("error: UnsupportedVersionError: node ") and api in line, line
        assert line.endswith(f"the broker at {broker.bootstrap_servers} has no share groups (KIP-932)"), line
