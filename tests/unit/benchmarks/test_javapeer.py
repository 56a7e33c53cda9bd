"""benchmarks/javapeer.py (Java's consumer as a bench_consume.py peer): version parsing, which clients run on
which broker, the jars picked, the cache key and the command line; and the cached ``javac`` build it shares with the
telemetry tests (``tests/support/javac.py``). Nothing here starts a JVM."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import _broker_unavailable
from tests.support.javac import CompileError, build_digest, compiled

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def javapeer() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))  # the scripts import their siblings by plain name
    try:
        import javapeer

        yield javapeer
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def bench_consume(javapeer: ModuleType) -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_consume

        yield bench_consume
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize(
    ("text", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17),
        ('java version "1.8.0_402"', 8),
        ('openjdk version "21-ea" 2023-09-19', 21),
        ("bash: java: command not found", None),
    ],
)
def test_java_version_reads_the_major_version(javapeer: ModuleType, text: str, major: int | None) -> None:
    assert javapeer.java_version(text) == major


def test_java_clients_are_left_out_on_tansu_with_a_note_naming_them(javapeer: ModuleType) -> None:
    note = javapeer.java_client_note(["asyncconsumer", "java", "java-async"], "tansu")
    assert note is not None
    assert "java, java-async" in note
    assert "--broker kafka" in note
    assert javapeer.java_client_note(["asyncconsumer", "java"], "kafka") is None
    assert javapeer.java_client_note(["asyncconsumer", "aiokafka"], "tansu") is None


def test_default_clients_offer_java_on_kafka_only_when_a_jdk_is_there(bench_consume: ModuleType) -> None:
    java = {"java", "java-async", "java-warm", "java-async-warm"}
    assert java <= set(bench_consume.default_clients("kafka", java_ok=True))
    assert not java & set(bench_consume.default_clients("kafka", java_ok=False))
    assert not java & set(bench_consume.default_clients("tansu", java_ok=True))
    assert "asyncconsumer" in bench_consume.default_clients("tansu", java_ok=True)


def _jars(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).write_bytes(b"")
    return tmp_path


def test_runtime_jars_pick_one_jar_per_name_in_order(javapeer: ModuleType, tmp_path: Path) -> None:
    libs = _jars(tmp_path, "kafka_2.13-4.4.0.jar", "kafka-clients-4.4.0.jar", "slf4j-api-1.7.36.jar", "x.txt")
    jars = javapeer.runtime_jars(libs, ("slf4j-api", "kafka-clients"))
    assert [j.name for j in jars] == ["slf4j-api-1.7.36.jar", "kafka-clients-4.4.0.jar"]


def test_runtime_jars_name_what_is_missing_or_ambiguous(javapeer: ModuleType, tmp_path: Path) -> None:
    libs = _jars(tmp_path, "kafka-clients-4.4.0.jar", "kafka-clients-4.3.0.jar", "kafka-clients-extra-1.0.jar")
    with pytest.raises(javapeer.JavaUnavailable, match=r"kafka-clients, zstd-jni"):
        javapeer.runtime_jars(libs, ("kafka-clients", "zstd-jni"))


def test_a_builds_cache_key_changes_with_the_sources_and_the_jars() -> None:
    sources = {"A.java": b"class A {}", "log4j2.properties": b"x"}
    jars = [Path("/libs/kafka-clients-4.4.0.jar")]
    digest = build_digest(sources, jars)
    assert digest == build_digest(dict(reversed(list(sources.items()))), jars)
    assert digest != build_digest({**sources, "A.java": b"class A { }"}, jars)
    assert digest != build_digest(sources, [Path("/libs/kafka-clients-4.5.0.jar")])


def test_a_build_is_compiled_once_with_its_resources_and_a_refusal_carries_javacs_words(tmp_path: Path) -> None:
    if shutil.which("javac") is None:
        _broker_unavailable("javac (a JDK 17 or newer) is needed to compile the Java peers")
    source = tmp_path / "Hello.java"
    source.write_text("public class Hello { public static void main(String[] a) { System.out.println(1); } }\n")
    resource = tmp_path / "log4j2.properties"
    resource.write_text("status = warn\n")
    cache = tmp_path / "cache"
    classes = compiled([source], [], cache, resources=[resource], lint=True)
    assert (classes / "Hello.class").is_file() and (classes / "log4j2.properties").read_text() == "status = warn\n"
    stamp = (classes / ".complete").stat().st_mtime_ns
    assert compiled([source], [], cache, resources=[resource], lint=True) == classes
    assert (classes / ".complete").stat().st_mtime_ns == stamp  # not compiled again
    source.write_text("public class Hello { int x = ; }\n")
    with pytest.raises(CompileError, match=r"(?s)javac failed on Hello\.java:.*illegal start of expression"):
        compiled([source], [], cache)
    assert sorted(p.name for p in cache.iterdir()) == [".lock", classes.name]  # no half-built directory left


@pytest.mark.parametrize(
    ("client", "protocol", "passes"),
    [
        ("java", "classic", 1),
        ("java-async", "consumer", 1),
        ("java-warm", "classic", 5),
        ("java-async-warm", "consumer", 5),
    ],
)
def test_command_runs_the_client_s_group_protocol_with_the_bench_settings(
    javapeer: ModuleType, client: str, protocol: str, passes: int
) -> None:
    jars = [Path("/libs/kafka-clients-4.4.0.jar"), Path("/libs/slf4j-api-1.7.36.jar")]
    argv = javapeer.command(
        client,
        Path("/cache/classes"),
        jars,
        bootstrap="127.0.0.1:9092",
        topic="bench-small-1",
        partitions=4,
        expect=1_000_000,
        clk_tck=100,
        stall_s=30.0,
        java="/usr/bin/java",
    )
    assert argv[0] == "/usr/bin/java"
    assert argv[1 : 1 + len(javapeer.JVM_FLAGS)] == list(javapeer.JVM_FLAGS)
    assert argv[argv.index("-cp") + 1] == "/cache/classes:/libs/kafka-clients-4.4.0.jar:/libs/slf4j-api-1.7.36.jar"
    options = argv[argv.index(javapeer.MAIN_CLASS) + 1 :]
    pairs = dict(zip(options[::2], options[1::2], strict=True))
    assert pairs == {
        "--client": client,
        "--group-protocol": protocol,
        "--bootstrap": "127.0.0.1:9092",
        "--topic": "bench-small-1",
        "--partitions": "4",
        "--expect": "1000000",
        "--clk-tck": "100",
        "--stall-s": "30",
        "--max-poll-records": str(javapeer.MAX_POLL_RECORDS),
        "--passes": str(passes),
    }
    assert javapeer.WARM_PASSES == 5


def test_max_poll_records_is_what_the_python_children_ask_for(javapeer: ModuleType, bench_consume: ModuleType) -> None:
    assert javapeer.MAX_POLL_RECORDS == bench_consume.POLL_MAX_RECORDS


def test_a_report_s_header_names_the_jvm_the_java_clients_ran_on(
    javapeer: ModuleType, bench_consume: ModuleType
) -> None:
    info = {"cpus": 2, "cpu_model": "cpu", "platform": "linux", "python": "3.11", "kafka_clients": "4.4.0"}
    info |= javapeer.describe('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment')
    text = bench_consume.header({"machine": info, "command": None})
    assert 'kafka-clients 4.4.0 on openjdk version "17.0.15" 2025-04-15' in text
    assert "`-Xmx512m`" in text
    assert "`java-async` group.protocol=consumer" in text
