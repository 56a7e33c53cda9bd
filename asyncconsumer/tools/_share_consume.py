"""``asyncconsumer share-consume``: a member of a share group (KIP-932) that prints each record it is given with
its delivery count and acknowledges it as ``--ack`` says, then commits those acknowledgements before it leaves.

It always acknowledges explicitly (``share.acknowledgement.mode=explicit``), even for ``--ack accept``: implicit
mode would accept every record a ``poll`` returned, printed or not (past ``--max-messages``, or when Ctrl-C
comes). Records acquired but not printed are released when the consumer closes. With ``--max-messages N`` the
consumer asks for at most N records a fetch (``max.poll.records`` and ``share.acquire.mode=record_limit``), so
that it acquires no more than it will print.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from asyncconsumer.config import ShareConsumerConfig
from asyncconsumer.errors import UnsupportedVersionError
from asyncconsumer.network.security import ConnectionSecurity
from asyncconsumer.records import AcknowledgeType
from asyncconsumer.share import AsyncShareConsumer
from asyncconsumer.tools._admin_commands import with_status, without_share_groups
from asyncconsumer.tools._common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    Interrupt,
    Progress,
    UsageError,
    err,
    parse_properties,
)
from asyncconsumer.tools._consume import format_record, write_line
from asyncconsumer.tools.admin import AdminClient

ACKS = ("accept", "release", "reject")

_FLAG_FOR = {
    "group_id": "--group G",
    "bootstrap_servers": "--bootstrap-server",
    "share_acknowledgement_mode": "--ack (each printed record is acknowledged explicitly)",
}
"""Settings a command line flag owns: a --property for them is an error naming the flag."""

_MAX_POLL_RECORDS = 500


def acknowledge_type(args: argparse.Namespace) -> AcknowledgeType:
    return AcknowledgeType[args.ack.upper()]


def share_consumer_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The share consumer's settings: the CLI's, then ``--property`` over them; checked (a consumer-only setting,
    ``auto.offset.reset`` say, is a ``ConfigError`` naming the share group's own way)."""
    if args.max_messages is not None and args.max_messages < 1:
        raise UsageError(f"--max-messages must be at least 1, got {args.max_messages}")
    properties = parse_properties(args)
    for name, flag in _FLAG_FOR.items():
        if name in properties:
            raise UsageError(f"--property {name.replace('_', '.')} is not honoured here: use {flag}")
    settings: dict[str, Any] = {
        "group_id": args.group,
        "client_id": "asyncconsumer-cli",
        "share_acknowledgement_mode": "explicit",
    }
    if args.max_messages is not None:
        settings["max_poll_records"] = min(args.max_messages, _MAX_POLL_RECORDS)
        settings["share_acquire_mode"] = "record_limit"
    settings.update(properties)
    ShareConsumerConfig.from_settings(args.bootstrap_server, **settings)
    return settings


async def _look_up_topic(args: argparse.Namespace, settings: dict[str, Any]) -> None:
    """``TopicNotFoundError`` unless the topic exists; bounded by ``--timeout-ms`` (connecting included)."""
    config = ShareConsumerConfig.from_settings(args.bootstrap_server, **settings)
    security = ConnectionSecurity.from_config(config.consumer)
    admin = AdminClient(
        args.bootstrap_server, client_id="asyncconsumer-cli", timeout_ms=args.timeout_ms, security=security
    )
    async with admin:
        await with_status(admin.last_connection_error, args, admin.partition_leaders(args.topic))


async def _show_status(
    consumer: AsyncShareConsumer, args: argparse.Namespace, progress: Progress, state: dict[str, int]
) -> None:
    """Keeps the progress line saying what the command waits for until the first record is printed."""
    while state["seen"] == 0:
        metrics = consumer.metrics()
        if not metrics.assignment:
            progress.waiting(f"joining share group {args.group}", metrics.last_connection_error)
        else:
            progress.waiting("waiting for records", metrics.last_connection_error)
        await asyncio.sleep(0.25)


async def _consume(
    consumer: AsyncShareConsumer, args: argparse.Namespace, stop: asyncio.Event, state: dict[str, int]
) -> None:
    """Prints and acknowledges records until ``--max-messages`` or ``stop``."""
    ack = acknowledge_type(args)
    progress = Progress(sys.stderr, timeout_ms=args.timeout_ms)
    status = asyncio.ensure_future(_show_status(consumer, args, progress, state))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await consumer.subscribe([args.topic])
        while not stop.is_set() and (args.max_messages is None or state["seen"] < args.max_messages):
            poll = asyncio.ensure_future(consumer.poll(timeout_ms=500))
            await asyncio.wait([poll, stopped], return_when=asyncio.FIRST_COMPLETED)
            if not poll.done():
                poll.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poll
                break
            for record in poll.result().records():
                if args.max_messages is not None and state["seen"] >= args.max_messages:
                    break  # left unacknowledged: released when the consumer closes
                write_line(format_record(record, args.format, args.key_format, args.value_format))
                consumer.acknowledge(record, ack)
                state["seen"] += 1
            if state["seen"]:
                progress.update(state["seen"], args.max_messages)
    finally:
        stopped.cancel()
        status.cancel()
        progress.close()


async def run_share_consume(args: argparse.Namespace) -> int:
    if args.format == "json" and "raw" in (args.key_format, args.value_format):
        raise UsageError("raw bytes cannot go into JSON: use --key-format/--value-format utf8, hex or base64")
    settings = share_consumer_settings(args)
    interrupt = Interrupt()
    state = {"seen": 0}
    failed: list[str] = []
    try:
        lookup = asyncio.ensure_future(_look_up_topic(args, settings))
        stopped = asyncio.ensure_future(interrupt.stopped.wait())
        try:
            await asyncio.wait([lookup, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not lookup.done():
            lookup.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lookup
            return EXIT_INTERRUPTED
        lookup.result()
        async with AsyncShareConsumer(args.bootstrap_server, **settings) as consumer:
            await _consume(consumer, args, interrupt.stopped, state)
            # What was printed is acknowledged before the group is left; a refusal (an expired lock) is reported.
            results = await consumer.commit_sync(timeout_ms=args.timeout_ms)
            failed = [f"{tp}: {type(e).__name__}: {e}" for tp, e in sorted(results.items()) if e is not None]
    except UnsupportedVersionError as exc:
        raise without_share_groups(exc, args.bootstrap_server) from exc
    finally:
        interrupt.remove()
    for failure in failed:
        err(f"error: acknowledgements of {failure}")
    if failed:
        return EXIT_ERROR
    return EXIT_INTERRUPTED if interrupt.stopped.is_set() else 0
