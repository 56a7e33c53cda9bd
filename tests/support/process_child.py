"""A consumer that runs ``process`` until it is killed, logging each record's start and finish to a file: the
crash test's victim. ``python -m tests.support.process_child BOOTSTRAP TOPIC GROUP LOG``."""

from __future__ import annotations

import asyncio
import random
import sys

from asyncconsumer import AsyncConsumer, ConsumerRecord


async def main(bootstrap: str, topic: str, group: str, log_path: str) -> None:
    rng = random.Random(11)
    with open(log_path, "a", buffering=1) as log:  # line-buffered: a SIGKILL loses at most a partial line

        async def handle(record: ConsumerRecord) -> None:
            log.write(f"S {record.partition} {record.offset}\n")
            # key k0 is slow: it holds its partitions' prefixes back while the other keys finish past them
            await asyncio.sleep(0.4 if record.key == b"k0" else rng.random() / 50)
            log.write(f"F {record.partition} {record.offset}\n")

        async with AsyncConsumer(
            bootstrap, group_id=group, auto_offset_reset="earliest", session_timeout_ms=6_000
        ) as consumer:
            await consumer.subscribe([topic])
            await consumer.process(handle, concurrency=50, ordering="key", commit_interval_ms=200)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
