"""Whether a C function lets other threads run while it reads a buffer: proof, not timing.

Another thread keeps re-initialising the bytearray the function reads with that bytearray's own contents. A
bytearray refuses to be resized while a buffer of it is exported (``BufferError``, before it changes anything),
and ``bytearray.__init__`` empties it first: so the other thread sees ``BufferError`` only while the function holds
the buffer, and only if it got the GIL meanwhile. When no buffer is held the re-initialisation succeeds (a C call
that runs no Python code, so nothing sees the bytearray emptied) and leaves the same bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run_beside_python(call: Callable[[], T], data: bytearray, attempts: int = 200) -> tuple[list[T], int]:
    """Calls ``call`` (which reads ``data``) until another thread ran Python code during one of the calls, or
    ``attempts`` calls were made: (every call's result, how many times the other thread ran during a call)."""
    contents = bytes(data)
    calling = threading.Event()
    stop = threading.Event()
    ran_during = 0

    def other() -> None:
        nonlocal ran_during
        while not stop.is_set():
            if calling.is_set():
                try:
                    data.__init__(contents)  # type: ignore[misc]
                except BufferError:
                    ran_during += 1

    thread = threading.Thread(target=other, name="beside")
    thread.start()
    results: list[T] = []
    try:
        for _ in range(attempts):
            calling.set()
            results.append(call())
            calling.clear()
            if ran_during:
                break
    finally:
        calling.clear()
        stop.set()
        thread.join()
    assert bytes(data) == contents
    return results, ran_during
