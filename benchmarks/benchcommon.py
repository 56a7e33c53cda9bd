"""What the benchmark scripts share: the machine and code a run measured, and how a failed child is reported."""

from __future__ import annotations

import importlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
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

REPO_ROOT = Path(__file__).resolve().parent.parent


def default_results_path(kind: str, code: str, suffix: str = ".json", broker: str = "tansu") -> Path:
    """``benchmarks/results/<kind>-<code><suffix>``: ``code`` is ``code_version()``'s answer for the run. A run
    against another broker than Tansu carries its kind: ``<kind>-<code>-kafka<suffix>``."""
    return RESULTS_DIR / f"{kind}-{code}{'' if broker == 'tansu' else '-' + broker}{suffix}"


# --- the broker a benchmark starts ----------------------------------------------------------------------------

BROKERS = ("tansu", "kafka")
"""What ``--broker`` takes: ``tansu`` (the embedded Tansu, memory storage) or ``kafka`` (a one-node Apache Kafka
from ``tests/support/kafka_broker.py``)."""


class BenchBroker:
    """The broker a benchmark started, whichever it is: where to connect, its pid (for its CPU), a name with its
    version for the reports, topic creation and stop."""

    def __init__(self, kind: str, handle: Any, description: str, settings: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.handle = handle
        """The ``EmbeddedBroker`` or ``KafkaCluster``."""
        self.description = description
        """``Tansu 0.6.0``, ``Apache Kafka 4.4.0``."""
        self.settings = dict(settings or {})
        """Broker settings that differ from the broker's defaults and matter to a benchmark (Kafka's)."""

    @property
    def bootstrap_servers(self) -> str:
        return str(self.handle.bootstrap_servers)

    @property
    def pid(self) -> int | None:
        """The broker's process (Tansu's binary, Kafka's JVM): its CPU is counted as the broker's."""
        if self.kind == "kafka":
            pid: int | None = self.handle.nodes[0].pid
            return pid
        return int(self.handle.pid)

    def create_topic(self, name: str, partitions: int) -> None:
        if self.kind == "kafka":
            self.handle.create_topic(name, partitions, replication_factor=1)
        else:
            self.handle.create_topic(name, partitions)

    def stop(self) -> None:
        self.handle.stop()


def tansu_version(binary: str) -> str:
    """``Tansu 0.6.0`` from ``tansu --version`` (which prints ``tansu 0.6.0``)."""
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    text = done.stdout.strip()
    if not text:
        return "Tansu (version unknown)"
    return "Tansu" + text[len("tansu") :] if text.lower().startswith("tansu") else text


def test_support(name: str) -> Any:
    """The module ``tests.support.<name>``, importable from a benchmark run as a script (the repository root is put
    on ``sys.path`` for it, only when it is asked for)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(1, str(REPO_ROOT))  # after the script's own directory, before site-packages
    return importlib.import_module(f"tests.support.{name}")


def kafka_broker_module() -> Any:
    """``tests.support.kafka_broker``: Apache Kafka started and stopped as the tests do."""
    return test_support("kafka_broker")


def start_broker(kind: str) -> BenchBroker:
    """Starts a broker of ``kind`` (one of ``BROKERS``) on loopback and returns it running."""
    if kind == "tansu":
        from asyncconsumer.tools.embedded_broker import EmbeddedBroker

        tansu = EmbeddedBroker.start()
        return BenchBroker("tansu", tansu, tansu_version(tansu.binary))
    if kind == "kafka":
        kafka_broker = kafka_broker_module()
        cluster = kafka_broker.KafkaCluster.start(nodes=1)
        return BenchBroker(
            "kafka", cluster, f"Apache Kafka {cluster.version}", settings=dict(kafka_broker.TEST_SETTINGS)
        )
    raise ValueError(f"unknown broker {kind!r}; choose from {', '.join(BROKERS)}")


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
