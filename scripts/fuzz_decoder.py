"""The coverage-guided fuzzer of the record decoder: libFuzzer (clang) around ``tests/support/decoder_fuzz.py``.

    python scripts/fuzz_decoder.py run --seconds 1800      # fuzz: new inputs into --corpus, crashes into --crashes
    python scripts/fuzz_decoder.py merge DIR...            # the committed corpus made again, minimized, with DIR...
    python scripts/fuzz_decoder.py coverage [DIR...]       # gcov's lines and branches of the C over the corpus

``run`` and ``merge`` need clang and libFuzzer (Debian: ``apt-get install clang libclang-rt-14-dev``), ``coverage``
gcc. The decoder is built with ``-fsanitize=fuzzer-no-link,address,undefined`` (UBSan errors fatal) into a new
temporary directory, never into the source tree, and loaded into the fuzzer's embedded interpreter in place of the
package's build (``tests/support/sanitizer_site``), with ``PYTHONMALLOC=malloc`` so that Python's objects are
AddressSanitizer's allocations too. Only the decoder is instrumented: the fuzzer is guided by its branches. The
fuzzer starts from the committed corpus (``tests/unit/protocol/fuzz_corpus/corpus``) and the harness's seeds, runs
one worker (run it under ``nice -n 19``), and stops at the first crash, whose input it writes to ``--crashes``: a
finding to fix and then commit under ``fuzz_corpus/crashes`` (``test_fuzz_corpus.py`` replays both folders).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "unit" / "protocol" / "fuzz_corpus"
SITE = ROOT / "tests" / "support" / "sanitizer_site"
SOURCES = ["asyncconsumer/protocol/_v2records_c.c", "asyncconsumer/protocol/_crc32c.c"]
HARNESS = "tests/fuzz/decoder_fuzzer.c"
MAX_LEN = 16384
"""libFuzzer's largest input: room for batches past the 4 KiB from which the sink decodes without the GIL."""
CORPUS_BUDGET = 400 << 10
"""What the committed corpus may weigh."""
REPLAY = """
import sys
from tests.support.decoder_fuzz import one_input, quiet
quiet()
for path in open(sys.argv[1]).read().splitlines():
    one_input(open(path, "rb").read())
"""
"""Inputs (a file listing them) through the harness, in a child interpreter."""


class FuzzError(Exception):
    """A step that cannot be done, with what to do about it."""


def _tool(name: str, env: str, package: str) -> str:
    found = os.environ.get(env) or shutil.which(name)
    if not found:
        raise FuzzError(f"{name} is missing: install {package} (or set {env})")
    return found


def _outside(out: Path) -> Path:
    out = out.resolve()
    if out == ROOT or ROOT in out.parents:
        raise FuzzError(f"{out} is inside the source tree: builds go elsewhere")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _python_build_flags() -> tuple[list[str], list[str]]:
    include = sysconfig.get_paths()["include"]
    libdir = str(sysconfig.get_config_var("LIBDIR"))
    version = str(sysconfig.get_config_var("LDVERSION") or sysconfig.get_config_var("VERSION"))
    return [f"-I{include}"], [f"-L{libdir}", f"-lpython{version}", f"-Wl,-rpath,{libdir}"]


def build_fuzzer(out: Path) -> tuple[Path, Path]:
    """The instrumented extension and the fuzzer binary, in ``out``."""
    clang = _tool("clang", "CLANG", "clang and libclang-rt-14-dev")
    out = _outside(out)
    extension = out / f"_v2records_c{sysconfig.get_config_var('EXT_SUFFIX')}"
    binary = out / "decoder-fuzzer"
    cflags, ldflags = _python_build_flags()
    common = ["-O1", "-g", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all", *cflags]
    sanitize = "address,undefined,float-cast-overflow,float-divide-by-zero"
    commands = [
        [clang, "-shared", "-fPIC", f"-fsanitize=fuzzer-no-link,{sanitize}", *common, *SOURCES, "-o", str(extension)],
        [clang, f"-fsanitize=fuzzer,{sanitize}", *common, HARNESS, *ldflags, "-o", str(binary)],
    ]
    for command in commands:
        print("build:", " ".join(command), flush=True)
        subprocess.run(command, cwd=ROOT, check=True)
    return extension, binary


def environment(extension: Path) -> dict[str, str]:
    """The fuzzer's: the harness importable, the instrumented build loaded, Python's allocations ASan's."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SITE), str(ROOT)]),
        "ASYNCCONSUMER_SANITIZED_DECODER": str(extension),
        "ASYNCCONSUMER_FUZZ_PYTHON": sys.executable,
        "PYTHONMALLOC": "malloc",
        "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }


def libfuzzer_flags(crashes: Path) -> list[str]:
    return [
        "-detect_leaks=0",  # CPython leaks by design
        f"-max_len={MAX_LEN}",
        "-timeout=30",
        "-rss_limit_mb=4096",
        "-use_value_profile=1",
        "-print_final_stats=1",
        f"-artifact_prefix={crashes}/",
    ]


def write_seeds(into: Path) -> int:
    """The harness's seed inputs as files in ``into``."""
    sys.path.insert(0, str(ROOT))
    from tests.support.decoder_fuzz import seed_inputs

    into.mkdir(parents=True, exist_ok=True)
    seeds = seed_inputs()
    for i, seed in enumerate(seeds):
        (into / f"seed-{i:03d}").write_bytes(seed)
    return len(seeds)


def run(out: Path, seconds: int, corpus: Path | None, crashes: Path | None) -> int:
    extension, binary = build_fuzzer(out)
    corpus = corpus or out / "corpus"
    crashes = crashes or out / "crashes"
    for folder in (corpus, crashes):
        folder.mkdir(parents=True, exist_ok=True)
    write_seeds(out / "seeds")
    inputs = [str(corpus), *(str(d) for d in (CORPUS / "corpus", out / "seeds") if d.is_dir())]
    command = [str(binary), f"-max_total_time={seconds}", *libfuzzer_flags(crashes), *inputs]
    print("fuzz:", " ".join(command), flush=True)
    rc = subprocess.run(command, cwd=ROOT, env=environment(extension), check=False).returncode
    found = sorted(crashes.iterdir())
    print(f"kept: {out}; corpus {corpus} ({len(list(corpus.iterdir()))} inputs)")
    print("crashes:", *[str(p) for p in found] or ["none"])
    return 1 if rc or found else 0


def merge(out: Path, folders: Sequence[Path]) -> int:
    """The committed corpus made again: libFuzzer's minimal set of its inputs and ``folders``' with all their
    features."""
    extension, binary = build_fuzzer(out)
    merged = out / "merged"
    merged.mkdir()
    write_seeds(out / "seeds")
    sources = [str(d) for d in (CORPUS / "corpus", out / "seeds", *folders) if d.is_dir()]
    # the edges and their counts, not every comparison's value (which keeps thrice the inputs)
    command = [str(binary), "-merge=1", *libfuzzer_flags(out), "-use_value_profile=0", str(merged), *sources]
    print("merge:", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, env=environment(extension), check=True)
    files = sorted(merged.iterdir())
    size = sum(p.stat().st_size for p in files)
    if size > CORPUS_BUDGET:
        raise FuzzError(f"the merged corpus weighs {size} bytes, over {CORPUS_BUDGET}: left in {merged}")
    target = CORPUS / "corpus"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for path in files:
        shutil.copy(path, target / path.name)
    print(f"{target}: {len(files)} inputs, {size} bytes")
    return 0


def coverage(out: Path, folders: Sequence[Path]) -> int:
    """gcov's line and branch coverage of the decoder's C over the seeds, the committed corpus and more inputs."""
    gcc = _tool("gcc", "CC", "gcc")
    gcov = _tool("gcov", "GCOV", "gcc")
    out = _outside(out)
    cflags, _ = _python_build_flags()
    objects = []
    for source in SOURCES:
        obj = out / (Path(source).stem + ".o")
        subprocess.run(
            [gcc, "-c", "-fPIC", "-O0", "-g", "--coverage", *cflags, str(ROOT / source), "-o", str(obj)],
            cwd=ROOT,
            check=True,
        )
        objects.append(str(obj))
    extension = out / f"_v2records_c{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([gcc, "-shared", "--coverage", *objects, "-o", str(extension)], check=True)
    write_seeds(out / "seeds")
    replayed = [out / "seeds", CORPUS / "corpus", CORPUS / "crashes", *folders]
    inputs = [str(p) for f in replayed if f.is_dir() for p in sorted(f.iterdir())]
    listed = out / "inputs"
    listed.write_text("\n".join(inputs))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SITE), str(ROOT)]),
        "ASYNCCONSUMER_SANITIZED_DECODER": str(extension),
    }
    subprocess.run([sys.executable, "-c", REPLAY, str(listed)], cwd=ROOT, env=env, check=True)
    report = subprocess.run(
        [gcov, "-b", "-c", "-o", str(out), *[str(ROOT / s) for s in SOURCES]],
        cwd=out,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print(f"{len(inputs)} inputs replayed")
    for block in report.split("\n\n"):
        if re.search(r"File '.*_(v2records_c|crc32c)\.c'", block):
            print(block.strip())
    print(f"annotated sources (#####: never run): {out}/*.c.gcov (with --build-dir, kept)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, help="build here (default: a new temporary directory, removed)")
    commands = parser.add_subparsers(dest="command", required=True)
    fuzz = commands.add_parser("run", help="fuzz for --seconds")
    fuzz.add_argument("--seconds", type=int, default=1800)
    fuzz.add_argument("--corpus", type=Path, help="new inputs go here (default: in the build directory)")
    fuzz.add_argument("--crashes", type=Path, help="crashing inputs go here (default: in the build directory)")
    for name in ("merge", "coverage"):
        commands.add_parser(name).add_argument("folders", nargs="*", type=Path)
    args = parser.parse_args(argv)
    out = args.build_dir or Path(tempfile.mkdtemp(prefix="asyncconsumer-fuzz-"))
    try:
        if args.command == "run":
            return run(out, args.seconds, args.corpus, args.crashes)
        if args.command == "merge":
            return merge(out, args.folders)
        return coverage(out, args.folders)
    except (FuzzError, subprocess.CalledProcessError) as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.build_dir is None and args.command != "run":
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
