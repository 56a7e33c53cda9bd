"""A share-group member in a child process, for the tests that mix processes or kill one: a blocking
``ShareConsumer`` that writes one JSON line per poll (its assignment, and the records it got) until stdin closes.

    python tests/support/share_member.py BOOTSTRAP GROUP TOPIC OUT [implicit|explicit-hold]

``explicit-hold`` acknowledges nothing: the records stay acquired until the process dies or their locks expire.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from asyncconsumer import ShareConsumer


def main() -> int:
    bootstrap, group, topic, out = sys.argv[1:5]
    mode = sys.argv[5] if len(sys.argv) > 5 else "implicit"
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    settings = {"share_acknowledgement_mode": "explicit"} if mode == "explicit-hold" else {}
    consumer = ShareConsumer(bootstrap, group_id=group, **settings)  # type: ignore[arg-type]
    consumer.subscribe([topic])
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
