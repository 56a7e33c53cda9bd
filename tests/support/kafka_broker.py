"""Apache Kafka for the tests and the benchmarks: the broker's jars fetched once with Maven, KRaft storage formatted,
``kafka.Kafka`` run on free loopback ports with a small heap, stopped by its pid.

    with KafkaCluster.start() as kafka:          # one node, broker and controller; nodes=3 for a cluster
        kafka.create_topic("events", partitions=4)
        ...                                       # connect to kafka.bootstrap_servers

The jars land in ``$ASYNCCONSUMER_CACHE`` (default ``~/.cache/asyncconsumer``) under ``kafka-<version>/libs-<digest of
kafka/pom.xml>`` and are reused by every run (a changed pom is fetched anew beside the old jars, which a run of an older
checkout may be using); ``python -m tests.support.kafka_broker fetch`` fills the cache (CI does it first, so a download
problem fails loudly and early). Needs Java 17+ and Maven: ``unavailable_reason()`` says what is missing.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import attrs

from asyncconsumer.tools.embedded_broker import free_ports
from tests.support.waiting import wait_for

KAFKA_VERSION = os.environ.get("ASYNCCONSUMER_KAFKA_VERSION", "4.4.0")
"""The Kafka release the tests run against (the newest 4.x that resolved from Maven Central with its dependencies)."""

POM = Path(__file__).with_name("kafka") / "pom.xml"
TOOLS_POM = Path(__file__).with_name("kafka_tools") / "pom.xml"
KAFKA_TOOLS_VERSION = os.environ.get("ASYNCCONSUMER_KAFKA_TOOLS_VERSION", KAFKA_VERSION)
"""kafka-tools' release (ShareConsumerPerformance, VerifiableShareConsumer): the broker's (4.4.0 resolved from Maven
Central on 2026-11-27)."""
HOST = "127.0.0.1"
HEAP = ("-Xms128m", "-Xmx512m")
_LOG_TAIL_LINES = 40
_PORT_ATTEMPTS = 3

TEST_SETTINGS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "offsets.topic.num.partitions": "10",
    "transaction.state.log.num.partitions": "5",
    "num.partitions": "1",
    "log.retention.check.interval.ms": "3600000",
    "log.retention.ms": "-1",
    # share groups (KIP-932): the broker-wide defaults stay Kafka's, the lower bounds drop to what Kafka allows, so
    # a test can give its group a short lock or session with set_group_config (see SHARE_GROUP_MINIMUMS)
    "share.coordinator.state.topic.num.partitions": "5",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.session.timeout.ms": "2000",
    "group.share.session.timeout.ms": "10000",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "1000",
}
"""Settings for tests: no initial rebalance delay, both group protocols, KIP-848 sessions short enough to wait out,
fewer partitions for the internal topics (each costs start-up time), and no time retention: tests write records
stamped in the past (``1_700_000_000_000 + i``), which the first retention check (30 s after start) would delete,
moving the log start to the end under a running test.

Share groups: 4.4.0's storage format turns ``share.version`` on by itself (2, the latest production level; see
``start_once``'s ``features``). Their sessions are as short as the KIP-848 ones here (10 s, heartbeat 1 s), and the
lower bounds a group config is checked against are lowered: a lock of 1 s, a session of 2 s, a heartbeat of 0.5 s.
The lock duration stays Kafka's 30 s unless a group sets ``share.record.lock.duration.ms``."""

SHARE_GROUP_MINIMUMS: Mapping[str, int] = {
    "share.record.lock.duration.ms": 1000,
    "share.session.timeout.ms": 2000,
    "share.heartbeat.interval.ms": 500,
    "share.delivery.count.limit": 2,
}
"""The least each share-group config accepts on these brokers (``TEST_SETTINGS``'s lower bounds; the delivery count's
is Kafka's own ``group.share.min.delivery.count.limit``). A group's heartbeat must also stay below its session."""


class KafkaUnavailable(RuntimeError):
    """Java 17+ or Maven is missing, or the broker's jars could not be fetched: the Kafka leg cannot run here."""


class KafkaStartError(RuntimeError):
    """A node did not start or did not answer Metadata in time; the message carries its log's tail."""


def cache_root() -> Path:
    return Path(os.environ.get("ASYNCCONSUMER_CACHE") or Path.home() / ".cache" / "asyncconsumer")


def unavailable_reason() -> str | None:
    """Why Kafka cannot run on this machine (None when Java 17+ and Maven are there)."""
    java = shutil.which("java")
    if java is None:
        return "Java 17 or newer is needed for the Kafka leg of the tests (no `java` on PATH)"
    version = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    found = re.search(r'version "(\d+)', version)
    if found is None or int(found.group(1)) < 17:
        return f"Java 17 or newer is needed for the Kafka leg of the tests (found: {version.strip()[:80]!r})"
    if shutil.which("mvn") is None and not _jars_dir(KAFKA_VERSION).joinpath(".complete").exists():
        return "Maven is needed to fetch Apache Kafka's jars for the Kafka leg of the tests (no `mvn` on PATH)"
    return None


def _jars_dir(version: str) -> Path:
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return cache_root() / f"kafka-{version}" / f"libs-{digest}"


def fetch_jars(version: str = KAFKA_VERSION) -> Path:
    """The directory of Kafka ``version``'s broker jars, fetched with Maven on first use (one process at a time)."""
    return maven_fetch(POM, _jars_dir(version), {"kafka.version": version}, f"Apache Kafka {version}'s jars")


def fetch_tools_jars(version: str = KAFKA_TOOLS_VERSION) -> Path:
    """The directory of kafka-tools ``version``'s jars with their dependencies (their own kafka-clients among them:
    a class path apart from the broker's), fetched with Maven on first use. For the benchmarks; CI's ``fetch`` leaves
    them out."""
    digest = hashlib.sha256(TOOLS_POM.read_bytes()).hexdigest()[:12]
    libs = cache_root() / f"kafka-tools-{version}" / f"libs-{digest}"
    return maven_fetch(TOOLS_POM, libs, {"kafka.tools.version": version}, f"Apache Kafka's tools {version}")


def maven_fetch(pom: Path, libs: Path, properties: Mapping[str, str], what: str) -> Path:
    """``libs``, holding ``pom``'s runtime dependencies: copied there by Maven unless a finished copy is there.

    One process fetches at a time (a lock beside ``libs``); a failed fetch leaves nothing that looks finished.
    """
    done = libs / ".complete"
    if done.exists():
        return libs
    reason = unavailable_reason()
    if reason is not None:
        raise KafkaUnavailable(reason)
    libs.parent.mkdir(parents=True, exist_ok=True)
    with open(libs.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be fetching the same release
        if done.exists():
            return libs
        staging = libs.with_name(f"{libs.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        command = [
            "mvn",
            "-q",
            "-B",
            "-f",
            str(pom),
            *(f"-D{key}={value}" for key, value in properties.items()),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
            raise KafkaUnavailable(f"Maven could not fetch {what}:\n{tail}")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        done.write_text(f"{what}\n")
    return libs


def cluster_id() -> str:
    """A random KRaft cluster id (a UUID, base64 without padding, as ``kafka-storage random-uuid`` prints).

    Never one that starts with "-": ``kafka-storage format -t -xyz...`` reads it as an option and fails (one run in
    64 did). Kafka's own ``Uuid.randomUuid`` draws again for the same reason.
    """
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


@attrs.define(frozen=True, slots=True)
class Listener:
    """An extra client listener: its name (also its security protocol unless ``protocol`` says otherwise) and the
    broker settings it needs, with ``{port}`` in none of them (the port is picked per node)."""

    name: str
    settings: Mapping[str, str] = attrs.field(factory=dict)
    protocol: str | None = None
    advertised_host: str = HOST
    """The host name the listener advertises (it binds ``HOST``): ``localhost`` for a Kerberos listener, whose
    service principal names the host clients connect to."""


@attrs.define(slots=True)
class KafkaNode:
    """One ``kafka.Kafka`` process (broker and controller), its ports, its directory and its log."""

    node_id: int
    port: int
    controller_port: int
    internal_port: int
    """Between the nodes, and for the admin client: never behind a front."""
    advertised_port: int
    directory: Path
    listener_ports: dict[str, int] = attrs.field(factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def ports(self) -> set[int]:
        """Every port the node listens on or names."""
        return {
            self.port,
            self.controller_port,
            self.internal_port,
            self.advertised_port,
            *self.listener_ports.values(),
        }

    @property
    def properties_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        texts = []
        for path in (self.directory / "stdout.log", self.log_path):
            with contextlib.suppress(OSError):
                texts.append("\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(t for t in texts if t) or "(no log)"


def _java(libs: Path, *args: str, heap: Sequence[str] = HEAP, classpath: Sequence[Path] = ()) -> list[str]:
    java = shutil.which("java") or "java"
    return [
        java,
        *heap,
        "-XX:+UseG1GC",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        "-cp",
        ":".join([f"{libs}/*", *(str(p) for p in classpath)]),
        *args,
    ]


_LOG4J2 = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p [%t] %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
"""


class KafkaCluster:
    """Apache Kafka nodes on loopback (1 by default), each broker and controller; what the test fixtures start."""

    kind = "kafka"

    def __init__(self, nodes: list[KafkaNode], root: Path, libs: Path, version: str) -> None:
        self.nodes = nodes
        self.root = root
        self.libs = libs
        self.version = version
        self._admin: Any = None
        self._stopped = False
        self._lock = threading.Lock()
        self.controller_ids: frozenset[int] = frozenset(n.node_id for n in nodes)
        self.system_properties: dict[str, str] = {}
        self.listener_hosts: dict[str, str] = {}
        """Each extra listener's advertised host, where it is not ``HOST``."""
        self.classpath: tuple[Path, ...] = ()

    # --- lifecycle ----------------------------------------------------------------------------------------------
    @classmethod
    def start(cls, nodes: int = 1, **options: Any) -> KafkaCluster:
        """``start_once`` (see there), again with new ports when a port it picked was taken before a node bound it.

        Free ports are picked by binding port 0 and closing the socket: until the node binds, any process on the
        machine (an outgoing connection's ephemeral port, another test run) may take one, and that node exits with
        "Address already in use".
        """
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            try:
                return cls.start_once(nodes, **options)
            except KafkaStartError as exc:
                if "Address already in use" not in str(exc) or attempt == _PORT_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    @classmethod
    def start_once(
        cls,
        nodes: int = 1,
        *,
        version: str = KAFKA_VERSION,
        advertised_ports: Sequence[int] | None = None,
        listeners: Sequence[Listener] = (),
        settings: Mapping[str, str] | None = None,
        scram_users: Sequence[str] = (),
        log_levels: Mapping[str, str] | None = None,
        node_settings: Mapping[int, Mapping[str, str]] | None = None,
        controllers: Sequence[int] | None = None,
        features: Mapping[str, int] | None = None,
        system_properties: Mapping[str, str] | None = None,
        classpath: Sequence[Path] = (),
        startup_timeout_s: float = 120.0,
    ) -> KafkaCluster:
        """Formats storage and starts ``nodes`` nodes, returning once Metadata lists them all.

        ``advertised_ports`` (one per node) is what each node names in its metadata instead of its own port, so a
        front (a fault proxy) can take every connection. ``listeners`` adds client listeners (SSL, SASL_SSL...);
        ``scram_users`` are ``--add-scram`` arguments for the storage format (``SCRAM-SHA-256=[name=u,password=p]``).
        ``log_levels`` sets loggers' levels in the nodes' logs (``{"kafka.network.DataPlaneAcceptor": "DEBUG"}`` logs
        every accepted connection). ``node_settings`` adds settings to single nodes by node id (``broker.rack``).
        ``controllers`` names the nodes that are also controllers (default: every node); the others are brokers only,
        so a test can stop brokers without losing the controller quorum. ``features`` are ``--feature name=level``
        arguments for the storage format, beside the release's defaults (4.4.0 formats ``share.version=2``, so share
        groups need nothing here; ``{"share.version": 1}`` pins the first level). ``system_properties`` are the
        nodes' JVM ``-D`` properties (``org.apache.kafka.sasl.oauthbearer.allowed.urls`` for a JWKS endpoint).
        ``classpath`` adds directories of classes after Kafka's jars (a test's ``metric.reporters`` plugin).
        """
        libs = fetch_jars(version)
        root = Path(tempfile.mkdtemp(prefix="asyncconsumer-kafka-"))
        # every port of every node picked at once, so none repeats (a node refuses two listeners on one port)
        ports = iter(free_ports(nodes * (3 + len(listeners)), avoid=advertised_ports or ()))
        members = [
            KafkaNode(
                node_id=i + 1,
                port=(port := next(ports)),
                controller_port=next(ports),
                internal_port=next(ports),
                advertised_port=advertised_ports[i] if advertised_ports else port,
                directory=root / f"node-{i + 1}",
                listener_ports={listener.name: next(ports) for listener in listeners},
            )
            for i in range(nodes)
        ]
        cluster = cls(members, root, libs, version)
        cluster.system_properties = dict(system_properties or {})
        cluster.listener_hosts = {x.name: x.advertised_host for x in listeners if x.advertised_host != HOST}
        cluster.classpath = tuple(classpath)
        voters = set(controllers) if controllers is not None else {n.node_id for n in members}
        if not voters or not voters <= {n.node_id for n in members}:
            raise ValueError(f"controllers must name some of the nodes 1..{nodes}, got {controllers}")
        cluster.controller_ids = frozenset(voters)
        _live_clusters.add(cluster)
        try:
            cid = cluster_id()
            for node in members:
                extra = {**(settings or {}), **(node_settings or {}).get(node.node_id, {})}
                cluster._write_config(node, listeners, extra, log_levels or {})
            formats = [
                subprocess.Popen(
                    cluster._format_command(node, cid, scram_users, features or {}),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
                for node in members
            ]
            # every format is waited for (and its pipe closed) before one that failed is reported
            outputs = [format_process.communicate(timeout=120)[0] for format_process in formats]
            for node, format_process, out in zip(members, formats, outputs, strict=True):
                if format_process.returncode != 0:
                    raise KafkaStartError(f"formatting node {node.node_id} failed: {out.decode(errors='replace')}")
            for node in members:
                cluster._launch(node)
            cluster._wait_ready(time.monotonic() + startup_timeout_s)
        except BaseException:
            cluster.stop(keep_logs=True)
            raise
        return cluster

    def _write_config(
        self, node: KafkaNode, listeners: Sequence[Listener], extra: Mapping[str, str], log_levels: Mapping[str, str]
    ) -> None:
        node.directory.mkdir(parents=True)
        size = len(self.nodes)
        controller = node.node_id in self.controller_ids
        names = ["PLAINTEXT", "INTERNAL", *(["CONTROLLER"] if controller else []), *(x.name for x in listeners)]
        ports = {
            "PLAINTEXT": node.port,
            "INTERNAL": node.internal_port,
            "CONTROLLER": node.controller_port,
            **node.listener_ports,
        }
        advertised = [f"PLAINTEXT://{HOST}:{node.advertised_port}", f"INTERNAL://{HOST}:{node.internal_port}"]
        advertised += [f"{x.name}://{x.advertised_host}:{node.listener_ports[x.name]}" for x in listeners]
        protocols = {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"}
        protocols.update({listener.name: listener.protocol or listener.name for listener in listeners})
        properties = {
            "process.roles": "broker,controller" if controller else "broker",
            "node.id": str(node.node_id),
            "listeners": ",".join(f"{name}://{HOST}:{ports[name]}" for name in names),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
            "log.dirs": str(node.directory / "data"),
            "offsets.topic.replication.factor": str(size),
            "transaction.state.log.replication.factor": str(size),
            "transaction.state.log.min.isr": str(min(2, size)),
            "share.coordinator.state.topic.replication.factor": str(size),
            "share.coordinator.state.topic.min.isr": str(min(2, size)),
            **TEST_SETTINGS,
        }
        if size == 1:
            properties["controller.quorum.bootstrap.servers"] = f"{HOST}:{node.controller_port}"
        else:
            properties["controller.quorum.voters"] = ",".join(
                f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes if n.node_id in self.controller_ids
            )
        for listener in listeners:
            properties.update(listener.settings)
        properties.update(extra)
        node.properties_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        loggers = "".join(
            f"logger.extra{i}.name = {name}\nlogger.extra{i}.level = {level}\n"
            for i, (name, level) in enumerate(log_levels.items())
        )
        (node.directory / "log4j2.properties").write_text(_LOG4J2.format(log=node.log_path) + loggers)

    def _format_command(
        self, node: KafkaNode, cid: str, scram_users: Sequence[str], features: Mapping[str, int]
    ) -> list[str]:
        command = _java(
            self.libs,
            "kafka.tools.StorageTool",
            "format",
            "-t",
            cid,
            "-c",
            str(node.properties_path),
            heap=("-Xmx256m",),
        )
        if len(self.nodes) == 1:
            command.append("--standalone")
        for user in scram_users:
            command += ["--add-scram", user]
        for name, level in features.items():
            command += ["--feature", f"{name}={level}"]
        return command

    def _launch(self, node: KafkaNode) -> None:
        stdout = open(node.directory / "stdout.log", "ab")  # noqa: SIM115 - the process keeps it; closed in stop
        try:
            node.process = subprocess.Popen(
                _java(
                    self.libs,
                    f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
                    f"-Dkafka.logs.dir={node.directory}",
                    *(f"-D{key}={value}" for key, value in self.system_properties.items()),
                    "kafka.Kafka",
                    str(node.properties_path),
                    classpath=self.classpath,
                ),
                stdout=stdout,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C meant for the tests is not the broker's
            )
        finally:
            stdout.close()

    def _wait_ready(self, deadline: float, starting: Sequence[int] | None = None) -> None:
        """Until Metadata from the first listening node lists every live node, and each node of ``starting`` (a
        restart) answers Metadata itself: the controller keeps a crashed broker registered, so listed, until its
        session times out (9 s), which a quick restart beats. Fails if a node of ``starting`` (default: all) exits
        meanwhile (nodes a test stopped on purpose may stay down)."""
        wanted = {n.node_id for n in self.nodes if n.alive}
        watched = set(starting) if starting is not None else {n.node_id for n in self.nodes}
        unheard = set(starting) if starting is not None else set()
        clients: dict[int, Any] = {}
        last: object = None
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.node_id in watched and node.process is not None and node.process.poll() is not None:
                    raise KafkaStartError(
                        f"Kafka node {node.node_id} exited with code {node.process.returncode}:\n{node.log_tail()}"
                    )
            try:
                metadata = self.admin().list_topics(timeout=2)
                if set(metadata.brokers) >= wanted:
                    unheard = {node_id for node_id in unheard if not self._answers(node_id, clients)}
                    if not unheard:
                        return
                    last = f"node(s) {sorted(unheard)} listed but not answering Metadata themselves"
                else:
                    last = f"metadata lists brokers {sorted(metadata.brokers)}"
            except Exception as exc:  # librdkafka's KafkaException while the broker starts
                last = exc
            time.sleep(0.2)
        tails = "\n".join(f"--- node {n.node_id} ---\n{n.log_tail()}" for n in self.nodes)
        raise KafkaStartError(f"Kafka did not answer Metadata in time (last: {last}):\n{tails}")

    def _answers(self, node_id: int, clients: dict[int, Any]) -> bool:
        """Whether node ``node_id`` answers Metadata on its internal listener (a client bootstrapped there alone)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        client = clients.get(node_id)
        if client is None:
            address = f"{HOST}:{self.node(node_id).internal_port}"
            client = clients[node_id] = AdminClient({"bootstrap.servers": address, "log_level": 0})
        try:
            client.list_topics(timeout=2)
        except KafkaException:
            return False
        return True

    def stop(self, timeout_s: float = 30.0, *, keep_logs: bool = False) -> None:
        """Stops every node (SIGTERM: a controlled shutdown; SIGKILL after ``timeout_s``). Removes the nodes'
        directories unless ``keep_logs``, which leaves them for a failed test to be read (their path is logged)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        _live_clusters.discard(self)
        if self._admin is not None:
            self._admin = None
        for node in self.nodes:
            if node.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout_s
        for node in self.nodes:
            self._reap(node, deadline)
        if keep_logs:
            sys.stderr.write(f"\nKafka's logs are kept in {self.root}\n")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    @staticmethod
    def _reap(node: KafkaNode, deadline: float) -> None:
        if node.process is None:
            return
        try:
            node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.process.pid, signal.SIGKILL)
            node.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop(keep_logs=exc is not None)

    # --- one node -----------------------------------------------------------------------------------------------
    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def kill(self, node_id: int) -> None:
        """SIGKILL one node: no controlled shutdown, as a crash."""
        node = self.node(node_id)
        if node.alive:
            os.kill(node.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        self._reap(node, time.monotonic() + 30)

    def shut_down(self, node_id: int, timeout_s: float = 60.0) -> None:
        """SIGTERM one node: a controlled shutdown (its partitions' leadership moves first)."""
        node = self.node(node_id)
        if node.alive:
            os.kill(node.process.pid, signal.SIGTERM)  # type: ignore[union-attr]
        self._reap(node, time.monotonic() + timeout_s)

    def restart(self, node_id: int, startup_timeout_s: float = 120.0) -> None:
        """Starts a stopped node again on its ports, with its data."""
        self.restart_nodes([node_id], startup_timeout_s)

    def restart_nodes(self, node_ids: Sequence[int], startup_timeout_s: float = 120.0) -> None:
        """Starts stopped nodes again together (a controller quorum lost whole needs its voters back at once)."""
        nodes = [self.node(node_id) for node_id in node_ids]
        running = [node.node_id for node in nodes if node.alive]
        if running:
            raise RuntimeError(f"node(s) {running} are running")
        for node in nodes:
            self._launch(node)
        self._wait_ready(time.monotonic() + startup_timeout_s, starting=list(node_ids))

    def readvertise(self, node_id: int, port: int) -> None:
        """Names ``port`` as a stopped node's PLAINTEXT address from its next start (a new front, say)."""
        node = self.node(node_id)
        if node.alive:
            raise RuntimeError(f"node {node_id} is running")
        self._rewrite(node, "advertised.listeners", node.advertised_port, port)
        node.advertised_port = port

    @staticmethod
    def _rewrite(node: KafkaNode, key: str, old: int, new: int) -> None:
        """Replaces the PLAINTEXT port in one listeners line of a node's properties."""
        before = f"{key}=PLAINTEXT://{HOST}:{old},"
        lines = node.properties_path.read_text().splitlines(keepends=True)
        if not any(line.startswith(before) for line in lines):
            raise ValueError(f"node {node.node_id}'s properties have no {before!r}")
        after = f"{key}=PLAINTEXT://{HOST}:{new},"
        node.properties_path.write_text(
            "".join(after + ln[len(before) :] if ln.startswith(before) else ln for ln in lines)
        )

    def move(self, node_id: int, startup_timeout_s: float = 120.0, *, crash: bool = True) -> None:
        """Stops one node (SIGKILL, or a controlled shutdown with ``crash=False``) and starts it again with its
        PLAINTEXT listener on a new port, advertised there: the broker clients knew is gone, and the same broker
        (its id, its data) is back at another address. A crash gives clients no last metadata: a node shutting
        down answers Metadata without itself, which sends clients back to their bootstrap servers anyway."""
        node = self.node(node_id)
        if node.advertised_port != node.port:
            raise ValueError(f"node {node_id} is advertised behind a front; move the front instead")
        if crash:
            self.kill(node_id)
        else:
            self.shut_down(node_id)
        # not one of the node's other ports, which the stopped node does not hold now but takes back on restart
        old, node.port = node.port, free_ports(1, avoid=node.ports)[0]
        self._rewrite(node, "listeners", old, node.port)
        self.readvertise(node_id, node.port)
        self.restart(node_id, startup_timeout_s)

    # --- what tests ask of a broker -----------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{HOST}:{n.advertised_port}" for n in self.nodes)

    @property
    def port(self) -> int:
        return self.nodes[0].port

    @property
    def advertised_port(self) -> int:
        return self.nodes[0].advertised_port

    def listener_address(self, name: str, node_id: int = 1) -> str:
        return f"{self.listener_hosts.get(name, HOST)}:{self.node(node_id).listener_ports[name]}"

    def admin(self) -> Any:
        """A ``confluent_kafka.admin.AdminClient`` on the nodes' internal listener (never through a front)."""
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            servers = ",".join(f"{HOST}:{n.internal_port}" for n in self.nodes)
            self._admin = AdminClient({"bootstrap.servers": servers, "log_level": 0})
        return self._admin

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        replication_factor: int | None = None,
        config: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        """Creates a topic and waits until every partition has a leader in the metadata."""
        from confluent_kafka.admin import NewTopic

        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        topic = NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=replication_factor or len(self.nodes),
            config=dict(config or {}),
        )
        self.admin().create_topics([topic], request_timeout=timeout_s)[name].result(timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            described = self.admin().list_topics(topic=name, timeout=5).topics.get(name)
            complete = described is not None and described.error is None and len(described.partitions) == partitions
            if complete and all(p.leader >= 0 for p in described.partitions.values()):
                return
            time.sleep(0.05)
        raise TimeoutError(f"topic {name!r} has no leader for every partition after {timeout_s} s")

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader as the metadata says now (-1 while it has none)."""
        described = self.admin().list_topics(topic=topic, timeout=10).topics.get(topic)
        found = described.partitions.get(partition) if described is not None else None
        return -1 if found is None else int(found.leader)

    def elect_leaders(
        self, partitions: Sequence[tuple[str, int]], *, unclean: bool = False, timeout_s: float = 60.0
    ) -> None:
        """Runs a preferred (or, with ``unclean``, an unclean) leader election for ``partitions``; raises what the
        controller answered for any partition, except "election not needed"."""
        from confluent_kafka import ElectionType, KafkaException, TopicPartition

        kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
        # no keyword arguments: confluent-kafka 2.16's C binding fails on them (SystemError)
        future = self.admin().elect_leaders(kind, [TopicPartition(t, p) for t, p in partitions])
        for failure in future.result(timeout=timeout_s).values():
            error = failure.args[0] if isinstance(failure, KafkaException) and failure.args else failure
            if error is not None and getattr(error, "name", lambda: "")() != "ELECTION_NOT_NEEDED":
                raise failure if isinstance(failure, KafkaException) else KafkaException(error)

    def set_group_config(self, group: str, config: Mapping[str, str | int], timeout_s: float = 30.0) -> None:
        """Sets group configs (``share.auto.offset.reset``, ``share.record.lock.duration.ms``...) of ``group``, which
        need not exist yet: an incremental SET of each, leaving the group's other configs as they are. Returns once
        the broker describes the new values: the controller answers the change once it is committed, and a broker
        applies it from the metadata log a moment later, so a describe (or a share group) could still see the old
        ones. A value out of the broker's bounds (``SHARE_GROUP_MINIMUMS``) raises its ``KafkaException``
        (INVALID_CONFIG, naming the bound)."""
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType  # type: ignore[attr-defined]

        entries = [
            ConfigEntry(name, str(value), incremental_operation=AlterConfigOpType.SET) for name, value in config.items()
        ]
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
        futures = self.admin().incremental_alter_configs([resource], request_timeout=timeout_s)
        for future in futures.values():
            future.result(timeout=timeout_s)
        wanted = {name: str(value) for name, value in config.items()}

        def applied() -> bool:
            described = self.group_config(group, timeout_s)
            return all(described.get(name) == value for name, value in wanted.items())

        wait_for(applied, timeout_s, interval=0.1, message=lambda: f"group {group}'s configs described as {wanted}")

    def group_config(self, group: str, timeout_s: float = 30.0) -> dict[str, str]:
        """``group``'s configs as the broker describes them (the defaults for those it was not given)."""
        from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]

        futures = self.admin().describe_configs([ConfigResource(ResourceType.GROUP, group)], request_timeout=timeout_s)
        described = next(iter(futures.values())).result(timeout=timeout_s)
        return {name: entry.value for name, entry in described.items()}

    def delete_topic(self, name: str, timeout_s: float = 60.0) -> None:
        self.admin().delete_topics([name], request_timeout=timeout_s)[name].result(timeout=timeout_s)

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        return "\n".join(f"--- node {n.node_id} ---\n{n.log_tail(lines)}" for n in self.nodes)

    def __repr__(self) -> str:
        return f"<KafkaCluster {self.version} nodes={len(self.nodes)} {self.bootstrap_servers}>"


_live_clusters: set[KafkaCluster] = set()


@atexit.register
def _stop_live_clusters() -> None:
    """Last resort so an interpreter that exits without stop() leaves no JVM behind."""
    for cluster in list(_live_clusters):
        cluster.stop(timeout_s=5.0)


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.kafka_broker")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="fetch the broker's and Spark's Kafka source's jars into the cache (CI does it first)")
    run = sub.add_parser("run", help="run a cluster in the foreground until Ctrl-C")
    run.add_argument("--nodes", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "fetch":
        print(f"Apache Kafka {KAFKA_VERSION} jars: {fetch_jars()}")
        from tests.support import spark_kafka

        print(f"Spark's Kafka source {spark_kafka.SPARK_KAFKA_VERSION} jars: {spark_kafka.fetch_jars()}")
        return 0
    with KafkaCluster.start(args.nodes) as cluster:
        print(f"Apache Kafka {cluster.version} at {cluster.bootstrap_servers}; Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while all(n.alive for n in cluster.nodes):
                time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
