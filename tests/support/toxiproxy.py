"""Shopify's Toxiproxy for the network-fault tests: its server built once with ``go install`` into the tests' cache,
run on a free loopback port, stopped by its pid, and driven through its HTTP API with the standard library.

    with ToxiproxyServer.start() as toxiproxy:
        proxy = toxiproxy.create_proxy("broker-1", listen=("127.0.0.1", 9101), upstream=("127.0.0.1", 9001))
        with proxy.toxic("latency", stream="downstream", latency=200, jitter=50):
            ...                                   # every byte from the broker now arrives 150-250 ms late
        proxy.disable()                           # connections cut, new ones refused
        toxiproxy.reset()                         # every proxy enabled, every toxic gone

The server lands in ``<cache>/toxiproxy-<version>/bin/server`` (``cache_root()``: ``$ASYNCCONSUMER_CACHE`` or
``~/.cache/asyncconsumer``), built from the Go module proxy on first use: under a lock, into a ``.partial`` folder
renamed into place and marked ``.complete``, so concurrent test processes build once and none runs half a build.
``python -m tests.support.toxiproxy build`` builds it (CI does, so a build problem fails loudly and early). Needs Go
until it is built: ``unavailable_reason()`` says what is missing.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import attrs

from asyncconsumer.tools.embedded_broker import free_ports
from tests.support.kafka_broker import cache_root

TOXIPROXY_VERSION = "2.5.0"
"""The release built (the module proxy serves v2.3.0 and v2.5.0 here; 2.5.0 is the newer)."""
MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
HOST = "127.0.0.1"
_BUILD_TIMEOUT_S = 600.0
_START_TIMEOUT_S = 20.0
_START_ATTEMPTS = 3
_API_TIMEOUT_S = 30.0

Stream = Literal["upstream", "downstream"]
"""Toxiproxy's directions: ``upstream`` is what the client sends (requests), ``downstream`` what it receives."""
STREAMS: tuple[Stream, Stream] = ("upstream", "downstream")
TOXIC_TYPES = frozenset({"latency", "bandwidth", "slicer", "limit_data", "reset_peer", "timeout", "slow_close"})
"""The toxics 2.5.0 offers; a name outside them fails here, before the server is asked."""


class ToxiproxyUnavailable(RuntimeError):
    """Go is missing, or ``go install`` failed: the Toxiproxy leg of the tests cannot run here."""


class ToxiproxyStartError(RuntimeError):
    """The server exited, or its API did not answer in time; the message carries its log's tail."""


class ToxiproxyError(RuntimeError):
    """The API refused a call: ``status`` is its HTTP status, the message its error text."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"Toxiproxy {method} {path}: HTTP {status}: {message}")
        self.status = status


# --- the build ---------------------------------------------------------------------------------------------------
def build_dir(version: str = TOXIPROXY_VERSION, root: Path | None = None) -> Path:
    """Where ``version``'s server is built: a folder of its own per release, beside the Kafka jars."""
    return (root or cache_root()) / f"toxiproxy-{version}"


def binary_path(version: str = TOXIPROXY_VERSION, root: Path | None = None) -> Path:
    return build_dir(version, root) / "bin" / "server"


def unavailable_reason(version: str = TOXIPROXY_VERSION, root: Path | None = None) -> str | None:
    """Why the Toxiproxy leg cannot run here (None when the server is built, or Go is there to build it)."""
    if (build_dir(version, root) / ".complete").exists() or shutil.which("go") is not None:
        return None
    return f"Go is needed to build Toxiproxy {version} for the network-fault tests (no `go` on PATH)"


def install_command(version: str = TOXIPROXY_VERSION) -> list[str]:
    return ["go", "install", f"{MODULE}@v{version}"]


def built_server(version: str = TOXIPROXY_VERSION, root: Path | None = None) -> Path:
    """The server binary of ``version``, built with ``go install`` on first use (one process at a time)."""
    folder = build_dir(version, root)
    done = folder / ".complete"
    if done.exists():
        return folder / "bin" / "server"
    reason = unavailable_reason(version, root)
    if reason is not None:
        raise ToxiproxyUnavailable(reason)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".toxiproxy-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building the same release
        if done.exists():
            return folder / "bin" / "server"
        staging = folder.with_name(f"{folder.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "bin").mkdir(parents=True)
        command = install_command(version)
        env = {**os.environ, "GOBIN": str(staging / "bin")}
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, check=False, timeout=_BUILD_TIMEOUT_S, env=env
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise ToxiproxyUnavailable(f"`{' '.join(command)}` could not run: {exc}") from exc
        if result.returncode != 0 or not (staging / "bin" / "server").is_file():
            shutil.rmtree(staging, ignore_errors=True)
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
            raise ToxiproxyUnavailable(f"`{' '.join(command)}` failed (exit code {result.returncode}):\n{tail}")
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        done.write_text(" ".join(command) + "\n")
    return folder / "bin" / "server"


# --- the API's bodies ----------------------------------------------------------------------------------------------
def address(host_port: tuple[str, int]) -> str:
    return f"{host_port[0]}:{host_port[1]}"


def toxic_body(
    kind: str,
    *,
    stream: Stream,
    toxicity: float = 1.0,
    name: str | None = None,
    attributes: Mapping[str, int] | None = None,
    **more: int,
) -> dict[str, Any]:
    """The JSON of ``POST /proxies/NAME/toxics``; ``ValueError`` names what is wrong before the server is asked."""
    attributes = {**(attributes or {}), **more}
    if kind not in TOXIC_TYPES:
        raise ValueError(f"unknown toxic {kind!r}: Toxiproxy {TOXIPROXY_VERSION} has {sorted(TOXIC_TYPES)}")
    if stream not in STREAMS:
        raise ValueError(f"stream must be 'upstream' or 'downstream', got {stream!r}")
    if not 0.0 <= toxicity <= 1.0:
        raise ValueError(f"toxicity is a probability from 0 to 1, got {toxicity}")
    negative = {key: value for key, value in attributes.items() if value < 0}
    if negative:
        raise ValueError(f"toxic attributes must not be negative: {negative}")
    return {
        "name": name or f"{kind}_{stream}",
        "type": kind,
        "stream": stream,
        "toxicity": toxicity,
        "attributes": dict(attributes),
    }


@attrs.define(frozen=True, slots=True)
class Toxic:
    """A toxic as the server described it."""

    name: str
    type: str
    stream: Stream
    toxicity: float
    attributes: Mapping[str, int]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Toxic:
        return cls(data["name"], data["type"], data["stream"], float(data["toxicity"]), dict(data["attributes"]))


# --- the client ----------------------------------------------------------------------------------------------------
class ToxiproxyClient:
    """Toxiproxy's HTTP API over ``http.client`` (one connection per call: the server is on loopback)."""

    def __init__(self, host: str, port: int, timeout_s: float = _API_TIMEOUT_S) -> None:
        self.host = host
        self.port = port
        self.timeout_s = timeout_s

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """The decoded JSON answer (None for an empty one); ``ToxiproxyError`` for an answer of 400 or above."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {"Content-Type": "application/json", "User-Agent": "asyncconsumer-tests"}
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        if response.status >= 400:
            raise ToxiproxyError(method, path, response.status, _error_text(data))
        if not data:
            return None
        if response.getheader("Content-Type", "").startswith("application/json"):
            return json.loads(data)
        return data.decode(errors="replace")

    def version(self) -> str:
        return str(self.call("GET", "/version")).strip()

    def reset(self) -> None:
        """Every proxy enabled and every toxic removed (``POST /reset``)."""
        self.call("POST", "/reset")

    def proxies(self) -> dict[str, Any]:
        return dict(self.call("GET", "/proxies"))

    def create_proxy(self, name: str, *, listen: tuple[str, int], upstream: tuple[str, int]) -> Proxy:
        self.call("POST", "/proxies", {"name": name, "listen": address(listen), "upstream": address(upstream)})
        return Proxy(self, name, listen, upstream)

    def proxy(self, name: str) -> Proxy:
        data = self.call("GET", f"/proxies/{name}")
        return Proxy(self, name, _host_port(data["listen"]), _host_port(data["upstream"]))


def _error_text(data: bytes) -> str:
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(data)["error"])
    return data.decode(errors="replace").strip() or "(no body)"


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


@attrs.define(frozen=True, slots=True)
class Proxy:
    """One proxy: it listens on ``listen`` and forwards every connection to ``upstream``, through its toxics."""

    client: ToxiproxyClient = attrs.field(repr=False)
    name: str
    listen: tuple[str, int]
    upstream: tuple[str, int]

    @property
    def path(self) -> str:
        return f"/proxies/{self.name}"

    def add_toxic(
        self, kind: str, *, stream: Stream, toxicity: float = 1.0, name: str | None = None, **attributes: int
    ) -> Toxic:
        """Adds a toxic (``latency=``, ``jitter=``, ``rate=``, ``bytes=``, ``timeout=``... as Toxiproxy names its
        attributes); it applies to open connections at once and to new ones."""
        return self.add(kind, stream, attributes, toxicity=toxicity, name=name)

    def add(
        self,
        kind: str,
        stream: Stream,
        attributes: Mapping[str, int],
        *,
        toxicity: float = 1.0,
        name: str | None = None,
    ) -> Toxic:
        """``add_toxic`` with the attributes as a mapping."""
        body = toxic_body(kind, stream=stream, toxicity=toxicity, name=name, attributes=attributes)
        return Toxic.from_json(self.client.call("POST", f"{self.path}/toxics", body))

    def update_toxic(self, name: str, *, toxicity: float) -> Toxic:
        """A new toxicity for toxic ``name``: its links draw again whether it applies to them, keeping their
        connections (0 passes everything on from now on; removing a ``timeout`` toxic would close them)."""
        if not 0.0 <= toxicity <= 1.0:
            raise ValueError(f"toxicity is a probability from 0 to 1, got {toxicity}")
        return Toxic.from_json(self.client.call("POST", f"{self.path}/toxics/{name}", {"toxicity": toxicity}))

    def remove_toxic(self, name: str) -> None:
        self.client.call("DELETE", f"{self.path}/toxics/{name}")

    def toxics(self) -> list[Toxic]:
        return [Toxic.from_json(t) for t in self.client.call("GET", f"{self.path}/toxics")]

    @contextlib.contextmanager
    def toxic(
        self, kind: str, *, stream: Stream, toxicity: float = 1.0, name: str | None = None, **attributes: int
    ) -> Iterator[Toxic]:
        """A toxic for the ``with`` block, removed at its end whatever happens inside."""
        added = self.add_toxic(kind, stream=stream, toxicity=toxicity, name=name, **attributes)
        try:
            yield added
        finally:
            self.remove_toxic(added.name)

    def retarget(self, upstream: tuple[str, int]) -> Proxy:
        """The proxy forwarding to ``upstream`` from now on, on the same port (the server stops it and starts it
        again there: its connections are cut)."""
        body = {"listen": address(self.listen), "upstream": address(upstream), "enabled": True}
        data = self.client.call("POST", self.path, body)
        return Proxy(self.client, self.name, _host_port(data["listen"]), _host_port(data["upstream"]))

    def enabled(self) -> bool:
        return bool(self.client.call("GET", self.path)["enabled"])

    def disable(self) -> None:
        """Closes every connection through the proxy and stops listening: new connections are refused."""
        self.client.call("POST", self.path, {"enabled": False})

    def enable(self) -> None:
        self.client.call("POST", self.path, {"enabled": True})

    @contextlib.contextmanager
    def disabled(self) -> Iterator[None]:
        self.disable()
        try:
            yield
        finally:
            self.enable()


# --- the server ----------------------------------------------------------------------------------------------------
class ToxiproxyServer:
    """One ``toxiproxy`` server process on loopback; its API through ``client`` and the methods it forwards."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
        self.process = process
        self.port = port
        self.log_path = log_path
        self.client = ToxiproxyClient(HOST, port)
        self._stopped = False
        self._lock = threading.Lock()

    @classmethod
    def start(cls, version: str = TOXIPROXY_VERSION, timeout_s: float = _START_TIMEOUT_S) -> ToxiproxyServer:
        """Builds the server if needed and starts it on a free port, again on another port if the one picked was
        taken before the server bound it; returns once its API answers."""
        binary = built_server(version)
        for attempt in range(1, _START_ATTEMPTS + 1):
            try:
                return cls._start_once(binary, timeout_s)
            except ToxiproxyStartError as exc:
                if "address already in use" not in str(exc).lower() or attempt == _START_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    @classmethod
    def _start_once(cls, binary: Path, timeout_s: float) -> ToxiproxyServer:
        port = free_ports(1)[0]
        fd, log_name = tempfile.mkstemp(prefix="asyncconsumer-toxiproxy-", suffix=".log")
        with os.fdopen(fd, "wb") as log:
            process = subprocess.Popen(
                [str(binary), "-host", HOST, "-port", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C meant for the tests is not the server's
            )
        server = cls(process, port, Path(log_name))
        _live_servers.add(server)
        try:
            server._wait_ready(time.monotonic() + timeout_s)
        except BaseException:
            server.stop(keep_log=True)
            raise
        return server

    def _wait_ready(self, deadline: float) -> None:
        last: object = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ToxiproxyStartError(f"Toxiproxy exited with code {self.process.returncode}:\n{self.log_tail()}")
            try:
                self.client.version()
                return
            except OSError as exc:  # refused until it listens
                last = exc
            time.sleep(0.05)
        raise ToxiproxyStartError(f"Toxiproxy's API did not answer in time (last: {last}):\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:]) or "(empty log)"
        return "(no log)"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = 10.0, *, keep_log: bool = False) -> None:
        """SIGTERM by pid (SIGKILL after ``timeout_s``); removes the log unless ``keep_log``."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        _live_servers.discard(self)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if keep_log:
            sys.stderr.write(f"\nToxiproxy's log is kept in {self.log_path}\n")
        else:
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop(keep_log=exc is not None)

    # --- the API, forwarded ---------------------------------------------------------------------------------------
    def create_proxy(self, name: str, *, listen: tuple[str, int], upstream: tuple[str, int]) -> Proxy:
        return self.client.create_proxy(name, listen=listen, upstream=upstream)

    def reset(self) -> None:
        self.client.reset()

    def __repr__(self) -> str:
        return f"<ToxiproxyServer {HOST}:{self.port} pid={self.process.pid}>"


_live_servers: set[ToxiproxyServer] = set()


@atexit.register
def _stop_live_servers() -> None:
    """Last resort so an interpreter that exits without stop() leaves no server behind."""
    for server in list(_live_servers):
        server.stop(timeout_s=2.0)


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.toxiproxy")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help=f"build Toxiproxy {TOXIPROXY_VERSION}'s server into the cache (CI does it first)")
    sub.add_parser("built", help="exit 0 if the server is built, printing where; 1 if not")
    args = parser.parse_args(argv)
    if args.command == "built":
        built = (build_dir() / ".complete").exists()
        print(f"Toxiproxy {TOXIPROXY_VERSION}: {binary_path() if built else 'not built yet'}")
        return 0 if built else 1
    try:
        print(f"Toxiproxy {TOXIPROXY_VERSION}: {built_server()}")
    except ToxiproxyUnavailable as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main())
