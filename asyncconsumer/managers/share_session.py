"""One share session (KIP-932) with one broker: its epoch and the partitions the broker holds in it.

Epoch 0 opens a session and names every partition; later requests name only partitions added (or carrying
acknowledgements) and list the ones to forget, each raising the epoch by one, wrapping to 1 after 2^31 - 1. ShareFetch
and ShareAcknowledge to the broker share the session, so one request at a time is in flight to it. A session error
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH) or a lost connection starts over at epoch 0. Acknowledgements
cannot ride on an epoch-0 request: the broker refuses them until the session is open.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from asyncconsumer.records import TopicPartition

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1


@attrs.define(frozen=True, slots=True)
class SessionRequest:
    """What the next request names: its epoch, the partitions to fetch, and those to forget."""

    epoch: int
    fetch: tuple[TopicPartition, ...]
    forget: tuple[TopicPartition, ...]


class ShareSession:
    """The client's side of one broker's share session."""

    __slots__ = ("_pending", "epoch", "partitions")

    def __init__(self) -> None:
        self.epoch = INITIAL_EPOCH
        self.partitions: frozenset[TopicPartition] = frozenset()
        """What the broker's session holds, as of the last successful request."""
        self._pending: frozenset[TopicPartition] | None = None
        """What it will hold once the request in flight succeeds."""

    @property
    def is_open(self) -> bool:
        return self.epoch > INITIAL_EPOCH

    def next_request(self, wanted: Iterable[TopicPartition], acked: Iterable[TopicPartition] = ()) -> SessionRequest:
        """The partitions for a ShareFetch: all of ``wanted`` when opening; else those new to the session and those
        carrying acknowledgements (``acked``), forgetting what is no longer wanted."""
        wanted_set = frozenset(wanted)
        if not self.is_open:
            self._pending = wanted_set
            return SessionRequest(self.epoch, tuple(sorted(wanted_set)), ())
        forget = self.partitions - wanted_set
        fetch = (wanted_set - self.partitions) | (frozenset(acked) & wanted_set)
        self._pending = wanted_set
        return SessionRequest(self.epoch, tuple(sorted(fetch)), tuple(sorted(forget)))

    def acknowledge_epoch(self) -> int:
        """The epoch for a ShareAcknowledge (the session must be open); the session's partitions do not change."""
        assert self.is_open
        self._pending = self.partitions
        return self.epoch

    def succeeded(self) -> None:
        """The request in flight was answered without a session error: the session holds what it named."""
        if self._pending is not None:
            self.partitions = self._pending
            self._pending = None
        self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        """The broker lost the session (or the connection dropped): the next request opens a new one."""
        self.epoch = INITIAL_EPOCH
        self.partitions = frozenset()
        self._pending = None
