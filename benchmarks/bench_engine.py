"""What ``process()``'s engine costs per record, without a broker (issue 48).

    python benchmarks/bench_engine.py                        # 200,000 records, key ordering, both loops, 3 reps
    python benchmarks/bench_engine.py --ordering partition --concurrency 1
    valgrind --tool=callgrind python benchmarks/bench_engine.py --loops process --records 20000 --reps 1

The processing driver (``ProcessingDriver``, as ``AsyncConsumer.process`` builds it, without commits) runs a no-op
handler over a consumer that hands out prebuilt records (``--records`` over ``--keys`` keys in ``--partitions``
partitions, up to 500 a partition per poll), against a plain loop that awaits the same handler for each record of
the same polls. Nothing decodes, nothing goes to a network: the difference is the engine's bookkeeping (the
scheduler's lanes, the workers, the progress). It prints records/s and CPU-µs per record (best of the reps).
Under callgrind, two runs with different ``--records`` give instructions per record by their difference (the
records are built before the timing, but callgrind counts them too). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncconsumer._caller.processing.core import ProcessingOptions
from asyncconsumer._caller.processing.driver import ProcessingDriver
from asyncconsumer._clock import SystemClock
from asyncconsumer.records import ConsumerRecord, ConsumerRecords, TopicPartition

PER_PARTITION_POLL = 500


def records_of(count: int, keys: int, partitions: int) -> dict[TopicPartition, list[ConsumerRecord]]:
    """``count`` records, key ``i % keys`` each, a key's records in one partition, offsets from 0 per partition."""
    tps = [TopicPartition("t", p) for p in range(partitions)]
    out: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in tps}
    value = b"x" * 100
    for i in range(count):
        key = i % keys
        tp = tps[key % partitions]
        batch = out[tp]
        batch.append(ConsumerRecord("t", tp.partition, len(batch), 0, 0, b"k%d" % key, value, (), None, 4, 100))
    return out


class PrebuiltConsumer:
    """Hands out the prebuilt records, up to ``PER_PARTITION_POLL`` a partition per poll (none while paused)."""

    def __init__(self, records: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        self._records = records
        self._next = dict.fromkeys(records, 0)
        self.paused: set[TopicPartition] = set()

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> ConsumerRecords:
        budget = max_records or PER_PARTITION_POLL
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        for tp, batch in self._records.items():
            if tp in self.paused or budget <= 0:
                continue
            start = self._next[tp]
            chunk = batch[start : start + min(budget, PER_PARTITION_POLL)]
            if chunk:
                out[tp] = chunk
                self._next[tp] = start + len(chunk)
                budget -= len(chunk)
        await asyncio.sleep(0 if out else 0.001)  # an empty poll waits, as a real one does
        return ConsumerRecords(out)

    async def seek(self, partition: TopicPartition, offset: int) -> None:
        return None

    async def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)

    async def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(partitions)


class Counter:
    """The no-op handler: it counts, and never awaits."""

    def __init__(self) -> None:
        self.done = 0

    async def __call__(self, record: Any) -> None:
        self.done += 1


async def run_process(records: dict[TopicPartition, list[ConsumerRecord]], total: int, options: Any) -> None:
    handler = Counter()
    driver = ProcessingDriver(PrebuiltConsumer(records), handler, options, SystemClock(), None)
    runner = asyncio.ensure_future(driver.run())
    while handler.done < total and not runner.done():
        await asyncio.sleep(0.001)
    driver.stop()
    await runner
    if handler.done != total:
        raise RuntimeError(f"process handled {handler.done} records of {total}")


async def run_loop(records: dict[TopicPartition, list[ConsumerRecord]], total: int, options: Any) -> None:
    handler = Counter()
    consumer = PrebuiltConsumer(records)
    while handler.done < total:
        polled = await consumer.poll(max_records=options.max_in_flight_per_partition)
        for batch in polled.values():
            for record in batch:
                await handler(record)


LOOPS = {"loop": run_loop, "process": run_process}


def measure(args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """Per loop, the best (records/s, CPU-µs per record) over the reps, the loops interleaved."""
    records = records_of(args.records, args.keys, args.partitions)
    options = ProcessingOptions(concurrency=args.concurrency, ordering=args.ordering, commits=False)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.reps):
        for name in args.loops.split(","):
            wall, cpu = time.perf_counter(), time.process_time()
            asyncio.run(LOOPS[name](records, args.records, options))
            rate = args.records / (time.perf_counter() - wall)
            cpu_us = (time.process_time() - cpu) / args.records * 1e6
            if name not in best or rate > best[name][0]:
                best[name] = (rate, cpu_us)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=1_000)
    parser.add_argument("--ordering", choices=("key", "partition", "none"), default="key")
    parser.add_argument("--loops", default="loop,process", help="comma-separated: loop, process")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    unknown = [name for name in args.loops.split(",") if name not in LOOPS]
    if unknown:
        parser.error(f"--loops: unknown {', '.join(unknown)}; choose from {', '.join(LOOPS)}")
    best = measure(args)
    print(f"{args.records:,} records, {args.keys:,} keys, {args.partitions} partitions, ordering {args.ordering}, "
          f"concurrency {args.concurrency}; best of {args.reps}")  # fmt: skip
    base = best.get("loop")
    for name, (rate, cpu_us) in best.items():
        ratio = f" ({rate / base[0]:.2f}x the loop)" if base is not None and name != "loop" else ""
        print(f"  {name:8s} {rate:12,.0f} records/s{ratio}  {cpu_us:.2f} CPU-µs/record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
