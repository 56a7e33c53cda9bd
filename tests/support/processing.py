"""``process`` in a group that rebalances under it, shared by the classic-protocol tests (``test_processing.py``,
eager and cooperative, on both brokers) and the KIP-848 one (``test_kip848_kafka.py``, Apache Kafka only).

:func:`rebalance_while_processing`: member a processes a backlog alone, member b joins while a is busy (a revokes
with records running and waiting), then a stops and leaves while b is busy (b takes a's partitions, and under the
eager protocol first revokes its own, with records running). Both members run on this event loop and each handler
call is timed on one clock, so a record handled by both members at once would show as overlapping spans.

There are as many keys as workers (``KEYS == CONCURRENCY``): with key ordering each key is a lane, so every lane of
a partition with a backlog has a record running at any moment, and a revocation always finds some to await. (With
more keys than workers the workers may all be on other partitions, and a revocation finds nothing running.)
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from asyncconsumer import AsyncConsumer, ConsumerRecord
from asyncconsumer._caller.processing import driver
from asyncconsumer._logs import Logger
from tests.support.groups import RecordingListener, all_partitions, describe
from tests.support.produce import ProduceHelper
from tests.support.waiting import wait_for_async

PARTITIONS = 4
RECORDS = 12_000
CONCURRENCY = 20
KEYS = CONCURRENCY
HANDLER_S = 0.05
"""A handler's time until b holds every partition: 400 records a second per member, so that a has plenty left when
b has joined, and b when a has left, however long the rebalances take; then none, to get the rest done quickly."""

Span = tuple[str, float, float]


class _RevocationLog(Logger):
    """The driver's logger, also keeping each ``processing.revoked`` event's fields by the task that logged it (the
    task running that member's ``process``: the hook runs inside its ``poll``)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.revoked: list[tuple[asyncio.Task[Any] | None, dict[str, Any]]] = []

    def info(self, event: str, **kw: Any) -> None:
        if event == "processing.revoked":
            self.revoked.append((asyncio.current_task(), kw))
        super().info(event, **kw)


async def rebalance_while_processing(
    bootstrap: str,
    name: str,
    produce: ProduceHelper,
    monkeypatch: pytest.MonkeyPatch,
    *,
    incremental: bool,
    settings: dict[str, Any],
) -> None:
    """Runs the scenario on ``name`` (a topic of ``PARTITIONS`` partitions, empty) with both members made with
    ``settings``, and asserts:

    - nothing lost, no record handled by both members at once, and none handled twice (each revocation committed
      what finished, with its metadata, before the partitions moved);
    - no partition lost by either member (no member was fenced, which alone would excuse an overlap);
    - the rebalances happened while processing: a's revocation when b joined, and under the eager protocol b's
      when a left, found records running on the revoked partitions (and awaited them);
    - the protocol's kind of revocation: ``incremental`` (cooperative, KIP-848) revokes only what moves to b, never
      all of a's partitions, and nothing of b's when a leaves; eager revokes everything a member holds.
    """
    log = _RevocationLog("asyncconsumer.processing")
    monkeypatch.setattr(driver, "log", log)
    await produce.values_async(name, RECORDS, PARTITIONS, key=lambda i: b"k%d" % (i % KEYS), value_size=8)
    group = f"process-rebalance-{uuid.uuid4().hex[:8]}"
    spans: dict[tuple[int, int], list[Span]] = {}
    pace = [HANDLER_S]
    listeners = {"a": RecordingListener(), "b": RecordingListener()}
    everything = all_partitions(name, PARTITIONS)

    def member() -> AsyncConsumer:
        return AsyncConsumer(bootstrap, group_id=group, auto_offset_reset="earliest", **settings)

    def launch(label: str, consumer: AsyncConsumer) -> asyncio.Task[None]:
        async def handle(record: ConsumerRecord) -> None:
            begun = time.monotonic()
            await asyncio.sleep(pace[0])
            spans.setdefault((record.partition, record.offset), []).append((label, begun, time.monotonic()))

        async def run() -> None:
            await consumer.subscribe([name], listener=listeners[label])
            await consumer.process(handle, concurrency=CONCURRENCY)

        return asyncio.ensure_future(run())

    a, b = member(), member()
    runs: dict[str, asyncio.Task[None]] = {}

    def check_runs() -> None:
        """A ``process`` that ended early raises here, not as a timeout later."""
        for run in runs.values():
            if run.done() and (run.cancelled() or run.exception() is not None):
                run.result()

    def handled() -> int:
        check_runs()
        return len(spans)

    def by(label: str) -> int:
        check_runs()
        return sum(1 for calls in spans.values() for call in calls if call[0] == label)

    def shared() -> bool:
        held_a, held_b = a.assignment(), b.assignment()
        return bool(held_a) and bool(held_b) and not held_a & held_b and held_a | held_b == everything

    def revocations(label: str) -> list[dict[str, Any]]:
        """What the engine of ``label`` logged at each revocation of some partitions, in order."""
        return [fields for task, fields in log.revoked if task is runs.get(label) and fields["partitions"]]

    try:
        runs["a"] = launch("a", a)
        await wait_for_async(lambda: handled() >= 500, 60, message=lambda: f"member a handled {len(spans)}")
        a_before_b = len(listeners["a"].events)
        a_engine_before_b = len(revocations("a"))
        runs["b"] = launch("b", b)
        await wait_for_async(lambda: by("b") > 0, 60, message=lambda: f"b got nothing; a saw {listeners['a'].events}")
        await wait_for_async(
            shared, 60, message=lambda: f"a holds {describe(a.assignment())}, b {describe(b.assignment())}"
        )
        a_revoked_for_b = [r for r in listeners["a"].of("revoked", a_before_b) if r]
        a_engine_revoked = revocations("a")[a_engine_before_b:]
        b_held = frozenset(b.assignment())
        assert len(spans) < RECORDS, "a finished everything before b joined: no rebalance while processing"
        a.stop_processing()
        await asyncio.wait_for(runs["a"], 60)
        b_before_a_left = len(listeners["b"].events)
        b_engine_before_a_left = len(revocations("b"))
        await a.close()  # leaves the group: b takes everything
        await wait_for_async(lambda: b.assignment() == everything, 60, message=lambda: str(listeners["b"].events))
        assert len(spans) < RECORDS, "b finished everything before a left: no rebalance while processing"
        pace[0] = 0.0  # the rebalances are over: the rest as fast as the handler goes
        await wait_for_async(
            lambda: handled() == RECORDS, 120, message=lambda: f"{len(spans)} records handled of {RECORDS}"
        )
        b_revoked_for_a = [r for r in listeners["b"].of("revoked", b_before_a_left) if r]
        b_engine_revoked = revocations("b")[b_engine_before_a_left:]
        b.stop_processing()
        await asyncio.wait_for(runs["b"], 60)
    finally:
        for run in runs.values():
            run.cancel()
        await asyncio.gather(*runs.values(), return_exceptions=True)
        await asyncio.gather(a.close(), b.close())

    assert len(spans) == RECORDS  # nothing lost
    for calls in spans.values():
        for i, (label, begun, ended) in enumerate(calls):
            for other, other_begun, other_ended in calls[i + 1 :]:
                assert not (begun < other_ended and other_begun < ended), (label, other)  # never at once
    repeated = {key: calls for key, calls in spans.items() if len(calls) > 1}
    assert repeated == {}  # revocation commits what finished (with its metadata) before the partitions move

    a_events, b_events = listeners["a"], listeners["b"]
    assert a_events.of("lost") == [] and b_events.of("lost") == [], (a_events.events, b_events.events)
    assert a_revoked_for_b, f"a revoked nothing when b joined: {a_events.nonempty()}"
    # The engine heard a's revocation inside poll with records of the revoked partitions running, and awaited them.
    assert a_engine_revoked and a_engine_revoked[0]["running"] > 0, a_engine_revoked
    if incremental:
        assert all(r < everything for r in a_revoked_for_b), a_events.nonempty()
        assert frozenset().union(*a_revoked_for_b) == b_held, (a_events.nonempty(), describe(b_held))
        assert b_revoked_for_a == [], b_events.nonempty()
        assert b_engine_revoked == [], b_engine_revoked
    else:
        assert a_revoked_for_b[0] == everything, a_events.nonempty()
        assert b_revoked_for_a and b_revoked_for_a[0] == b_held, (b_events.nonempty(), describe(b_held))
        assert b_engine_revoked and b_engine_revoked[0]["running"] > 0, b_engine_revoked
