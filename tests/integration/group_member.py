"""One consumer-group member in its own process, for tests that kill members (``test_groups_more.py``).

    python group_member.py BOOTSTRAP GROUP_ID TOPIC OUT_FILE

Consumes ``TOPIC`` as a member of ``GROUP_ID`` and appends JSON lines to ``OUT_FILE``, flushed as they are written:

* ``{"kind": "assignment", "t": time, "generation": g, "member": id, "partitions": [..]}`` when what it owns or its
  generation changed (checked after every poll);
* ``{"kind": "records", "t": time, "records": [[partition, offset], ...]}`` for every batch, written (processed)
  *before* the batch is committed, so a SIGKILL between the two can only cause redelivery, never a skip;
* ``{"kind": "commit_failed", "t": time, "error": "..."}`` when a commit was refused (the records will come again);
* ``{"kind": "closed", "t": time}`` after a clean close (on SIGTERM or SIGINT).

Auto-commit is off: the member commits each batch's next offsets itself. Logs go to stderr at INFO.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import time
from typing import IO, Any

from asyncconsumer import AsyncConsumer, KafkaError, OffsetAndMetadata, TopicPartition

SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_INTERVAL_MS = 500


def _write(out: IO[str], kind: str, **fields: Any) -> None:
    out.write(json.dumps({"kind": kind, "t": time.time(), **fields}) + "\n")
    out.flush()


async def run(bootstrap: str, group_id: str, topic: str, out: IO[str]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    consumer = AsyncConsumer(
        bootstrap,
        group_id=group_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        partition_assignment_strategy=("range",),
    )
    await consumer.start()
    try:
        await consumer.subscribe([topic])
        seen: tuple[int, list[int]] | None = None
        while not stop.is_set():
            batch = await consumer.poll(timeout_ms=100, max_records=50)
            owned = (consumer.group_metadata().generation_id, sorted(tp.partition for tp in consumer.assignment()))
            if owned != seen:
                seen = owned
                member = consumer.group_metadata().member_id
                _write(out, "assignment", generation=owned[0], member=member, partitions=owned[1])
            records = list(batch.records())
            if not records:
                continue
            _write(out, "records", records=[[r.partition, r.offset] for r in records])
            offsets: dict[TopicPartition, OffsetAndMetadata | int] = {}
            for r in records:
                offsets[TopicPartition(r.topic, r.partition)] = OffsetAndMetadata(r.offset + 1)
            try:
                await consumer.commit(offsets)
            except KafkaError as exc:
                _write(out, "commit_failed", error=repr(exc))
    finally:
        await consumer.close()
    _write(out, "closed")


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    _, bootstrap, group_id, topic, out_path = argv
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    with open(out_path, "a", encoding="utf-8") as out:
        asyncio.run(run(bootstrap, group_id, topic, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
