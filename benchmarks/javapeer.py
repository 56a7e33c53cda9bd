"""Java's KafkaConsumer as a peer in bench_consume.py: the harness (``benchmarks/java/JavaConsume.java``) compiled
once with ``javac`` against the Kafka jars the tests cache, and the command line that runs it.

Two clients, one per ``group.protocol``: ``java`` (``classic``: ``ClassicKafkaConsumer``) and ``java-async``
(``consumer``: ``AsyncKafkaConsumer``, the design asyncconsumer follows), each also warm (``java-warm``,
``java-async-warm``: the topic read ``WARM_PASSES`` times in one JVM, the last pass reported). Offered on
``--broker kafka`` only. The
classes land in ``<cache>/bench-java/<digest>`` (the cache of ``tests/support/kafka_broker.py``), keyed by the
sources' and the jars' digest, and are never committed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from benchcommon import test_support

JAVA_CLIENTS: Mapping[str, str] = {
    "java": "classic",
    "java-async": "consumer",
    "java-warm": "classic",
    "java-async-warm": "consumer",
}
"""bench_consume.py's Java clients and the ``group.protocol`` each runs (which picks KafkaConsumer's delegate)."""

WARM_PASSES = 5
"""Passes over the topic a ``-warm`` client makes in one JVM, reporting the last: by then the JIT has compiled the
consumer's hot path (a pass of 1M x 100 B is ~3 M method calls per record stage), as in a long-running service."""


def passes(client: str) -> int:
    """How many times ``client`` reads the topic in one JVM (it reports the last pass): ``WARM_PASSES`` for the
    ``-warm`` clients, else 1 (a fresh JVM, cold JIT, as every Python child starts afresh)."""
    return WARM_PASSES if client.endswith("-warm") else 1


JAVA_BROKERS = ("kafka",)
"""The ``--broker`` kinds the Java clients are offered on."""

JVM_FLAGS = ("-Xmx512m",)
"""The JVM's flags: a modest heap bound, everything else the JVM's defaults (G1 on a machine with 2+ CPUs and
2+ GB). Every rep is a fresh JVM, so the JIT starts cold each time, as every Python child starts afresh."""

HARNESS_DIR = Path(__file__).resolve().parent / "java"
SOURCES = ("JavaConsume.java", "log4j2.properties")
MAIN_CLASS = "JavaConsume"

RUNTIME_JARS = (
    "kafka-clients",
    "slf4j-api",
    "lz4-java",
    "snappy-java",
    "zstd-jni",
    "log4j-api",
    "log4j-core",
    "log4j-slf4j-impl",
)
"""What the harness runs with, out of the broker's jars: the client, its logging API bound to log4j (warnings to
stderr, ``java/log4j2.properties``) and its compression codecs. Nothing of the broker's."""

MAX_POLL_RECORDS = 10_000
"""``max.poll.records``: what the Python children ask of each poll (bench_consume.py's ``POLL_MAX_RECORDS``)."""


class JavaUnavailable(RuntimeError):
    """No Java 17+ with ``javac``, or the harness did not compile."""


def java_client_note(clients: Iterable[str], broker: str) -> str | None:
    """Why the Java clients among ``clients`` are left out on ``broker`` (None: they are not, or there are none)."""
    asked = [c for c in clients if c in JAVA_CLIENTS]
    if not asked or broker in JAVA_BROKERS:
        return None
    return f"skipping {', '.join(asked)}: Java's consumer is a peer on --broker kafka only (this run: {broker})"


def java_version(text: str) -> int | None:
    """The major version in ``java -version``'s output (``openjdk version "17.0.15"`` -> 17; ``"1.8.0_402"`` -> 8)."""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def unavailable_reason() -> str | None:
    """Why the Java clients cannot run here (None when ``java`` and ``javac`` 17+ are on the PATH)."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"Java's consumer needs a JDK 17+ (no `{tool}` on PATH)"
    text = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    major = java_version(text)
    if major is None or major < 17:
        return f"Java's consumer needs Java 17 or newer (found: {text.strip()[:80]!r})"
    return None


def runtime_jars(libs: Path, names: Sequence[str] = RUNTIME_JARS) -> list[Path]:
    """The jars in ``libs`` the harness needs, one per name in ``names`` (``kafka-clients-4.4.0.jar`` for
    ``kafka-clients``), in that order. ``JavaUnavailable`` names any that are missing."""
    found: list[Path] = []
    missing: list[str] = []
    jars = sorted(p for p in libs.iterdir() if p.suffix == ".jar")
    for name in names:
        pattern = re.compile(re.escape(name) + r"-\d[^/]*\.jar")
        match = [p for p in jars if pattern.fullmatch(p.name)]
        if len(match) != 1:
            missing.append(name)
            continue
        found.append(match[0])
    if missing:
        raise JavaUnavailable(f"{libs} lacks the jar(s) {', '.join(missing)} (or holds several versions)")
    return found


def build(libs: Path, cache: Path, main_class: str = MAIN_CLASS) -> Path:
    """The harness's classes directory under ``cache/bench-java``, compiled with ``javac`` if it is not there yet
    (``tests/support/javac.py``: one process at a time). ``JavaUnavailable`` when there is no JDK or the source does
    not compile.

    ``main_class`` picks another program of ``java/`` (``JavaShareConsume``: see ``javashare.py``), compiled alone
    into its own directory with the same jars and logging set-up."""
    reason = unavailable_reason()
    if reason is not None:
        raise JavaUnavailable(reason)
    javac = test_support("javac")
    source = HARNESS_DIR / f"{main_class}.java"
    resources = [HARNESS_DIR / name for name in SOURCES[1:]]
    try:
        classes: Path = javac.compiled(
            [source], runtime_jars(libs), cache / "bench-java", resources=resources, lint=True
        )
    except javac.CompileError as exc:
        raise JavaUnavailable(str(exc)) from exc
    return classes


def command(
    client: str,
    classes: Path,
    jars: Sequence[Path],
    *,
    bootstrap: str,
    topic: str,
    partitions: int,
    expect: int,
    clk_tck: int,
    stall_s: float,
    java: str = "java",
) -> list[str]:
    """The command line of one measured Java child for ``client`` (a key of ``JAVA_CLIENTS``).

    Neither protocol gets a ``group.id`` (as aiokafka's ``group_id=None``): both delegates serve ``assign()``
    without one in Kafka 4.4, and nothing is committed (``enable.auto.commit=false``).
    """
    protocol = JAVA_CLIENTS[client]
    argv = [
        java,
        *JVM_FLAGS,
        "-cp",
        ":".join([str(classes), *(str(j) for j in jars)]),
        MAIN_CLASS,
        "--client",
        client,
        "--group-protocol",
        protocol,
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--partitions",
        str(partitions),
        "--expect",
        str(expect),
        "--clk-tck",
        str(clk_tck),
        "--stall-s",
        str(round(stall_s)),
        "--max-poll-records",
        str(MAX_POLL_RECORDS),
        "--passes",
        str(passes(client)),
    ]
    return argv


def describe(java_version_text: str) -> dict[str, object]:
    """What a report records about the Java clients: the JVM, its flags, and what each client runs."""
    first = java_version_text.strip().splitlines()[0] if java_version_text.strip() else "unknown"
    return {
        "java": first,
        "jvm_flags": list(JVM_FLAGS),
        "java_clients": {
            c: f"group.protocol={p}" + (f", last of {passes(c)} passes in one JVM" if passes(c) > 1 else "")
            for c, p in JAVA_CLIENTS.items()
        },
        "max_poll_records": MAX_POLL_RECORDS,
    }
