"""A test that runs far past any of its own timeouts is hung: say where every thread and every asyncio task is, then
cancel the main thread's tasks so the test fails and the run goes on (a hung CI run shows nothing and blocks all).

Coroutines waiting on a future are in no thread's stack, so the tasks are found through the garbage collector and
their stacks read without touching their loop; only the cancellation goes through the loop, thread-safely.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import gc
import sys
import threading
from collections.abc import Iterator
from types import FrameType

HUNG_AFTER_S = 420.0
"""Longer than any test's own waits (the slowest settle in a few minutes); a test past it is hung."""


def _tasks() -> list[asyncio.Task[object]]:
    return [obj for obj in gc.get_objects() if isinstance(obj, asyncio.Task) and not obj.done()]


def _awaiting(coro: object) -> Iterator[FrameType]:
    """The frames of a coroutine and of everything it awaits in turn, outermost first."""
    seen = 0
    while coro is not None and seen < 100:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            yield frame
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        seen += 1


def report_and_cancel(test_id: str) -> None:
    """Writes every thread's and every pending task's stack to stderr; cancels the main thread's pending tasks."""
    out = sys.stderr
    out.write(f"\n!!! {test_id} still runs after {HUNG_AFTER_S:.0f} s: threads and asyncio tasks follow\n")
    faulthandler.dump_traceback(file=out, all_threads=True)
    main_id = threading.main_thread().ident
    for task in _tasks():
        out.write(f"--- {task!r}\n")
        for frame in _awaiting(task.get_coro()):
            out.write(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}\n")
        loop = task.get_loop()
        if getattr(loop, "_thread_id", None) == main_id:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
    out.flush()


@contextlib.contextmanager
def watching(test_id: str, after_s: float = HUNG_AFTER_S) -> Iterator[None]:
    """Runs the body under a timer that reports and unblocks a hung test."""
    timer = threading.Timer(after_s, report_and_cancel, args=(test_id,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
