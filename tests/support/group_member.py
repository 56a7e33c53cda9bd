"""One consumer-group member in its own process, for tests and benchmarks that kill members
(``test_groups_killed_member.py`` and ``test_group_faults.py`` through ``member_process.py``; ``benchmarks/soak.py``).

    python group_member.py BOOTSTRAP GROUP_ID TOPIC OUT_FILE [--session-timeout-ms MS] [--commit-interval-ms MS]
                           [--timestamps] [--tolerate-errors] [--group-protocol classic|consumer]

Consumes ``TOPIC`` as a member of ``GROUP_ID`` and appends JSON lines to ``OUT_FILE``, flushed as they are written:

* ``{"kind": "started", "t": time, "pid": pid}`` once, before joining;
* ``{"kind": "assignment", "t": time, "generation": g, "member": id, "partitions": [..]}`` when what it owns or its
  generation changed (checked after every poll);
* ``{"kind": "records", "t": time, "records": [[partition, offset], ...]}`` for every batch, written (processed)
  *before* the batch is committed, so a SIGKILL between the two can only cause redelivery, never a skip; with
  ``--timestamps`` each record is ``[partition, offset, timestamp_ms]`` (the record's own timestamp);
* ``{"kind": "commit_failed", "t": time, "error": "..."}`` when a commit was refused (the records will come again);
* ``{"kind": "error", "t": time, "error": "...", "retriable": bool}`` with ``--tolerate-errors``, for an error that
  ``poll`` raised and the member carried on after (a non-retriable one still ends the process);
* ``{"kind": "closed", "t": time}`` after a clean close (on SIGTERM or SIGINT).

Auto-commit is off: the member commits the next offsets of what it processed itself, after every batch, or with
``--commit-interval-ms`` at most that often (so a SIGKILL leaves processed records uncommitted, as a real
at-least-once consumer may); what is pending for partitions being revoked is committed in the revoke callback.
Logs go to stderr at INFO.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from typing import IO, Any

from asyncconsumer import (
    AsyncConsumer,
    CommitFailedError,
    ConsumerRebalanceListener,
    KafkaError,
    OffsetAndMetadata,
    TopicPartition,
)

SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_INTERVAL_MS = 500


def _write(out: IO[str], kind: str, **fields: Any) -> None:
    out.write(json.dumps({"kind": kind, "t": time.time(), **fields}) + "\n")
    out.flush()


class Committer(ConsumerRebalanceListener):
    """Offsets processed and not yet committed; commits them on a schedule and before their partitions go."""

    def __init__(self, out: IO[str], interval_s: float) -> None:
        self.consumer: AsyncConsumer | None = None
        self.out = out
        self.interval_s = interval_s
        self.pending: dict[TopicPartition, OffsetAndMetadata | int] = {}
        self.last_commit = time.monotonic()

    async def commit(self, only: set[TopicPartition] | None = None, *, force: bool = False) -> None:
        due = force or time.monotonic() - self.last_commit >= self.interval_s
        offsets = {tp: o for tp, o in self.pending.items() if only is None or tp in only}
        if not offsets or not due or self.consumer is None:
            return
        try:
            await self.consumer.commit(offsets)
        except CommitFailedError as exc:
            _write(self.out, "commit_failed", error=repr(exc))
            for tp in offsets:
                self.pending.pop(tp, None)  # the group moved on: these partitions' records will come again
            return
        except KafkaError as exc:  # retriable (a timeout): keep them for the next commit
            _write(self.out, "commit_failed", error=repr(exc))
            return
        for tp, offset in offsets.items():
            if self.pending.get(tp) == offset:
                del self.pending[tp]
        if only is None:
            self.last_commit = time.monotonic()

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        await self.commit(partitions, force=True)
        for tp in partitions:
            self.pending.pop(tp, None)

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        for tp in partitions:
            self.pending.pop(tp, None)  # fenced: a commit would be refused; the records will come again


async def run(args: argparse.Namespace, out: IO[str]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    _write(out, "started", pid=os.getpid())
    if args.group_protocol == "consumer":  # KIP-848: the coordinator assigns and times the session
        timing: dict[str, Any] = {"group_protocol": "consumer", "group_remote_assignor": "range"}
    else:
        timing = {
            "session_timeout_ms": args.session_timeout_ms,
            "heartbeat_interval_ms": min(HEARTBEAT_INTERVAL_MS, args.session_timeout_ms // 3),
            "partition_assignment_strategy": ("range",),
        }
    consumer = AsyncConsumer(
        args.bootstrap, group_id=args.group_id, auto_offset_reset="earliest", enable_auto_commit=False, **timing
    )
    committer = Committer(out, args.commit_interval_ms / 1000)
    committer.consumer = consumer
    await consumer.start()
    try:
        await consumer.subscribe([args.topic], listener=committer)
        seen: tuple[int, list[int]] | None = None
        while not stop.is_set():
            try:
                batch = await consumer.poll(timeout_ms=100, max_records=50)
            except KafkaError as exc:
                if not args.tolerate_errors or not exc.retriable:
                    raise
                _write(out, "error", error=repr(exc), retriable=exc.retriable)
                await asyncio.sleep(0.1)
                continue
            owned = (consumer.group_metadata().generation_id, sorted(tp.partition for tp in consumer.assignment()))
            if owned != seen:
                seen = owned
                member = consumer.group_metadata().member_id
                _write(out, "assignment", generation=owned[0], member=member, partitions=owned[1])
            records = list(batch.records())
            if records:
                if args.timestamps:
                    _write(out, "records", records=[[r.partition, r.offset, r.timestamp] for r in records])
                else:
                    _write(out, "records", records=[[r.partition, r.offset] for r in records])
                for r in records:
                    committer.pending[TopicPartition(r.topic, r.partition)] = OffsetAndMetadata(r.offset + 1)
            await committer.commit()
        await committer.commit(force=True)
    finally:
        await consumer.close()
    _write(out, "closed")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bootstrap")
    parser.add_argument("group_id")
    parser.add_argument("topic")
    parser.add_argument("out_path")
    parser.add_argument("--session-timeout-ms", type=int, default=SESSION_TIMEOUT_MS)
    parser.add_argument("--commit-interval-ms", type=int, default=0, help="0: commit after every batch")
    parser.add_argument("--timestamps", action="store_true", help="write each record's timestamp too")
    parser.add_argument("--tolerate-errors", action="store_true", help="carry on after retriable poll errors")
    parser.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv[1:])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    with open(args.out_path, "a", encoding="utf-8") as out:
        asyncio.run(run(args, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
