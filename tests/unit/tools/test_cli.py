"""The parser: every command and argument has help, ``--verbose`` goes before or after the command, the timeout's
help says its default and what it bounds, and the share commands' arguments."""

from __future__ import annotations

import argparse

import pytest

from asyncconsumer.tools.cli import _parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _parsers(child)
    return found


def test_every_argument_of_every_command_has_help() -> None:
    parsers = _parsers(_parser())
    assert {p.prog for p in parsers} == {
        "asyncconsumer",
        *(
            f"asyncconsumer {c}"
            for c in (
                "demo",
                "broker",
                "consume",
                "share-consume",
                "offsets",
                "groups",
                "groups describe",
                "groups list",
                "groups reset-offsets",
                "groups delete",
                "groups delete-offsets",
                "topics",
                "topics list",
                "topics describe",
                "topics create",
                "topics delete",
                "share-groups",
                "share-groups describe",
                "share-groups configure",
            )
        ),
    }
    missing = []
    for parser in parsers:
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            if not action.help:
                missing.append(f"{parser.prog}: {action.option_strings or action.dest}")
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{parser.prog} {c.dest}" for c in action._choices_actions if not c.help]
    assert missing == []


@pytest.mark.parametrize(
    "command",
    [
        ["demo"],
        ["broker"],
        ["consume", "--bootstrap-server", "h:1", "--topic", "t"],
        ["offsets", "t", "--bootstrap-server", "h:1"],
        ["groups", "describe", "g", "--bootstrap-server", "h:1"],
        ["share-consume", "--bootstrap-server", "h:1", "--group", "g", "--topic", "t"],
        ["share-groups", "describe", "g", "--bootstrap-server", "h:1"],
        ["share-groups", "configure", "g", "--bootstrap-server", "h:1", "--set", "k=v"],
    ],
)
def test_verbose_goes_before_or_after_the_command(command: list[str]) -> None:
    parser = _parser()
    assert parser.parse_args(command).verbose is False
    assert parser.parse_args(["-v", *command]).verbose is True
    assert parser.parse_args([*command, "-v"]).verbose is True
    assert parser.parse_args([*command, "--verbose"]).verbose is True
    if command[0] in ("groups", "share-groups"):
        assert parser.parse_args([command[0], "-v", *command[1:]]).verbose is True


def test_the_timeout_help_says_the_default_and_what_it_bounds() -> None:
    for command in (
        ["consume", "--bootstrap-server", "h:1", "--topic", "t"],
        ["offsets", "t", "--bootstrap-server", "h:1"],
    ):
        assert _parser().parse_args(command).timeout_ms == 30_000
    consume = next(p for p in _parsers(_parser()) if p.prog == "asyncconsumer consume")
    [timeout] = [a for a in consume._actions if "--timeout-ms" in a.option_strings]
    assert timeout.help is not None
    assert "(default 30000: 30 s)" in timeout.help and "connecting" in timeout.help
    offsets = next(p for p in _parsers(_parser()) if p.prog == "asyncconsumer offsets")
    assert "each request (connecting included)" in " ".join(offsets.format_help().split())


def test_share_consume_takes_a_group_a_topic_and_an_acknowledgement() -> None:
    parser = _parser()
    args = parser.parse_args(["share-consume", "--bootstrap-server", "h:1", "--group", "g", "--topic", "t"])
    assert (args.group, args.topic, args.ack, args.max_messages, args.format) == ("g", "t", "accept", None, "text")
    assert args.timeout_ms == 30_000
    base = ["share-consume", "--bootstrap-server", "h:1", "--group", "g", "--topic", "t"]
    told = parser.parse_args([*base, "--ack", "release", "--max-messages", "3", "--format", "json"])
    assert (told.ack, told.max_messages, told.format) == ("release", 3, "json")
    for wrong in (
        ["--group", "g"],  # no topic
        ["--topic", "t"],  # no group: a share consumer is always a member
        ["--group", "g", "--topic", "t", "--ack", "renew"],  # RENEW only extends a lock
        ["--group", "g", "--pattern", "t.*"],  # share groups subscribe by name
    ):
        with pytest.raises(SystemExit):
            parser.parse_args(["share-consume", "--bootstrap-server", "h:1", *wrong])
    share = next(p for p in _parsers(parser) if p.prog == "asyncconsumer share-consume")
    assert "the final commit of the acknowledgements" in " ".join(share.format_help().split())


def test_share_groups_describe_takes_a_group() -> None:
    args = _parser().parse_args(["share-groups", "describe", "g", "--bootstrap-server", "h:1", "--format", "json"])
    assert (args.command, args.share_groups_command, args.group, args.format) == (
        "share-groups",
        "describe",
        "g",
        "json",
    )
    with pytest.raises(SystemExit):
        _parser().parse_args(["share-groups", "--bootstrap-server", "h:1"])


def test_share_groups_configure_takes_a_group_and_repeated_sets_and_deletes() -> None:
    args = _parser().parse_args(
        [
            "share-groups",
            "configure",
            "workers",
            "--bootstrap-server",
            "h:1",
            "--set",
            "share.auto.offset.reset=earliest",
            "--delete",
            "share.delivery.count.limit",
            "--set",
            "share.record.lock.duration.ms=60000",
        ]
    )
    assert (args.share_groups_command, args.group, args.timeout_ms) == ("configure", "workers", 30_000)
    assert args.set == ["share.auto.offset.reset=earliest", "share.record.lock.duration.ms=60000"]
    assert args.delete == ["share.delivery.count.limit"]
    bare = _parser().parse_args(["share-groups", "configure", "g", "--bootstrap-server", "h:1"])
    assert (bare.set, bare.delete) == ([], [])  # refused when run: nothing to configure
    with pytest.raises(SystemExit):
        _parser().parse_args(["share-groups", "configure", "--bootstrap-server", "h:1", "--set", "k=v"])  # no group
