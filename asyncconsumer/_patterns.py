"""Topic patterns as the group coordinator takes them: KIP-848's server-side regular expressions.

Used on both threads: ``subscribe(pattern=...)`` checks the pattern on the caller's (a flag the coordinator cannot be
told is a ``ConfigError`` at once), and the heartbeat sends it from the background.
"""

from __future__ import annotations

import re

from asyncconsumer.errors import ConfigError

_NO_EFFECT_ON_NAMES = re.UNICODE | re.MULTILINE | re.DOTALL
"""Flags that change nothing when a whole topic name (one line) is matched."""


def server_side_regex(pattern: re.Pattern[str]) -> str:
    """``pattern`` as the group coordinator gets it (RE2/J, the whole name must match): ``re.IGNORECASE`` becomes
    ``(?i)``; a flag RE2/J cannot carry is a ``ConfigError`` naming it."""
    flags = pattern.flags & ~_NO_EFFECT_ON_NAMES
    prefix = ""
    if flags & re.IGNORECASE:
        prefix, flags = "(?i)", flags & ~re.IGNORECASE
    if flags:
        names = "|".join(f"re.{flag.name}" for flag in re.RegexFlag if flag & flags and flag.name)
        raise ConfigError(
            "pattern",
            f"{names} cannot be sent to the group coordinator, which matches topics with RE2/J under "
            "group_protocol='consumer': write the pattern without it",
        )
    return prefix + pattern.pattern
