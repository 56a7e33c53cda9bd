"""The state both threads share: assignment, positions, pauses and pending resets, behind one lock.

Two positions are kept per partition: ``position`` (the next record the caller will get; only the caller's
``poll`` advances it) and ``fetch_position`` (where the next fetch starts; only the fetch manager advances it).
``epoch`` changes on every seek or reset, so fetched data and fetches in flight from before it are recognised as
stale and dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import attrs

from asyncconsumer.errors import IllegalStateError
from asyncconsumer.records import TopicPartition

COMMITTED = "committed"
"""A reset strategy of our own: look the committed offset up first (group members), then ``auto_offset_reset``."""


@attrs.define(slots=True)
class PartitionState:
    """Mutable per-partition state; only touched under ``SubscriptionState``'s lock. Who writes each field:"""

    epoch: int = 0
    """Either thread, through a seek or a reset (the caller's seek, the background's reset answer)."""
    held_since: int = 0
    """Set once, when the partition enters the assignment (a number never used before): a commit made while the
    consumer held the partition is sent only while it still holds it, without a gap (``holdings``, ``still_holds``)."""
    position: int | None = None
    """The caller's ``poll`` (advance) and seeks/resets; the background reads it for commits and fetch decisions."""
    fetch_position: int | None = None
    """The background's fetch manager only (and seeks/resets, which set both positions)."""
    reset_strategy: str | None = None
    """Set by the caller (seek_to_*) or an assignment, cleared by the background when the reset answer lands."""
    paused: bool = False
    """Background, processing the caller's pause/resume events."""
    pending_revocation: bool = False
    """Background, as the group revokes the partition or the member loses it (before the rebalance listener runs):
    nothing more of it is fetched or returned until it leaves the assignment. A ``resume`` does not undo it (Java's
    ``markPendingRevocation``); only an assignment that keeps the partition does."""
    awaiting_listener: bool = False
    """Set by the background as the group assigns the partition to a consumer with a rebalance listener, cleared on
    the caller's side once ``on_partitions_assigned`` ran: not fetched meanwhile, so a listener that seeks wastes
    no fetch (Java's ``pendingOnAssignedCallback``). Its position is looked up meanwhile all the same."""
    high_watermark: int | None = None
    """Background (each fetch answer); read by the caller for lag and ``highwater``."""
    last_stable_offset: int | None = None
    """Background (each fetch answer); read by the caller under ``read_committed``."""
    log_start_offset: int | None = None
    """Background (each fetch answer)."""
    fetch_size_override: int | None = None
    """Background only: set when a batch larger than ``max_partition_fetch_bytes`` must still be fetched whole."""
    leader_epoch: int | None = None
    """Background: the partition leader's epoch the fetch position was last fetched or validated under (Java's
    ``FetchPosition.currentLeader``); a newer epoch in the metadata means a new leader to validate against."""
    fetched_epoch: int | None = None
    """Background: the leader epoch of the last batch fetched (the one before ``fetch_position``); None when
    nothing was fetched since the position was set, or the batch had none (legacy records)."""
    validating: int | None = None
    """Background: the leader epoch the fetch position awaits validation against (KIP-320); the partition is not
    fetched meanwhile. Cleared by the validation's answer or any seek or reset."""

    def moved(self, epoch: int, offset: int | None) -> None:
        """A seek or reset: both positions to ``offset`` under a new ``epoch``; what was known of the old position
        (fetched data, leader epochs, a validation under way) no longer applies."""
        self.epoch = epoch
        self.position = self.fetch_position = offset
        self.leader_epoch = self.fetched_epoch = self.validating = None


class SubscriptionState:
    """Assignment and positions, shared by the caller and the background thread."""

    def __init__(self, default_reset_strategy: str) -> None:
        self._lock = threading.Lock()
        """Guards every field; held for a few lines by either thread, never across a callback or I/O."""
        self._default_reset = default_reset_strategy
        self._partitions: dict[TopicPartition, PartitionState] = {}
        """Replaced (never mutated in place) by the background when it applies an assignment; both threads read."""
        self._epoch_counter = 0
        self._subscribed: frozenset[str] | None = None
        """Background (processing subscribe/unsubscribe events and pattern matches); the caller reads it."""
        self._any_paused = False
        self.assignment_version = 0
        """Bumped by the background whenever the assignment changes, so managers can drop per-assignment
        bookkeeping; read by plugins (background) and the caller."""

    def _next_epoch(self) -> int:
        self._epoch_counter += 1
        return self._epoch_counter

    # --- assignment -----------------------------------------------------------------------------------------
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Replaces the manual assignment; kept partitions keep their positions, new ones await a reset."""
        wanted = set(partitions)
        with self._lock:
            if self._subscribed is not None:
                raise IllegalStateError("assign() cannot be mixed with subscribe(): call unsubscribe() first")
            kept = {tp: st for tp, st in self._partitions.items() if tp in wanted}
            for tp in wanted - kept.keys():
                epoch = self._next_epoch()
                kept[tp] = PartitionState(epoch=epoch, held_since=epoch, reset_strategy=self._default_reset)
            self._partitions = kept
            self.assignment_version += 1

    # --- group subscription --------------------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str]) -> None:
        with self._lock:
            if self._subscribed is None and self._partitions:
                raise IllegalStateError("subscribe() cannot be mixed with assign(): call unsubscribe() first")
            self._subscribed = frozenset(topics)

    def unsubscribe(self) -> None:
        with self._lock:
            self._subscribed = None
            self._partitions = {}
            self.assignment_version += 1

    @property
    def subscription(self) -> frozenset[str] | None:
        """The subscribed topics, or None when the consumer is not subscribed."""
        return self._subscribed

    def assign_from_group(self, partitions: Iterable[TopicPartition]) -> None:
        """The group's assignment; new partitions start from their committed offsets (looked up first)."""
        wanted = set(partitions)
        with self._lock:
            kept = {tp: st for tp, st in self._partitions.items() if tp in wanted}
            for st in kept.values():
                st.pending_revocation = False  # the group gave it back
            for tp in wanted - kept.keys():
                epoch = self._next_epoch()
                kept[tp] = PartitionState(epoch=epoch, held_since=epoch, reset_strategy=COMMITTED)
            self._partitions = kept
            self.assignment_version += 1

    def set_awaiting_listener(self, partitions: Iterable[TopicPartition], awaiting: bool) -> None:
        """``partitions`` are not fetched while ``awaiting``: set by the background as the group assigns them, cleared
        by the caller once ``on_partitions_assigned`` returned (or raised)."""
        with self._lock:
            for tp in partitions:
                state = self._partitions.get(tp)
                if state is not None:
                    state.awaiting_listener = awaiting

    def partitions_awaiting_committed(self) -> dict[TopicPartition, int]:
        """{tp: epoch} for partitions whose committed offset has to be looked up before fetching."""
        with self._lock:
            return {
                tp: st.epoch
                for tp, st in self._partitions.items()
                if st.position is None and st.reset_strategy == COMMITTED
            }

    def use_default_reset(self, tp: TopicPartition, epoch: int) -> None:
        """Nothing committed for ``tp``: fall back to ``auto_offset_reset``."""
        with self._lock:
            state = self._partitions.get(tp)
            if state is not None and state.epoch == epoch and state.position is None:
                state.reset_strategy = self._default_reset

    def consumed_positions(self) -> dict[TopicPartition, int]:
        """The position of every assigned partition that has one (what auto-commit commits)."""
        with self._lock:
            return {tp: st.position for tp, st in self._partitions.items() if st.position is not None}

    def holdings(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """{tp: held_since} for those of ``partitions`` assigned now: what a commit made now is made under."""
        with self._lock:
            return {tp: st.held_since for tp in partitions if (st := self._partitions.get(tp)) is not None}

    def still_holds(self, holdings: dict[TopicPartition, int]) -> bool:
        """Whether every partition of ``holdings`` stayed assigned since then, without a gap: once the group gave a
        partition to another member, no commit made before may land (a revocation under way still may commit)."""
        with self._lock:
            for tp, since in holdings.items():
                st = self._partitions.get(tp)
                if st is None or st.held_since != since:
                    return False
            return True

    def assigned(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._partitions)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._partitions

    def topics(self) -> set[str]:
        with self._lock:
            return {tp.topic for tp in self._partitions}

    def _state(self, tp: TopicPartition) -> PartitionState:
        state = self._partitions.get(tp)
        if state is None:
            raise IllegalStateError(f"partition {tp} is not assigned to this consumer")
        return state

    def require_assigned(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                self._state(tp)

    # --- positions -----------------------------------------------------------------------------------------
    def seek(self, tp: TopicPartition, offset: int) -> None:
        with self._lock:
            state = self._state(tp)
            state.moved(self._next_epoch(), offset)
            state.reset_strategy = None

    def request_reset(self, partitions: Iterable[TopicPartition], strategy: str) -> None:
        """Forgets the positions of ``partitions``; the offsets manager looks them up with ``strategy``."""
        with self._lock:
            for tp in partitions:
                state = self._state(tp)
                state.moved(self._next_epoch(), None)
                state.reset_strategy = strategy

    def reset_if_unchanged(self, tp: TopicPartition, epoch: int, strategy: str) -> bool:
        """Requests a reset unless the partition was sought or reset since ``epoch`` (e.g. out of range)."""
        with self._lock:
            state = self._partitions.get(tp)
            if state is None or state.epoch != epoch:
                return False
            state.moved(self._next_epoch(), None)
            state.reset_strategy = strategy
            return True

    def partitions_awaiting_reset(self) -> dict[TopicPartition, tuple[str, int]]:
        """{tp: (strategy, epoch)} for partitions without a position."""
        with self._lock:
            return {
                tp: (st.reset_strategy, st.epoch)
                for tp, st in self._partitions.items()
                if st.position is None and st.reset_strategy is not None
            }

    def complete_reset(self, tp: TopicPartition, epoch: int, offset: int) -> bool:
        """Sets the position found by a reset, unless something changed the partition meanwhile."""
        with self._lock:
            state = self._partitions.get(tp)
            if state is None or state.epoch != epoch or state.position is not None:
                return False
            state.moved(epoch, offset)
            state.reset_strategy = None
            return True

    def position(self, tp: TopicPartition) -> int | None:
        with self._lock:
            return self._state(tp).position

    def epoch(self, tp: TopicPartition) -> int | None:
        state = self._partitions.get(tp)
        return None if state is None else state.epoch

    def advance(self, tp: TopicPartition, epoch: int, position: int) -> bool:
        """The caller consumed up to ``position``; ignored if the partition was sought since ``epoch``."""
        with self._lock:
            state = self._partitions.get(tp)
            if state is None or state.epoch != epoch:
                return False
            state.position = position
            return True

    def missing_positions(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        with self._lock:
            return [tp for tp in partitions if self._state(tp).position is None]

    def without_position_and_no_reset(self) -> list[TopicPartition]:
        """Partitions that have no position and whose reset strategy is 'none' (the caller must seek)."""
        with self._lock:
            return [tp for tp, st in self._partitions.items() if st.position is None and st.reset_strategy == "none"]

    # --- fetching ------------------------------------------------------------------------------------------
    def fetchable(self) -> list[tuple[TopicPartition, int, int, int | None]]:
        """(tp, fetch position, epoch, fetch size override) for every partition that may be fetched now."""
        with self._lock:
            return [
                (tp, st.fetch_position, st.epoch, st.fetch_size_override)
                for tp, st in self._partitions.items()
                if st.fetch_position is not None
                and not st.paused
                and not st.pending_revocation
                and not st.awaiting_listener
                and st.validating is None
            ]

    def fetched(
        self,
        tp: TopicPartition,
        epoch: int,
        fetch_offset: int,
        next_fetch_offset: int | None,
        high_watermark: int,
        last_stable_offset: int,
        log_start_offset: int,
        leader_epoch: int | None = None,
        batch_epoch: int = -1,
    ) -> bool:
        """Records a fetch response (sent under the leader's ``leader_epoch``; its last batch written under
        ``batch_epoch``); False (and nothing changed) if it is stale, including while the position awaits
        validation against a newer leader: what the old one sent is fetched again once validated."""
        with self._lock:
            state = self._partitions.get(tp)
            if (
                state is None
                or state.epoch != epoch
                or state.fetch_position != fetch_offset
                or state.validating is not None
            ):
                return False
            if leader_epoch is not None and (state.leader_epoch is None or leader_epoch > state.leader_epoch):
                state.leader_epoch = leader_epoch
            if next_fetch_offset is not None:
                state.fetch_position = next_fetch_offset
                state.fetch_size_override = None
                state.fetched_epoch = batch_epoch if batch_epoch >= 0 else None
            state.high_watermark = high_watermark
            if last_stable_offset >= 0:
                state.last_stable_offset = last_stable_offset
            if log_start_offset >= 0:
                state.log_start_offset = log_start_offset
            return True

    def grow_fetch_size(self, tp: TopicPartition, epoch: int, size: int) -> None:
        with self._lock:
            state = self._partitions.get(tp)
            if state is not None and state.epoch == epoch:
                state.fetch_size_override = size

    def high_watermark(self, tp: TopicPartition) -> int | None:
        with self._lock:
            return self._state(tp).high_watermark

    def last_stable_offset(self, tp: TopicPartition) -> int | None:
        with self._lock:
            return self._state(tp).last_stable_offset

    # --- leader epochs and log truncation (KIP-320) ---------------------------------------------------------
    def begin_validation(self, tp: TopicPartition, epoch: int, leader_epoch: int) -> bool:
        """The metadata names ``leader_epoch`` as the partition's leader epoch: True (and the partition stops being
        fetched) when that is a newer leader than the one the fetch position was fetched from, so the position
        must be validated first; False when there is nothing to validate (nothing fetched yet: the epoch is
        simply noted)."""
        with self._lock:
            state = self._partitions.get(tp)
            if state is None or state.epoch != epoch:
                return False
            if state.validating is not None:
                if leader_epoch <= state.validating:
                    return False
                state.validating = leader_epoch  # the leader moved again before the validation's answer
                return True
            if state.leader_epoch is None or state.fetched_epoch is None:
                if state.leader_epoch is None or leader_epoch > state.leader_epoch:
                    state.leader_epoch = leader_epoch
                return False
            if leader_epoch <= state.leader_epoch:
                return False
            state.validating = leader_epoch
            return True

    def awaiting_validation(self) -> dict[TopicPartition, tuple[int, int, int, int]]:
        """{tp: (epoch, leader epoch to validate against, leader epoch of the last fetched batch, fetch position)}."""
        with self._lock:
            return {
                tp: (st.epoch, st.validating, st.fetched_epoch, st.fetch_position)
                for tp, st in self._partitions.items()
                if st.validating is not None and st.fetched_epoch is not None and st.fetch_position is not None
            }

    def complete_validation(self, tp: TopicPartition, epoch: int, leader_epoch: int) -> bool:
        """The new leader still holds everything fetched: fetch on from the same position."""
        with self._lock:
            state = self._partitions.get(tp)
            if state is None or state.epoch != epoch or state.validating != leader_epoch:
                return False
            state.validating = None
            state.leader_epoch = leader_epoch
            return True

    def truncated(
        self, tp: TopicPartition, epoch: int, leader_epoch: int, divergent_offset: int, reset: bool
    ) -> tuple[str, int | None]:
        """The new leader's log diverges at ``divergent_offset``, before the fetch position. Returns what was done
        and the caller's position then:

        - ``"refetch"``: the caller has not consumed past it; fetched data beyond the position is dropped and
          fetched again from the new leader (nothing lost, nothing seen twice);
        - ``"reset"`` (``reset``): the caller consumed records the new leader no longer has; the position moves
          back to ``divergent_offset``, as Java's consumer does with a reset policy, so nothing newer is skipped;
        - ``"fatal"`` (no reset policy): the partition stays unfetched until the caller seeks;
        - ``"stale"``: the partition was sought, reset or unassigned meanwhile.
        """
        with self._lock:
            state = self._partitions.get(tp)
            if state is None or state.epoch != epoch or state.validating != leader_epoch or state.position is None:
                return "stale", None
            position = state.position
            if position <= divergent_offset:
                state.moved(self._next_epoch(), position)
                state.leader_epoch = leader_epoch
                return "refetch", position
            if reset:
                state.moved(self._next_epoch(), divergent_offset)
                state.leader_epoch = leader_epoch
                return "reset", position
            return "fatal", position

    # --- pausing ------------------------------------------------------------------------------------------
    def set_paused(self, partitions: Iterable[TopicPartition], paused: bool) -> None:
        with self._lock:
            states = [self._state(tp) for tp in partitions]
            for state in states:
                state.paused = paused
            self._any_paused = paused or any(st.paused for st in self._partitions.values())

    def mark_pending_revocation(self, partitions: Iterable[TopicPartition]) -> None:
        """The group is revoking these, or they were lost (those still assigned): they are no longer fetched or
        returned, and they leave the assignment once the caller's ``poll`` has run its listener."""
        with self._lock:
            for tp in partitions:
                state = self._partitions.get(tp)
                if state is not None:
                    state.pending_revocation = True

    def any_paused(self) -> bool:
        """Whether any partition may be paused: a flag (the fetch manager asks each round), at worst set after the
        paused partitions left the assignment."""
        return self._any_paused

    def paused_behind(self) -> list[TopicPartition]:
        """Paused partitions whose fetch position is below the high watermark last fetched: records wait there."""
        with self._lock:
            return [
                tp
                for tp, st in self._partitions.items()
                if st.paused
                and not st.pending_revocation
                and st.fetch_position is not None
                and st.high_watermark is not None
                and st.fetch_position < st.high_watermark
            ]

    def is_paused(self, tp: TopicPartition) -> bool:
        """Paused by the caller and not being revoked: what was fetched for it is kept for its resume."""
        state = self._partitions.get(tp)
        return state is not None and state.paused and not state.pending_revocation

    def is_withheld(self, tp: TopicPartition) -> bool:
        """Paused by the caller, or being revoked: its buffered records are not returned."""
        state = self._partitions.get(tp)
        return state is not None and (state.paused or state.pending_revocation)

    def paused(self) -> set[TopicPartition]:
        with self._lock:
            return {tp for tp, st in self._partitions.items() if st.paused}
