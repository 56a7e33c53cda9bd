"""The CLI's pure parts: record formatting, the progress line, tables; the admin client's reading of answers."""

from __future__ import annotations

import io
import json

import pytest

from asyncconsumer.errors import BrokerResponseError
from asyncconsumer.protocol.consumer_protocol import Assignment
from asyncconsumer.protocol.describe_groups import DescribedGroup, DescribedGroupMember
from asyncconsumer.protocol.offsets_commit import (
    OffsetFetchGroupResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchTopicResponse,
)
from asyncconsumer.records import ConsumerRecord, TopicPartition
from asyncconsumer.tools.admin import GroupNotFoundError, group_description, partition_offsets
from asyncconsumer.tools.cli import Progress, decode_bytes, format_record, group_lines, offsets_lines


def _record(key: bytes | None, value: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("t", 1, 7, 1000, 0, key, value, (), -1, len(key or b""), len(value or b""))


@pytest.mark.parametrize(
    ("how", "expected"),
    [("utf8", "h\ufffd"), ("hex", "68ff"), ("base64", "aP8="), ("raw", "h\udcff")],
)
def test_decode_bytes(how: str, expected: str) -> None:
    assert decode_bytes(b"h\xff", how) == expected
    assert decode_bytes(None, how) is None


def test_format_record_text_and_json() -> None:
    record = _record(b"k", b"\x01\x02")
    assert format_record(record, "text", "utf8", "hex") == "t-1@7\tk\t0102"
    assert json.loads(format_record(record, "json", "utf8", "base64"))["value"] == "AQI="


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_rewrites_one_line_at_most_every_interval_and_clears_it() -> None:
    now = [0.0]
    stream = _Tty()
    progress = Progress(stream, interval_s=1.0, clock=lambda: now[0])
    now[0] = 2.0
    progress.update(100)
    progress.update(150)  # too soon: not shown
    now[0] = 3.5
    progress.update(300, 1000)
    progress.close()
    shown = stream.getvalue().split("\r\x1b[K")
    assert shown == ["", "  100 records  50/s  2 s", "  300/1,000 (30%) records  86/s  4 s", ""]


def test_progress_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress.update(1, force=True)
    progress.close()
    assert stream.getvalue() == ""


def _committed(*offsets: tuple[str, int, int]) -> OffsetFetchGroupResponse:
    topics: dict[str, list[OffsetFetchPartitionResponse]] = {}
    for topic, partition, offset in offsets:
        topics.setdefault(topic, []).append(OffsetFetchPartitionResponse(partition, offset))
    return OffsetFetchGroupResponse("g", tuple(OffsetFetchTopicResponse(t, tuple(ps)) for t, ps in topics.items()))


def test_group_description_decodes_assignments_and_computes_lag() -> None:
    member = DescribedGroupMember("m-1", "cli", "/10.0.0.1", b"", Assignment((("t", (1, 0)),)).encode())
    described = DescribedGroup(0, "g", "Stable", "consumer", "range", (member,))
    ends = {TopicPartition("t", 0): 10, TopicPartition("t", 1): 5, TopicPartition("u", 0): 3}
    group = group_description(described, _committed(("t", 0, 7), ("t", 1, -1), ("u", 0, 3)), ends, coordinator=1)
    assert group.members[0].partitions == (TopicPartition("t", 0), TopicPartition("t", 1))
    rows = [(str(p.partition), p.committed, p.end, p.lag, p.member_id) for p in group.partitions]
    assert rows == [("t-0", 7, 10, 3, "m-1"), ("t-1", None, 5, None, "m-1"), ("u-0", 3, 3, 0, None)]
    assert group.total_lag == 3
    text = group_lines(group, "text")
    assert text[0] == (
        "group g: Stable, protocol type consumer, assignor range, coordinator node 1, 1 member(s), total lag 3"
    )
    assert "t-0,t-1" in text[3]
    assert text[6].split() == ["t", "0", "7", "10", "3", "m-1"]
    assert text[7].split() == ["t", "1", "-", "5", "-", "m-1"]
    as_json = json.loads(group_lines(group, "json")[0])
    assert as_json["members"][0]["partitions"] == [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    assert as_json["partitions"][0] == {
        "topic": "t",
        "partition": 0,
        "committed": 7,
        "log_end": 10,
        "lag": 3,
        "member_id": "m-1",
    }


def test_a_group_with_nothing_is_not_found_and_errors_are_raised() -> None:
    with pytest.raises(GroupNotFoundError):
        group_description(DescribedGroup(0, "g", "Dead", "", "", ()), _committed(), {}, coordinator=1)
    with pytest.raises(BrokerResponseError):
        group_description(DescribedGroup(16, "g", "", "", "", ()), _committed(), {}, coordinator=1)


def test_offsets_table_and_json() -> None:
    rows = partition_offsets("t", [1, 0], {0: 0, 1: 4}, {0: 10, 1: 4})
    assert offsets_lines(rows, "text") == [
        "TOPIC  PARTITION  BEGINNING  END  RECORDS",
        "t              0          0   10       10",
        "t              1          4    4        0",
    ]
    assert json.loads(offsets_lines(rows, "json")[0])[1] == {
        "topic": "t",
        "partition": 1,
        "beginning": 4,
        "end": 4,
        "records": 0,
    }
