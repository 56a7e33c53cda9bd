"""Shared fixtures: the session's broker (each broker test runs against Tansu and against Apache Kafka), topics,
a producer, and Tansu brokers behind a fault proxy, the KIP-848 coordinator shim, or a TLS/SASL front.

When a broker cannot start (for Kafka: no Java 17 or Maven), its tests are skipped with the reason, except when the
``CI`` environment variable is set: there they fail, so CI can never pass by skipping them.

Markers for broker tests: ``@pytest.mark.tansu_only(reason)`` and ``@pytest.mark.kafka_only(reason)`` run a test
against one broker only; ``@pytest.mark.xfail_on_tansu(reason, raises=...)`` pins a Tansu deviation as a strict xfail
there while the same test must pass on Kafka. They apply to a test through any fixture of ``BROKER_FIXTURES``.

The session ``postgres`` fixture is one PostgreSQL server (``tests/support/postgres.py``); ``postgres_db`` gives each
test a fresh database on it. Without PostgreSQL's server programs their tests are skipped, naming the package; in CI
they fail.

The session ``spark`` fixture is ``local[2]``; a test marked ``spark_cluster`` runs on a Spark standalone cluster on
loopback as well (``spark_cluster_only``: there only), see ``SPARK_MODES``.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal, NoReturn, TypeVar

import attrs
import pytest

from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker
from tests.support.faultproxy import FaultProxy
from tests.support.kafka_broker import KafkaCluster, KafkaStartError, KafkaUnavailable
from tests.support.kip848_shim import Kip848Shim
from tests.support.loop_thread import LoopThreadServer
from tests.support.postgres import PostgresDatabase, PostgresServer, PostgresStartError, PostgresUnavailable
from tests.support.produce import ProduceHelper
from tests.support.secure_front import SecureFront
from tests.support.spark_cluster import SparkCluster
from tests.support.toxi_cluster import ProxiedCluster
from tests.support.toxiproxy import ToxiproxyStartError, ToxiproxyUnavailable
from tests.support.waiting import wait_for
from tests.support.watchdog import watching

Broker = EmbeddedBroker | KafkaCluster
"""What the ``broker`` fixture yields: ``kind`` ("tansu" or "kafka"), ``bootstrap_servers``, ``port``,
``create_topic(name, partitions)``, ``delete_topic(name)``, ``stop()``."""

BROKER_KINDS = ("tansu", "kafka")

BROKER_FIXTURES: dict[str, Literal["session", "function"]] = {"broker": "session", "txn_broker": "function"}
"""The fixtures parametrized over ``BROKER_KINDS`` (with their scope), through which the broker markers apply:
``broker`` here, ``txn_broker`` in test_transactions.py (a fresh Tansu or the module's Kafka, behind a fault proxy)."""

TopicFactory = Callable[..., str]
"""``topic(partitions=4, *, name=None) -> str``: create a topic, return its name."""


def _broker_unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}\n(CI is set: broker tests fail instead of being skipped)", pytrace=False)
    pytest.skip(reason)


def unique_topic_name(hint: str = "topic") -> str:
    """A fresh legal topic name that starts with ``hint`` (cut to fit and cleaned of illegal characters)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", hint).strip("-.")[:80] or "topic"
    return f"{cleaned}-{uuid.uuid4().hex[:10]}"


_Started = TypeVar("_Started", bound="EmbeddedBroker | KafkaCluster | _FrontedBroker | ProxiedKafka | ProxiedCluster")


def _run_broker(start: Callable[[], _Started]) -> Generator[_Started, None, _Started]:
    """A fixture body: yield what ``start`` started (skip, or fail in CI, if the broker cannot start), stop it
    at teardown, then return it for the fixture's own checks."""
    try:
        started = start()
    except BrokerStartError as exc:
        _broker_unavailable(f"the embedded Tansu broker could not start: {exc}")
    except KafkaUnavailable as exc:
        _broker_unavailable(f"Apache Kafka cannot run here: {exc}")
    except KafkaStartError as exc:
        _broker_unavailable(f"Apache Kafka could not start: {exc}")
    except ToxiproxyUnavailable as exc:
        _broker_unavailable(f"Toxiproxy cannot run here: {exc}")
    except ToxiproxyStartError as exc:
        _broker_unavailable(f"Toxiproxy could not start: {exc}")
    try:
        yield started
    finally:
        started.stop()
    return started


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "tansu_only(reason): a broker test that runs against Tansu only")
    config.addinivalue_line("markers", "kafka_only(reason): a broker test that runs against Apache Kafka only")
    config.addinivalue_line(
        "markers",
        "xfail_on_tansu(reason, raises=None, strict=True): an xfail against Tansu (strict unless a timing-dependent "
        "deviation says otherwise); must pass on Kafka",
    )
    config.addinivalue_line(
        "markers", "cluster: runs on a 3-node Apache Kafka cluster (`kafka_cluster`); select with -m cluster"
    )
    config.addinivalue_line(
        "markers", "spark_cluster: a test of the `spark` fixture that also runs on the Spark standalone cluster"
    )
    config.addinivalue_line(
        "markers", "spark_cluster_only: a test of the `spark` fixture that runs on the Spark standalone cluster only"
    )


@pytest.hookimpl(tryfirst=True)  # before the fixture's own params are applied, so these replace them
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked for one broker gets only that broker's parameter (the others are not collected at all); a test
    of the ``spark`` fixture runs on local Spark only unless marked ``spark_cluster`` (both) or
    ``spark_cluster_only``."""
    if "spark" in metafunc.fixturenames:
        _spark_modes(metafunc)
    names = [name for name in BROKER_FIXTURES if name in metafunc.fixturenames]
    if not names:
        return
    only = [kind for kind in BROKER_KINDS if metafunc.definition.get_closest_marker(f"{kind}_only") is not None]
    if len(only) > 1:
        raise pytest.UsageError(f"{metafunc.definition.nodeid} is marked for both brokers")
    for name in names if only else ():  # as marks, which pytest applies and which take precedence over fixture params
        metafunc.definition.add_marker(pytest.mark.parametrize(name, only, indirect=True, scope=BROKER_FIXTURES[name]))


def _spark_modes(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("spark_cluster_only") is not None:
        modes = ["standalone"]
    elif metafunc.definition.get_closest_marker("spark_cluster") is not None:
        return  # the fixture's own params: SPARK_MODES
    else:
        modes = ["local"]
    metafunc.definition.add_marker(pytest.mark.parametrize("spark", modes, indirect=True, scope="session"))


def broker_kind(item: pytest.Item) -> str | None:
    """The broker kind a collected test runs against (through a fixture of ``BROKER_FIXTURES``), or None."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    kinds = [callspec.params[name] for name in BROKER_FIXTURES if name in callspec.params]
    return kinds[0] if kinds else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A hung test reports where everything waits, then is cancelled (``tests/support/watchdog.py``)."""
    with watching(item.nodeid):
        return (yield)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("xfail_on_tansu")
        if marker is not None and broker_kind(item) == "tansu":
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
            raises = marker.kwargs.get("raises")
            strict = marker.kwargs.get("strict", True)
            item.add_marker(pytest.mark.xfail(strict=strict, raises=raises, reason=f"Tansu 0.6: {reason}"))


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", params=BROKER_KINDS)
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """One broker of each kind for the whole session, every broker test run against both: Tansu (memory-only) and
    a one-node Apache Kafka. Topics are per test (see ``topic``)."""
    if request.param == "tansu":
        yield from _run_broker(EmbeddedBroker.start)
        return
    kafka = yield from _run_broker(KafkaCluster.start)
    if request.session.testsfailed:
        sys.stderr.write(f"\nApache Kafka's last log lines (tests failed):\n{kafka.log_tail()}\n")


@pytest.fixture
def topic(broker: Broker, request: pytest.FixtureRequest) -> TopicFactory:
    """``topic(partitions=4, *, name=None) -> str`` creates a uniquely named topic on the session broker."""

    def create(partitions: int = 4, *, name: str | None = None) -> str:
        topic_name = name or unique_topic_name(request.node.name)
        broker.create_topic(topic_name, partitions)
        return topic_name

    return create


@pytest.fixture
def produce(broker: Broker) -> ProduceHelper:
    """Produce to the session broker: ``produce(topic, records)``, ``.values(...)``, ``.batches(...)``."""
    return ProduceHelper(broker.bootstrap_servers)


def start_postgres() -> PostgresServer:
    """A new PostgreSQL server; the test is skipped (failed in CI) with what is missing when it cannot start."""
    try:
        return PostgresServer.launch()
    except PostgresUnavailable as exc:
        _broker_unavailable(f"PostgreSQL cannot run here: {exc}")
    except PostgresStartError as exc:
        _broker_unavailable(f"PostgreSQL could not start: {exc}")


@pytest.fixture(scope="session")
def postgres(request: pytest.FixtureRequest) -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session (``tests/support/postgres.py``): Debian's PostgreSQL started with
    initdb and pg_ctl in a temp directory on a free loopback port, as an unprivileged user when the tests run as
    root; stopped by its pid at the end. ``dsn(dbname)``, ``restart()``, ``stop(mode)``, ``start()``; a test that
    stops it gets it started again before the next test (``postgres_db``). Tests take ``postgres_db`` for a database
    of their own; one that takes ``postgres`` alone shares the ``postgres`` database with every such test."""
    server = start_postgres()
    try:
        yield server
    finally:
        if request.session.testsfailed:
            sys.stderr.write(f"\nPostgreSQL's last log lines (tests failed):\n{server.log_tail()}\n")
        server.close()


@pytest.fixture
def postgres_db(postgres: PostgresServer, request: pytest.FixtureRequest) -> Iterator[PostgresDatabase]:
    """A fresh, empty database for this test on the session's server (``CREATE DATABASE ... TEMPLATE template1``):
    ``dsn`` (``postgresql://asyncconsumer@127.0.0.1:<port>/<name>``), ``name``, ``connect()``, and the server's
    ``restart()``/``stop()``/``start()``. Dropped after the test, with any connections it still has; the server is
    started again first if the test left it stopped."""
    postgres.ensure_running()
    database = postgres.create_database(request.node.name)
    try:
        yield database
    finally:
        postgres.ensure_running()
        postgres.drop_database(database.name)


@attrs.frozen
class _FrontedBroker:
    """A broker that advertises a front server's port, so every client connection goes through that front."""

    broker: EmbeddedBroker
    _topic_hint: ClassVar[str] = "topic"

    @property
    def _front(self) -> LoopThreadServer[Any]:
        raise NotImplementedError

    @property
    def bootstrap_servers(self) -> str:
        """The front's address."""
        return self._front.address

    @property
    def produce(self) -> ProduceHelper:
        """A producer for this broker (its traffic goes through the front too, and shows in its counters)."""
        return ProduceHelper(self.bootstrap_servers)

    def create_topic(self, partitions: int = 4, *, name: str | None = None) -> str:
        """Create a topic (straight to the broker's listener, not through the front) and return its name."""
        topic_name = name or unique_topic_name(self._topic_hint)
        self.broker.create_topic(topic_name, partitions)
        return topic_name

    def stop(self) -> None:
        try:
            self._front.stop()
        finally:
            self.broker.stop()


_Front = TypeVar("_Front", FaultProxy, Kip848Shim, SecureFront)


def _broker_behind(front: _Front) -> EmbeddedBroker:
    """Start a fresh broker that advertises the started ``front``'s port and point ``front`` at it; stops
    ``front`` if the broker does not start."""
    # The broker's port is known only once it runs; the front connects upstream lazily, so its target is set
    # after the broker is up and before anyone can learn the front's address.
    try:
        started = EmbeddedBroker.start(advertised_port=front.port)
    except BaseException:
        front.stop()
        raise
    front.set_target("127.0.0.1", started.port)
    return started


@attrs.frozen
class ProxiedBroker(_FrontedBroker):
    """A broker that advertises its fault proxy's port, so every client connection goes through ``proxy``."""

    proxy: FaultProxy
    _topic_hint: ClassVar[str] = "proxied"

    @property
    def _front(self) -> FaultProxy:
        return self.proxy


def start_proxied_broker() -> ProxiedBroker:
    """Start a fault proxy and a fresh broker that advertises the proxy's port; the caller stops both."""
    proxy = FaultProxy("127.0.0.1", 0).start()
    return ProxiedBroker(broker=_broker_behind(proxy), proxy=proxy)


@pytest.fixture
def proxied_broker() -> Iterator[ProxiedBroker]:
    """A fresh broker behind a FaultProxy (bootstrap and per-node connections all go through the proxy).

    Teardown stops both and fails the test if a proxy mutator raised.
    """
    proxied = yield from _run_broker(start_proxied_broker)
    fail_on_mutator_errors(proxied.proxy)


def fail_on_mutator_errors(proxy: FaultProxy) -> None:
    """Fail the test if a mutator of ``proxy`` raised (and forget those errors)."""
    if proxy.mutator_errors:
        errors = "; ".join(repr(error) for error in proxy.mutator_errors)
        proxy.mutator_errors.clear()
        pytest.fail(f"fault proxy mutators raised: {errors}", pytrace=False)


@attrs.frozen
class ProxiedKafka:
    """An Apache Kafka node that advertises its fault proxy's port, so every client connection goes through
    ``proxy``; topics are created through Kafka's internal listener (never through the proxy)."""

    kafka: KafkaCluster
    proxy: FaultProxy
    kind: ClassVar[str] = "kafka"

    @property
    def bootstrap_servers(self) -> str:
        """The proxy's address."""
        return self.kafka.bootstrap_servers

    def create_topic(self, partitions: int = 4, *, name: str | None = None) -> str:
        topic_name = name or unique_topic_name("proxied")
        self.kafka.create_topic(topic_name, partitions)
        return topic_name

    def stop(self) -> None:
        try:
            self.proxy.stop()
        finally:
            self.kafka.stop()


def start_proxied_kafka() -> ProxiedKafka:
    """Start a fault proxy and a one-node Kafka that advertises the proxy's port; the caller stops both."""
    proxy = FaultProxy("127.0.0.1", 0).start()
    try:
        kafka = KafkaCluster.start(advertised_ports=[proxy.port])
    except BaseException:
        proxy.stop()
        raise
    proxy.set_target("127.0.0.1", kafka.port)
    return ProxiedKafka(kafka=kafka, proxy=proxy)


@pytest.fixture(scope="module")
def proxied_kafka(request: pytest.FixtureRequest) -> Iterator[ProxiedKafka]:
    """One Kafka behind a FaultProxy for a whole module (starting one costs seconds): its tests share it, so each
    must leave no mutator installed behind it (and check ``mutator_errors`` itself: ``fail_on_mutator_errors``)."""
    proxied = yield from _run_broker(start_proxied_kafka)
    if request.session.testsfailed:
        sys.stderr.write(f"\nApache Kafka's last log lines (tests failed):\n{proxied.kafka.log_tail()}\n")


CLUSTER_SETTINGS: dict[str, str] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "auto.leader.rebalance.enable": "false",
}
"""For the cluster tests: a killed broker is fenced (and loses its leaderships) 3 s after its last heartbeat instead
of 9 s; KIP-848 members' sessions are 6 s like the classic members'; leadership moves only when a test moves it."""


def start_cluster() -> KafkaCluster:
    """Three Kafka nodes, each broker and controller (a quorum of 3: one node may be down at a time)."""
    return KafkaCluster.start(3, settings=CLUSTER_SETTINGS)


@pytest.fixture(scope="module")
def kafka_cluster() -> Iterator[KafkaCluster]:
    """A 3-node Apache Kafka cluster for one module (``CLUSTER_SETTINGS``). Its tests kill and restart nodes; each
    must leave every node running when it ends (``tests/integration/test_cluster.py``'s ``cluster`` fixture
    restarts what a failed test left down) and write the nodes' logs itself when it fails (they are gone after
    the module)."""
    yield from _run_broker(start_cluster)


@pytest.fixture(scope="module")
def toxi_cluster() -> Iterator[ProxiedCluster]:
    """A 3-node Apache Kafka cluster with a Toxiproxy proxy in front of each broker's client listener, for one module
    (``tests/support/toxi_cluster.py``). Its tests add toxics and disable proxies, and must heal them when they end
    (``ProxiedCluster.heal``), so the next test starts on a clean network; a failed test writes the logs itself
    (they are gone after the module)."""
    yield from _run_broker(ProxiedCluster.start)


@attrs.frozen
class Kip848Broker(_FrontedBroker):
    """A broker that advertises the KIP-848 shim's port, so every client connection goes through ``shim``,
    which answers ConsumerGroupHeartbeat, OffsetCommit and OffsetFetch itself."""

    shim: Kip848Shim
    _topic_hint: ClassVar[str] = "kip848"

    @property
    def _front(self) -> Kip848Shim:
        return self.shim


def start_kip848_broker(**shim_kwargs: Any) -> Kip848Broker:
    """Start a KIP-848 shim (``Kip848Shim(**shim_kwargs)``) and a fresh broker that advertises the shim's port;
    the caller stops both."""
    shim = Kip848Shim(**shim_kwargs).start()
    return Kip848Broker(broker=_broker_behind(shim), shim=shim)


@pytest.fixture
def kip848_broker() -> Iterator[Kip848Broker]:
    """A fresh broker behind a default Kip848Shim (every client connection goes through the shim).

    For other shim settings call ``start_kip848_broker(**kwargs)`` (and ``stop()``) in the test. Teardown
    stops both and fails the test if the shim hit an unexpected error serving a connection.
    """
    started = yield from _run_broker(start_kip848_broker)
    if started.shim.errors:
        errors = "; ".join(repr(error) for error in started.shim.errors)
        pytest.fail(f"the KIP-848 shim raised: {errors}", pytrace=False)


@attrs.frozen
class SecuredBroker(_FrontedBroker):
    """A broker behind a ``SecureFront`` (TLS and/or SASL terminated there); clients must speak its security."""

    front: SecureFront
    _topic_hint: ClassVar[str] = "secure"

    @property
    def _front(self) -> SecureFront:
        return self.front


def start_secured_broker(**front_kwargs: Any) -> SecuredBroker:
    """Start a ``SecureFront(**front_kwargs)`` and a fresh broker that advertises its port; the caller stops both."""
    front = SecureFront(**front_kwargs).start()
    return SecuredBroker(broker=_broker_behind(front), front=front)


SPARK_MODES = ("local", "standalone")
"""Where the ``spark`` fixture's session runs: ``local[2]`` in this process's JVM, or a standalone cluster on
loopback (``tests/support/spark_cluster.py``: a master and two one-core workers, so two executors, each its own JVM
with its own Python workers). Only tests marked ``spark_cluster`` (or ``spark_cluster_only``) get the second."""


_SPARK_CLUSTER = pytest.StashKey[SparkCluster]()


def _start_spark_cluster() -> SparkCluster:
    from tests.support.spark_cluster import SparkClusterStartError

    try:
        return SparkCluster.start(workers=2)
    except (OSError, SparkClusterStartError) as exc:
        _broker_unavailable(f"the Spark standalone cluster could not start: {exc}")


def _stop_spark_cluster(cluster: SparkCluster, request: pytest.FixtureRequest) -> None:
    """Stop it (keeping the logs if a test failed) and fail if any of its processes outlived it."""
    cluster.stop(keep_logs=bool(request.session.testsfailed))
    left = cluster.pids()
    if left:
        pytest.fail(f"the Spark cluster left processes running: {left}", pytrace=False)


@pytest.fixture
def spark_cluster(spark: Any, request: pytest.FixtureRequest) -> SparkCluster:
    """The standalone cluster under the ``spark`` fixture's standalone session (for ``spark_cluster_only`` tests)."""
    cluster = request.config.stash.get(_SPARK_CLUSTER, None)
    if cluster is None:
        raise pytest.UsageError(f"{request.node.nodeid}: spark_cluster needs the standalone spark (spark_cluster_only)")
    return cluster


@pytest.fixture(scope="session", params=SPARK_MODES)
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One Spark session per mode (``SPARK_MODES``) for the test session, with our source registered and Spark's own
    Kafka source (``format("kafka")``, the reference of the differential tests) on its classpath.

    Only one SparkContext can live in a process: pytest groups the tests by this session-scoped parameter and stops
    one mode's session before it starts the other's. ``local`` takes ~5 s; ``standalone`` starts the cluster and
    waits until both executors have registered (20-50 s on a busy 2-core machine), and stops the cluster with the
    session."""
    pytest.importorskip("pyspark", reason="pip install asyncconsumer[spark]")
    from tests.support.spark_kafka import jars

    try:
        kafka_source = jars()
    except KafkaUnavailable as exc:
        _broker_unavailable(f"Spark's Kafka source: {exc}")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import asyncconsumer from this environment
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(f"asyncconsumer-tests-{request.param}")
        .config("spark.jars", ",".join(kafka_source))
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
    )
    executors = 0
    cluster: SparkCluster | None = None
    if request.param == "standalone":  # the cluster lives as long as this session: ~10 s to start, ~3 s to stop
        cluster = _start_spark_cluster()
        request.config.stash[_SPARK_CLUSTER] = cluster
        executors = len(cluster.workers)
        builder = (
            builder.master(cluster.master_url)
            .config("spark.executor.memory", "512m")
            .config("spark.cores.max", str(executors))
            # Executors' Python workers import asyncconsumer and the tests from the tree under test (the venv's
            # editable install may point at another checkout).
            .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(_tree_paths()))
            .config("spark.pyspark.python", sys.executable)
        )
    else:
        builder = builder.master("local[2]")
    try:
        session = builder.getOrCreate()
        try:
            session.sparkContext.setLogLevel("ERROR")
            if executors:
                memory_status = session.sparkContext._jsc.sc().getExecutorMemoryStatus  # the driver is listed too
                wait_for(lambda: memory_status().size() > executors, timeout=120, message="both executors registered")
            import asyncconsumer.spark

            asyncconsumer.spark.register(session)
            yield session
        finally:
            session.stop()
    finally:
        if cluster is not None:
            del request.config.stash[_SPARK_CLUSTER]
            _stop_spark_cluster(cluster, request)


def _tree_paths() -> list[str]:
    """The directory holding the imported ``asyncconsumer`` and ``tests``, then this process's PYTHONPATH."""
    import asyncconsumer

    root = str(Path(asyncconsumer.__file__).resolve().parent.parent)
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    return [root, *extra]
