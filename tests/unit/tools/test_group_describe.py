"""``groups describe`` without a broker: the rows of Kafka's three views (``--offsets``, ``--members``, ``--state``)
from hand-built admin answers, ``-`` where there is nothing (no commit, no member, a topic gone), Kafka's
left-aligned layout, and the JSON object. That the rows equal Kafka's own tool's is in
``tests/integration/test_cli_admin.py``."""

from __future__ import annotations

from asyncconsumer._caller.admin_results import group_lag
from asyncconsumer.admin import ConsumerGroupDescription, MemberDescription, PartitionLag
from asyncconsumer.records import OffsetAndMetadata, TopicPartition
from asyncconsumer.tools._group_describe import as_json, kafka_table, member_rows, offset_rows, state_rows

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
MEMBER = MemberDescription("m-1", None, "cli", "/10.0.0.1", frozenset({T1, T0}))
GROUP = ConsumerGroupDescription("g", "consumer", "Stable", "consumer", "uniform", 1, (MEMBER,))


def lag() -> list[PartitionLag]:
    committed = {T0: OffsetAndMetadata(7), U0: OffsetAndMetadata(3)}
    return group_lag(GROUP, committed, {T0: 10, T1: 5})  # u is gone: no log end


def test_every_partition_committed_or_assigned_is_a_row_with_its_member() -> None:
    rows = [(str(p.partition), p.committed, p.log_end_offset, p.lag, p.member) for p in lag()]
    assert rows == [("t-0", 7, 10, 3, MEMBER), ("t-1", None, 5, None, MEMBER), ("u-0", 3, None, None, None)]
    assert PartitionLag(T0, 12, 10, None).lag == 0  # a commit past the end (the log truncated) is no negative lag


def test_the_offsets_view_is_kafkas_columns_with_a_dash_for_nothing() -> None:
    lines = kafka_table(offset_rows("g", lag()))
    assert lines[0].split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    assert [line.split() for line in lines[1:]] == [
        ["g", "t", "0", "7", "10", "3", "m-1", "/10.0.0.1", "cli"],
        ["g", "t", "1", "-", "5", "-", "m-1", "/10.0.0.1", "cli"],
        ["g", "u", "0", "3", "-", "-", "-", "-", "-"],
    ]
    assert lines[1].index("7") == lines[0].index("CURRENT-OFFSET")  # left-aligned, as Kafka's


def test_the_members_and_state_views() -> None:
    assert [line.split() for line in kafka_table(member_rows(GROUP))] == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
        ["g", "m-1", "/10.0.0.1", "cli", "2"],
    ]
    state = kafka_table(state_rows(GROUP, "localhost:9092  (1)"))
    assert state[1].split() == ["g", "localhost:9092", "(1)", "uniform", "Stable", "1"]


def test_the_json_object_holds_all_of_it() -> None:
    found = as_json(GROUP, lag())
    assert found["state"] == "Stable" and found["type"] == "consumer" and found["total_lag"] == 3
    assert found["members"] == [
        {
            "member_id": "m-1",
            "client_id": "cli",
            "host": "/10.0.0.1",
            "group_instance_id": None,
            "partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}],
        }
    ]
    assert found["partitions"][2] == {  # type: ignore[index]
        "topic": "u",
        "partition": 0,
        "committed": 3,
        "log_end": None,
        "lag": None,
        "member_id": None,
    }
