"""What the benchmark scripts share: the machine and code a run measured, and how a failed child is reported."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class ChildFailed(RuntimeError):
    """A measured child process failed or reported a result that does not check out."""


def machine(modules: Sequence[str] = ("aiokafka",)) -> dict[str, Any]:
    """CPU, platform, Python and the versions of ``modules`` (librdkafka's too when confluent_kafka is one)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str] = {}
    for module in modules:
        try:
            mod = __import__(module)
            versions[module] = str(getattr(mod, "__version__", "") or mod.version()[0])
            if module == "confluent_kafka":
                versions["librdkafka"] = mod.libversion()[0]
        except Exception as exc:
            versions[module] = f"unavailable ({type(exc).__name__})"
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        **versions,
    }


def code_version() -> str:
    """The commit asyncconsumer's code is at, with "+dirty" when its files differ from it (children import the
    working tree afresh, so a change during a run lands in the middle of it)."""
    repo = Path(__file__).resolve().parent.parent

    def git(*argv: str) -> str:
        try:
            done = subprocess.run(["git", *argv], cwd=repo, capture_output=True, text=True, check=False, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no", "--", "asyncconsumer") else "")


RESULTS_DIR = Path(__file__).resolve().parent / "results"
"""Where the benchmark scripts keep their results by default (committed with the README's numbers)."""


def default_results_path(kind: str, code: str, suffix: str = ".json") -> Path:
    """``benchmarks/results/<kind>-<code><suffix>``: ``code`` is ``code_version()``'s answer for the run."""
    return RESULTS_DIR / f"{kind}-{code}{suffix}"


def report_failures(failures: Sequence[str]) -> int:
    """Names every failed run on stderr; the exit code for the run (1 if any failed)."""
    if not failures:
        return 0
    print(f"\n{len(failures)} run(s) FAILED:", file=sys.stderr)
    for message in failures:
        print(message.splitlines()[0], file=sys.stderr)
    return 1


def peak_rss_bytes() -> tuple[int, str]:
    """This process's peak resident set size, and where it was read: ``VmHWM`` on Linux, else ``ru_maxrss``.

    A child's ``ru_maxrss`` is not its own on Linux: the kernel keeps the larger of it and the peak of the memory
    image the child had before ``exec``, the parent's (``subprocess`` forks or vforks the parent). A parent that
    grew to 300 MB makes every child report 300 MB. ``VmHWM`` belongs to the memory image ``exec`` created.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024, "VmHWM"
    except (OSError, ValueError, IndexError):
        pass
    import resource

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (maxrss if sys.platform == "darwin" else maxrss * 1024), "ru_maxrss"  # bytes on macOS, KiB elsewhere


RESULT_MARKER = "BENCH_RESULT "
"""A child prints its result as one line: this marker, then JSON."""


def spawn_child(argv: Sequence[str], label: str, timeout_s: float) -> dict[str, Any]:
    """Runs one measured child and returns its result; ``ChildFailed`` (with its stderr) if it has none."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise ChildFailed(f"{label}: no answer within {timeout_s:.0f} s (killed)\n{stderr[-3000:]}") from exc
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_MARKER)]
    if proc.returncode != 0 or not lines:
        detail = lines[-1][len(RESULT_MARKER) :] if lines else "no result line"
        raise ChildFailed(
            f"{label}: exit code {proc.returncode}: {detail}\n--- stderr (tail) ---\n{proc.stderr[-4000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1][len(RESULT_MARKER) :])
    return result


def child_argv(script: str, **options: object) -> list[str]:
    """The command line that runs ``script`` again as a measured child, with ``--key value`` for each option."""
    argv = [sys.executable, str(Path(script).resolve())]
    for key, value in options.items():
        argv += [f"--{key}", str(value)]
    return argv
