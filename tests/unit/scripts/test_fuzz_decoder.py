"""The fuzzer driver's own logic (``scripts/fuzz_decoder.py``), without clang: builds never go into the source tree,
the fuzzer's environment loads the instrumented build through the site and keeps leaks and crashes as the harness
needs, and the seeds it starts from are written out whole."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from scripts import fuzz_decoder


def test_builds_never_go_into_the_source_tree() -> None:
    for inside in (fuzz_decoder.ROOT, fuzz_decoder.CORPUS, fuzz_decoder.ROOT / "build"):
        with pytest.raises(fuzz_decoder.FuzzError, match="inside the source tree"):
            fuzz_decoder._outside(inside)


def test_the_fuzzer_loads_the_instrumented_build_in_this_venv(tmp_path: Path) -> None:
    env = fuzz_decoder.environment(tmp_path / "_v2records_c.so")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(fuzz_decoder.SITE), str(fuzz_decoder.ROOT)]
    assert env["ASYNCCONSUMER_SANITIZED_DECODER"] == str(tmp_path / "_v2records_c.so")
    assert env["ASYNCCONSUMER_FUZZ_PYTHON"] == sys.executable
    assert env["PYTHONMALLOC"] == "malloc" and "detect_leaks=0" in env["ASAN_OPTIONS"]
    flags = fuzz_decoder.libfuzzer_flags(tmp_path)
    assert "-detect_leaks=0" in flags and f"-artifact_prefix={tmp_path}/" in flags
    assert f"-max_len={fuzz_decoder.MAX_LEN}" in flags and fuzz_decoder.MAX_LEN > 4096
    assert (fuzz_decoder.ROOT / fuzz_decoder.HARNESS).is_file()
    assert all((fuzz_decoder.ROOT / source).is_file() for source in fuzz_decoder.SOURCES)


def test_the_seeds_are_written_whole(tmp_path: Path) -> None:
    from tests.support.decoder_fuzz import seed_inputs

    count = fuzz_decoder.write_seeds(tmp_path / "seeds")
    written = sorted((tmp_path / "seeds").iterdir())
    assert count == len(written) == len(seed_inputs())
    assert [path.read_bytes() for path in written] == seed_inputs()
