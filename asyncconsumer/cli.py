"""The ``asyncconsumer`` command: ``demo`` (embedded broker, produce, consume, report) and ``consume``.

Output for people goes to stdout through ``_out``; logs stay in structlog and are off unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from asyncconsumer.consumer import AsyncConsumer
from asyncconsumer.errors import KafkaError
from asyncconsumer.records import ConsumerRecord, TopicPartition


def _out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- demo -----------------------------------------------------------------------------------------------------


async def _produce(bootstrap: str, topic: str, count: int, size: int, partitions: int) -> float:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=1 << 20, acks=1, enable_idempotence=False
    )
    await producer.start()
    started = time.perf_counter()
    try:
        value = os.urandom(size)
        batch: list[asyncio.Future[Any]] = []
        for i in range(count):
            batch.append(await producer.send(topic, value=value, key=str(i).encode(), partition=i % partitions))
            if len(batch) >= 20_000:
                await asyncio.gather(*batch)
                batch.clear()
        await asyncio.gather(*batch)
    finally:
        await producer.stop()
    return time.perf_counter() - started


async def _demo(args: argparse.Namespace) -> int:
    from asyncconsumer.embedded_broker import BrokerStartError, EmbeddedBroker

    _out("asyncconsumer demo")
    try:
        broker = EmbeddedBroker.start()
    except BrokerStartError as exc:
        _err(f"error: the embedded broker could not start: {exc}")
        return 1
    try:
        topic = "demo"
        broker.create_topic(topic, args.partitions)
        _out(
            f"  broker      Tansu at {broker.bootstrap_servers} (pid {broker.pid}), topic {topic!r} with "
            f"{args.partitions} partitions"
        )
        produce_s = await _produce(broker.bootstrap_servers, topic, args.records, args.size, args.partitions)
        _out(f"  produced    {args.records:,} records of {args.size} B in {produce_s:.2f} s (aiokafka producer)")

        cpu_before = _cpu_s()
        group_id = "asyncconsumer-demo"
        async with AsyncConsumer(
            broker.bootstrap_servers,
            group_id=group_id,
            auto_offset_reset="earliest",
            session_timeout_ms=6_000,
            heartbeat_interval_ms=500,
        ) as consumer:
            partitions = [TopicPartition(topic, p) for p in range(args.partitions)]
            started = time.perf_counter()
            await consumer.subscribe([topic])
            first_record_s: float | None = None
            flow_started = started
            first_batch = 0
            count = 0
            total_bytes = 0
            per_partition = dict.fromkeys(partitions, 0)
            while count < args.records:
                records = await consumer.poll(timeout_ms=15_000, max_records=10_000)
                if not records:
                    _err(f"error: no records for 15 s after {count:,} of {args.records:,}")
                    return 1
                if first_record_s is None:
                    first_record_s = time.perf_counter() - started
                    flow_started = time.perf_counter()
                    first_batch = records.count()
                for tp, batch in records.items():
                    per_partition[tp] += len(batch)
                    count += len(batch)
                    total_bytes += sum(r.serialized_value_size for r in batch)
            elapsed = time.perf_counter() - flow_started
            await consumer.commit()
            committed = await consumer.committed(partitions)
            member = consumer.group_metadata()
        cpu = _cpu_s() - cpu_before
        cpu = _cpu_s() - cpu_before
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        _out(
            f"  group       {group_id!r}: joined as {member.member_id} (generation {member.generation_id}), "
            f"first record {1000 * (first_record_s or 0):.0f} ms after subscribe (the broker holds a new group's "
            "first join for half the session timeout)"
        )
        _out(f"  consumed    {count:,} records, {total_bytes / 1e6:.1f} MB of values")
        _out(
            f"  speed       {(count - first_batch) / elapsed:,.0f} records/s, "
            f"{total_bytes * (count - first_batch) / count / 1e6 / elapsed:.1f} MB/s after the first poll, "
            f"{cpu:.2f} CPU-s for the consumer process, peak RSS {peak_rss_mb:.0f} MB"
        )
        for tp in partitions:
            offset = committed.get(tp)
            shown = f"{offset.offset:,}" if offset is not None else "none"
            _out(f"  {tp!s:<11} {per_partition[tp]:>9,} records, committed offset {shown}")
        return 0
    finally:
        broker.stop()


# --- consume --------------------------------------------------------------------------------------------------


def _decode(data: bytes | None, how: str) -> Any:
    if data is None:
        return None
    if how == "hex":
        return data.hex()
    return data.decode("utf-8", errors="replace")


def _format(record: ConsumerRecord, fmt: str, decode: str) -> str:
    if fmt == "json":
        return json.dumps(
            {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "timestamp": record.timestamp,
                "key": _decode(record.key, decode),
                "value": _decode(record.value, decode),
                "headers": {k: _decode(v, decode) for k, v in record.headers},
            }
        )
    key, value = _decode(record.key, decode), _decode(record.value, decode)
    return f"{record.topic}-{record.partition}@{record.offset}\t{key}\t{value}"


async def _consume(args: argparse.Namespace) -> int:
    reset = "earliest" if args.from_beginning else "latest"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, stop.set)
    seen = 0
    config: dict[str, Any] = {"auto_offset_reset": reset, "client_id": "asyncconsumer-cli"}
    if args.group:
        config["group_id"] = args.group
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _err(f"error: --property takes KEY=VALUE, got {item!r}")
            return 2
        config[key.strip()] = value.strip()
    async with AsyncConsumer(args.bootstrap_server, **config) as consumer:
        infos = await consumer.partitions_for(args.topic, timeout_ms=args.timeout_ms)
        if not infos:
            _err(f"error: topic {args.topic!r} does not exist on {args.bootstrap_server}")
            return 2
        if args.group:
            await consumer.subscribe([args.topic])  # positions are committed on close (auto-commit)
        else:
            await consumer.assign([TopicPartition(args.topic, p.partition) for p in infos])
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set() and (args.max_messages is None or seen < args.max_messages):
                # Never take more records than will be printed: with a group, what poll returns gets committed.
                limit = 500 if args.max_messages is None else args.max_messages - seen
                poll = asyncio.ensure_future(consumer.poll(timeout_ms=500, max_records=limit))
                await asyncio.wait([poll, stopped], return_when=asyncio.FIRST_COMPLETED)
                if not poll.done():
                    poll.cancel()
                    break
                for record in poll.result().records():
                    _out(_format(record, args.format, args.decode))
                    seen += 1
        finally:
            stopped.cancel()
    return 130 if stop.is_set() else 0


# --- entry point ----------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asyncconsumer", description="An asyncio-first Kafka consumer.")
    parser.add_argument("--verbose", "-v", action="store_true", help="show structured logs on stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="start an embedded Tansu broker, produce, consume, report speed")
    demo.add_argument("--records", type=int, default=200_000)
    demo.add_argument("--size", type=int, default=100, help="value size in bytes")
    demo.add_argument("--partitions", type=int, default=4)
    consume = sub.add_parser("consume", help="print records from a topic")
    consume.add_argument("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...]")
    consume.add_argument("--topic", required=True)
    consume.add_argument("--from-beginning", action="store_true")
    consume.add_argument("--group", default=None, help="consume as a member of this consumer group (commits on exit)")
    consume.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any consumer setting, Java or Python spelling (e.g. session.timeout.ms=6000); repeatable",
    )
    consume.add_argument("--max-messages", type=int, default=None)
    consume.add_argument("--format", choices=("text", "json"), default="text")
    consume.add_argument("--decode", choices=("utf-8", "hex"), default="utf-8")
    consume.add_argument("--timeout-ms", type=int, default=30_000, help="for metadata look-ups")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        if args.command == "demo":
            return asyncio.run(_demo(args))
        return asyncio.run(_consume(args))
    except KafkaError as exc:
        _err(f"error: {type(exc).__name__}: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
