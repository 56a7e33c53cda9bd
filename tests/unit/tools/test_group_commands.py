"""The group and topic commands' pure parts (``tools/_group_commands.py``): the reset option the flags name, the
partitions ``--topic`` names, and the parser's refusals before anything is sent."""

from __future__ import annotations

import uuid

import pytest

from asyncconsumer._caller.admin_results import TopicDescription, TopicPartitionInfo
from asyncconsumer.records import TopicPartition
from asyncconsumer.tools._common import UsageError
from asyncconsumer.tools._group_commands import _partitions_of, reset_spec
from asyncconsumer.tools._reset import ResetError, ResetSpec
from asyncconsumer.tools.cli import _parser


def args(*flags: str) -> object:
    return _parser().parse_args(["groups", "reset-offsets", "g", "--topic", "t", *flags, "--bootstrap-server", "h:1"])


def test_the_flags_name_one_reset_option() -> None:
    assert reset_spec(args("--to-earliest"), 0) == ResetSpec("earliest")  # type: ignore[arg-type]
    assert reset_spec(args("--to-latest"), 0) == ResetSpec("latest")  # type: ignore[arg-type]
    assert reset_spec(args("--to-current"), 0) == ResetSpec("current")  # type: ignore[arg-type]
    assert reset_spec(args("--to-offset", "7"), 0) == ResetSpec("offset", 7)  # type: ignore[arg-type]
    assert reset_spec(args("--shift-by", "-2"), 0) == ResetSpec("shift", -2)  # type: ignore[arg-type]
    assert reset_spec(args("--by-duration", "PT1S"), 5_000) == ResetSpec("time", 4_000)  # type: ignore[arg-type]
    at = reset_spec(args("--to-datetime", "1970-01-01T00:00:01.000"), 0)  # type: ignore[arg-type]
    assert at == ResetSpec("time", 1_000)
    with pytest.raises(ResetError):
        reset_spec(args("--by-duration", "1h"), 0)  # type: ignore[arg-type]


def test_the_parser_wants_exactly_one_option_and_no_dry_run_with_execute() -> None:
    for bad in ([], ["--to-earliest", "--to-latest"], ["--to-earliest", "--dry-run", "--execute"]):
        with pytest.raises(SystemExit):
            args(*bad)
    assert not args("--to-earliest").execute  # type: ignore[attr-defined]


def test_topic_flags_name_every_partition_or_those_listed() -> None:
    described = {
        "t": TopicDescription("t", uuid.uuid4(), False, tuple(TopicPartitionInfo(p, 1, (1,), (1,)) for p in range(3)))
    }
    assert _partitions_of(["t"], described) == [TopicPartition("t", p) for p in range(3)]
    assert _partitions_of(["t:2,0", "u:1"], described) == [
        TopicPartition("t", 0),
        TopicPartition("t", 2),
        TopicPartition("u", 1),
    ]
    with pytest.raises(UsageError, match="--topic 't:a': partitions are numbers"):
        _partitions_of(["t:a"], described)
