"""The README's and docs' examples run as written: the tour's broker command starts the broker (on a free port
instead of 9092), then every Python block and every command line of the tour runs against it.

A block may opt out only with a ``<!-- not run: REASON -->`` line right above it; the reasons are pinned here, so a
new example cannot slip out of the test unnoticed.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from asyncconsumer.tools.embedded_broker import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"(?:<!-- not run: (?P<reason>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.S)
_ADDRESS = "localhost:9092"

NOT_RUN = {
    "README.md": ["needs a broker with a TLS listener and its CA file"],
}
"""The blocks allowed to opt out, per document, with their reasons."""


@attrs.frozen
class Block:
    document: str
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"


def _blocks() -> list[Block]:
    found = []
    for path in DOCUMENTS:
        text = path.read_text()
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            found.append(Block(path.name, line, match["lang"], match["code"], match["reason"]))
    return found


BLOCKS = _blocks()
PYTHON = [b for b in BLOCKS if b.lang == "python" and b.not_run is None]
COMMANDS = [
    (b, line.strip())
    for b in BLOCKS
    if b.lang == "sh" and b.not_run is None
    for line in b.code.splitlines()
    if line.strip().startswith(".venv/bin/asyncconsumer ") and " broker " not in f"{line} "
]


def _tour_broker_command() -> list[str]:
    lines = [
        line.strip() for b in BLOCKS if b.lang == "sh" for line in b.code.splitlines() if " broker --port " in line
    ]
    assert len(lines) == 1, f"the README's tour starts the broker with one command, found {lines}"
    return shlex.split(lines[0])


def _cli(argv: list[str]) -> list[str]:
    """``.venv/bin/asyncconsumer ARGS`` as this interpreter runs it."""
    assert argv[0] == ".venv/bin/asyncconsumer", argv
    return [sys.executable, "-m", "asyncconsumer.tools.cli", *argv[1:]]


@pytest.fixture(scope="module")
def tour_broker() -> Iterator[str]:
    """The README's own ``asyncconsumer broker`` command, on a free port; yields ``localhost:PORT``."""
    port = free_port()
    argv = [str(port) if arg == "9092" else arg for arg in _tour_broker_command()]
    process = subprocess.Popen(_cli(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready = threading.Event()
    output: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            if line.strip().startswith("topic 'events'"):
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(90):
            pytest.fail(f"the tour's broker command did not get ready in 90 s: {''.join(output)}")
        yield f"localhost:{port}"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            returncode = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
        finally:
            reader.join(5)
            assert process.stdout is not None
            process.stdout.close()
    assert returncode == 0, "".join(output)


def test_the_documents_have_examples_and_only_the_pinned_ones_opt_out() -> None:
    assert len(PYTHON) >= 6 and len(COMMANDS) >= 4, [b.id for b in BLOCKS]
    opted_out = {doc: [b.not_run for b in BLOCKS if b.document == doc and b.not_run] for doc in NOT_RUN}
    assert opted_out == NOT_RUN
    assert all(b.not_run is None for b in BLOCKS if b.document not in NOT_RUN)


def test_no_python_example_awaits_at_the_top_level() -> None:
    for block in PYTHON:
        assert not re.search(r"^(async with|await |async for)", block.code, re.M), block.id


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_example_runs_as_written(block: Block, tour_broker: str) -> None:
    code = block.code.replace(_ADDRESS, tour_broker)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=False, env=env, cwd=ROOT
    )
    assert result.returncode == 0, f"{block.id} failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{block.id} printed nothing"


@pytest.mark.parametrize(("block", "command"), COMMANDS, ids=[f"{b.id}:{c.split()[1]}" for b, c in COMMANDS])
def test_command_line_example_runs_as_written(block: Block, command: str, tour_broker: str) -> None:
    argv = _cli(shlex.split(command.replace(_ADDRESS, tour_broker)))
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{command} printed nothing"
