"""A share-group member in a child process, for the tests that mix processes or kill one: a blocking
``ShareConsumer`` that writes one JSON line per poll (its assignment, and the records it got) until stdin closes.

    python tests/support/share_member.py BOOTSTRAP GROUP TOPIC OUT [implicit|explicit-hold|soak]

``explicit-hold`` acknowledges nothing: the records stay acquired until the process dies or their locks expire.
``soak`` (``benchmarks/soak_cluster.py``) acknowledges implicitly and writes ``group_member.py``'s lines instead:
``{"kind": "records", "t": time, "records": [[partition, offset, timestamp_ms], ...]}`` for each batch (written
before the next poll acknowledges it), ``assignment`` when the assignment changes, ``error`` for a retriable poll
error it carried on after; SIGTERM stops it as closing stdin does.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from asyncconsumer import KafkaError, ShareConsumer


def soak(consumer: ShareConsumer, out: str, stop: threading.Event) -> None:
    """The soak's lines: each batch with its records' timestamps, the assignment when it changes."""
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    assigned: list[int] | None = None
    with Path(out).open("a", encoding="utf-8") as sink:

        def write(kind: str, **fields: object) -> None:
            sink.write(json.dumps({"kind": kind, "t": time.time(), **fields}) + "\n")
            sink.flush()

        write("started")
        while not stop.is_set():
            try:
                batch = consumer.poll(200)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                write("error", error=repr(exc), retriable=True)
                time.sleep(0.1)
                continue
            now = sorted(tp.partition for tp in consumer.metrics().assignment)
            if now != assigned:
                assigned = now
                write("assignment", generation=consumer.metrics().member_epoch, partitions=now)
            records = [[r.partition, r.offset, r.timestamp] for r in batch.records()]
            if records:
                write("records", records=records)
    consumer.close()
    with Path(out).open("a", encoding="utf-8") as sink:
        sink.write(json.dumps({"kind": "closed", "t": time.time()}) + "\n")


def main() -> int:
    bootstrap, group, topic, out = sys.argv[1:5]
    mode = sys.argv[5] if len(sys.argv) > 5 else "implicit"
    stop = threading.Event()
    if mode != "soak":  # the soak's members run with no stdin, and stop on SIGTERM
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    settings = {"share_acknowledgement_mode": "explicit"} if mode == "explicit-hold" else {}
    consumer = ShareConsumer(bootstrap, group_id=group, **settings)  # type: ignore[arg-type]
    consumer.subscribe([topic])
    if mode == "soak":
        soak(consumer, out, stop)
        return 0
    with Path(out).open("a", encoding="utf-8") as sink:
        while not stop.is_set():
            if mode == "explicit-hold" and consumer.metrics().records_in_flight:
                time.sleep(0.05)
                records = []
            else:
                records = [[r.partition, r.offset, r.delivery_count] for r in consumer.poll(200).records()]
            assigned = sorted(tp.partition for tp in consumer.metrics().assignment)
            sink.write(json.dumps({"assigned": assigned, "records": records}) + "\n")
            sink.flush()
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
