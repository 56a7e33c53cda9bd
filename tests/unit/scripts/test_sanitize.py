"""The sanitizer run's own logic (``scripts/sanitize.py``, ``tests/support/sanitized.py``), without building anything:
a run passes only when its report names the sanitized build and nothing was wrong, the build never goes into the
source tree, the environment preloads the runtime before the decoder is imported, and the plain build is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import sanitize
from tests.support import sanitized

BUILD = Path("/tmp/somewhere/_v2records_c.so")


def _report(tmp_path: Path, **checked: object) -> Path:
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"decoder": str(BUILD), "problems": [], "tests": 300, **checked}))
    return report


def test_a_run_passes_only_against_the_sanitized_build(tmp_path: Path) -> None:
    assert sanitize.verdict(0, _report(tmp_path), BUILD) is None
    assert "sanitizer found an error" in str(sanitize.verdict(sanitize.SANITIZER_EXIT, _report(tmp_path), BUILD))
    assert "exited with 1" in str(sanitize.verdict(1, _report(tmp_path), BUILD))
    assert "not the decoder in use" in str(sanitize.verdict(0, _report(tmp_path, decoder="/elsewhere.so"), BUILD))
    assert "not the decoder in use" in str(sanitize.verdict(0, _report(tmp_path, problems=["no asan"]), BUILD))
    assert "no test was collected" in str(sanitize.verdict(0, _report(tmp_path, tests=0), BUILD))
    assert "before its session finished" in str(sanitize.verdict(0, tmp_path / "absent.json", BUILD))


def test_the_build_never_goes_into_the_source_tree() -> None:
    for inside in (sanitize.ROOT, sanitize.ROOT / "build", sanitize.ROOT / "asyncconsumer" / "protocol"):
        with pytest.raises(sanitize.SanitizeError, match="inside the source tree"):
            sanitize.build(["gcc"], inside)


def test_the_environment_preloads_the_runtime_and_puts_the_site_first(tmp_path: Path) -> None:
    env = sanitize.environment(BUILD, Path("/lib/libasan.so"), tmp_path / "r.json", 60)
    assert env["LD_PRELOAD"].split()[0] == "/lib/libasan.so"
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [str(sanitize.SITE), str(sanitize.ROOT)]
    assert (sanitize.SITE / "sitecustomize.py").is_file()
    assert "detect_leaks=0" in env["ASAN_OPTIONS"] and env["PYTHONMALLOC"] == "malloc"
    assert (env[sanitized.DECODER_ENV], env[sanitized.EXAMPLES_ENV]) == (str(BUILD), "60")
    command = sanitize.pytest_command(0, ["-x"])
    assert command[-1] == "-x" and "tests.support.sanitized" in command and "--capture=sys" in command
    assert all((sanitize.ROOT / test).is_file() for test in sanitize.TESTS)


def test_outside_a_sanitized_run_the_plugin_finds_what_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    """Here the decoder is the plain build: unset, or named but not instrumented and no runtime loaded, it is
    refused."""
    monkeypatch.delenv(sanitized.DECODER_ENV, raising=False)
    assert sanitized.problems() == [
        f"{sanitized.DECODER_ENV} is not set: run the sanitized tests with scripts/sanitize.py"
    ]
    from asyncconsumer.protocol import v2decode

    if v2decode.IMPLEMENTATION != "c":
        pytest.skip("the C decoder is not built here (test_v2records.test_compiled_decoder_in_use)")
    plain = sys.modules[sanitized.MODULE].__file__
    assert plain is not None
    monkeypatch.setenv(sanitized.DECODER_ENV, plain)
    found = sanitized.problems()
    assert f"{plain} has no __asan_init (not built with the sanitizers)" in found
    assert "no AddressSanitizer runtime is mapped in this process (LD_PRELOAD it)" in found


def test_the_site_loads_the_named_build_before_anything_else() -> None:
    """A child interpreter with the site first on its path finds the decoder at the file named, by a finder that is
    asked before any other (the site runs before any import of the package)."""
    env = {**os.environ, "PYTHONPATH": f"{sanitize.SITE}{os.pathsep}{sanitize.ROOT}", sanitized.DECODER_ENV: str(BUILD)}
    script = (
        f"import sys; print(sys.meta_path[0].find_spec({sanitized.MODULE!r}).origin, 'asyncconsumer' in sys.modules)"
    )
    child = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert (child.returncode, child.stdout.split()) == (0, [str(BUILD), "False"]), child.stderr
