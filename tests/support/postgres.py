"""A throwaway PostgreSQL server for the tests: Debian's PostgreSQL (``initdb``, ``pg_ctl`` and ``postgres`` from
``pg_config --bindir``, else the newest ``/usr/lib/postgresql/<major>/bin``) in a temp directory of its own, on a free
loopback port (TCP only: no Unix socket), with one superuser role that trusts loopback connections; started and
stopped by the tests, stopped by its postmaster's pid.

PostgreSQL refuses to run as root. As root (CI, this project's machines) every server program runs as an unprivileged
system user, which owns the temp directory: ``ASYNCCONSUMER_PG_OS_USER`` if set, else Debian's ``postgres`` (the
package makes it), else ``nobody``; the temp directory's parent (``tempfile.gettempdir()``) must let that user in,
as ``/tmp`` does. Not as root, they run as the caller.

Each test gets a database of its own: ``create_database`` copies ``template1`` (``CREATE DATABASE ... TEMPLATE``: its
7 MB go through the WAL and are fsynced, 0.3-0.8 s on this 2-core machine under load) and ``drop_database`` drops it
with whatever connections it still has (~0.15 s). The server keeps
PostgreSQL's defaults that matter for durability (``fsync = on``, ``synchronous_commit = on``).

``python -m tests.support.postgres`` starts one, prints its DSN, and stops it on Enter (or end of input).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import attrs
import psycopg
from psycopg import sql

from asyncconsumer.tools.embedded_broker import free_port

PROGRAMS = ("initdb", "pg_ctl", "postgres")
INSTALL_HINT = "apt-get install postgresql"
ROLE = "asyncconsumer"
"""The superuser role the server is made with; every DSN connects as it (trust: no password)."""
TEMPLATE = "template1"
OS_USER_ENV = "ASYNCCONSUMER_PG_OS_USER"
BINDIR_ENV = "ASYNCCONSUMER_PG_BINDIR"
OS_USER_CANDIDATES = ("postgres", "nobody")
_DEBIAN_BINDIRS = "/usr/lib/postgresql"
_PORT_ATTEMPTS = 3
_TIMEOUT_S = 60.0
_CONF_NAME = "asyncconsumer.conf"
_SETTINGS = """# Written by tests/support/postgres.py, included from postgresql.conf. Durability stays PostgreSQL's
# default (fsync = on, synchronous_commit = on): the exactly-once tests and benches measure a real commit.
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
max_connections = 200
logging_collector = off
"""

StopMode = Literal["smart", "fast", "immediate"]
_STOP_SIGNALS: dict[StopMode, signal.Signals] = {
    "smart": signal.SIGTERM,
    "fast": signal.SIGINT,
    "immediate": signal.SIGQUIT,
}
"""What the postmaster does on each signal: PostgreSQL's three shutdown modes (``pg_ctl stop -m``)."""


class PostgresUnavailable(RuntimeError):
    """PostgreSQL's server programs are not installed, or (as root) there is no unprivileged user to run them."""


class PostgresStartError(RuntimeError):
    """The server did not initialise, start, restart or stop (the message carries its output and log)."""


class _PortTaken(PostgresStartError):
    """Another process bound the port between ``free_port`` and the postmaster."""


def _has_programs(directory: Path) -> bool:
    return all((directory / name).is_file() and os.access(directory / name, os.X_OK) for name in PROGRAMS)


def find_bindir() -> Path | None:
    """Where ``initdb``, ``pg_ctl`` and ``postgres`` are: ``$ASYNCCONSUMER_PG_BINDIR``, ``pg_config --bindir``, or
    the newest ``/usr/lib/postgresql/<major>/bin`` that has them (``pg_config`` may come from libpq-dev alone)."""
    override = os.environ.get(BINDIR_ENV)
    if override:
        return Path(override) if _has_programs(Path(override)) else None
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True)
            candidates.append(Path(done.stdout.strip()))
    majors = []
    with contextlib.suppress(OSError):
        majors = [path for path in Path(_DEBIAN_BINDIRS).iterdir() if path.name.isdigit()]
    candidates.extend(path / "bin" for path in sorted(majors, key=lambda path: int(path.name), reverse=True))
    return next((directory for directory in candidates if _has_programs(directory)), None)


@attrs.frozen
class OsUser:
    """The unprivileged account the server's programs run as (when this process is root)."""

    name: str
    uid: int
    gid: int


def server_os_user() -> OsUser | None:
    """Whom the server runs as: None (this process's own user) unless this process is root; then
    ``$ASYNCCONSUMER_PG_OS_USER`` or the first of ``OS_USER_CANDIDATES`` that exists.

    Raises PostgresUnavailable when root has no such user, or when it names root itself."""
    if os.geteuid() != 0:
        return None
    wanted = os.environ.get(OS_USER_ENV)
    for name in (wanted,) if wanted else OS_USER_CANDIDATES:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid == 0:
            raise PostgresUnavailable(f"{OS_USER_ENV}={name} is root: PostgreSQL refuses to run as root")
        return OsUser(name, entry.pw_uid, entry.pw_gid)
    tried = wanted or ", ".join(OS_USER_CANDIDATES)
    raise PostgresUnavailable(
        f"running as root, and no unprivileged user to run PostgreSQL as (tried {tried}; "
        f"set {OS_USER_ENV} to one, e.g. after useradd --system pgtests)"
    )


def unavailable_reason() -> str | None:
    """Why a server cannot start here (naming what to install), or None."""
    if find_bindir() is None:
        return (
            f"PostgreSQL's server programs ({', '.join(PROGRAMS)}) are missing: not in pg_config --bindir nor "
            f"{_DEBIAN_BINDIRS}/*/bin ({INSTALL_HINT}, or set {BINDIR_ENV})"
        )
    try:
        server_os_user()
    except PostgresUnavailable as exc:
        return str(exc)
    return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, whose parent has not reaped it yet, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


def database_name(hint: str = "test") -> str:
    """A fresh legal database name that starts with a cleaned ``hint`` (PostgreSQL's limit is 63 bytes)."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", hint.lower()).strip("_")[:40] or "test"
    return f"{cleaned}_{uuid.uuid4().hex[:10]}"


@attrs.define(slots=True)
class PostgresServer:
    """One server: its data directory under ``root``, its port, and its postmaster's ``pid`` while it runs.

    ``start``/``stop`` keep the data directory; ``restart`` is ``pg_ctl restart`` (a new postmaster, the same data
    and port); ``close`` stops it and removes the directory. ``dsn(dbname)`` connects as ``role``."""

    root: Path
    bindir: Path
    port: int
    os_user: OsUser | None
    role: str = ROLE
    pid: int | None = None

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    @property
    def version(self) -> str:
        """The server's major version, from its data directory (e.g. ``"15"``)."""
        return (self.data_dir / "PG_VERSION").read_text().strip()

    @property
    def running(self) -> bool:
        return self.pid is not None and _alive(self.pid)

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.role}@127.0.0.1:{self.port}/{dbname}"

    @classmethod
    def launch(cls, *, bindir: Path | None = None) -> PostgresServer:
        """initdb a new data directory in a temp directory and start it on a free loopback port (again on another
        port when one was taken before the postmaster bound it)."""
        reason = unavailable_reason() if bindir is None else None
        if reason is not None:
            raise PostgresUnavailable(reason)
        found = bindir or find_bindir()
        assert found is not None
        os_user = server_os_user()
        root = Path(tempfile.mkdtemp(prefix="asyncconsumer-pg-"))
        server = cls(root, found, free_port(), os_user)
        try:
            if os_user is not None:
                os.chown(root, os_user.uid, os_user.gid)
            server._initdb()
            for attempt in range(1, _PORT_ATTEMPTS + 1):
                try:
                    server.start()
                    return server
                except _PortTaken:
                    if attempt == _PORT_ATTEMPTS:
                        raise
                    server.port = free_port()
                    server._write_settings()
        except BaseException:
            server.close()
            raise
        raise AssertionError("unreachable")

    def _run(self, program: str, *args: str, timeout: float = _TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        """Run one of the server's programs as the server's user, in ``root`` (which that user can enter)."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", HOME=str(self.root))
        user = self.os_user
        try:
            return subprocess.run(
                [str(self.bindir / program), *args],
                capture_output=True,
                text=True,
                env=env,
                cwd=self.root,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                user=user.uid if user else None,
                group=user.gid if user else None,
                extra_groups=[] if user else None,
            )
        except subprocess.TimeoutExpired as exc:
            raise PostgresStartError(f"{program} {' '.join(args)} did not finish within {timeout} s") from exc

    def _check(self, done: subprocess.CompletedProcess[str], what: str) -> None:
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()
            raise PostgresStartError(f"{what} failed ({done.returncode}): {output}\nserver log:\n{self.log_tail()}")

    def _initdb(self) -> None:
        # --no-sync: initdb's own files are not fsynced (seconds saved; the server itself keeps fsync = on).
        done = self._run(
            "initdb",
            "--pgdata",
            str(self.data_dir),
            "--username",
            self.role,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--locale",
            "C",
            "--no-sync",
            "--no-instructions",
        )
        self._check(done, "initdb")
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write(f"\ninclude '{_CONF_NAME}'\n")
        self._write_settings()

    def _write_settings(self) -> None:
        path = self.data_dir / _CONF_NAME
        path.write_text(_SETTINGS.format(port=self.port))
        if self.os_user is not None:
            os.chown(path, self.os_user.uid, self.os_user.gid)

    def _ctl(self, action: str, *args: str) -> None:
        done = self._run("pg_ctl", action, "--pgdata", str(self.data_dir), "--log", str(self.log_path), "--wait", *args)
        if done.returncode != 0 and "Address already in use" in self.log_tail(10):
            raise _PortTaken(f"port {self.port} was taken: {self.log_tail(5)}")
        self._check(done, f"pg_ctl {action}")
        self.pid = self._postmaster_pid()

    def _postmaster_pid(self) -> int:
        """The running postmaster's pid: the first line of its ``postmaster.pid``."""
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError) as exc:
            raise PostgresStartError(f"no postmaster.pid in {self.data_dir} after pg_ctl said it started") from exc

    def start(self) -> None:
        """``pg_ctl start --wait``: returns once the server accepts connections."""
        if self.running:
            raise PostgresStartError(f"the server on port {self.port} already runs (pid {self.pid})")
        self._ctl("start", "--timeout", str(int(_TIMEOUT_S)))

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: connections are cut, the postmaster is a new process, data and port stay."""
        old = self.pid
        self._ctl("restart", "--mode", "fast", "--timeout", str(int(_TIMEOUT_S)))
        if self.pid == old:
            raise PostgresStartError(f"pg_ctl restart left the same postmaster running (pid {old})")

    def stop(self, mode: StopMode = "fast", timeout: float = _TIMEOUT_S) -> None:
        """Signal the postmaster by its pid (``mode``: PostgreSQL's shutdown modes; ``"immediate"`` is a crash
        as far as the data is concerned: recovery replays the WAL on the next start) and wait until it is gone."""
        pid = self.pid
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, _STOP_SIGNALS[mode])
        deadline = time.monotonic() + timeout
        while _alive(pid):
            if time.monotonic() >= deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                raise PostgresStartError(f"the postmaster (pid {pid}) did not stop ({mode}) within {timeout} s")
            time.sleep(0.02)
        self.pid = None

    def ensure_running(self) -> None:
        """Start it again if a test left it stopped (or it died)."""
        if not self.running:
            self.pid = None
            self.start()

    def close(self) -> None:
        """Stop it (if it runs) and remove its directory."""
        try:
            if self.running:
                self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"

    @contextlib.contextmanager
    def admin(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        """An autocommit connection to the ``postgres`` database (CREATE/DROP DATABASE cannot run in a transaction)."""
        with psycopg.connect(self.dsn(), autocommit=True, connect_timeout=10) as conn:
            yield conn

    def create_database(self, hint: str = "test") -> PostgresDatabase:
        """A new, empty database (a copy of ``template1``) named after ``hint``."""
        name = database_name(hint)
        with self.admin() as conn:
            create = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(TEMPLATE))
            conn.execute(create)
        return PostgresDatabase(self, name)

    def drop_database(self, name: str) -> None:
        """Drop it, closing the connections it still has (``WITH (FORCE)``)."""
        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def databases(self) -> list[str]:
        with self.admin() as conn:
            rows = conn.execute("SELECT datname FROM pg_database WHERE NOT datistemplate ORDER BY datname").fetchall()
        return [str(row[0]) for row in rows]


@attrs.frozen
class PostgresDatabase:
    """A database of its own on ``server`` (what the ``postgres_db`` fixture gives each test): ``dsn``, ``name``,
    ``connect()``; ``restart``/``stop``/``start`` act on the whole server."""

    server: PostgresServer
    name: str

    @property
    def dsn(self) -> str:
        return self.server.dsn(self.name)

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.dsn, autocommit=autocommit, connect_timeout=10)

    def restart(self) -> None:
        self.server.restart()

    def stop(self, mode: StopMode = "fast") -> None:
        self.server.stop(mode)

    def start(self) -> None:
        self.server.start()


def main(argv: Sequence[str] | None = None) -> int:
    """Start a server, print its DSN, stop it on Enter or end of input (a manual check, and the benches' server)."""
    del argv
    try:
        server = PostgresServer.launch()
    except (PostgresUnavailable, PostgresStartError) as exc:
        print(f"PostgreSQL could not start: {exc}", file=sys.stderr)
        return 1
    try:
        print(f"PostgreSQL {server.version} (pid {server.pid}, as {server.os_user.name if server.os_user else 'me'})")
        print(server.dsn(), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.readline()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
