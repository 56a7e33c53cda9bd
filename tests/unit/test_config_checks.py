"""The field converters and validators both configs share: the forms each accepts, and the key each error names."""

from __future__ import annotations

import ssl
from typing import Any

import attrs
import pytest

from asyncconsumer import _config_checks as checks
from asyncconsumer.errors import ConfigError


@attrs.define
class _Field:
    """Just what a validator reads of an attrs attribute: its name."""

    name: str


def field(name: str) -> Any:
    return _Field(name)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3"])
def test_positive_names_the_setting_and_the_value(value: object) -> None:
    with pytest.raises(ConfigError, match=r"fetch_max_bytes.*must be a positive integer"):
        checks.positive(None, field("fetch_max_bytes"), value)  # type: ignore[arg-type]


def test_non_negative_takes_zero_and_refuses_below() -> None:
    checks.non_negative(None, field("retries"), 0)
    with pytest.raises(ConfigError, match=r"retries.*>= 0, got -1"):
        checks.non_negative(None, field("retries"), -1)


def test_one_of_lists_what_is_allowed() -> None:
    check = checks.one_of("earliest", "latest")
    check(None, field("auto_offset_reset"), "latest")
    with pytest.raises(ConfigError, match=r"auto_offset_reset.*'earliest', 'latest'; got 'first'"):
        check(None, field("auto_offset_reset"), "first")


@pytest.mark.parametrize(
    ("text", "expected"), [("true", True), (" YES ", True), ("1", True), ("false", False), ("", False)]
)
def test_boolean_reads_javas_and_shells_spellings(text: str, expected: bool) -> None:
    assert checks.boolean("enable_auto_commit", text) is expected


def test_boolean_refuses_anything_else_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"enable_auto_commit.*true or false, got 'maybe'"):
        checks.boolean("enable_auto_commit", "maybe")


def test_servers_take_a_comma_string_or_a_sequence_and_check_host_and_port() -> None:
    assert checks.servers(" a:1, b:2 ,") == ("a:1", "b:2")
    assert checks.servers(["a:1", " "]) == ("a:1",)
    checks.check_servers(None, field("bootstrap_servers"), ("[::1]:9092", "h:65535"))
    for bad in [(), ("h",), ("h:0",), (":9092",), ("h:65536",)]:
        with pytest.raises(ConfigError, match="bootstrap_servers"):
            checks.check_servers(None, field("bootstrap_servers"), bad)


def test_extensions_from_a_java_string_or_a_mapping() -> None:
    assert checks.extensions("a=1, b = 2") == {"a": "1", "b": "2"}
    assert checks.extensions({"a": "1"}) == {"a": "1"}
    with pytest.raises(ConfigError, match="sasl_oauthbearer_extensions"):
        checks.extensions("a")
    with pytest.raises(ConfigError, match="sasl_oauthbearer_extensions"):
        checks.extensions({"a": 1})


def test_comma_list_keeps_objects_and_splits_names() -> None:
    marker = object()
    assert checks.comma_list("range, roundrobin") == ("range", "roundrobin")
    assert checks.comma_list([marker, "range"]) == (marker, "range")
    assert checks.comma_list(marker) == (marker,)


def test_a_plugin_enabled_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="plugin 'lag' is enabled twice"):
        checks.check_plugin_list(None, field("plugins"), ("lag", "lag"))


def test_plugin_options_must_be_dicts_per_plugin() -> None:
    assert checks.plugin_options({"lag": {"every": 1}}) == {"lag": {"every": 1}}
    with pytest.raises(ConfigError, match="options of plugin 'lag' must be a dict"):
        checks.plugin_options({"lag": 1})


def test_the_context_check_takes_only_an_ssl_context() -> None:
    checks.ssl_context_or_none(None, field("ssl_context"), ssl.create_default_context())
    with pytest.raises(ConfigError, match=r"ssl_context.*ssl\.SSLContext or None, got str"):
        checks.ssl_context_or_none(None, field("ssl_context"), "ctx")


def test_names_are_spelled_as_the_user_spelled_the_key() -> None:
    assert checks.spelled_like("bootstrap_servers", "bootstrap.server") == "bootstrap.servers"
    assert checks.spelled_like("bootstrap_servers", "bootstrap-server") == "bootstrap-servers"
    assert checks.spelled_like("bootstrap_servers", "bootstrap_server") == "bootstrap_servers"


def test_secrets_are_hidden_in_reprs() -> None:
    assert checks.hidden("s3cret") == "'***'"
    assert checks.hidden(None) == "None"
