"""The harness the benchmark scripts share: the machine and code a run measured, the broker, measured children
and how a failed one is reported, CPU meters and the wait for a quiet machine, medians over reps and table cells."""

from __future__ import annotations

import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
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


def write_json(path: Path, data: Any, *, indent: int = 2, end: str = "", default: Any = None) -> None:
    """Writes ``data`` as JSON (``json.dumps(data, indent=indent, default=default) + end``) to ``path``, creating
    its directory first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent, default=default) + end)


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


def note_failure(message: str, failures: list[str], keep_going: bool) -> bool:
    """Prints a failed run's ``message`` on stderr; with ``keep_going`` adds it to ``failures`` and answers True
    (go on), else answers False (the caller re-raises)."""
    print(message, file=sys.stderr, flush=True)
    if keep_going:
        failures.append(message)
    return keep_going


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


# --- meters: CPU from /proc, and the wait for a quiet machine ----------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Clock ticks per second, the unit of /proc's CPU times."""


def busy_cpu_s() -> float | None:
    """CPU seconds every core of the machine spent busy since boot (None off Linux)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICKS  # user..steal; guest time is already inside user


def process_cpu_s(pid: int | None) -> float | None:
    """Process ``pid``'s user + system CPU seconds so far, from /proc (None for no pid, or where unreadable)."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def other_load(
    seconds: float, busy0: float, busy1: float, broker0: float | None = None, broker1: float | None = None
) -> float:
    """The cores busy over ``seconds`` apart from the broker's (when both its readings are known), never below 0."""
    broker = 0.0 if broker0 is None or broker1 is None else broker1 - broker0
    return max(0.0, busy1 - busy0 - broker) / seconds


def wait_until_quiet(
    broker_pid: int | None,
    max_cores: float,
    max_wait_s: float,
    *,
    busy: Callable[[], float | None] = busy_cpu_s,
    process: Callable[[int | None], float | None] = process_cpu_s,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.perf_counter,
) -> float | None:
    """Waits (up to ``max_wait_s``) until processes other than the broker use less than ``max_cores``.

    On a shared machine other people's test runs would otherwise land in the middle of a measurement. Returns
    the last load seen (cores), None when it cannot be measured. Without ``broker_pid`` the broker counts too.
    ``busy``, ``process``, ``sleep`` and ``clock`` are the meters and the clock (replaceable for a test).
    """
    deadline = clock() + max_wait_s
    while True:
        t0, busy0, broker0 = clock(), busy(), process(broker_pid)
        sleep(0.5)
        busy1, broker1 = busy(), process(broker_pid)
        if busy0 is None or busy1 is None:
            return None
        load = other_load(clock() - t0, busy0, busy1, broker0, broker1)
        if load < max_cores or clock() >= deadline:
            return load
        sleep(1.0)


def quiet_before_run(
    broker_pid: int | None, max_cores: float, max_wait_s: float, *, who: str = "used by others", flush: bool = False
) -> float | None:
    """``wait_until_quiet``, then, if the machine is still busy, one line saying so (``… cores <who>; measuring
    anyway``); returns the load seen."""
    load = wait_until_quiet(broker_pid, max_cores, max_wait_s)
    if load is not None and load >= max_cores:
        print(f"  (machine still busy: {load:.2f} cores {who}; measuring anyway)", flush=flush)
    return load


# --- summaries over reps ------------------------------------------------------------------------------------------


def median(values: Iterable[float | None]) -> float | None:
    """The median of the values that are known (not None); None when none is."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def median_min_max(values: Iterable[float | None]) -> dict[str, float | None]:
    """``{"median": ..., "min": ..., "max": ...}`` of the values that are known (each None when none is)."""
    known = [v for v in values if v is not None]
    return {
        "median": statistics.median(known) if known else None,
        "min": min(known) if known else None,
        "max": max(known) if known else None,
    }


# --- table cells --------------------------------------------------------------------------------------------------


def fmt_cell(value: float | None, spec: str, missing: str = "?") -> str:
    """``value`` as ``format(value, spec)`` for a table cell, ``missing`` where it is None (not measured)."""
    return missing if value is None else format(value, spec)


def table_row(cells: Iterable[str]) -> str:
    """One markdown table row: ``| a | b |``."""
    return "| " + " | ".join(cells) + " |"


def table_rule(columns: int) -> str:
    """The rule under a markdown table's head of ``columns`` columns: the first left-aligned, the rest right."""
    return "|---|" + "---:|" * (columns - 1)
