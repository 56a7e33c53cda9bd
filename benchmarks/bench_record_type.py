"""What the Python object per record costs: the ceiling of a record type built in C (issue 48).

    python benchmarks/bench_record_type.py                 # 1,000-record batches, 100 B values, 7 reps
    python benchmarks/bench_record_type.py --size 1000 --json /tmp/rt.json

No broker: the C decoder (``fill_records``) fills one v2 batch, decompressed, into a list, as the fetch collector
does, and then each record is touched as a consumer does (its value's length summed). Three record types, each
in its own pass, in one process, interleaved per rep:

- ``ConsumerRecord``: today's public ``NamedTuple``, allocated by the decoder with ``tp_alloc`` and its fields set
  in place (no keyword parsing): a GC-tracked tuple subclass, from no freelist.
- ``tuple``: the same fields in a plain tuple (``PyTuple_New``, from CPython's tuple freelist): the most a record
  type built in C, with a freelist of its own and its fields set in place, could gain on allocation and freeing.
- ``decode only``: the same, with the records dropped at once (what the decode itself costs).

It prints nanoseconds per record (best of the reps: the machine's noise only adds) and the share of the record
type, and with ``--json`` writes them. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchcommon import code_version, machine

from asyncconsumer.protocol import v2decode
from asyncconsumer.records import ConsumerRecord
from tests.support.batches import build_batch


def batch_of(records: int, size: int) -> memoryview:
    """One uncompressed v2 batch of ``records`` keyed records with ``size``-byte values."""
    return memoryview(build_batch(0, [b"x" * size] * records, keys=[b"k%d" % i for i in range(records)]))


def pass_of(batch: memoryview, records: int, record_type: type, touch: bool) -> Callable[[int], float]:
    """A timed pass: ``batches`` decodes of ``batch`` into fresh lists; seconds per record."""
    fill = v2decode.fill_records

    def run(batches: int) -> float:
        started = time.perf_counter()
        for _ in range(batches):
            out: list[Any] = []
            fill(batch, -1, 0, 0, records, out, record_type, "topic", 0, None)
            if touch:
                total = 0
                for record in out:
                    total += len(record[6])
        return (time.perf_counter() - started) / (batches * records)

    return run


def measure(records: int, size: int, reps: int, batches: int) -> dict[str, float]:
    batch = batch_of(records, size)
    passes = {
        "ConsumerRecord": pass_of(batch, records, ConsumerRecord, True),
        "tuple": pass_of(batch, records, tuple, True),
        "ConsumerRecord, decode only": pass_of(batch, records, ConsumerRecord, False),
        "tuple, decode only": pass_of(batch, records, tuple, False),
    }
    best = {name: float("inf") for name in passes}
    for run in passes.values():
        run(max(1, batches // 10))  # warm up
    for _ in range(reps):
        for name, run in passes.items():
            gc.collect()
            best[name] = min(best[name], run(batches))
    return {name: seconds * 1e9 for name, seconds in best.items()}


def markdown(ns: dict[str, float], records: int, size: int) -> str:
    lines = [
        f"### {records:,}-record batches, {size} B values, uncompressed: ns per record (best of the reps)",
        "",
        "| pass | ConsumerRecord | plain tuple | the record type's share |",
        "|---|---:|---:|---:|",
    ]
    for label, suffix in (("decode, then touch each value", ""), ("decode only", ", decode only")):
        ours, plain = ns[f"ConsumerRecord{suffix}"], ns[f"tuple{suffix}"]
        lines.append(f"| {label} | {ours:.0f} | {plain:.0f} | {(ours - plain) / ours:.0%} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000, help="records per batch")
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--batches", type=int, default=300, help="batches decoded per timed pass")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    if v2decode.IMPLEMENTATION != "c":
        parser.error("the C decoder is not built here (python setup.py build_ext --inplace builds it)")
    ns = measure(args.records, args.size, args.reps, args.batches)
    print(markdown(ns, args.records, args.size), end="")
    if args.json:
        report = {"machine": machine(()), "code": code_version(), "args": vars(args), "ns_per_record": ns}
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
