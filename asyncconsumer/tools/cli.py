"""The ``asyncconsumer`` command: ``demo``, ``broker``, ``consume``, ``groups describe`` and ``offsets``.

Output for people goes to stdout; errors are one ``error: ...`` line on stderr and a non-zero exit status; a
progress line goes to stderr when it is a terminal, and when it is not, one plain line says the first connection
failure (so a command waiting on an unreachable broker does not sit silent until ``--timeout-ms``). Logs stay in
structlog and are off unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import re
import resource
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO, TypeVar

from asyncconsumer.config import ConsumerConfig, canonical_key
from asyncconsumer.consumer import AsyncConsumer
from asyncconsumer.errors import KafkaError
from asyncconsumer.network.security import ConnectionSecurity
from asyncconsumer.records import ConsumerRecord, TopicPartition
from asyncconsumer.tools.admin import (
    AdminClient,
    GroupDescription,
    GroupNotFoundError,
    PartitionOffsets,
    TopicNotFoundError,
)

EXIT_ERROR = 1
EXIT_NOT_FOUND = 2
EXIT_INTERRUPTED = 130
FORMATS = ("utf8", "hex", "base64", "raw")
DEFAULT_TIMEOUT_MS = 30_000

T = TypeVar("T")


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


async def _produce(
    bootstrap: str, topic: str, count: int, size: int, partitions: int, *, readable: bool = False
) -> float:
    """Produces ``count`` records, record i to partition ``i % partitions`` (key ``i``; value ``record i`` when
    ``readable``, else ``size`` random bytes), and returns the seconds it took.

    Each partition's last record goes alone, in a batch of its own, after everything before it is acknowledged:
    Tansu 0.6 answers ListOffsets LATEST with the base offset of a partition's last batch + 1, so only a one-record
    last batch makes LATEST (what ``auto_offset_reset="latest"`` and ``consume`` without ``--from-beginning`` start
    at) the partition's end.
    """
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=1 << 20, acks=1, enable_idempotence=False
    )
    await producer.start()
    started = time.perf_counter()
    try:
        value = os.urandom(size)
        sealing = max(count - partitions, 0)  # records sealing..count-1 are the last of their partitions
        pending: list[asyncio.Future[Any]] = []
        for i in range(count):
            if i == sealing:  # everything before the partitions' last records is acknowledged first
                await asyncio.gather(*pending)
                pending.clear()
            if readable:  # a sample topic people read: "record 7" rather than random bytes
                value = f"record {i}".encode()
            pending.append(await producer.send(topic, value=value, key=str(i).encode(), partition=i % partitions))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return time.perf_counter() - started


async def _demo(args: argparse.Namespace) -> int:
    from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker

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


# --- broker ---------------------------------------------------------------------------------------------------


def _broker(args: argparse.Namespace) -> int:
    """Runs the embedded Tansu broker in the foreground until Ctrl-C (or SIGTERM), with an optional sample topic."""
    from asyncconsumer.tools.embedded_broker import BrokerStartError, EmbeddedBroker

    try:
        broker = EmbeddedBroker.start(port=args.port)
    except BrokerStartError as exc:
        _err(f"error: the embedded broker could not start: {exc}")
        return EXIT_ERROR
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _out(f"Tansu broker at {broker.bootstrap_servers} (pid {broker.pid}); Ctrl-C stops it")
        if args.topic:
            broker.create_topic(args.topic, args.partitions)
            if args.records:
                asyncio.run(
                    _produce(broker.bootstrap_servers, args.topic, args.records, 0, args.partitions, readable=True)
                )
            _out(f"  topic {args.topic!r}: {args.partitions} partition(s), {args.records:,} records")
        while not stop.wait(0.5):
            if not broker.running:
                _err(f"error: the broker exited; its log ends with:\n{broker.log_tail()}")
                return EXIT_ERROR
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        broker.stop()


# --- consume --------------------------------------------------------------------------------------------------


class UsageError(Exception):
    """A command line that cannot work; exits 2 with its message."""


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


def format_record(record: ConsumerRecord, fmt: str, key_format: str, value_format: str) -> str:
    """One output line for ``record``: ``topic-partition@offset<TAB>key<TAB>value`` or a JSON object."""
    key, value = decode_bytes(record.key, key_format), decode_bytes(record.value, value_format)
    if fmt == "json":
        return json.dumps(
            {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "timestamp": record.timestamp,
                "key": key,
                "value": value,
                "headers": {k: decode_bytes(v, value_format) for k, v in record.headers},
            }
        )
    return f"{record.topic}-{record.partition}@{record.offset}\t{key}\t{value}"


def _write_line(line: str) -> None:
    # surrogateescape: --key-format/--value-format raw writes the record's own bytes back out.
    sys.stdout.buffer.write(line.encode("utf-8", errors="surrogateescape") + b"\n")
    sys.stdout.flush()


class Progress:
    """A one-line progress display on a terminal: ``\r``-rewritten at most every ``interval_s``, cleared at the end.

    When ``stream`` is not a TTY, pipes and files get no control characters: only the first connection failure
    ``waiting`` is told of, as one plain line (with when the command gives up, ``timeout_ms``, if the wait is
    bounded).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        interval_s: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        timeout_ms: int | None = None,
    ) -> None:
        self._stream = stream
        self._enabled = stream.isatty()
        self._interval_s = interval_s
        self._clock = clock
        self._timeout_ms = timeout_ms
        self._started = clock()
        self._shown_at = float("-inf")
        self._shown = False
        self._failure_told = False

    def update(self, count: int, total: int | None = None, *, force: bool = False) -> None:
        if not self._enabled:
            return
        now = self._clock()
        if not force and now - self._shown_at < self._interval_s:
            return
        self._shown_at = now
        elapsed = max(now - self._started, 1e-9)
        done = f"{count:,}" if total is None else f"{count:,}/{total:,} ({100 * count / max(total, 1):.0f}%)"
        self._stream.write(f"\r\x1b[K  {done} records  {count / elapsed:,.0f}/s  {elapsed:.0f} s")
        self._stream.flush()
        self._shown = True

    def waiting(self, what: str, detail: str | None = None, *, bounded: bool = False) -> None:
        """Says what the command waits for (connecting, joining a group) until records flow; ``detail`` is the
        last connection error, if any. ``bounded``: the command gives up on this wait after ``timeout_ms``.

        Off a terminal, the first ``detail`` becomes one plain line, e.g. ``waiting: cannot connect to bootstrap
        server h:9092: connection refused (giving up after 30 s; --timeout-ms to change)``.
        """
        if not self._enabled:
            if detail and not self._failure_told:
                self._failure_told = True
                line = f"waiting: {detail}"
                if bounded and self._timeout_ms is not None:
                    line += f" (giving up after {_seconds(self._timeout_ms)}; --timeout-ms to change)"
                self._stream.write(line + "\n")
                self._stream.flush()
            return
        now = self._clock()
        if now - self._shown_at < self._interval_s:
            return
        self._shown_at = now
        line = f"  {what}...  {now - self._started:.0f} s"
        if detail:
            line += f"  ({detail})"
        self._stream.write(f"\r\x1b[K{line}")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False


def _seconds(ms: int) -> str:
    """``30 s``, ``1.5 s``."""
    return f"{ms / 1000:g} s"


def _properties(args: argparse.Namespace) -> dict[str, str]:
    """``--property KEY=VALUE`` settings under their Python names (Java or Python spelling accepted)."""
    config: dict[str, str] = {}
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--property takes KEY=VALUE, got {item!r}")
        name = canonical_key(key)
        if name in config:
            raise UsageError(f"--property {key.strip()} is given twice")
        config[name] = value.strip()
    return config


_FLAG_FOR = {"group_id": "--group G", "bootstrap_servers": "--bootstrap-server"}
"""Settings a command line flag owns: a --property for them is an error naming the flag."""

_SECURITY_KEYS = frozenset(
    {
        "security_protocol",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_check_hostname",
        "sasl_mechanism",
        "sasl_username",
        "sasl_password",
    }
)

CLI_SESSION_TIMEOUT_MS = 6_000
"""The CLI's session timeout in a group: a short first join (Tansu holds it half the session timeout; Kafka's
minimum is 6 s) for a command that joins, prints and leaves. ``--property session.timeout.ms=...`` overrides it."""


def _consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    """The consumer's settings: the CLI's defaults, then ``--property`` over them."""
    properties = _properties(args)
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


def _admin(args: argparse.Namespace) -> AdminClient:
    """An admin client with the security settings of ``--property``; any other setting is an error (the admin
    commands make one request at a time and have nothing else to honour)."""
    properties = _properties(args)
    unused = sorted(set(properties) - _SECURITY_KEYS)
    if unused:
        names = ", ".join(k.replace("_", ".") for k in unused)
        raise UsageError(
            f"--property {names}: {args.command} uses only the security settings (security.protocol, ssl.*, sasl.*)"
        )
    config = ConsumerConfig.from_kwargs(args.bootstrap_server, **properties)
    security = ConnectionSecurity.from_config(config)
    return AdminClient(args.bootstrap_server, timeout_ms=args.timeout_ms, security=security)


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


async def _consume(args: argparse.Namespace) -> int:
    if args.format == "json" and "raw" in (args.key_format, args.value_format):
        raise UsageError("raw bytes cannot go into JSON: use --key-format/--value-format utf8, hex or base64")
    config = _consumer_config(args)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def interrupted() -> None:
        stop.set()
        # A second Ctrl-C while closing is not swallowed: it interrupts the close itself.
        loop.remove_signal_handler(signal.SIGINT)

    loop.add_signal_handler(signal.SIGINT, interrupted)
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
                        _write_line(format_record(record, args.format, args.key_format, args.value_format))
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
        if not stop.is_set():
            loop.remove_signal_handler(signal.SIGINT)
    return EXIT_INTERRUPTED if stop.is_set() else 0


# --- offsets and groups ---------------------------------------------------------------------------------------


def _table(rows: Sequence[Sequence[object]]) -> list[str]:
    """Left-aligned columns, two spaces apart (numbers right-aligned)."""
    cells = [["-" if c is None else (f"{c:,}" if isinstance(c, int) else str(c)) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    numeric = [all(isinstance(row[i], int) or row[i] is None for row in rows[1:]) for i in range(len(widths))]
    return [
        "  ".join(c.rjust(w) if n and r else c.ljust(w) for c, w, n in zip(row, widths, numeric, strict=True)).rstrip()
        for r, row in enumerate(cells)
    ]


def offsets_lines(rows: Sequence[PartitionOffsets], fmt: str) -> list[str]:
    if fmt == "json":
        return [
            json.dumps(
                [
                    {
                        "topic": r.partition.topic,
                        "partition": r.partition.partition,
                        "beginning": r.beginning,
                        "end": r.end,
                        "records": r.records,
                    }
                    for r in rows
                ]
            )
        ]
    header: list[object] = ["TOPIC", "PARTITION", "BEGINNING", "END", "RECORDS"]
    return _table([header, *([r.partition.topic, r.partition.partition, r.beginning, r.end, r.records] for r in rows)])


def group_lines(group: GroupDescription, fmt: str) -> list[str]:
    if fmt == "json":
        return [json.dumps(_group_json(group))]
    lines = [
        f"group {group.group_id}: {group.state}, protocol type {group.protocol_type or '-'}, "
        f"assignor {group.protocol or '-'}, coordinator node {group.coordinator}, {len(group.members)} member(s), "
        f"total lag {group.total_lag:,}"
    ]
    if group.members:
        lines.append("")
        header: list[object] = ["MEMBER", "CLIENT-ID", "HOST", "PARTITIONS"]
        rows: list[list[object]] = [header]
        for m in group.members:
            assigned = ",".join(str(tp) for tp in m.partitions) if m.partitions else "(none reported)"
            rows.append([m.member_id, m.client_id or "-", m.client_host or "-", assigned])
        lines += _table(rows)
    if group.partitions:
        lines.append("")
        header = ["TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "MEMBER"]
        lines += _table(
            [
                header,
                *(
                    [p.partition.topic, p.partition.partition, p.committed, p.end, p.lag, p.member_id]
                    for p in group.partitions
                ),
            ]
        )
    return lines


def _group_json(group: GroupDescription) -> dict[str, object]:
    return {
        "group_id": group.group_id,
        "state": group.state,
        "protocol_type": group.protocol_type,
        "protocol": group.protocol,
        "coordinator": group.coordinator,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "group_instance_id": m.group_instance_id,
                "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in m.partitions],
            }
            for m in group.members
        ],
        "total_lag": group.total_lag,
        "partitions": [
            {
                "topic": p.partition.topic,
                "partition": p.partition.partition,
                "committed": p.committed,
                "log_end": p.end,
                "lag": p.lag,
                "member_id": p.member_id,
            }
            for p in group.partitions
        ],
    }


async def _admin_status(admin: AdminClient, args: argparse.Namespace, progress: Progress) -> None:
    """Says, once a connection failed, what an admin command waits for (each request gives up after the timeout)."""
    while True:
        error = admin.last_connection_error()
        if error is not None:
            progress.waiting(f"connecting to {args.bootstrap_server}", str(error), bounded=True)
        await asyncio.sleep(0.25)


async def _with_status(admin: AdminClient, args: argparse.Namespace, call: Awaitable[T]) -> T:
    progress = Progress(sys.stderr, timeout_ms=args.timeout_ms)
    status = asyncio.ensure_future(_admin_status(admin, args, progress))
    try:
        return await call
    finally:
        status.cancel()
        progress.close()


async def _offsets(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        rows = await _with_status(admin, args, admin.topic_offsets(args.topic))
    for line in offsets_lines(rows, args.format):
        _out(line)
    return 0


async def _groups_describe(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        group = await _with_status(admin, args, admin.describe_group(args.group))
    for line in group_lines(group, args.format):
        _out(line)
    return 0


# --- entry point ----------------------------------------------------------------------------------------------


def _add_verbose(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``-v``/``--verbose`` before the command or after it, same meaning. A subcommand's flag has no default of its
    own (SUPPRESS), so it sets ``verbose`` when given and never resets what the top-level flag set."""
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="show structured logs (our structlog events) on stderr",
    )


def _add_format(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help=f"{what} (default text)")


def _add_common(parser: argparse.ArgumentParser, *, admin: bool) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...]")
    bounds = (
        "each request (connecting included)"
        if admin
        else "connecting and looking up the topic (or the pattern's topics), and the final commit with --group"
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"give up when the brokers do not answer within this many milliseconds; bounds {bounds} "
        f"(default {DEFAULT_TIMEOUT_MS}: {_seconds(DEFAULT_TIMEOUT_MS)})",
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any consumer setting, Java or Python spelling (e.g. session.timeout.ms=6000, security.protocol=SSL, "
        "ssl.cafile=ca.pem); repeatable. Admin commands use only the security settings",
    )
    _add_verbose(parser)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asyncconsumer", description="An asyncio-first Kafka consumer.")
    _add_verbose(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to do")
    demo = sub.add_parser("demo", help="start an embedded Tansu broker, produce, consume, report speed")
    demo.add_argument("--records", type=int, default=200_000, help="how many records to produce (default 200000)")
    demo.add_argument("--size", type=int, default=100, help="value size in bytes (default 100)")
    demo.add_argument("--partitions", type=int, default=4, help="partitions of the topic 'demo' (default 4)")
    _add_verbose(demo)

    broker = sub.add_parser("broker", help="run the embedded Tansu broker in the foreground (Ctrl-C stops it)")
    broker.add_argument("--port", type=int, default=None, help="listen on 127.0.0.1:PORT (default: a free port)")
    broker.add_argument("--topic", default=None, help="create this topic")
    broker.add_argument("--partitions", type=int, default=1, help="partitions of --topic (default 1)")
    broker.add_argument(
        "--records",
        type=int,
        default=0,
        help="produce this many records to --topic: 'record N' with key N, to partition N modulo --partitions",
    )
    _add_verbose(broker)

    consume = sub.add_parser("consume", help="print records from a topic (Ctrl-C stops, commits, exits 130)")
    _add_common(consume, admin=False)
    source = consume.add_mutually_exclusive_group(required=True)
    source.add_argument("--topic", help="every partition of this topic")
    source.add_argument("--pattern", help="every topic whose whole name matches this regular expression")
    consume.add_argument(
        "--from-beginning",
        action="store_true",
        help="where no offset is committed, start at the earliest offset (default: at the end)",
    )
    consume.add_argument("--group", default=None, help="consume as a member of this consumer group (commits on exit)")
    consume.add_argument("--max-messages", type=int, default=None, help="stop after printing this many records")
    _add_format(consume, "text: topic-partition@offset, key and value, tab-separated; json: one object a line")
    consume.add_argument("--key-format", choices=FORMATS, default="utf8", help="how keys are shown (default utf8)")
    consume.add_argument("--value-format", choices=FORMATS, default="utf8", help="how values are shown (default utf8)")
    consume.add_argument("--decode", choices=("utf-8", "hex"), default=None, help=argparse.SUPPRESS)  # old spelling

    offsets = sub.add_parser("offsets", help="beginning and end offset of every partition of a topic")
    offsets.add_argument("topic", help="the topic")
    _add_common(offsets, admin=True)
    _add_format(offsets, "text: a table; json: one array")

    groups = sub.add_parser("groups", help="consumer groups")
    groups_sub = groups.add_subparsers(dest="groups_command", required=True, metavar="COMMAND", help="what to do")
    _add_verbose(groups)
    describe = groups_sub.add_parser(
        "describe", help="members, their partitions, committed offsets, log-end offsets and lag"
    )
    describe.add_argument("group", help="the consumer group's id")
    _add_common(describe, admin=True)
    _add_format(describe, "text: a summary line and tables; json: one object")
    return parser


def _configure_logging(verbose: bool) -> None:
    ours = logging.getLogger("asyncconsumer")
    if verbose:
        # Our events only: the root logger stays as it is, so asyncio's and other libraries' debug lines stay out.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        ours.addHandler(handler)
        ours.setLevel(logging.DEBUG)
    else:
        # Quiet: not even warnings (Python's last-resort handler would print them).
        ours.addHandler(logging.NullHandler())
    ours.propagate = False


def _run(args: argparse.Namespace) -> int:
    if args.command == "broker":
        return _broker(args)
    if args.command == "demo":
        return asyncio.run(_demo(args))
    if args.command == "offsets":
        return asyncio.run(_offsets(args))
    if args.command == "groups":
        return asyncio.run(_groups_describe(args))
    if args.decode is not None:
        args.key_format = args.value_format = "hex" if args.decode == "hex" else "utf8"
    return asyncio.run(_consume(args))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    try:
        return _run(args)
    except UsageError as exc:
        _err(f"error: {exc}")
        return EXIT_NOT_FOUND
    except (TopicNotFoundError, GroupNotFoundError) as exc:
        _err(f"error: {exc}")
        return EXIT_NOT_FOUND
    except KafkaError as exc:
        _err(f"error: {type(exc).__name__}: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
