"""Background events: what the background thread tells the caller, drained inside every ``poll``."""

from __future__ import annotations

import attrs

from asyncconsumer.errors import KafkaError


@attrs.define(frozen=True, slots=True)
class ErrorEvent:
    """An error for the caller; ``poll`` raises the first one it finds."""

    error: KafkaError


BackgroundEvent = ErrorEvent
