"""The CLI's pure parts: decoding bytes, record formatting, the progress line (and the plain line off a terminal),
the settings a command builds from its flags and ``--property``, the parser's help and flags, the offsets table (the
admin client's rows)."""

from __future__ import annotations

import argparse
import io
import json
import re

import pytest

from asyncconsumer.config import ConsumerConfig
from asyncconsumer.records import ConsumerRecord
from asyncconsumer.tools.admin import partition_offsets
from asyncconsumer.tools.cli import (
    Progress,
    UsageError,
    _admin,
    _consumer_config,
    _parser,
    decode_bytes,
    format_record,
    offsets_lines,
)


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


def test_progress_says_what_it_waits_for_until_records_flow() -> None:
    now = [0.0]
    stream = _Tty()
    progress = Progress(stream, interval_s=1.0, clock=lambda: now[0])
    progress.waiting("connecting to h:9092")
    now[0] = 2.0
    progress.waiting("joining group G", "cannot connect to broker 1 at h:9092: connection refused")
    now[0] = 2.5
    progress.waiting("joining group G")  # too soon: not shown
    now[0] = 4.0
    progress.update(10)
    shown = stream.getvalue().split("\r\x1b[K")
    assert shown == [
        "",
        "  connecting to h:9092...  0 s",
        "  joining group G...  2 s  (cannot connect to broker 1 at h:9092: connection refused)",
        "  10 records  2/s  4 s",
    ]


def _args(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(["consume", "--bootstrap-server", "h:1", "--topic", "t", *argv])


def test_a_group_consume_uses_a_short_session_unless_told_otherwise() -> None:
    config = _consumer_config(_args("--group", "G"))
    assert (config["group_id"], config["session_timeout_ms"], config["heartbeat_interval_ms"]) == ("G", 6_000, 1_000)
    assert ConsumerConfig.from_kwargs("h:1", **config).session_timeout_ms == 6_000
    told = _consumer_config(_args("--group", "G", "--property", "session.timeout.ms=45000"))
    assert ConsumerConfig.from_kwargs("h:1", **told).session_timeout_ms == 45_000
    kip848 = _consumer_config(_args("--group", "G", "--property", "group.protocol=consumer"))
    assert "session_timeout_ms" not in kip848 and "heartbeat_interval_ms" not in kip848
    assert ConsumerConfig.from_kwargs("h:1", **kip848).group_protocol == "consumer"
    assert "session_timeout_ms" not in _consumer_config(_args())  # no group: nothing to time


@pytest.mark.parametrize("spelling", ["auto.offset.reset", "auto_offset_reset", "auto-offset-reset"])
def test_a_property_overrides_the_commands_own_default(spelling: str) -> None:
    config = _consumer_config(_args("--property", f"{spelling}=earliest"))
    assert ConsumerConfig.from_kwargs("h:1", **config).auto_offset_reset == "earliest"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--property", "group.id=X"), "--property group.id is not honoured here: use --group G"),
        (("--property", "bootstrap.servers=h:2"), "use --bootstrap-server"),
        (("--property", "a.b=1", "--property", "a_b=2"), "--property a_b is given twice"),
        (("--property", "novalue"), "--property takes KEY=VALUE"),
    ],
)
def test_a_property_the_command_cannot_honour_is_an_error(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        _consumer_config(_args(*argv))


def test_admin_commands_take_only_security_properties() -> None:
    args = _parser().parse_args(["offsets", "t", "--bootstrap-server", "h:1", "--property", "fetch.max.wait.ms=5"])
    with pytest.raises(UsageError, match=r"fetch\.max\.wait\.ms: offsets uses only the security settings"):
        _admin(args)
    secure = _parser().parse_args(["offsets", "t", "--bootstrap-server", "h:1", "--property", "security.protocol=SSL"])
    assert _admin(secure) is not None


def test_progress_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress.update(1, force=True)
    progress.close()
    assert stream.getvalue() == ""


def test_off_a_terminal_the_first_connection_failure_is_one_plain_line() -> None:
    stream = io.StringIO()
    progress = Progress(stream, timeout_ms=30_000)
    progress.waiting("connecting to h:9092", bounded=True)  # no failure yet: nothing
    progress.waiting(
        "connecting to h:9092", "cannot connect to bootstrap server h:9092: connection refused", bounded=True
    )
    progress.waiting("connecting to h:9092", "cannot connect to bootstrap server h:9092: timed out", bounded=True)
    progress.update(5, force=True)
    progress.close()
    assert stream.getvalue() == (
        "waiting: cannot connect to bootstrap server h:9092: connection refused "
        "(giving up after 30 s; --timeout-ms to change)\n"
    )


def test_a_wait_the_timeout_does_not_bound_says_no_deadline() -> None:
    stream = io.StringIO()
    progress = Progress(stream, timeout_ms=1_500)
    progress.waiting("joining group G", "cannot connect to group coordinator (broker 1) at h:9092: connection refused")
    assert (
        stream.getvalue() == "waiting: cannot connect to group coordinator (broker 1) at h:9092: connection refused\n"
    )
    bounded = io.StringIO()
    Progress(bounded, timeout_ms=1_500).waiting("connecting to h:1", "refused", bounded=True)
    assert bounded.getvalue() == "waiting: refused (giving up after 1.5 s; --timeout-ms to change)\n"


def test_a_terminal_gets_no_plain_line() -> None:
    stream = _Tty()
    progress = Progress(stream, timeout_ms=30_000)
    progress.waiting("connecting to h:9092", "refused", bounded=True)
    progress.close()
    assert "\n" not in stream.getvalue() and "giving up" not in stream.getvalue()


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
        *(f"asyncconsumer {c}" for c in ("demo", "broker", "consume", "offsets", "groups", "groups describe")),
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
    ],
)
def test_verbose_goes_before_or_after_the_command(command: list[str]) -> None:
    parser = _parser()
    assert parser.parse_args(command).verbose is False
    assert parser.parse_args(["-v", *command]).verbose is True
    assert parser.parse_args([*command, "-v"]).verbose is True
    assert parser.parse_args([*command, "--verbose"]).verbose is True
    if command[0] == "groups":
        assert parser.parse_args(["groups", "-v", *command[1:]]).verbose is True


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
