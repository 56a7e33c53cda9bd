"""Topic patterns as the group coordinator gets them (KIP-848 server-side regular expressions)."""

from __future__ import annotations

import re

import pytest

from asyncconsumer import ConfigError, Consumer
from asyncconsumer._patterns import server_side_regex


@pytest.mark.parametrize(
    ("pattern", "sent"),
    [
        (re.compile(r"events-.*"), r"events-.*"),
        (re.compile(r"events-.*", re.IGNORECASE), r"(?i)events-.*"),
        (re.compile(r"^events$", re.MULTILINE | re.DOTALL), r"^events$"),  # no effect on one whole name
    ],
)
def test_the_coordinator_gets_the_pattern_with_what_its_flags_mean(pattern: re.Pattern[str], sent: str) -> None:
    assert server_side_regex(pattern) == sent


@pytest.mark.parametrize("flag", [re.VERBOSE, re.ASCII])
def test_a_flag_re2j_cannot_be_told_is_a_config_error_from_subscribe(flag: re.RegexFlag) -> None:
    consumer = Consumer("127.0.0.1:1", group_id="g", group_protocol="consumer")
    with pytest.raises(ConfigError, match=rf"re\.{flag.name} cannot be sent to the group coordinator") as raised:
        consumer.subscribe(pattern=re.compile("events", flag))
    assert raised.value.key == "pattern"
    assert not consumer._core.started  # refused before anything started
    classic = Consumer("127.0.0.1:1", group_id="g")  # matched on the client there: any flag works
    assert classic.config.group_protocol == "classic"
    consumer.close()
    classic.close()
