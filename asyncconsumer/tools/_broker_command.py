"""``asyncconsumer broker``: the embedded Tansu broker in the foreground, with an optional sample topic."""

from __future__ import annotations

import argparse
import asyncio
import signal
import threading

from asyncconsumer.tools._common import EXIT_ERROR, err, out
from asyncconsumer.tools._demo import ProducerMissingError, produce, producer_type


def run_broker(args: argparse.Namespace) -> int:
    """Runs the embedded Tansu broker in the foreground until Ctrl-C (or SIGTERM), with an optional sample topic."""
    from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker

    if args.topic and args.records:
        try:
            producer_type()
        except ProducerMissingError as exc:
            err(f"error: {exc}")
            return EXIT_ERROR
    try:
        broker = EmbeddedBroker.start(port=args.port)
    except BrokerStartError as exc:
        err(f"error: the embedded broker could not start: {exc}")
        return EXIT_ERROR
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        out(f"Tansu broker at {broker.bootstrap_servers} (pid {broker.pid}); Ctrl-C stops it")
        if args.topic:
            broker.create_topic(args.topic, args.partitions)
            if args.records:
                asyncio.run(
                    produce(broker.bootstrap_servers, args.topic, args.records, 0, args.partitions, readable=True)
                )
            out(f"  topic {args.topic!r}: {args.partitions} partition(s), {args.records:,} records")
        while not stop.wait(0.5):
            if not broker.running:
                err(f"error: the broker exited; its log ends with:\n{broker.log_tail()}")
                return EXIT_ERROR
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        broker.stop()
