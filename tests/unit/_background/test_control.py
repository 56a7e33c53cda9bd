"""The loop's handle (``_background/control.py``): made before the thread, asked for passes and the close, and waking
the loop it is bound to, once per burst."""

from __future__ import annotations

import asyncio
import threading

from asyncconsumer._background.control import LoopControl
from asyncconsumer.events.application import CloseEvent


def test_a_pass_asked_for_during_a_pass_is_seen_after_it_and_forgotten_when_the_next_begins() -> None:
    control = LoopControl()
    control.poll_again()
    control.begin_pass()
    assert not control.again  # what was handed over before the pass, the pass sees
    control.poll_again()
    assert control.again
    control.begin_pass()
    assert not control.again


def test_the_close_is_held_for_the_loop() -> None:
    control = LoopControl()
    assert control.close_event is None
    event = CloseEvent(deadline_ms=10)
    control.request_close(event)
    assert control.close_event is event


def test_wakeups_before_the_loop_runs_do_nothing_and_a_burst_costs_one_hop() -> None:
    control = LoopControl()
    control.wakeup()  # no loop yet: nothing to wake, nothing raised
    woken: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        control.bind(loop, lambda: woken.append(threading.current_thread().name))
        burst = [threading.Thread(target=control.wakeup, name=f"caller-{i}") for i in range(5)]
        for thread in burst:
            thread.start()
        for thread in burst:
            thread.join()
        for _ in range(3):
            await asyncio.sleep(0)  # the loop runs what was scheduled
        assert woken == [threading.current_thread().name]  # once, on the loop's own thread
        control.wakeup()
        for _ in range(3):
            await asyncio.sleep(0)
        assert len(woken) == 2  # the next wake-up after it was served goes through again

    asyncio.run(main())
