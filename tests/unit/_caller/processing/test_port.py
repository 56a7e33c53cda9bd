"""``process`` over a consumer's core with no broker answering: the port's ``poll`` runs the rebalance callbacks
(the hook's, awaited, before the listener's) and completes their events, raises ``WakeupError`` only when made
interruptible, and one run turns auto-commit off and installs the hook, both undone after. What reaches a broker
(commits, committed offsets, seeks) is in ``tests/integration/test_processing.py``."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest

from asyncconsumer import ConsumerRebalanceListener, TopicPartition, WakeupError
from asyncconsumer._caller.core import ConsumerCore
from asyncconsumer._caller.processing.core import ProcessingOptions
from asyncconsumer._caller.processing.port import ConsumerPort, GroupOffsets, driver_over, run_process
from asyncconsumer.config import ConsumerConfig
from asyncconsumer.events.background import RebalanceEvent
from asyncconsumer.records import ConsumerRecord
from tests.support.no_broker import REFUSED

pytestmark = pytest.mark.anyio

TP = TopicPartition("t", 0)


async def assigned_core(**settings: object) -> ConsumerCore:
    core = ConsumerCore(ConsumerConfig.from_kwargs(REFUSED, **settings))  # type: ignore[arg-type]
    await asyncio.wrap_future(core.assign([TP]))
    return core


async def close(core: ConsumerCore) -> None:
    future = core.close(1_000)
    if future is not None:
        await asyncio.wrap_future(future)
    await asyncio.to_thread(core.finish_close, 2.0)


class Calls(ConsumerRebalanceListener):
    def __init__(self, name: str, calls: list[str]) -> None:
        self.name = name
        self.calls = calls

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        await asyncio.sleep(0)  # awaited before the listener's runs
        self.calls.append(f"{self.name} revoked {sorted(p.partition for p in partitions)}")


async def test_poll_runs_the_hook_then_the_listener_and_completes_the_rebalance() -> None:
    core = await assigned_core(group_id="g")
    calls: list[str] = []
    core.rebalance_hook = Calls("hook", calls)
    core.listener = Calls("listener", calls)
    done: Future[None] = Future()
    core.parts.background_events.put(RebalanceEvent("revoked", frozenset([TP]), done))
    try:
        records = await ConsumerPort(core).poll(timeout_ms=0)
        assert len(records) == 0
        assert calls == ["hook revoked [0]", "listener revoked [0]"]
        assert done.done() and done.result() is None
    finally:
        await close(core)


async def test_only_an_interruptible_port_raises_after_wakeup() -> None:
    core = await assigned_core()
    try:
        core.wakeup()
        assert len(await ConsumerPort(core).poll(timeout_ms=0)) == 0  # AsyncConsumer's poll: no wakeup
        with pytest.raises(WakeupError):
            await ConsumerPort(core, interruptible=True).poll(timeout_ms=5_000)
    finally:
        await close(core)


async def test_a_run_turns_auto_commit_off_and_installs_the_hook_and_undoes_both() -> None:
    core = await assigned_core(group_id="g")

    async def handle(record: ConsumerRecord) -> None:
        pass

    driver = driver_over(core, handle, ProcessingOptions())
    seen: list[tuple[bool, bool]] = []

    async def watch() -> None:
        while core.rebalance_hook is None:
            await asyncio.sleep(0)
        seen.append((core.auto_commit, core.rebalance_hook is not None))
        driver.stop()

    try:
        await asyncio.wait_for(asyncio.gather(run_process(core, driver), watch()), 10)
        assert seen == [(False, True)]
        assert core.rebalance_hook is None and core.auto_commit is True  # enable_auto_commit's default
    finally:
        await close(core)


async def test_ready_runs_once_the_hook_is_installed_and_before_the_first_poll() -> None:
    # process_transactionally claims what is assigned in ``ready``: an assignment the background made before it
    # routed rebalances to the hook went by unheard, so ``ready`` must come after that, and before any record
    core = await assigned_core(group_id="g")
    polls: list[str] = []

    async def handle(record: ConsumerRecord) -> None:
        pass

    driver = driver_over(core, handle, ProcessingOptions())
    port = driver._consumer
    real_poll = port.poll

    async def poll(timeout_ms: float = 0, max_records: int | None = None) -> object:
        polls.append("poll")
        driver.stop()
        return await real_poll(timeout_ms, max_records)

    port.poll = poll  # type: ignore[method-assign]
    seen: list[tuple[bool, bool, int]] = []

    async def ready() -> None:
        seen.append((core.rebalance_hook is not None, core.auto_commit, len(polls)))

    try:
        await asyncio.wait_for(run_process(core, driver, None, ready), 10)
        assert seen == [(True, False, 0)] and polls == ["poll"]
    finally:
        await close(core)


async def test_the_driver_commits_to_the_group_only_when_there_is_one() -> None:
    async def handle(record: ConsumerRecord) -> None:
        pass

    with_group, without = await assigned_core(group_id="g"), await assigned_core()
    try:
        assert isinstance(driver_over(with_group, handle, ProcessingOptions())._sink, GroupOffsets)
        alone = driver_over(without, handle, ProcessingOptions())
        assert alone._sink is None and not alone.core.options.commits
    finally:
        await asyncio.gather(close(with_group), close(without))
