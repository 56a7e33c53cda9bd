"""Runs the record decoder's tests against a build of it with AddressSanitizer and UndefinedBehaviorSanitizer.

    python scripts/sanitize.py                      # build, run, remove the build
    python scripts/sanitize.py --max-examples 400   # a larger Hypothesis budget per test (default 60)
    python scripts/sanitize.py --keep               # leave the build (its path is printed)
    python scripts/sanitize.py -- -x -k fill        # more pytest arguments

The extension (``_v2records_c.c`` and ``_crc32c.c``) is compiled by ``$CC`` (else the compiler Python was built
with) with ``-fsanitize=address,undefined`` (and float-cast-overflow, float-divide-by-zero), UBSan errors fatal,
into a new temporary directory: never into the source tree, which keeps its own build. Its tests then run in one
pytest session with the compiler's ASan runtime preloaded and ``PYTHONMALLOC=malloc``, so that every Python object
is an ASan allocation and a use after its free is reported; ``detect_leaks=0``, as CPython leaks by design;
``allocator_may_return_null=1``, as the tests ask for impossible sizes and expect ``MemoryError``.
``tests/support/sanitizer_site/sitecustomize.py`` makes the build the one imported, ``tests/support/sanitized.py``
proves it was; the script also refuses a run
whose report does not name the build. A sanitizer report aborts the run with exit code 86.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["asyncconsumer/protocol/_v2records_c.c", "asyncconsumer/protocol/_crc32c.c"]
SANITIZE = [
    "-fsanitize=address,undefined,float-cast-overflow,float-divide-by-zero",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
]
"""No ``-fwrapv`` (Python's own flags have it): signed overflow stays undefined, so UBSan reports it."""
TESTS = [
    "tests/unit/protocol/test_v2records.py",
    "tests/unit/protocol/test_fuzz_corpus.py",
    "tests/unit/protocol/test_crc32c.py",
    "tests/unit/protocol/test_records.py",
    "tests/unit/protocol/test_fuzz_decoders.py",
    "tests/unit/_caller/test_fetch_collector.py",
    "tests/unit/_caller/test_arrow_table.py",
]
"""The decoder's unit and fuzz tests, the corpus of the coverage-guided fuzzer, and the callers that decode with it."""
NOT_THE_DECODER = (
    "not (test_mutated_responses or test_random_bytes or test_every_field_at_every_extreme"
    " or test_seeds_are_valid_responses) or Fetch or records"
)
"""``-k``: of test_fuzz_decoders' per-response tests, only those of the responses that carry records."""
SANITIZER_EXIT = 86
ASAN_OPTIONS = f"detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:exitcode={SANITIZER_EXIT}"
UBSAN_OPTIONS = f"print_stacktrace=1:halt_on_error=1:exitcode={SANITIZER_EXIT}"
SITE = ROOT / "tests" / "support" / "sanitizer_site"
"""Its ``sitecustomize`` loads the build in place of the package's, in every interpreter of the run."""


class SanitizeError(Exception):
    """A step that cannot be done, with what to do about it."""


def compiler() -> list[str]:
    """``$CC``, else the C compiler Python was built with, as a command."""
    command = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    if shutil.which(command[0]) is None:
        raise SanitizeError(f"no C compiler: {command[0]} is not on PATH (install gcc, or set CC)")
    return command


def runtime(cc: Sequence[str]) -> Path:
    """The compiler's shared AddressSanitizer runtime, to preload (Python itself is not built with it)."""
    version = subprocess.run([*cc, "--version"], capture_output=True, text=True, check=True).stdout
    name = "libclang_rt.asan-x86_64.so" if "clang" in version else "libasan.so"
    found = subprocess.run([*cc, f"-print-file-name={name}"], capture_output=True, text=True, check=True).stdout
    path = Path(found.strip())
    if not path.is_absolute() or not path.exists():
        raise SanitizeError(f"{cc[0]} has no {name} (gcc's comes with libgcc-dev, clang's with libclang-rt-dev)")
    return path.resolve()


def build(cc: Sequence[str], out: Path) -> Path:
    """The extension, sanitized, at ``out`` (a directory outside the source tree); returns the built file."""
    out = out.resolve()
    if out == ROOT or ROOT in out.parents:
        raise SanitizeError(f"{out} is inside the source tree: the sanitized build goes elsewhere")
    target = out / f"_v2records_c{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    command = [*cc, "-shared", "-fPIC", "-O1", "-g", *SANITIZE, f"-I{include}", *SOURCES, "-o", str(target)]
    print("build:", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)
    return target


def environment(decoder: Path, asan: Path, report: Path, examples: int) -> dict[str, str]:
    """This process's environment with the sanitizers preloaded and the build in place of the package's."""
    env = dict(os.environ)
    path = [str(SITE), str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(
        PYTHONPATH=os.pathsep.join(path),
        LD_PRELOAD=" ".join(filter(None, [str(asan), env.get("LD_PRELOAD", "")])),
        ASAN_OPTIONS=ASAN_OPTIONS,
        UBSAN_OPTIONS=UBSAN_OPTIONS,
        PYTHONMALLOC="malloc",
        ASYNCCONSUMER_SANITIZED_DECODER=str(decoder),
        ASYNCCONSUMER_SANITIZED_EXAMPLES=str(examples),
        ASYNCCONSUMER_SANITIZED_REPORT=str(report),
    )
    return env


def pytest_command(seed: int, extra: Sequence[str]) -> list[str]:
    """The run: one session; ``--capture=sys`` so that a sanitizer's report, written to fd 2, is never swallowed."""
    return [
        sys.executable, "-m", "pytest", "-q", "-p", "tests.support.sanitized", "-p", "no:cacheprovider",
        "--capture=sys", f"--hypothesis-seed={seed}", "-k", NOT_THE_DECODER, *TESTS, *extra,
    ]  # fmt: skip


def verdict(rc: int, report: Path, decoder: Path) -> str | None:
    """Why the run failed (None: it passed, against the sanitized build)."""
    if rc == SANITIZER_EXIT:
        return "a sanitizer found an error: its report is above"
    if not report.exists():
        return f"pytest exited with {rc} before its session finished (a crash: see above)"
    checked = json.loads(report.read_text())
    if checked["problems"] or checked["decoder"] != str(decoder):
        return f"the sanitized build was not the decoder in use: {checked}"
    if rc != 0:
        return f"pytest exited with {rc}"
    if not checked["tests"]:
        return "no test was collected"
    return None


def run(out: Path, examples: int, seed: int, timeout: float, extra: Sequence[str]) -> Path:
    """Builds into ``out`` and runs the tests against the build; the build, or ``SanitizeError`` saying why not."""
    cc = compiler()
    asan = runtime(cc)
    out.mkdir(parents=True, exist_ok=True)
    decoder = build(cc, out)
    report = out / "report.json"
    report.unlink(missing_ok=True)
    command = pytest_command(seed, extra)
    print(f"run: LD_PRELOAD={asan} PYTHONMALLOC=malloc ASAN_OPTIONS={ASAN_OPTIONS}", " ".join(command), flush=True)
    env = environment(decoder, asan, report, examples)
    try:
        rc = subprocess.run(command, cwd=ROOT, env=env, check=False, timeout=timeout).returncode
    except subprocess.TimeoutExpired as exc:
        raise SanitizeError(f"the run took more than {timeout} s (killed)") from exc
    failed = verdict(rc, report, decoder)
    if failed:
        raise SanitizeError(failed)
    return decoder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-examples", type=int, default=60, help="each Hypothesis test's cap (default 60)")
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis's seed (default 0: the same run each time)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds before the run is killed (default 900)")
    parser.add_argument("--build-dir", type=Path, help="build here (default: a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="leave the build")
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args(argv)
    out = args.build_dir or Path(tempfile.mkdtemp(prefix="asyncconsumer-sanitize-"))
    try:
        decoder = run(out, args.max_examples, args.seed, args.timeout, args.pytest_args)
    except (SanitizeError, subprocess.CalledProcessError) as exc:
        print(f"SANITIZED RUN FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print("build kept in", out)
        elif args.build_dir is None:
            shutil.rmtree(out, ignore_errors=True)
    print(f"sanitized run passed: the decoder's tests under ASan and UBSan, against {decoder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
