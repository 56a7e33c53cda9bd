"""A Spark standalone cluster on loopback for the tests: a master and workers, each its own JVM started with
pyspark's own ``bin/spark-class``, on free ports, with small heaps, stopped by their pids.

    with SparkCluster.start(workers=2) as cluster:   # returns once the master lists both workers alive
        SparkSession.builder.master(cluster.master_url)...

Each worker has one core, so an application gets one executor (its own JVM, launched by that worker, with its own
Python workers) per worker. A worker runs in its own process group, and its executors and their Python workers in
that group too, so stopping a worker's group leaves nothing of it running; ``atexit`` stops what a test did not.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import attrs

from asyncconsumer.tools.embedded_broker import free_ports

HOST = "127.0.0.1"
DAEMON_HEAP = "256m"
"""The master's and each worker's heap (``SPARK_DAEMON_MEMORY``; Spark's default is 1g)."""
_LOG_TAIL_LINES = 40


class SparkClusterStartError(RuntimeError):
    """The master or a worker exited, or the workers did not register in time; the message carries the logs' tails."""


def spark_home() -> Path:
    """The installed pyspark's directory: it ships ``bin/spark-class`` and Spark's jars."""
    import pyspark

    return Path(pyspark.__file__).parent


@attrs.define(slots=True)
class Daemon:
    """One ``spark-class`` JVM (the master or a worker), its log and its web UI port."""

    name: str
    webui_port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class SparkCluster:
    """A standalone master and ``len(workers)`` workers on loopback; what the ``spark`` fixture's standalone leg
    connects to (``master_url``)."""

    def __init__(self, root: Path, master: Daemon, master_port: int, workers: list[Daemon]) -> None:
        self.root = root
        self.master = master
        self.master_port = master_port
        self.workers = workers
        self._stopped = False
        self._lock = threading.Lock()

    # --- lifecycle ----------------------------------------------------------------------------------------------
    @classmethod
    def start(
        cls, workers: int = 2, *, cores: int = 1, memory: str = "1g", startup_timeout_s: float = 120.0
    ) -> SparkCluster:
        """Starts the master, then ``workers`` workers (``cores`` cores and ``memory`` for executors each), and
        returns once the master's JSON status lists every worker ALIVE. On failure everything started is stopped
        and the logs are kept (their directory is named on stderr)."""
        root = Path(tempfile.mkdtemp(prefix="asyncconsumer-spark-"))
        ports = free_ports(2 + workers)  # picked at once: none repeats
        master_port = ports[0]
        master = Daemon("master", ports[1], root / "master.log")
        members = [Daemon(f"worker-{i + 1}", ports[2 + i], root / f"worker-{i + 1}.log") for i in range(workers)]
        cluster = cls(root, master, master_port, members)
        _live_clusters.add(cluster)
        try:
            (root / "conf").mkdir()  # an empty SPARK_CONF_DIR: nothing of the machine's own Spark settings
            cluster._launch(
                master,
                "org.apache.spark.deploy.master.Master",
                ["--host", HOST, "--port", str(master_port), "--webui-port", str(master.webui_port)],
            )
            cluster._wait(time.monotonic() + startup_timeout_s, lambda status: True)
            for worker in members:
                work_dir = root / worker.name
                work_dir.mkdir()
                cluster._launch(
                    worker,
                    "org.apache.spark.deploy.worker.Worker",
                    [
                        cluster.master_url,
                        "--host",
                        HOST,
                        "--cores",
                        str(cores),
                        "--memory",
                        memory,
                        "--work-dir",
                        str(work_dir),
                        "--webui-port",
                        str(worker.webui_port),
                    ],
                )
            cluster._wait(time.monotonic() + startup_timeout_s, lambda status: status["aliveworkers"] >= workers)
        except BaseException:
            cluster.stop(keep_logs=True)
            raise
        return cluster

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(self.root / "conf"),
            SPARK_DAEMON_MEMORY=DAEMON_HEAP,
            SPARK_LOCAL_IP=HOST,
            SPARK_LOG_DIR=str(self.root),
            SPARK_PID_DIR=str(self.root),
        )
        return env

    def _launch(self, daemon: Daemon, main_class: str, args: list[str]) -> None:
        command = [str(spark_home() / "bin" / "spark-class"), main_class, *args]
        with open(daemon.log_path, "ab") as log:  # the process keeps its own descriptor
            daemon.process = subprocess.Popen(  # spark-class execs the JVM: this pid is the daemon's
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._environment(),
                start_new_session=True,  # its own process group, which its executors join: stopped as one
            )

    def _wait(self, deadline: float, ready: Any) -> dict[str, Any]:
        """The master's JSON status once ``ready(status)`` holds; fails at once if a daemon exited."""
        last: object = None
        while time.monotonic() < deadline:
            for daemon in (self.master, *self.workers):
                if daemon.process is not None and daemon.process.poll() is not None:
                    raise SparkClusterStartError(
                        f"Spark's {daemon.name} exited with code {daemon.process.returncode}:\n{self.log_tail()}"
                    )
            try:
                status = self.status()
                if ready(status):
                    return status
                last = f"{status['aliveworkers']} of {len(self.workers)} workers alive"
            except (OSError, ValueError) as exc:  # URLError is an OSError: refused (or half an answer) while it starts
                last = exc
            time.sleep(0.2)
        raise SparkClusterStartError(f"the Spark cluster was not ready in time (last: {last}):\n{self.log_tail()}")

    def stop(self, timeout_s: float = 30.0, *, keep_logs: bool = False) -> None:
        """SIGTERM to the workers (they stop their executors), then the master; SIGKILL to each daemon's process
        group after ``timeout_s`` and, in any case, to what is left in it (an executor or Python worker). Removes
        the logs and work directories unless ``keep_logs``, which names their directory on stderr."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        _live_clusters.discard(self)
        deadline = time.monotonic() + timeout_s
        for group in (self.workers, [self.master]):
            for daemon in group:
                if daemon.alive:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(daemon.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
            for daemon in group:
                self._reap(daemon, deadline)
        while self.pids() and time.monotonic() < deadline + 10:  # SIGKILLed executors take a moment to go
            time.sleep(0.05)
        if keep_logs:
            sys.stderr.write(f"\nThe Spark cluster's logs are kept in {self.root}\n")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    @staticmethod
    def _reap(daemon: Daemon, deadline: float) -> None:
        if daemon.process is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(daemon.process.pid, signal.SIGKILL)  # the daemon if still up, and anything left in its group
        daemon.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop(keep_logs=exc is not None)

    # --- what tests ask of it -----------------------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    def status(self) -> dict[str, Any]:
        """The master's JSON status (``/json/``): ``workers``, ``aliveworkers``, ``activeapps``..."""
        url = f"http://{HOST}:{self.master.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as answer:
            status: dict[str, Any] = json.loads(answer.read())
        return status

    def work_dir(self, worker: int) -> Path:
        """Worker ``worker``'s (1-based) work directory: its executors run in ``<work_dir>/<app id>/<executor id>``."""
        return self.root / self.workers[worker - 1].name

    def pids(self) -> list[int]:
        """The pids of every live process in the cluster's process groups: daemons, executors, Python workers
        (Linux: read from ``/proc``; zombies left out, they are gone but for their exit status)."""
        groups = self._groups()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                state, _, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
                if int(group) in groups and state != "Z":  # fields 3 and 5 of /proc/<pid>/stat
                    found.append(int(entry.name))
        return found

    def _groups(self) -> set[int]:
        return {d.process.pid for d in (self.master, *self.workers) if d.process is not None}

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        return "\n".join(f"--- {d.name} ---\n{d.log_tail(lines)}" for d in (self.master, *self.workers))

    def __repr__(self) -> str:
        return f"<SparkCluster {self.master_url} workers={len(self.workers)}>"


_live_clusters: set[SparkCluster] = set()


@atexit.register
def _stop_live_clusters() -> None:
    """Last resort so an interpreter that exits without stop() leaves no JVM behind."""
    for cluster in list(_live_clusters):
        cluster.stop(timeout_s=5.0)
