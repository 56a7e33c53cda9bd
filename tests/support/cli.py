"""Running the ``asyncconsumer`` command as a subprocess, for the integration tests."""

from __future__ import annotations

import subprocess
import sys


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "asyncconsumer.tools.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
