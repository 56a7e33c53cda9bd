"""The reset strategies of ``auto_offset_reset``: ``earliest``, ``latest``, ``none`` and, since Kafka 4.0 (KIP-1106),
``by_duration:<ISO-8601 duration>``, the first record no older than the duration.

A duration is written as Java's ``java.time.Duration.parse`` reads it (days, hours, minutes, seconds with up to
nine decimals, each part optionally signed; ``PT1H30M``, ``P7D``, ``PT0.5S``) and may not be negative in total, as
Java's consumer refuses. It is kept as the user wrote it: the consumer turns it into a timestamp at each reset.
"""

from __future__ import annotations

import re

BY_DURATION = "by_duration:"
PLAIN = ("earliest", "latest", "none")

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


class DurationError(ValueError):
    """Why a ``by_duration:`` value is refused, in words fit for a ``ConfigError``."""


def parse_duration_ms(text: str) -> int:
    """Milliseconds in an ISO-8601 duration as ``java.time.Duration.parse`` reads it (fractions of a millisecond are
    dropped); ``DurationError`` when it is not one, or is negative."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or match.group(3) == "T" or not any(match.group(i) for i in (2, 4, 5, 6)):
        raise DurationError(f"{text!r} is not an ISO-8601 duration such as PT1H, P7D or PT30M")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    nanos = 0
    for value, unit_ns in ((days, 86_400 * 10**9), (hours, 3_600 * 10**9), (minutes, 60 * 10**9)):
        nanos += int(value or 0) * unit_ns
    if seconds is not None:
        whole = int(seconds)
        part = int((fraction or "").ljust(9, "0"))
        nanos += whole * 10**9 + (-part if seconds.startswith("-") else part)
    if sign == "-":
        nanos = -nanos
    if nanos < 0:
        raise DurationError(f"{text!r} is negative; a reset goes back in time only")
    return nanos // 1_000_000


def check_strategy(value: str) -> str:
    """``value`` if it is a strategy; ``DurationError`` (or ``ValueError``) naming what is wrong if not."""
    if value in PLAIN:
        return value
    if value.startswith(BY_DURATION):
        try:
            parse_duration_ms(value[len(BY_DURATION) :])
        except DurationError as exc:
            raise DurationError(f"by_duration: {exc}") from None
        return value
    raise ValueError(
        f"must be one of 'earliest', 'latest', 'none' or 'by_duration:<ISO-8601 duration>' (PT1H); got {value!r}"
    )
