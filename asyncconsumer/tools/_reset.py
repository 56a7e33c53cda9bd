"""``groups reset-offsets``: where each partition of a group goes, worked out as Kafka's ``kafka-consumer-groups.sh``
works it out, by plain functions over the offsets the admin client listed (no I/O: unit-tested on literal offsets).

- ``--to-earliest`` / ``--to-latest``: the log start / end;
- ``--to-offset N``: N, moved into the log's range when outside it (below the start: the start; past the end: the
  end), as Kafka does;
- ``--shift-by N``: the committed offset plus N, moved into the range likewise; a partition with no committed offset
  is an error naming it;
- ``--to-datetime`` / ``--by-duration``: the first record at or after that time (now minus the duration), the log
  end where every record is older;
- ``--to-current``: the committed offset (the log end where there is none).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

import attrs

from asyncconsumer._offset_reset import DurationError, parse_duration_ms
from asyncconsumer.records import TopicPartition


class ResetError(ValueError):
    """A reset that cannot be worked out (a bad time or duration, a shift without a committed offset)."""


@attrs.frozen
class ResetSpec:
    """One of the reset options: ``kind`` names it (``earliest``, ``latest``, ``offset``, ``shift``, ``time``,
    ``current``); ``value`` is the offset, the shift, or the time in Unix epoch milliseconds."""

    kind: str
    value: int = 0

    def lookup(self) -> str | int | None:
        """What ``list_offsets`` must be asked besides the ends, if anything: a time."""
        return self.value if self.kind == "time" else None


def parse_datetime_ms(text: str) -> int:
    """``--to-datetime``'s value as Kafka's tool reads it (``Utils.getDateTime``): ``YYYY-MM-DDTHH:mm:SS.sss``, with
    an optional zone (``Z``, ``+02:00``); without one, UTC."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ResetError(f"--to-datetime {text!r}: not a date and time as YYYY-MM-DDTHH:mm:SS.sss[+HH:MM]") from None
    if "T" not in text:
        raise ResetError(f"--to-datetime {text!r}: not a date and time as YYYY-MM-DDTHH:mm:SS.sss[+HH:MM]")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)  # Kafka's tool adds a "Z" to a time without a zone
    return int(moment.timestamp() * 1000)


def parse_duration_back_ms(text: str, now_ms: int) -> int:
    """``--by-duration``'s value (an ISO-8601 duration, ``PT1H``, ``P7D``) as the time that long before ``now_ms``."""
    try:
        duration = parse_duration_ms(text)
    except DurationError as exc:
        raise ResetError(f"--by-duration {text!r}: {exc}") from None
    return now_ms - duration


def plan(
    spec: ResetSpec,
    partitions: list[TopicPartition],
    earliest: Mapping[TopicPartition, int | None],
    latest: Mapping[TopicPartition, int | None],
    committed: Mapping[TopicPartition, int],
    found: Mapping[TopicPartition, int | None] | None = None,
) -> dict[TopicPartition, int]:
    """Each partition's new offset. ``found``: what ``list_offsets`` said of ``spec``'s time, where it asks one."""
    new: dict[TopicPartition, int] = {}
    for tp in sorted(partitions):
        start, end = earliest.get(tp) or 0, latest.get(tp) or 0

        def clamp(offset: int, start: int = start, end: int = end) -> int:
            return min(max(offset, start), end)

        if spec.kind == "earliest":
            new[tp] = start
        elif spec.kind == "latest":
            new[tp] = end
        elif spec.kind == "offset":
            new[tp] = clamp(spec.value)
        elif spec.kind == "shift":
            if tp not in committed:
                raise ResetError(f"cannot shift the offset of {tp}: the group has no committed offset for it")
            new[tp] = clamp(committed[tp] + spec.value)
        elif spec.kind == "time":
            at = (found or {}).get(tp)
            new[tp] = end if at is None else at
        elif spec.kind == "current":
            new[tp] = committed.get(tp, end)
        else:
            raise ResetError(f"unknown reset option {spec.kind!r}")
    return new
