"""The admin commands' pure parts: the admin client's settings from ``--property`` (security only), and the offsets
table (the admin client's rows) as text and JSON."""

from __future__ import annotations

import json

import pytest

from asyncconsumer.tools._admin_commands import _admin, offsets_lines
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
