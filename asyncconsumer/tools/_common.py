"""What every command of the ``asyncconsumer`` command shares: the exit statuses, the usage error, a line to
stdout or stderr, the progress line (and the plain line off a terminal), Ctrl-C as a stop, and the ``--property``
settings."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Callable
from typing import TextIO

from asyncconsumer.config import canonical_key

EXIT_ERROR = 1
EXIT_NOT_FOUND = 2
EXIT_INTERRUPTED = 130


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class UsageError(Exception):
    """A command line that cannot work; exits 2 with its message."""


class Progress:
    """A one-line progress display on a terminal: ``\r``-rewritten at most every ``interval_s``, cleared at the end.

    When ``stream`` is not a TTY, pipes and files get no control characters: only the first connection failure
    ``waiting`` is told of, as one plain line (with when the command gives up, ``timeout_ms``, if the wait is
    bounded).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        interval_s: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        timeout_ms: int | None = None,
    ) -> None:
        self._stream = stream
        self._enabled = stream.isatty()
        self._interval_s = interval_s
        self._clock = clock
        self._timeout_ms = timeout_ms
        self._started = clock()
        self._shown_at = float("-inf")
        self._shown = False
        self._failure_told = False

    def update(self, count: int, total: int | None = None, *, force: bool = False) -> None:
        if not self._enabled:
            return
        now = self._clock()
        if not force and now - self._shown_at < self._interval_s:
            return
        self._shown_at = now
        elapsed = max(now - self._started, 1e-9)
        done = f"{count:,}" if total is None else f"{count:,}/{total:,} ({100 * count / max(total, 1):.0f}%)"
        self._stream.write(f"\r\x1b[K  {done} records  {count / elapsed:,.0f}/s  {elapsed:.0f} s")
        self._stream.flush()
        self._shown = True

    def waiting(self, what: str, detail: str | None = None, *, bounded: bool = False) -> None:
        """Says what the command waits for (connecting, joining a group) until records flow; ``detail`` is the
        last connection error, if any. ``bounded``: the command gives up on this wait after ``timeout_ms``.

        Off a terminal, the first ``detail`` becomes one plain line, e.g. ``waiting: cannot connect to bootstrap
        server h:9092: connection refused (giving up after 30 s; --timeout-ms to change)``.
        """
        if not self._enabled:
            if detail and not self._failure_told:
                self._failure_told = True
                line = f"waiting: {detail}"
                if bounded and self._timeout_ms is not None:
                    line += f" (giving up after {seconds(self._timeout_ms)}; --timeout-ms to change)"
                self._stream.write(line + "\n")
                self._stream.flush()
            return
        now = self._clock()
        if now - self._shown_at < self._interval_s:
            return
        self._shown_at = now
        line = f"  {what}...  {now - self._started:.0f} s"
        if detail:
            line += f"  ({detail})"
        self._stream.write(f"\r\x1b[K{line}")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False


class Interrupt:
    """Ctrl-C as an event on the running loop, for a command that stops cleanly (commits, leaves) and exits 130:
    the first Ctrl-C sets ``stopped``; a second, while closing, is not swallowed and interrupts the close itself."""

    def __init__(self) -> None:
        self.stopped = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop.add_signal_handler(signal.SIGINT, self._interrupted)

    def _interrupted(self) -> None:
        self.stopped.set()
        self._loop.remove_signal_handler(signal.SIGINT)

    def remove(self) -> None:
        """Gives Ctrl-C back to Python (a no-op after the first Ctrl-C, which did it)."""
        if not self.stopped.is_set():
            self._loop.remove_signal_handler(signal.SIGINT)


def seconds(ms: int) -> str:
    """``30 s``, ``1.5 s``."""
    return f"{ms / 1000:g} s"


def parse_properties(args: argparse.Namespace) -> dict[str, str]:
    """``--property KEY=VALUE`` settings under their Python names (Java or Python spelling accepted)."""
    config: dict[str, str] = {}
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--property takes KEY=VALUE, got {item!r}")
        name = canonical_key(key)
        if name in config:
            raise UsageError(f"--property {key.strip()} is given twice")
        config[name] = value.strip()
    return config
