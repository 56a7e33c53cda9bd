"""``consume``'s pure parts: decoding bytes, record formatting, and the consumer's settings from the flags and
``--property``."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from asyncconsumer.config import ConsumerConfig
from asyncconsumer.records import ConsumerRecord
from asyncconsumer.tools._common import UsageError
from asyncconsumer.tools._consume import _consumer_config, decode_bytes, format_record
from asyncconsumer.tools.cli import _parser


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
