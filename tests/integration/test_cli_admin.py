"""``asyncconsumer groups ...`` and ``topics ...`` against the brokers, and side by side with Kafka's own tools in
the same test: ``groups reset-offsets`` plans every option exactly as ``kafka-consumer-groups.sh --reset-offsets``
(``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand`` from kafka-tools 4.4.0) on a classic and a KIP-848
group, ``--execute`` moves a group as Kafka's moves its twin, both refuse a group with a running member and change
nothing, and ``topics describe`` reports what ``kafka-topics.sh --describe`` (``TopicCommand``) reports."""

from __future__ import annotations

import datetime
import json
import subprocess
import time
from pathlib import Path

import pytest

from asyncconsumer import Admin, AsyncConsumer, TopicPartition
from asyncconsumer.sync import Consumer
from tests.conftest import Broker, TopicFactory, unique_topic_name
from tests.support.cli import run_cli
from tests.support.groups import group_consumer, new_group_id
from tests.support.kafka_broker import _java, fetch_tools_jars
from tests.support.produce import ProduceHelper, Record
from tests.support.waiting import wait_for, wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]

KAFKA_ONLY = pytest.mark.kafka_only("side by side with Kafka's own tools, which need a Kafka broker")
HOUR_MS = 3_600_000
MINUTE_MS = 60_000


def kafka_tool(main: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = _java(fetch_tools_jars(), main, *args, heap=("-Xmx256m",))
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def consumer_group_command(*args: str) -> subprocess.CompletedProcess[str]:
    return kafka_tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", *args)


def kafkas_plan(stdout: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> new offset, from the table ``--reset-offsets`` prints (GROUP TOPIC PARTITION OFFSET)."""
    plan: dict[tuple[str, int], int] = {}
    for line in stdout.splitlines():
        cells = line.split()
        if len(cells) == 4 and cells[0] != "GROUP" and cells[2].isdigit():
            plan[(cells[1], int(cells[2]))] = int(cells[3])
    return plan


def ours(bootstrap: str, group: str, *args: str) -> dict[tuple[str, int], int]:
    result = run_cli("groups", "reset-offsets", group, *args, "--bootstrap-server", bootstrap, "--format", "json")
    assert result.returncode == 0, result.stderr
    return {(o["topic"], o["partition"]): o["offset"] for o in json.loads(result.stdout)["offsets"]}


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    with Admin(bootstrap) as admin:
        return {(tp.topic, tp.partition): o.offset for tp, o in admin.list_consumer_group_offsets(group).items()}


def iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


@pytest.fixture
def history(topic: TopicFactory, produce: ProduceHelper) -> tuple[str, int]:
    """A 3-partition topic with 10 records a partition, written 2 h ago and every 10 minutes since; its name and the
    first record's time."""
    name = topic(3)
    base = int(time.time() * 1000) - 2 * HOUR_MS
    for p in range(3):
        produce.batches(
            name, [[Record(b"r%d" % i, timestamp_ms=base + i * 10 * MINUTE_MS)] for i in range(10)], partition=p
        )
    return name, base


async def kip848_group_at(bootstrap: str, name: str, offsets: dict[int, int]) -> str:
    """A KIP-848 consumer group that read ``name`` and committed ``offsets``, then left (Empty, type consumer)."""
    group = new_group_id()
    member = AsyncConsumer(bootstrap, group_id=group, group_protocol="consumer", enable_auto_commit=False)
    try:
        await member.subscribe([name])

        async def joined() -> bool:
            await member.poll(timeout_ms=100)
            return len(member.assignment()) == 3

        await wait_for_async(joined, 30, message=lambda: f"assignment {member.assignment()}")
        await member.commit({TopicPartition(name, p): o for p, o in offsets.items()})
    finally:
        await member.close()
    return group


def classic_group_at(bootstrap: str, name: str, offsets: dict[int, int]) -> str:
    group = new_group_id()
    with Consumer(bootstrap, group_id=group, enable_auto_commit=False) as consumer:
        consumer.commit({TopicPartition(name, p): o for p, o in offsets.items()})
    return group


OPTIONS = [
    pytest.param(lambda base: ["--to-earliest"], id="to-earliest"),
    pytest.param(lambda base: ["--to-latest"], id="to-latest"),
    pytest.param(lambda base: ["--to-current"], id="to-current"),
    pytest.param(lambda base: ["--to-offset", "4"], id="to-offset"),
    pytest.param(lambda base: ["--to-offset", "99"], id="to-offset-past-the-end"),
    pytest.param(lambda base: ["--shift-by", "-3"], id="shift-by-back"),
    pytest.param(lambda base: ["--shift-by", "5"], id="shift-by-past-the-end"),
    pytest.param(lambda base: ["--to-datetime", iso(base + 35 * MINUTE_MS)], id="to-datetime"),
    pytest.param(lambda base: ["--to-datetime", iso(base + 5 * HOUR_MS)], id="to-datetime-after-every-record"),
    pytest.param(lambda base: ["--by-duration", "PT65M"], id="by-duration"),
]


@KAFKA_ONLY
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
@pytest.mark.parametrize("option", OPTIONS)
async def test_reset_offsets_plans_every_option_as_kafkas_tool(
    broker: Broker, history: tuple[str, int], protocol: str, option: object
) -> None:
    name, base = history
    at = {0: 2, 1: 7, 2: 9}
    bootstrap = broker.bootstrap_servers
    group = (
        await kip848_group_at(bootstrap, name, at) if protocol == "consumer" else classic_group_at(bootstrap, name, at)
    )
    args = option(base)  # type: ignore[operator]
    kafka = consumer_group_command(
        "--bootstrap-server", bootstrap, "--group", group, "--reset-offsets", "--topic", name, *args, "--dry-run"
    )
    assert kafka.returncode == 0, kafka.stdout + kafka.stderr
    expected = kafkas_plan(kafka.stdout)
    assert len(expected) == 3, kafka.stdout
    assert ours(bootstrap, group, "--topic", name, *args) == expected
    assert committed(bootstrap, group) == {(name, p): o for p, o in at.items()}  # a dry run changes nothing


@KAFKA_ONLY
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_execute_moves_a_group_as_kafkas_tool_moves_its_twin(
    broker: Broker, history: tuple[str, int], protocol: str
) -> None:
    name, _ = history
    at = {0: 5, 1: 5, 2: 5}
    bootstrap = broker.bootstrap_servers
    make = kip848_group_at if protocol == "consumer" else None
    twins = [
        await make(bootstrap, name, at) if make is not None else classic_group_at(bootstrap, name, at) for _ in range(2)
    ]
    kafka = consumer_group_command(
        "--bootstrap-server", bootstrap, "--group", twins[0], "--reset-offsets", "--topic", f"{name}:0,2",
        "--shift-by", "-2", "--execute",
    )  # fmt: skip
    assert kafka.returncode == 0, kafka.stdout + kafka.stderr
    ours(bootstrap, twins[1], "--topic", f"{name}:0,2", "--shift-by", "-2", "--execute")
    moved = committed(bootstrap, twins[0])
    assert moved == {(name, 0): 3, (name, 1): 5, (name, 2): 3}
    assert committed(bootstrap, twins[1]) == moved


@KAFKA_ONLY
async def test_a_running_member_makes_both_tools_refuse_and_nothing_changes(
    broker: Broker, history: tuple[str, int]
) -> None:
    name, _ = history
    bootstrap = broker.bootstrap_servers
    group = new_group_id()
    member = group_consumer(bootstrap, group)
    try:
        await member.subscribe([name])

        async def joined() -> bool:
            await member.poll(timeout_ms=100)
            return len(member.assignment()) == 3

        await wait_for_async(joined, 30, message=lambda: "no assignment")
        await member.commit({TopicPartition(name, p): 6 for p in range(3)})
        before = committed(bootstrap, group)
        kafka = consumer_group_command(
            "--bootstrap-server", bootstrap, "--group", group, "--reset-offsets", "--topic", name, "--to-earliest",
            "--execute",
        )  # fmt: skip
        assert "inactive" in kafka.stdout + kafka.stderr
        result = run_cli(
            "groups", "reset-offsets", group, "--topic", name, "--to-earliest", "--execute",
            "--bootstrap-server", bootstrap,
        )  # fmt: skip
        assert result.returncode == 1
        assert f"NonEmptyGroupError: [NON_EMPTY_GROUP (68)] assignments can only be reset if group '{group}'" in (
            result.stderr
        )
        assert committed(bootstrap, group) == before == {(name, p): 6 for p in range(3)}
    finally:
        await member.close()


async def test_bad_times_durations_and_scopes_are_named_and_change_nothing(broker: Broker, topic: TopicFactory) -> None:
    name = topic(1)
    bootstrap = broker.bootstrap_servers
    group = classic_group_at(bootstrap, name, {0: 0})
    for args, said in [
        (["--to-datetime", "yesterday"], "--to-datetime 'yesterday': not a date and time"),
        (["--by-duration", "1h"], "--by-duration '1h': '1h' is not an ISO-8601 duration"),
        (["--by-duration=-PT1H"], "is negative"),
    ]:
        result = run_cli(
            "groups", "reset-offsets", group, "--topic", name, *args, "--execute", "--bootstrap-server", bootstrap
        )
        assert result.returncode == 2 and said in result.stderr, (args, result.stderr)
    missing = run_cli("groups", "reset-offsets", group, "--to-earliest", "--bootstrap-server", bootstrap)
    assert missing.returncode == 2 and "needs --topic" in missing.stderr
    assert committed(bootstrap, group) == {(name, 0): 0}


async def test_groups_list_delete_and_delete_offsets(broker: Broker, topic: TopicFactory) -> None:
    name = topic(2)
    bootstrap = broker.bootstrap_servers
    group = classic_group_at(bootstrap, name, {0: 1, 1: 2})
    listed = run_cli("groups", "list", "--bootstrap-server", bootstrap, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    listing = {g["group"]: g for g in json.loads(listed.stdout)}
    assert listing[group]["type"] == "classic"  # its state: Empty on Kafka, "Unknown" on Tansu 0.6
    table = run_cli("groups", "list", "--bootstrap-server", bootstrap)
    assert table.stdout.splitlines()[0].split() == ["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"]
    deleted = run_cli("groups", "delete", group, "--bootstrap-server", bootstrap)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == f"Deletion of requested consumer groups ('{group}') was successful."
    assert committed(bootstrap, group) == {}


@KAFKA_ONLY
async def test_groups_delete_offsets_forgets_the_partitions_named(broker: Broker, topic: TopicFactory) -> None:
    name = topic(2)
    bootstrap = broker.bootstrap_servers
    group = classic_group_at(bootstrap, name, {0: 1, 1: 2})
    result = run_cli("groups", "delete-offsets", group, "--topic", f"{name}:1", "--bootstrap-server", bootstrap)
    assert result.returncode == 0, result.stderr
    assert [line.split() for line in result.stdout.splitlines()] == [
        ["TOPIC", "PARTITION", "STATUS"],
        [name, "1", "Successful"],
    ]
    assert committed(bootstrap, group) == {(name, 0): 1}


@KAFKA_ONLY
def test_topics_describe_reports_what_kafkas_tool_reports(broker: Broker, tmp_path: Path) -> None:
    name = unique_topic_name("cli-topics")
    bootstrap = broker.bootstrap_servers
    created = run_cli(
        "topics", "create", name, "--partitions", "3", "--replication-factor", "1", "--bootstrap-server", bootstrap
    )
    assert created.returncode == 0 and created.stdout.strip() == f"Created topic {name}.", created.stderr
    assert name in run_cli("topics", "list", "--bootstrap-server", bootstrap).stdout.split()
    kafka = kafka_tool(
        "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--describe", "--topic", name
    )
    assert kafka.returncode == 0, kafka.stderr
    ours_ = run_cli("topics", "describe", name, "--bootstrap-server", bootstrap)
    assert ours_.returncode == 0, ours_.stderr

    def partitions(text: str) -> list[dict[str, str]]:
        rows = []
        for line in text.splitlines():
            fields = dict(part.split(": ", 1) for part in line.strip().split("\t") if ": " in part)
            if "Partition" in fields:
                rows.append({k: fields[k] for k in ("Topic", "Partition", "Leader", "Replicas", "Isr")})
        return rows

    def header(text: str) -> dict[str, str]:
        first = text.splitlines()[0]
        fields = dict(part.split(": ", 1) for part in first.strip().split("\t") if ": " in part)
        return {k: fields[k] for k in ("Topic", "TopicId", "PartitionCount", "ReplicationFactor")}

    assert partitions(ours_.stdout) == partitions(kafka.stdout) and len(partitions(kafka.stdout)) == 3
    assert header(ours_.stdout) == header(kafka.stdout)
    deleted = run_cli("topics", "delete", name, "--bootstrap-server", bootstrap)
    assert deleted.returncode == 0, deleted.stderr


def _kafka_rows(text: str, width: int) -> list[list[str]]:
    """The rows of a ``--describe`` table of ``width`` columns, header left out (Kafka pads cells with spaces)."""
    rows = [line.split() for line in text.splitlines()]
    return [cells for cells in rows if len(cells) == width and cells[0] != "GROUP"]


def _both_describe(bootstrap: str, group: str, view: str, width: int) -> tuple[list[list[str]], list[list[str]]]:
    kafka = consumer_group_command("--bootstrap-server", bootstrap, "--describe", "--group", group, view)
    assert kafka.returncode == 0, kafka.stderr
    ours_ = run_cli("groups", "describe", group, view, "--bootstrap-server", bootstrap)
    assert ours_.returncode == 0, ours_.stderr
    return sorted(_kafka_rows(ours_.stdout, width)), sorted(_kafka_rows(kafka.stdout, width))


@KAFKA_ONLY
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_groups_describe_reports_what_kafkas_tool_reports(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, protocol: str
) -> None:
    """A running member with two partitions, one committed (4 of 6) and one not, then the member gone: the offsets
    rows (CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, CLIENT-ID) and the members rows are Kafka's."""
    name = topic(2)
    produce.batches(name, [[b"a%d" % i for i in range(6)]], partition=0)
    produce.batches(name, [[b"b%d" % i for i in range(3)]], partition=1)
    bootstrap = broker.bootstrap_servers
    group = new_group_id()
    with Consumer(
        bootstrap, group_id=group, group_protocol=protocol, enable_auto_commit=False, client_id="describe-me"
    ) as consumer:
        consumer.subscribe([name])

        def settled() -> bool:
            consumer.poll(100)
            if len(consumer.assignment()) != 2:
                return False
            with Admin(bootstrap) as admin:
                described = admin.describe_consumer_groups([group])[group]
            return described.state == "Stable" and sum(len(m.assignment) for m in described.members) == 2

        wait_for(settled, timeout=30, interval=0.05, message="the member holds both partitions in a stable group")
        consumer.commit({TopicPartition(name, 0): 4})
        ours_, kafkas = _both_describe(bootstrap, group, "--offsets", 9)
        assert ours_ == kafkas and len(kafkas) == 2, (ours_, kafkas)
        assert [row[3:6] for row in kafkas] == [["4", "6", "2"], ["-", "3", "-"]]
        ours_, kafkas = _both_describe(bootstrap, group, "--members", 5)
        assert ours_ == kafkas and len(kafkas) == 1 and kafkas[0][3:] == ["describe-me", "2"], (ours_, kafkas)
    ours_, kafkas = _both_describe(bootstrap, group, "--offsets", 9)
    assert ours_ == kafkas and [row[3:] for row in kafkas] == [["4", "6", "2", "-", "-", "-"]], (ours_, kafkas)
