"""Members in separate processes against the real broker (Tansu), one killed with SIGKILL: the broker waits for its
session, the survivors take over, and together they processed every record (at least once), none skipped; the only
duplicates are the killed member's. (A member killed while holding uncommitted records: ``test_group_faults.py``.)

Every member uses ``session_timeout_ms=6000`` (Tansu holds a join about half of it) and every wait is a condition
with a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import Broker, TopicFactory
from tests.support.groups import JOIN_TIMEOUT_S, SESSION_S, merge, new_group_id, pairs, union_by_partition
from tests.support.member_process import MemberProcess, group_view, one_generation_owns_all, settle_and_pick_victim
from tests.support.produce import ProducedRecord, ProduceHelper
from tests.support.waiting import wait_for_async

pytestmark = [pytest.mark.broker, pytest.mark.anyio]


async def test_a_killed_member_process_is_replaced_after_its_session_and_nothing_is_skipped(
    broker: Broker, topic: TopicFactory, produce: ProduceHelper, tmp_path: Path
) -> None:
    name = topic(6)
    before = produce.values(name, 600, 6)
    group_id = new_group_id()
    members = [MemberProcess(i, broker.bootstrap_servers, group_id, name, tmp_path) for i in range(3)]
    waves: list[dict[int, list[ProducedRecord]]] = [before]
    producing: asyncio.Task[None] | None = None
    try:
        generation, victim, survivors, victim_partitions = await settle_and_pick_victim(
            members, 6, timeout=2 * JOIN_TIMEOUT_S
        )

        async def keep_producing() -> None:  # 15 waves of 60 records (10 per partition), ~0.2 s apart
            for i in range(15):
                waves.append(await produce.values_async(name, 60, 6, start=600 + 60 * i))
                await asyncio.sleep(0.2)

        producing = asyncio.create_task(keep_producing())

        def victim_is_consuming_new_records() -> bool:
            victim.check_alive()
            return any(p in victim_partitions and o >= 100 for p, o, _ in victim.processed())

        await wait_for_async(
            victim_is_consuming_new_records, timeout=JOIN_TIMEOUT_S, message=lambda: group_view(members)
        )
        kill_time = time.time()
        victim.kill()
        await asyncio.wait_for(producing, 60)
        expected = merge(*waves)
        assert sum(len(offsets) for offsets in expected.values()) == 1500

        def survivors_took_over() -> bool:
            for m in survivors:
                m.check_alive()
            return one_generation_owns_all(survivors, 6, after=generation) is not None

        await wait_for_async(
            survivors_took_over, timeout=SESSION_S + 2 * JOIN_TIMEOUT_S, message=lambda: group_view(members)
        )
        takeover_s = time.time() - kill_time

        def everything_processed() -> bool:
            for m in survivors:
                m.check_alive()
            return pairs(expected) <= {(p, o) for m in members for p, o, _ in m.processed()}

        await wait_for_async(everything_processed, timeout=JOIN_TIMEOUT_S, message=lambda: group_view(members))
        for m in survivors:
            assert m.stop() == 0, f"member {m.index} did not close cleanly:\n{m.log_tail()}"
            assert m.lines()[-1]["kind"] == "closed"
    finally:
        if producing is not None and not producing.done():
            producing.cancel()
            await asyncio.gather(producing, return_exceptions=True)
        for m in members:
            m.kill()

    processings: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    for m in members:
        for p, o, t in m.processed():
            processings[(p, o)].append((m.index, t))
    # At least once, none skipped: per partition, the union of what the members processed is what was produced.
    assert union_by_partition(processings) == expected
    # Duplicates only from the kill: the victim processed it (and may not have committed it), then a survivor.
    duplicates = {key: sorted(seen, key=lambda s: s[1]) for key, seen in processings.items() if len(seen) > 1}
    for (p, o), seen in duplicates.items():
        first, *again = seen
        assert first[0] == victim.index and p in victim_partitions, f"{p}/{o} processed twice: {seen}"
        assert all(index != victim.index and t > kill_time for index, t in again), f"{p}/{o}: {seen}"
    commit_failures = [line for m in members for line in m.lines() if line["kind"] == "commit_failed"]
    print(
        f"\nkilled member {victim.index} owning {sorted(victim_partitions)}; survivors took over {takeover_s:.1f} s "
        f"later; {len(duplicates)} duplicate(s); commit failures: {commit_failures}"
    )
    assert takeover_s >= SESSION_S * 0.8  # no LeaveGroup from a killed process: the broker waited for its session
