"""The README's and the guides' examples run as written and print what the documents say they print.

The tour's broker command starts the broker (on a free port instead of 9092); then every Python block and every
``.venv/bin/asyncconsumer`` command line runs against it, in document order, from a directory outside the
repository. The documents of ``KAFKA_DOCUMENTS`` run against Apache Kafka instead (one node of its own), for what
Tansu lacks. A block followed by an output block (a fence whose info string is ``text title="Output"``) must print
that output: lines compare exactly, except that ``...`` inside a line stands for any text and a line of only
``...`` for any number of lines (doctest's ellipsis).

A Spark Connect example (``SparkSession.builder.remote(...)``) needs the ``spark-connect`` extra and port 15002 free
(``remote("local[N]")`` starts its server there): without the extra it skips locally, naming it, and fails in CI.

A block may opt out only with a ``<!-- not run: REASON -->`` line right above it; the reasons are pinned here, so a
new example cannot slip out of the test unnoticed.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from asyncconsumer.tools.embedded_broker import free_port
from tests.conftest import _run_broker
from tests.support.cli import broker_command
from tests.support.extras import requires_extra
from tests.support.kafka_broker import KafkaCluster

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(
    r"(?:<!-- not run: (?P<reason>[^>]*?) -->\n)?```(?P<lang>\w*)(?P<info>[^\n]*)\n(?P<code>.*?)```", re.S
)
_OUTPUT_INFO = 'title="Output"'
_ADDRESS = "localhost:9092"
_CLI = ".venv/bin/asyncconsumer"
_SPARK_CONNECT_PORT = 15002
"""Where ``remote("local[N]")`` starts its Spark Connect server, and where its client looks for it."""

NOT_RUN = {
    "security.md": ["needs a broker with a TLS listener and its CA file"],
    "exactly-once.md": [
        "needs a PostgreSQL server (tests/integration/test_exactly_once_postgres.py runs these calls against one)"
    ],
}
"""The blocks allowed to opt out, per document, with their reasons."""

KAFKA_DOCUMENTS = {"share-groups.md": "share groups (KIP-932): Tansu has none"}
"""The documents whose examples run against Apache Kafka, and why."""


@attrs.frozen
class Block:
    document: str
    line: int
    lang: str
    info: str
    code: str
    not_run: str | None
    expected: str | None = None  # the output block right after it, if any

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"

    @property
    def is_output(self) -> bool:
        return self.lang == "text" and self.info.strip() == _OUTPUT_INFO

    @property
    def commands(self) -> list[str]:
        """The ``asyncconsumer`` command lines of a shell block (the set-up commands are CI's, not this test's)."""
        if self.lang != "sh":
            return []
        return [line.strip() for line in self.code.splitlines() if line.strip().startswith(f"{_CLI} ")]

    @property
    def runnable(self) -> bool:
        return self.not_run is None and (self.lang == "python" or bool(self.commands)) and not self.starts_broker

    @property
    def spark_connect(self) -> bool:
        """A Spark Connect session (``SparkSession.builder.remote(...)``): it needs the ``spark-connect`` extra."""
        return self.lang == "python" and ".remote(" in self.code

    @property
    def starts_broker(self) -> bool:
        return any(" broker " in f"{c} " for c in self.commands)


def _blocks() -> list[Block]:
    found: list[Block] = []
    for path in DOCUMENTS:
        text = path.read_text()
        in_document: list[Block] = []
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            name = str(path.relative_to(ROOT / "docs")) if path.parent != ROOT else path.name
            block = Block(name, line, match["lang"], match["info"], match["code"], match["reason"])
            if block.is_output:
                assert in_document and not in_document[-1].is_output, f"{block.id}: an output block follows no example"
                previous = in_document[-1]
                in_document[-1] = attrs.evolve(previous, expected=block.code)
            in_document.append(block)
        found.extend(in_document)
    return found


BLOCKS = _blocks()
RUNNABLE = [b for b in BLOCKS if b.runnable]


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected`` with its ``...`` filled in (trailing spaces and blank ends ignored)."""
    pattern = []
    for line in expected.strip("\n").splitlines():
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.rstrip().split("...")) + r"\n")
    lines = "".join(line.rstrip() + "\n" for line in actual.strip("\n").splitlines())
    return re.fullmatch("".join(pattern), lines, re.S) is not None


def _tour_broker_command() -> list[str]:
    lines = {c for b in BLOCKS for c in b.commands if " broker --port " in f"{c} "}
    assert len(lines) == 1, f"the documents start the tour's broker with one command, found {lines}"
    return shlex.split(lines.pop())


def _cli(argv: list[str]) -> list[str]:
    """``.venv/bin/asyncconsumer ARGS`` as this interpreter runs it."""
    assert argv[0] == _CLI, argv
    return [str(Path(sys.executable).parent / "asyncconsumer"), *argv[1:]]


@attrs.frozen
class TourBroker:
    address: str
    port: int
    output: str


@pytest.fixture(scope="module")
def tour_broker() -> Iterator[TourBroker]:
    """The documents' own ``asyncconsumer broker`` command, on a free port, as the venv's script runs it."""
    port = free_port()
    argv = _cli([str(port) if arg == "9092" else arg for arg in _tour_broker_command()])
    assert argv[1] == "broker", argv
    with broker_command(*argv[2:], program=argv[:1]) as output:
        yield TourBroker(f"localhost:{port}", port, "\n".join(output))


@pytest.fixture(scope="module")
def kafka_for_docs() -> Iterator[KafkaCluster]:
    """Apache Kafka for ``KAFKA_DOCUMENTS``, started when the first of their examples runs."""
    yield from _run_broker(KafkaCluster.start)


@pytest.fixture
def example_broker(block: Block, request: pytest.FixtureRequest) -> TourBroker:
    """The broker ``block`` runs against: the tour's, or Kafka for ``KAFKA_DOCUMENTS``."""
    if block.document not in KAFKA_DOCUMENTS:
        tour: TourBroker = request.getfixturevalue("tour_broker")
        return tour
    kafka: KafkaCluster = request.getfixturevalue("kafka_for_docs")
    return TourBroker(kafka.bootstrap_servers, kafka.port, "")


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory outside the repository: the examples must not depend on running from its root."""
    return tmp_path_factory.mktemp("docs-examples")


def _require_free_port(port: int, holder: str) -> None:
    """Fails naming ``holder`` when ``port`` is taken: the example's client would reach that server, not its own."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            pytest.fail(f"port {port} is taken ({exc}), probably by {holder}: the example needs it free")


def _as_documented(output: str, broker: TourBroker) -> str:
    return output.replace(f":{broker.port}", ":9092")


def test_the_documents_have_examples_and_only_the_pinned_ones_opt_out() -> None:
    assert len([b for b in RUNNABLE if b.lang == "python"]) >= 10, [b.id for b in BLOCKS]
    assert len([b for b in RUNNABLE if b.lang == "sh"]) >= 4, [b.id for b in BLOCKS]
    opted_out = {doc: [b.not_run for b in BLOCKS if b.document == doc and b.not_run] for doc in NOT_RUN}
    assert opted_out == NOT_RUN
    assert all(b.not_run is None for b in BLOCKS if b.document not in NOT_RUN)


def test_every_example_that_prints_says_what_it_prints() -> None:
    """An example whose output the reader cannot check against the page is one a newcomer cannot trust."""
    silent = [b.id for b in RUNNABLE if b.expected is None]
    assert not silent, f"runnable examples without an output block: {silent}"


def test_no_python_example_awaits_at_the_top_level() -> None:
    for block in RUNNABLE:
        assert not re.search(r"^(async with|await |async for)", block.code, re.M), block.id


@pytest.mark.parametrize(
    ("expected", "actual", "verdict"),
    [
        ("a\nb", "a\nb\n", True),
        ("a ... c", "a b b c", True),
        ("a\n...\nd", "a\nb\nc\nd", True),
        ("a\n...\nd", "a\nd", True),
        ("consumed 1000 records", "consumed 999 records", False),
        ("a\nb", "a\nb\nc", False),
        ("{0: 500, 1: 500}", "{0: 500, 1: 499}", False),
    ],
)
def test_output_matching(expected: str, actual: str, verdict: bool) -> None:
    assert matches(expected, actual) is verdict


def test_the_tour_broker_prints_what_the_documents_say(tour_broker: TourBroker) -> None:
    (block,) = {b.expected: b for b in BLOCKS if b.starts_broker and b.expected}.values()
    assert block.expected is not None, "the tour's broker command has no output block"
    assert matches(block.expected, _as_documented(tour_broker.output, tour_broker)), tour_broker.output


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_example_runs_as_written_and_prints_what_the_document_says(
    block: Block, example_broker: TourBroker, elsewhere: Path
) -> None:
    tour_broker = example_broker
    if block.spark_connect:
        requires_extra("spark-connect", "grpc")
        _require_free_port(_SPARK_CONNECT_PORT, "a Spark Connect server of another process")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    if block.lang == "python":
        code = block.code.replace(_ADDRESS, tour_broker.address)
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
            env=env,
            cwd=elsewhere,
        )
        outputs = [result]
    else:
        outputs = []
        for command in block.commands:
            argv = _cli(shlex.split(command.replace(_ADDRESS, tour_broker.address)))
            outputs.append(
                subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env, cwd=elsewhere)
            )
    for result in outputs:
        assert result.returncode == 0, f"{block.id} failed:\n{result.stdout}\n{result.stderr}"
    printed = _as_documented("".join(r.stdout for r in outputs), tour_broker)
    assert block.expected is not None
    assert matches(block.expected, printed), f"{block.id} printed:\n{printed}\nthe document says:\n{block.expected}"
