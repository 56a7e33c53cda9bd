"""``asyncconsumer share-consume``, ``share-groups describe`` and ``share-groups configure`` run as subprocesses: on
Kafka, records printed with their delivery counts, a release that brings them back at delivery 2, a member described
while it runs, the start offsets and lag once it accepted, and group configs set, refused below the broker's bound
and deleted; on Tansu, which has no share groups, one error line naming the API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import Broker, TopicFactory
from tests.support.cli import run_cli
from tests.support.groups import new_group_id
from tests.support.kafka_broker import SHARE_GROUP_MINIMUMS, KafkaCluster
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


def configure(broker: Broker, group: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("share-groups", "configure", group, "--bootstrap-server", broker.bootstrap_servers, *args)


@KAFKA_ONLY
def test_share_groups_configure_sets_a_new_groups_configs_then_deletes_them(broker: Broker) -> None:
    kafka = kafka_of(broker)
    group = new_group_id()  # no such group yet: its configs can be set before its first member joins
    defaults = kafka.group_config(group)
    assert defaults["share.auto.offset.reset"] == "latest"
    result = configure(
        broker,
        group,
        "--set",
        "share.auto.offset.reset=earliest",
        "--set",
        "share.record.lock.duration.ms=45000",
        "--set",
        "share.delivery.count.limit=3",
        "--set",
        "errors.deadletterqueue.topic.name=dlq",
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        f"share group {group}: share.auto.offset.reset=earliest",
        f"share group {group}: share.record.lock.duration.ms=45000",
        f"share group {group}: share.delivery.count.limit=3",
        f"share group {group}: errors.deadletterqueue.topic.name=dlq",
    ]
    configured = kafka.group_config(group)
    assert {k: configured[k] for k in ("share.auto.offset.reset", "share.record.lock.duration.ms")} == {
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": "45000",
    }
    assert (configured["share.delivery.count.limit"], configured["errors.deadletterqueue.topic.name"]) == ("3", "dlq")

    deleted = configure(
        broker, group, "--delete", "share.record.lock.duration.ms", "--delete", "errors.deadletterqueue.topic.name"
    )
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines() == [
        f"share group {group}: share.record.lock.duration.ms deleted",
        f"share group {group}: errors.deadletterqueue.topic.name deleted",
    ]
    after = kafka.group_config(group)
    for key in ("share.record.lock.duration.ms", "errors.deadletterqueue.topic.name"):
        assert after[key] == defaults[key], key
    assert (after["share.auto.offset.reset"], after["share.delivery.count.limit"]) == ("earliest", "3")


@KAFKA_ONLY
def test_share_groups_configure_below_the_brokers_bound_is_one_error_line_naming_it(broker: Broker) -> None:
    kafka = kafka_of(broker)
    group = new_group_id()
    bound = SHARE_GROUP_MINIMUMS["share.record.lock.duration.ms"]
    result = configure(
        broker,
        group,
        "--set",
        "share.auto.offset.reset=earliest",
        "--set",
        f"share.record.lock.duration.ms={bound - 1}",
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: InvalidConfigError: [INVALID_CONFIG (40)] configuring group '{group}': Invalid value {bound - 1} "
        f"for configuration share.record.lock.duration.ms: Value must be at least {bound}"
    ]
    assert kafka.group_config(group)["share.auto.offset.reset"] == "latest"  # one request: nothing was set
    unknown = configure(broker, group, "--set", "share.no.such.config=1")
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines() == [
        f"error: InvalidConfigError: [INVALID_CONFIG (40)] configuring group '{group}': "
        "Unknown group config name: share.no.such.config"
    ]
    usage = configure(broker, group, "--set", "share.auto.offset.reset")
    assert (usage.returncode, usage.stderr) == (2, "error: --set takes KEY=VALUE, got 'share.auto.offset.reset'\n")


@pytest.mark.tansu_only("Kafka keeps group configs")
def test_share_groups_configure_on_a_broker_without_share_groups_is_one_error_line(broker: Broker) -> None:
    # Tansu 0.6 answers IncrementalAlterConfigs on a GROUP resource with no error and keeps nothing.
    result = configure(broker, "g", "--set", "share.auto.offset.reset=earliest")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: UnsupportedVersionError: the brokers do not support SHARE_GROUP_HEARTBEAT (API 76): "
        f"the broker at {broker.bootstrap_servers} has no share groups (KIP-932)"
    ]
