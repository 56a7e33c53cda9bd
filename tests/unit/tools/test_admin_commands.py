"""The admin commands' pure parts: the admin client's settings from ``--property`` (security only), the offsets
table (the admin client's rows) as text and JSON, and ``share-groups configure``'s changes and lines."""

from __future__ import annotations

import json

import pytest

from asyncconsumer.tools._admin_commands import _admin, config_changes, configured_lines, offsets_lines
from asyncconsumer.tools._common import UsageError
from asyncconsumer.tools.admin import partition_offsets
from asyncconsumer.tools.cli import _parser


def test_admin_commands_take_only_security_properties() -> None:
    args = _parser().parse_args(["offsets", "t", "--bootstrap-server", "h:1", "--property", "fetch.max.wait.ms=5"])
    with pytest.raises(UsageError, match=r"fetch\.max\.wait\.ms: offsets uses only the security settings"):
        _admin(args)
    secure = _parser().parse_args(["offsets", "t", "--bootstrap-server", "h:1", "--property", "security.protocol=SSL"])
    assert _admin(secure) is not None


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


def test_config_changes_keep_the_order_and_the_value_after_the_first_equals_sign() -> None:
    changes, deleted = config_changes(
        [" share.record.lock.duration.ms = 60000", "share.auto.offset.reset=by_duration:PT1H", "x.y=a=b"],
        ["share.delivery.count.limit", " z "],
    )
    assert list(changes.items()) == [
        ("share.record.lock.duration.ms", "60000"),
        ("share.auto.offset.reset", "by_duration:PT1H"),
        ("x.y", "a=b"),
    ]
    assert deleted == ("share.delivery.count.limit", "z")
    assert config_changes([], ["k"]) == ({}, ("k",))
    assert config_changes(["k="], []) == ({"k": ""}, ())  # an empty value is the broker's to judge


@pytest.mark.parametrize(
    ("sets", "deletes", "message"),
    [
        ([], [], r"^nothing to configure: give --set KEY=VALUE or --delete KEY$"),
        (["share.auto.offset.reset"], [], r"^--set takes KEY=VALUE, got 'share.auto.offset.reset'$"),
        (["=earliest"], [], r"^--set takes KEY=VALUE, got '=earliest'$"),
        (["k=1", "k=2"], [], r"^--set k is given twice$"),
        (["k=1"], ["k"], r"^k is both set and deleted$"),
        ([], ["k", "k"], r"^--delete k is given twice$"),
        ([], ["k=1"], r"^--delete takes a config's name, got 'k=1'$"),
        ([], [" "], r"^--delete takes a config's name, got ' '$"),
    ],
)
def test_config_changes_refuse_a_command_line_that_cannot_work(
    sets: list[str], deletes: list[str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        config_changes(sets, deletes)


def test_configured_lines_say_each_set_then_each_delete() -> None:
    lines = configured_lines("workers", {"share.auto.offset.reset": "earliest", "b": "2"}, ("c",))
    assert lines == [
        "share group workers: share.auto.offset.reset=earliest",
        "share group workers: b=2",
        "share group workers: c deleted",
    ]
