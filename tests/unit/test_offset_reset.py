"""``auto_offset_reset``'s strategies: the ISO-8601 durations of ``by_duration:`` read as Java's
``java.time.Duration.parse`` reads them, and what is refused and why."""

from __future__ import annotations

import pytest

from asyncconsumer._offset_reset import DurationError, check_strategy, parse_duration_ms
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("P7D", 7 * 86_400_000),
        ("PT30M", 1_800_000),
        ("PT0.5S", 500),
        ("PT1,25S", 1_250),
        ("P1DT2H3M4.005S", 86_400_000 + 7_200_000 + 180_000 + 4_005),
        ("pt15m", 900_000),  # Java reads the letters in either case
        ("PT1H-30M", 1_800_000),  # signed parts, a positive total
        ("PT0S", 0),
        ("+PT2S", 2_000),
        ("PT0.0000001S", 0),  # below a millisecond
    ],
)
def test_durations_are_read_as_javas(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1h", "is not an ISO-8601 duration"),
        ("P", "is not an ISO-8601 duration"),
        ("PT", "is not an ISO-8601 duration"),
        ("P1DT", "is not an ISO-8601 duration"),
        ("P1Y", "is not an ISO-8601 duration"),  # Java's Duration has no years or months
        ("P1W", "is not an ISO-8601 duration"),
        ("-PT1H", "is negative"),
        ("PT-1S", "is negative"),
    ],
)
def test_what_is_no_duration_or_a_negative_one_is_refused_naming_it(text: str, words: str) -> None:
    with pytest.raises(DurationError, match=words):
        parse_duration_ms(text)


def test_the_config_names_the_setting_and_the_value_refused() -> None:
    assert ConsumerConfig.from_kwargs(bootstrap_servers="h:1", auto_offset_reset="by_duration:P2D").auto_offset_reset
    with pytest.raises(ConfigError, match=r"auto_offset_reset: by_duration: '2 days' is not an ISO-8601 duration"):
        ConsumerConfig.from_kwargs(bootstrap_servers="h:1", auto_offset_reset="by_duration:2 days")
    with pytest.raises(ConfigError, match=r"auto_offset_reset: must be one of .*'by_duration:<ISO-8601 duration>'"):
        ConsumerConfig.from_kwargs(bootstrap_servers="h:1", auto_offset_reset="yesterday")
    with pytest.raises(ConfigError, match="auto_offset_reset: by_duration: '-P1D' is negative"):
        ConsumerConfig.from_kwargs(bootstrap_servers="h:1", auto_offset_reset="by_duration:-P1D")
    assert check_strategy("none") == "none"
