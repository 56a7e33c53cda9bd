"""Java programs the tests and benchmarks run beside Kafka, compiled once with ``javac`` and cached.

A build is keyed by its files' names and bytes and the classpath jars' names (a new Kafka release compiles anew).
It is compiled into a ``.partial`` directory under a file lock, then renamed into place and marked ``.complete``:
concurrent processes compile once, and none ever runs half a build.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path


class CompileError(RuntimeError):
    """``javac`` is missing or refused the sources; the message holds its output."""


def build_digest(files: Mapping[str, bytes], jars: Iterable[Path]) -> str:
    """The cache key of a build: its files' names and bytes, in any order, and the jars' names, in order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    for jar in jars:
        h.update(jar.name.encode() + b"\0")
    return h.hexdigest()[:16]


def compiled(
    sources: Sequence[Path], jars: Sequence[Path], cache: Path, *, resources: Sequence[Path] = (), lint: bool = False
) -> Path:
    """The classes directory of ``sources`` compiled for Java 17 against ``jars``, under ``cache/<digest>``, with
    ``resources`` copied beside the classes; compiled on first use. ``lint`` turns on every ``javac`` warning."""
    if shutil.which("javac") is None:
        raise CompileError("javac (a JDK 17 or newer) is not on the PATH")
    files = {path.name: path.read_bytes() for path in (*sources, *resources)}
    classes = cache / build_digest(files, jars)
    done = classes / ".complete"
    if done.exists():
        return classes
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return classes
        staging = classes.with_name(classes.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        command = ["javac", "--release", "17", *(["-Xlint:all"] if lint else []), "-d", str(staging)]
        command += ["-cp", ":".join(str(jar) for jar in jars), *(str(source) for source in sources)]
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
        if result.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            names = ", ".join(source.name for source in sources)
            raise CompileError(f"javac failed on {names}:\n{result.stdout}{result.stderr}")
        for resource in resources:
            shutil.copy(resource, staging / resource.name)
        shutil.rmtree(classes, ignore_errors=True)
        staging.rename(classes)
        done.write_text(" ".join(command) + "\n")
    return classes
