"""The rebalance listener users implement; its methods run on the caller's side, inside ``poll``."""

from __future__ import annotations

from collections.abc import Awaitable

from asyncconsumer.records import TopicPartition


class ConsumerRebalanceListener:
    """Subclass and override what you need; each method may be a plain function or ``async def``.

    The group waits for ``on_partitions_revoked`` before it rejoins, so committing there is safe (with auto-commit
    on, positions are committed just before it runs). ``on_partitions_lost`` replaces it when the group already
    gave the partitions away (this member was fenced): committing there would fail.
    """

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        return self.on_partitions_revoked(partitions)
