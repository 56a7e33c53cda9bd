"""Which received record may start now: records of one lane run one after another, in offset order, and lanes run
side by side.

A lane is a partition's key (``ordering="key"``), a partition (``"partition"``) or, with ``"none"``, a partition
whose records may all run at once. The scheduler holds the records that wait for their lane and the lanes ready to
start their next record, in the order they became ready; the driver bounds how many run at once. It does no I/O
and keeps no clock, so it is driven record by record in unit tests.

Every record is handed out with its ``Lane`` and given back with it (``done``): nothing is looked up or built per
record but the lane of its key, which is what lets a no-op handler run near the speed of a plain poll loop.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Hashable, Iterable

from asyncconsumer._caller.processing.progress import PartitionProgress
from asyncconsumer.records import ConsumerRecord, TopicPartition


class Ordering(enum.Enum):
    """What must not run concurrently."""

    KEY = "key"
    """Records of one key of one partition, one after another in offset order (a null key is a key too)."""
    PARTITION = "partition"
    """Records of one partition, one after another in offset order."""
    NONE = "none"
    """Anything, in any order."""


def lane_of(record: ConsumerRecord, ordering: Ordering) -> Hashable:
    """The lane ``record`` waits in: records of one lane never run at once (``"none"``: each record is its own)."""
    if ordering is Ordering.KEY:
        return (record.topic, record.partition, record.key)
    if ordering is Ordering.PARTITION:
        return (record.topic, record.partition)
    return (record.topic, record.partition, record.offset)


class PartitionQueue:
    """One partition's lanes, its load (records waiting, ``queued``, and running, ``started``), and the core's
    ``progress`` for it, reached from a record's lane without a lookup. It lives until the partition is revoked;
    records still running then keep it, detached, so what they finish reaches no later assignment's progress."""

    __slots__ = ("lanes", "progress", "queued", "started", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.lanes: dict[Hashable, Lane] = {}
        """Lanes with records waiting or one running, by key (``"partition"`` and ``"none"``: one, under None)."""
        self.queued = 0
        self.started = 0
        self.progress: PartitionProgress | None = None


STREAK = 32
"""Records of one lane a worker runs one after another (``finish_next``) before the lane goes back to the end of
the ready lanes: one handler call's bookkeeping instead of a hand-over per record, and a bound on how long lanes
ready behind it wait for a worker when every worker is busy."""


class Lane:
    """Records of one lane not started yet, in offset order; ``running`` while one of them runs; ``streak``: how
    many more of them the worker running it may take on (``finish_next``) before the lane's turn ends."""

    __slots__ = ("key", "partition", "records", "running", "streak")

    def __init__(self, partition: PartitionQueue, key: Hashable, streak: int) -> None:
        self.partition = partition
        self.key = key
        self.records: collections.deque[ConsumerRecord] = collections.deque()
        self.running = False
        self.streak = streak


class Scheduler:
    """Records waiting for their lane, lanes ready to run, and counts per partition (for backpressure)."""

    def __init__(self, ordering: Ordering) -> None:
        self.ordering = ordering
        self._exclusive = ordering is not Ordering.NONE
        """Whether a lane runs one record at a time (with ``"none"`` a lane is ready once per waiting record)."""
        self._streak = STREAK if self._exclusive else 0
        """What a lane's turn may take on after its first record (``"none"``: nothing, its records are each ready)."""
        self._partitions: dict[TopicPartition, PartitionQueue] = {}
        self._ready: collections.deque[Lane] = collections.deque()
        """Lanes whose next record may start, oldest first."""
        self._waiting = 0
        self._running = 0
        self.completed = 0
        """Records ``finish`` was told of."""

    @property
    def waiting(self) -> int:
        """Records received and not started."""
        return self._waiting

    @property
    def ready(self) -> int:
        """Records that may start now (one per lane, or every waiting one with ``"none"``)."""
        return len(self._ready)

    @property
    def running(self) -> int:
        """Records started and not done."""
        return self._running

    def load(self, partition: TopicPartition) -> int:
        """Records of ``partition`` waiting or running: what ``max_in_flight_per_partition`` bounds."""
        queue = self._partitions.get(partition)
        return 0 if queue is None else queue.queued + queue.started

    def partition(self, tp: TopicPartition) -> PartitionQueue:
        """``tp``'s queue, made on first use and kept until ``revoke``: ``add_all`` takes it."""
        queue = self._partitions.get(tp)
        if queue is None:
            queue = self._partitions[tp] = PartitionQueue(tp)
        return queue

    def add(self, record: ConsumerRecord) -> None:
        """A received record, after every earlier record of its partition."""
        self.add_all(self.partition(TopicPartition(record.topic, record.partition)), (record,))

    def add_all(self, queue: PartitionQueue, records: Iterable[ConsumerRecord]) -> None:
        """Received records of ``queue``'s partition, in offset order, after every earlier one."""
        lanes = queue.lanes
        ready = self._ready
        added = 0
        if self._exclusive:
            by_key = self.ordering is Ordering.KEY
            for record in records:
                key = record.key if by_key else None
                lane = lanes.get(key)
                if lane is None:
                    lane = lanes[key] = Lane(queue, key, self._streak)
                lane.records.append(record)
                added += 1
                if not lane.running and len(lane.records) == 1:
                    ready.append(lane)
        else:
            lane = lanes.get(None)
            if lane is None:
                lane = lanes[None] = Lane(queue, None, self._streak)
            for record in records:
                lane.records.append(record)
                ready.append(lane)
                added += 1
        self._waiting += added
        queue.queued += added

    def take_one(self) -> tuple[Lane, ConsumerRecord] | None:
        """A record that may start now, with its lane (for ``done``), or None; it counts as running until then."""
        if not self._ready:
            return None
        lane = self._ready.popleft()
        record = lane.records.popleft()
        lane.running = True
        queue = lane.partition
        queue.queued -= 1
        queue.started += 1
        self._waiting -= 1
        self._running += 1
        return lane, record

    def take(self, limit: int) -> list[tuple[Lane, ConsumerRecord]]:
        """Up to ``limit`` records that may start now, each from another lane (``"none"``: any), with their
        lanes."""
        started: list[tuple[Lane, ConsumerRecord]] = []
        while len(started) < limit:
            item = self.take_one()
            if item is None:
                break
            started.append(item)
        return started

    def take_run(self, limit: int) -> list[tuple[Lane, ConsumerRecord]]:
        """Up to ``limit`` waiting records of one lane, the oldest ready one, in offset order: a run that goes to
        one handler call (``process_transactionally``: one partition's records in one transaction). The lane runs
        until ``done_run``."""
        if not self._ready:
            return []
        lane = self._ready.popleft()
        records = lane.records
        count = min(limit, len(records)) if self._exclusive else 1
        taken = [(lane, records.popleft()) for _ in range(count)]
        lane.running = True
        queue = lane.partition
        queue.queued -= count
        queue.started += count
        self._waiting -= count
        self._running += count
        return taken

    def done_run(self, lane: Lane, count: int) -> None:
        """The run of ``count`` records ``take_run`` gave with ``lane`` finished, well or not."""
        self._end_turn(lane, count)

    def finish(self, lane: Lane, record: ConsumerRecord) -> None:
        """The record ``take_one`` gave with ``lane`` finished well: its partition's progress moves (unless the
        partition went meanwhile), ``completed`` counts it, and the lane's next record may start. ``complete`` and
        ``done`` in one call (``finish_next`` is the worker's, which may go on with the lane)."""
        progress = lane.partition.progress
        if progress is not None:
            progress.finished.append(record.offset)
        self.completed += 1
        self._end_turn(lane, 1)

    def finish_next(self, lane: Lane, record: ConsumerRecord) -> ConsumerRecord | None:
        """``finish``, then the lane's next record for the same worker, already counted as started, while the lane
        has one waiting and its ``streak`` lasts; else the lane's turn ends as in ``finish`` and None is returned.
        The path of every record of ``process``. A revoked partition's lanes hold no records, so its streaks end
        with the record running."""
        queue = lane.partition
        progress = queue.progress
        if progress is not None:
            progress.finished.append(record.offset)
        self.completed += 1
        records = lane.records
        if records and lane.streak:
            lane.streak -= 1
            queue.queued -= 1
            self._waiting -= 1
            return records.popleft()
        self._end_turn(lane, 1)
        return None

    def done(self, lane: Lane) -> None:
        """The record ``take`` gave with ``lane`` finished, well or not: the lane's next record may start."""
        self._end_turn(lane, 1)

    def _end_turn(self, lane: Lane, count: int) -> None:
        """``count`` records of ``lane`` stopped running: its next turn starts with a whole streak, behind the lanes
        ready now if it has records waiting, and a lane with none is forgotten."""
        lane.streak = self._streak
        queue = lane.partition
        queue.started -= count
        self._running -= count
        if self._exclusive:
            lane.running = False
            if lane.records:
                self._ready.append(lane)
            elif queue.lanes.get(lane.key) is lane:
                del queue.lanes[lane.key]

    def revoke(self, partitions: Iterable[TopicPartition]) -> list[ConsumerRecord]:
        """Drops the waiting records of ``partitions`` (they go to the next owner) and returns them, and detaches
        their queues: records running stay, for the driver to await, but count for no partition any more."""
        dropped: list[ConsumerRecord] = []
        gone: set[int] = set()
        for tp in partitions:
            queue = self._partitions.pop(tp, None)
            if queue is None:
                continue
            gone.add(id(queue))
            for lane in queue.lanes.values():
                dropped.extend(lane.records)
                lane.records.clear()
            queue.lanes.clear()
            self._waiting -= queue.queued
            queue.queued = 0
        if gone:
            self._ready = collections.deque(lane for lane in self._ready if id(lane.partition) not in gone)
        return dropped
