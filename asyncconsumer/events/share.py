"""Application events of a share consumer (KIP-932): what its caller asks of the background thread."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from asyncconsumer.events.application import ApplicationEvent
from asyncconsumer.records import TopicPartition


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareSubscribeEvent(ApplicationEvent):
    """Join the share group for ``topics`` (replacing the subscription). Completes with ``None`` at once."""

    topics: frozenset[str]

    def describe(self) -> str:
        return f"subscribe({sorted(self.topics)})"


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareUnsubscribeEvent(ApplicationEvent):
    """Leave the share group. Completes with ``None`` once the leave is sent (or at once if never joined)."""

    def describe(self) -> str:
        return "unsubscribe()"


@attrs.define(frozen=True, slots=True, kw_only=True)
class ShareAcknowledgeEvent(ApplicationEvent):
    """Acknowledgements (partition -> offset -> type). Without ``commit`` they ride on the next fetch and the event
    completes at once; with it they go now and the event completes with each partition's error or ``None``."""

    acks: Mapping[TopicPartition, Mapping[int, int]]
    commit: bool
    poll: int = 0
    """The caller's ``poll`` (``ShareDemand.polls``) these were made before, 0 if none: that poll's fetch waits for
    them and carries them, whichever of the two the background sees first."""

    def describe(self) -> str:
        return "the commit of acknowledgements" if self.commit else "acknowledge()"
