"""Running the ``asyncconsumer`` command as a subprocess, for the integration tests."""

from __future__ import annotations

import os
import subprocess
import sys


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
