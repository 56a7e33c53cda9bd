"""Running the ``asyncconsumer`` command as a subprocess, for the integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``asyncconsumer ARGS`` as this interpreter runs it; ``env`` adds to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "asyncconsumer.tools.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )


@contextmanager
def broker_command(*args: str, ready_timeout: float = 90, program: Sequence[str] | None = None) -> Iterator[list[str]]:
    """``asyncconsumer broker ARGS`` in the background until the block ends (then Ctrl-C, which must exit 0).

    Yields its output lines so far, once the broker is ready: after the ``topic ...`` line when ``--topic`` is
    given (its records are produced by then), else after the first line.
    """
    command = [sys.executable, "-m", "asyncconsumer.tools.cli"] if program is None else list(program)
    process = subprocess.Popen(
        [*command, "broker", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    ready = threading.Event()
    output: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip("\n"))
            if "--topic" not in args or line.strip().startswith("topic "):
                ready.set()
        ready.set()  # the process ended: the wait below ends and the check says why

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        got_ready = ready.wait(ready_timeout)
        assert got_ready and process.poll() is None, f"the broker command is not ready: {output}"
        yield output
    finally:
        process.send_signal(signal.SIGINT)
        try:
            returncode = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        finally:
            reader.join(5)
            assert process.stdout is not None
            process.stdout.close()
    assert returncode == 0, "\n".join(output)
