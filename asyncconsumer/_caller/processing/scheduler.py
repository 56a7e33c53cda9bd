"""Which received record may start now: records of one lane run one after another, in offset order, and lanes run
side by side.

A lane is a partition's key (``ordering="key"``), a partition (``"partition"``) or the record itself (``"none"``).
The scheduler holds the records that wait for their lane and the lanes ready to start their next record, in the
order they became ready; the engine bounds how many run at once. It does no I/O and keeps no clock, so it is
driven record by record in unit tests.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Hashable, Iterable

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
    """The lane ``record`` waits in: records of one lane never run at once."""
    if ordering is Ordering.KEY:
        return (record.topic, record.partition, record.key)
    if ordering is Ordering.PARTITION:
        return (record.topic, record.partition)
    return (record.topic, record.partition, record.offset)


class Scheduler:
    """Records waiting for their lane, lanes ready to run, and counts per partition (for backpressure)."""

    def __init__(self, ordering: Ordering) -> None:
        self.ordering = ordering
        self._lanes: dict[Hashable, collections.deque[ConsumerRecord]] = {}
        """Each lane's records not started yet, in offset order; a lane is here while it has records or runs one."""
        self._running: set[Hashable] = set()
        self._ready: collections.deque[Hashable] = collections.deque()
        """Lanes whose next record may start, oldest first."""
        self._waiting = 0
        self._started: collections.Counter[TopicPartition] = collections.Counter()
        self._queued: collections.Counter[TopicPartition] = collections.Counter()

    @property
    def waiting(self) -> int:
        """Records received and not started."""
        return self._waiting

    @property
    def ready(self) -> int:
        """Lanes whose next record may start now."""
        return len(self._ready)

    @property
    def running(self) -> int:
        """Records started and not done."""
        return len(self._running)

    def load(self, partition: TopicPartition) -> int:
        """Records of ``partition`` waiting or running: what ``max_in_flight_per_partition`` bounds."""
        return self._started[partition] + self._queued[partition]

    def add(self, record: ConsumerRecord) -> None:
        """A received record, after every earlier record of its partition."""
        lane = lane_of(record, self.ordering)
        queue = self._lanes.get(lane)
        if queue is None:
            queue = self._lanes[lane] = collections.deque()
        queue.append(record)
        self._waiting += 1
        self._queued[TopicPartition(record.topic, record.partition)] += 1
        if len(queue) == 1 and lane not in self._running:
            self._ready.append(lane)

    def take(self, limit: int) -> list[ConsumerRecord]:
        """Up to ``limit`` records that may start now, each from another lane; they count as running until
        ``done``."""
        started: list[ConsumerRecord] = []
        while self._ready and len(started) < limit:
            lane = self._ready.popleft()
            record = self._lanes[lane].popleft()
            self._running.add(lane)
            self._waiting -= 1
            tp = TopicPartition(record.topic, record.partition)
            self._queued[tp] -= 1
            self._started[tp] += 1
            started.append(record)
        return started

    def done(self, record: ConsumerRecord) -> None:
        """``record`` (from ``take``) finished, well or not: its lane's next record may start."""
        lane = lane_of(record, self.ordering)
        self._running.remove(lane)
        tp = TopicPartition(record.topic, record.partition)
        self._started[tp] -= 1
        if not self._started[tp]:
            del self._started[tp]
        if self._lanes[lane]:
            self._ready.append(lane)
        else:
            del self._lanes[lane]

    def revoke(self, partitions: Iterable[TopicPartition]) -> list[ConsumerRecord]:
        """Drops the waiting records of ``partitions`` (they go to the next owner) and returns them; records running
        stay, for the engine to await."""
        gone = {(tp.topic, tp.partition) for tp in partitions}
        dropped: list[ConsumerRecord] = []
        for lane, queue in list(self._lanes.items()):
            if not queue or (queue[0].topic, queue[0].partition) not in gone:
                continue
            dropped.extend(queue)
            self._waiting -= len(queue)
            queue.clear()
            if lane not in self._running:
                del self._lanes[lane]
        for tp in partitions:
            self._queued.pop(tp, None)
        self._ready = collections.deque(lane for lane in self._ready if self._lanes.get(lane))
        return dropped
