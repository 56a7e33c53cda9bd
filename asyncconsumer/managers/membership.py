"""The membership contract: what the group wiring, the event processor and the published snapshot ask of a member,
whatever protocol its group speaks.

A kind of membership is a module with a ``build(context) -> Membership`` function: the classic protocol
(``group_classic.py``: JoinGroup/SyncGroup and heartbeats) and KIP-848's consumer protocol (``group_consumer.py``:
ConsumerGroupHeartbeat). ``_background/builder.py`` picks one by ``group_protocol``; nothing else knows which kind it
drives, so a new kind is its own files and one line in the builder. A share group's member is not such a kind: it
commits nothing and has no generation, listener or assignor, so ``share_membership.py`` stands on the manager
contract and the coordinator manager alone, in a share consumer's own wiring (``_background/share_builder.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol

import attrs

from asyncconsumer._state.subscription import SubscriptionState
from asyncconsumer.assignors import PartitionAssignor
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import KafkaError
from asyncconsumer.events.background import ErrorEvent
from asyncconsumer.managers.base import RequestManager
from asyncconsumer.managers.commit import Generation
from asyncconsumer.managers.coordinator import CoordinatorManager
from asyncconsumer.managers.metadata import MetadataManager
from asyncconsumer.managers.request_state import ExponentialBackoff
from asyncconsumer.records import GroupMembershipOperation, TopicPartition

ListenerCall = Callable[[str, frozenset[TopicPartition]], "Future[None]"]
"""``MembershipHost.call_listener``, as the membership managers take it."""


class MembershipManager(RequestManager, Protocol):
    """One member's life in its group: joining, the assignment it holds, rejoining, leaving.

    Every method runs on the background thread. Partitions reach the subscription state only through the context's
    ``apply_assignment``, and the caller's rebalance listener only through its ``listener``.
    """

    rebalances: int
    """Rebalances this member completed (metrics)."""
    rejoin_on_poll: bool
    """The member left because the caller stopped polling; the caller's next ``poll`` calls ``caller_polled``."""

    def generation(self) -> Generation:
        """What commits carry while the member is in the group, else ``NO_GENERATION``."""
        ...

    def subscribe(self) -> None:
        """The subscription began or changed: join, or tell the coordinator."""
        ...

    def leave(self, *, notify: bool = True) -> None:
        """Give the partitions up and leave (``notify=False``: the caller already ran its revoke callback)."""
        ...

    def caller_polled(self) -> None:
        """The caller's ``poll`` ran after ``rejoin_on_poll`` was set: join again."""
        ...

    def closing(self, operation: GroupMembershipOperation) -> None:
        """The consumer is closing with ``operation`` (KIP-1092): ``poll_on_close`` leaves, or remains, by it."""
        ...

    def request_rejoin(self, reason: str) -> None:
        """``enforce_rebalance()``: rejoin where the member decides rebalances, nothing where the coordinator does."""
        ...

    def fenced(self, error_code: int) -> None:
        """The coordinator no longer knows this member's generation or epoch (a heartbeat or a commit said so): its
        partitions are lost. They stop being fetched and handed out at once, and leave the assignment only after the
        caller's ``poll`` has run the lost-partitions callback; the member joins again after that."""
        ...


class HeartbeatManager(RequestManager, Protocol):
    """Keeps the member in its group, and leaves it for the member when the caller stops polling."""

    last_heartbeat_ms: int | None
    """When the last heartbeat was answered (metrics)."""

    def check_support(self, on_ok: Callable[[None], None], on_error: Callable[[KafkaError], None]) -> None:
        """What ``subscribe`` waits for: the brokers offer this protocol's API (``on_error`` names it if not)."""
        ...


class MembershipHost(Protocol):
    """What a membership asks of the consumer it belongs to (``_background/group.py`` answers), on the background
    thread: the ways back to the subscription state, the caller's listener and the caller's activity."""

    @property
    def pattern(self) -> re.Pattern[str] | None:
        """The pattern subscribed to, or None for explicit topics."""
        ...

    def apply_assignment(self, partitions: frozenset[TopicPartition]) -> None:
        """The member's partitions now: the subscription state takes them (new ones start from committed offsets)."""
        ...

    def call_listener(self, kind: str, partitions: frozenset[TopicPartition]) -> Future[None]:
        """Asks the caller's side to run ``on_partitions_<kind>`` (revoked, assigned, lost); done when it returned."""
        ...

    def report(self, event: ErrorEvent) -> None:
        """An error for the caller, raised by its next ``poll``."""
        ...

    def last_poll_ms(self) -> int | None:
        """When the caller last polled (read from the shared state)."""
        ...

    def supports_api(self, key: int) -> bool | None:
        """Whether the connected brokers offer an API key (None: no broker connected yet)."""
        ...


@attrs.define(frozen=True, slots=True, kw_only=True)
class MembershipContext:
    """What the group wiring hands a kind's ``build``: settings, the managers it shares, and its host."""

    config: ConsumerConfig
    group_id: str
    subscriptions: SubscriptionState
    metadata: MetadataManager
    coordinator: CoordinatorManager
    assignors: Sequence[PartitionAssignor]
    backoff: ExponentialBackoff
    host: MembershipHost


@attrs.define(frozen=True, slots=True, kw_only=True)
class Membership:
    """A kind of membership, built: its managers (polled in this order, after the coordinator and commit managers)
    and what the group wiring must know of it."""

    manager: MembershipManager
    heartbeat: HeartbeatManager
    coordinator_matches_patterns: bool
    """True: the coordinator matches a pattern subscription against topic names (KIP-848's server-side regular
    expressions); False: the member matches it on every metadata refresh."""
    member_epoch_in_offset_fetch: bool
    """OffsetFetch names the member and its epoch (KIP-848), so the coordinator can fence a stale member's read."""

    @property
    def managers(self) -> tuple[RequestManager, RequestManager]:
        return (self.manager, self.heartbeat)


MembershipBuilder = Callable[[MembershipContext], Membership]
