"""A throwaway MIT Kerberos KDC for the GSSAPI tests: a realm of its own in a temp directory (its krb5.conf and
kdc.conf, found through ``KRB5_CONFIG`` and ``KRB5_KDC_PROFILE``), principals and keytabs made with
``kadmin.local``, and ``krb5kdc -n`` on a free loopback port (TCP and UDP), stopped by the tests.

Needs Debian's ``krb5-kdc``, ``krb5-admin-server`` and ``krb5-user`` (``KdcUnavailable`` says which program is
missing). Clients find the realm through ``Kdc.env`` (this process: ``Kdc.client_env`` as a context manager); a JVM
through ``-Djava.security.krb5.conf`` (``Kdc.java_properties``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs

from asyncconsumer.tools.embedded_broker import free_port

REALM = "ASYNCCONSUMER.TEST"
PROGRAMS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
"""Where Debian puts the KDC's programs: not on every user's PATH."""
_PORT_ATTEMPTS = 3


class KdcUnavailable(RuntimeError):
    """The MIT Kerberos programs are not installed."""


class KdcStartError(RuntimeError):
    """The KDC did not come up (its log says why)."""


def program(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *_SBIN])
    return shutil.which(name, path=path)


def unavailable_reason() -> str | None:
    missing = [name for name in PROGRAMS if program(name) is None]
    if missing:
        return (
            f"MIT Kerberos programs missing: {', '.join(missing)} "
            "(apt-get install krb5-kdc krb5-admin-server krb5-user)"
        )
    return None


_KRB5_CONF = """[libdefaults]
    default_realm = {realm}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    rdns = false
    dns_canonicalize_hostname = false
    udp_preference_limit = 1
    ticket_lifetime = 1h
    forwardable = false

[realms]
    {realm} = {{
        kdc = 127.0.0.1:{port}
    }}

[domain_realm]
    localhost = {realm}
    127.0.0.1 = {realm}
"""

_KDC_CONF = """[kdcdefaults]
    kdc_listen = 127.0.0.1:{port}
    kdc_tcp_listen = 127.0.0.1:{port}

[realms]
    {realm} = {{
        database_name = {root}/principal
        key_stash_file = {root}/stash
        acl_file = {root}/kadm5.acl
        max_life = 1h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{root}/kdc.log
"""


@attrs.define(slots=True)
class Kdc:
    """A running KDC of realm ``REALM``: ``add_principal`` makes principals (with a keytab), ``kinit`` fills a
    credentials cache, ``stop`` ends it and removes its directory."""

    root: Path
    port: int
    process: subprocess.Popen[bytes] | None = None
    realm: str = REALM

    @property
    def krb5_conf(self) -> Path:
        return self.root / "krb5.conf"

    @property
    def log_path(self) -> Path:
        return self.root / "kdc.log"

    @property
    def env(self) -> dict[str, str]:
        """What a Kerberos program needs to find this realm (and only it)."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.root / "kdc.conf")}

    @property
    def java_properties(self) -> dict[str, str]:
        return {"java.security.krb5.conf": str(self.krb5_conf)}

    @classmethod
    def start(cls, timeout_s: float = 30.0) -> Kdc:
        """A new realm on a free port (again with another port when one was taken before the KDC bound it)."""
        reason = unavailable_reason()
        if reason is not None:
            raise KdcUnavailable(reason)
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            kdc = cls(Path(tempfile.mkdtemp(prefix="asyncconsumer-kdc-")), free_port())
            try:
                kdc._create()
                kdc._launch(timeout_s)
                return kdc
            except KdcStartError:
                kdc.stop()
                if attempt == _PORT_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def _run(self, *command: str, stdin: str | None = None) -> str:
        found = program(command[0])
        assert found is not None
        done = subprocess.run(
            [found, *command[1:]],
            input=stdin,
            capture_output=True,
            text=True,
            env={**os.environ, **self.env},
            timeout=60,
        )
        if done.returncode != 0:
            raise KdcStartError(f"{' '.join(command)} failed ({done.returncode}): {done.stdout}{done.stderr}")
        return done.stdout

    def _create(self) -> None:
        values = {"realm": self.realm, "port": self.port, "root": self.root}
        self.krb5_conf.write_text(_KRB5_CONF.format(**values))
        (self.root / "kdc.conf").write_text(_KDC_CONF.format(**values))
        (self.root / "kadm5.acl").write_text("")
        self._run("kdb5_util", "create", "-s", "-r", self.realm, "-P", "master-key-for-tests")

    def _launch(self, timeout_s: float) -> None:
        found = program("krb5kdc")
        assert found is not None
        with (self.root / "krb5kdc.out").open("wb") as output:  # the process keeps its own copy
            self.process = subprocess.Popen(
                [found, "-n", "-r", self.realm],
                env={**os.environ, **self.env},
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise KdcStartError(f"krb5kdc exited with {self.process.returncode}: {self.log_tail()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.05)
        raise KdcStartError(f"krb5kdc did not listen on 127.0.0.1:{self.port} within {timeout_s} s")

    def add_principal(self, name: str, keytab: Path | None = None) -> Path:
        """A principal with a random key, exported to ``keytab`` (default: ``<root>/<name>.keytab``)."""
        path = keytab or self.root / (name.replace("/", "_") + ".keytab")
        self._run("kadmin.local", "-r", self.realm, "-q", f"addprinc -randkey {name}")
        self._run("kadmin.local", "-r", self.realm, "-q", f"ktadd -k {path} {name}")
        return path

    def principal(self, name: str) -> str:
        return f"{name}@{self.realm}"

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> None:
        """A ticket for ``principal`` in the credentials cache file ``ccache`` (what a user's ``kinit`` does)."""
        self._run("kinit", "-k", "-t", str(keytab), "-c", f"FILE:{ccache}", principal)

    @contextlib.contextmanager
    def client_env(self, **extra: str) -> Iterator[None]:
        """This process's Kerberos library finds the realm (and ``extra``, e.g. ``KRB5CCNAME``) meanwhile."""
        values: Mapping[str, str] = {**self.env, **extra}
        saved = {key: os.environ.get(key) for key in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)
