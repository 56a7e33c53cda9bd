"""``share-consume``'s pure parts: the share consumer's settings from the flags and ``--property`` (always explicit
acknowledgement; no more acquired a fetch than ``--max-messages``), the acknowledgement type, and a share record's
line with its delivery count."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.errors import ConfigError
from asyncconsumer.records import AcknowledgeType, ShareRecord
from asyncconsumer.tools._common import UsageError
from asyncconsumer.tools._consume import format_record
from asyncconsumer.tools._share_consume import acknowledge_type, share_consumer_settings
from asyncconsumer.tools.cli import _parser


def _args(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(["share-consume", "--bootstrap-server", "h:1", "--group", "G", "--topic", "t", *argv])


def _config(*argv: str) -> ShareConsumerConfig:
    return ShareConsumerConfig.from_settings("h:1", **share_consumer_settings(_args(*argv)))


def test_every_printed_record_is_acknowledged_explicitly_in_the_group() -> None:
    config = _config()
    assert (config.group_id, config.share_acknowledgement_mode) == ("G", "explicit")
    assert config.consumer.client_id == "asyncconsumer-cli"
    assert (config.share_acquire_mode, config.consumer.max_poll_records) == ("batch_optimized", 500)


@pytest.mark.parametrize(("limit", "per_fetch"), [(3, 3), (500, 500), (10_000, 500)])
def test_max_messages_bounds_what_a_fetch_acquires(limit: int, per_fetch: int) -> None:
    config = _config("--max-messages", str(limit))
    assert (config.share_acquire_mode, config.consumer.max_poll_records) == ("record_limit", per_fetch)


def test_a_property_overrides_the_commands_own_default() -> None:
    config = _config("--max-messages", "3", "--property", "share.acquire.mode=batch_optimized")
    assert config.share_acquire_mode == "batch_optimized"
    assert _config("--property", "client.id=mine").consumer.client_id == "mine"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--property", "group.id=X"), "--property group.id is not honoured here: use --group G"),
        (("--property", "bootstrap.servers=h:2"), "use --bootstrap-server"),
        (("--property", "share.acknowledgement.mode=implicit"), "use --ack"),
        (("--max-messages", "0"), "--max-messages must be at least 1, got 0"),
    ],
)
def test_a_command_line_that_cannot_work_is_a_usage_error(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        share_consumer_settings(_args(*argv))


def test_a_consumer_only_setting_is_refused_naming_the_share_groups_way() -> None:
    with pytest.raises(ConfigError, match=r"share\.auto\.offset\.reset"):
        share_consumer_settings(_args("--property", "auto.offset.reset=earliest"))


@pytest.mark.parametrize(
    ("ack", "expected"),
    [("accept", AcknowledgeType.ACCEPT), ("release", AcknowledgeType.RELEASE), ("reject", AcknowledgeType.REJECT)],
)
def test_ack_names_the_acknowledgement_type(ack: str, expected: AcknowledgeType) -> None:
    assert acknowledge_type(_args("--ack", ack)) is expected


def test_a_share_record_shows_its_delivery_count() -> None:
    record = ShareRecord("t", 1, 7, 1000, 0, b"k", b"\x01\x02", (), -1, 1, 2, 3)
    assert format_record(record, "text", "utf8", "hex") == "t-1@7 (delivery 3)\tk\t0102"
    as_json = json.loads(format_record(record, "json", "utf8", "base64"))
    assert (as_json["offset"], as_json["value"], as_json["delivery_count"]) == (7, "AQI=", 3)
