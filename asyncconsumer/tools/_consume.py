"""``asyncconsumer consume``: the consumer's settings from the flags and ``--property``, subscribing or assigning
the topic or the pattern's topics, the status line until records flow, and each record as one line."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import sys
from typing import Any

from asyncconsumer.consumer import AsyncConsumer
from asyncconsumer.records import ConsumerRecord, ShareRecord, TopicPartition
from asyncconsumer.tools._common import EXIT_INTERRUPTED, Interrupt, Progress, UsageError, parse_properties
from asyncconsumer.tools.admin import TopicNotFoundError

FORMATS = ("utf8", "hex", "base64", "raw")


def decode_bytes(data: bytes | None, how: str) -> str | None:
    """``data`` shown as ``how`` (utf8, hex, base64; raw is utf8 with undecodable bytes kept as escapes)."""
    if data is None:
        return None
    if how == "hex":
        return data.hex()
    if how == "base64":
        return base64.b64encode(data).decode("ascii")
    if how == "raw":
        return data.decode("utf-8", errors="surrogateescape")
    return data.decode("utf-8", errors="replace")


def format_record(record: ConsumerRecord | ShareRecord, fmt: str, key_format: str, value_format: str) -> str:
    """One output line for ``record``: ``topic-partition@offset<TAB>key<TAB>value`` or a JSON object. A share
    record says its delivery count too: ``topic-partition@offset (delivery N)`` and ``"delivery_count"``."""
    key, value = decode_bytes(record.key, key_format), decode_bytes(record.value, value_format)
    where = f"{record.topic}-{record.partition}@{record.offset}"
    if fmt == "json":
        fields: dict[str, object] = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": key,
            "value": value,
            "headers": {k: decode_bytes(v, value_format) for k, v in record.headers},
        }
        if isinstance(record, ShareRecord):
            fields["delivery_count"] = record.delivery_count
        return json.dumps(fields)
    if isinstance(record, ShareRecord):
        where += f" (delivery {record.delivery_count})"
    return f"{where}\t{key}\t{value}"


def write_line(line: str) -> None:
    # surrogateescape: --key-format/--value-format raw writes the record's own bytes back out.
    sys.stdout.buffer.write(line.encode("utf-8", errors="surrogateescape") + b"\n")
    sys.stdout.flush()


_FLAG_FOR = {"group_id": "--group G", "bootstrap_servers": "--bootstrap-server"}
"""Settings a command line flag owns: a --property for them is an error naming the flag."""

CLI_SESSION_TIMEOUT_MS = 6_000
"""The CLI's session timeout in a group: a short first join (Tansu holds it half the session timeout; Kafka's
minimum is 6 s) for a command that joins, prints and leaves. ``--property session.timeout.ms=...`` overrides it."""


def _consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    """The consumer's settings: the CLI's defaults, then ``--property`` over them."""
    properties = parse_properties(args)
    for name, flag in _FLAG_FOR.items():
        if name in properties:
            raise UsageError(f"--property {name.replace('_', '.')} is not honoured here: use {flag}")
    config: dict[str, Any] = {
        "auto_offset_reset": "earliest" if args.from_beginning else "latest",
        "client_id": "asyncconsumer-cli",
    }
    if args.group:
        config["group_id"] = args.group
        if properties.get("group_protocol", "classic").strip().lower() == "classic":
            config["session_timeout_ms"] = CLI_SESSION_TIMEOUT_MS
            config["heartbeat_interval_ms"] = CLI_SESSION_TIMEOUT_MS // 6
    config.update(properties)
    return config


async def _start(consumer: AsyncConsumer, args: argparse.Namespace) -> None:
    """Subscribe (with a group) or assign every partition of the topic or of the topics the pattern matches."""
    if args.pattern is not None:
        try:
            pattern = re.compile(args.pattern)
        except re.error as exc:
            raise UsageError(f"--pattern {args.pattern!r} is not a regular expression: {exc}") from exc
        # Also with a group (which subscribes to the pattern whatever matches now): --timeout-ms bounds connecting.
        topics = await consumer.topics(timeout_ms=args.timeout_ms)
        if args.group:
            await consumer.subscribe(pattern=pattern)
            return
        matched = sorted(t for t in topics if pattern.fullmatch(t))
        if not matched:
            raise TopicNotFoundError(f"no topic on {args.bootstrap_server} matches {args.pattern!r}")
        await consumer.assign([TopicPartition(t, p.partition) for t in matched for p in topics[t]])
        return
    infos = await consumer.partitions_for(args.topic, timeout_ms=args.timeout_ms)
    if not infos:
        raise TopicNotFoundError(f"topic {args.topic!r} does not exist on {args.bootstrap_server}")
    if args.group:
        await consumer.subscribe([args.topic])
    else:
        await consumer.assign([TopicPartition(args.topic, p.partition) for p in infos])


async def _show_status(
    consumer: AsyncConsumer, args: argparse.Namespace, progress: Progress, state: dict[str, int]
) -> None:
    """Keeps the progress line saying what the command waits for until the first record is printed."""
    while state["seen"] == 0:
        error = consumer.metrics().last_connection_error
        if not state["started"]:
            progress.waiting(f"connecting to {args.bootstrap_server}", error, bounded=True)
        elif args.group and not consumer.assignment():
            progress.waiting(f"joining group {args.group}", error)
        else:
            progress.waiting("waiting for records", error)
        await asyncio.sleep(0.25)


async def run_consume(args: argparse.Namespace) -> int:
    if args.format == "json" and "raw" in (args.key_format, args.value_format):
        raise UsageError("raw bytes cannot go into JSON: use --key-format/--value-format utf8, hex or base64")
    config = _consumer_config(args)
    interrupt = Interrupt()
    stop = interrupt.stopped
    progress = Progress(sys.stderr, timeout_ms=args.timeout_ms)
    state = {"seen": 0, "started": 0}
    try:
        async with AsyncConsumer(args.bootstrap_server, **config) as consumer:
            status = asyncio.ensure_future(_show_status(consumer, args, progress, state))
            stopped = asyncio.ensure_future(stop.wait())
            try:
                started = asyncio.ensure_future(_start(consumer, args))
                await asyncio.wait([started, stopped], return_when=asyncio.FIRST_COMPLETED)
                if not started.done():
                    started.cancel()
                else:
                    started.result()
                    state["started"] = 1
                while not stop.is_set() and (args.max_messages is None or state["seen"] < args.max_messages):
                    # Never take more records than will be printed: with a group, what poll returns gets committed.
                    limit = 500 if args.max_messages is None else args.max_messages - state["seen"]
                    poll = asyncio.ensure_future(consumer.poll(timeout_ms=500, max_records=limit))
                    await asyncio.wait([poll, stopped], return_when=asyncio.FIRST_COMPLETED)
                    if not poll.done():
                        poll.cancel()
                        break
                    for record in poll.result().records():
                        write_line(format_record(record, args.format, args.key_format, args.value_format))
                        state["seen"] += 1
                    if state["seen"]:
                        progress.update(state["seen"], args.max_messages)
            finally:
                stopped.cancel()
                status.cancel()
                progress.close()
            if args.group and state["started"]:
                # Everything printed is committed before the group is left (close would auto-commit too, but an
                # explicit commit reports its failure).
                await consumer.commit(timeout_ms=args.timeout_ms)
    finally:
        interrupt.remove()
    return EXIT_INTERRUPTED if stop.is_set() else 0
