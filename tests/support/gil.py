"""Whether a C function lets other threads run while it works: proof, not timing.

``run_beside`` calls the function again and again while another thread runs a probe: Python code that can tell the
call is in progress, which it can only see if it got the GIL during the call. ``exported`` is such a probe for a
function that reads a bytearray: it re-initialises the bytearray with its own contents, which the bytearray refuses
(``BufferError``, before it changes anything) only while a buffer of it is exported; ``bytearray.__init__`` empties
it first, so it does. When no buffer is held the re-initialisation succeeds (a C call running no Python code, so
no one sees the bytearray emptied) and leaves the same bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def exported(data: bytearray) -> Callable[[], bool]:
    """A probe: whether a buffer of ``data`` is held (by the call) right now."""
    contents = bytes(data)

    def probe() -> bool:
        try:
            data.__init__(contents)  # type: ignore[misc]
        except BufferError:
            return True
        return False

    return probe


def run_beside(call: Callable[[], T], probe: Callable[[], bool], attempts: int = 200) -> tuple[list[T], int]:
    """Calls ``call`` until another thread, running ``probe`` meanwhile, saw one of the calls in progress, or
    ``attempts`` calls were made: (every call's result, how many times the probe saw a call in progress). The probe
    runs only while a call is being made (it may also run just before or after one: it must then say False)."""
    calling = threading.Event()
    stop = threading.Event()
    seen = 0

    def other() -> None:
        nonlocal seen
        while not stop.is_set():
            if calling.is_set() and probe():
                seen += 1

    thread = threading.Thread(target=other, name="beside")
    thread.start()
    results: list[T] = []
    try:
        for _ in range(attempts):
            calling.set()
            results.append(call())
            calling.clear()
            if seen:
                break
    finally:
        calling.clear()
        stop.set()
        thread.join()
    return results, seen
