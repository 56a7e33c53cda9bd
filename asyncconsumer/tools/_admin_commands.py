"""``asyncconsumer offsets``, ``share-groups describe`` and ``share-groups configure``: the admin client from the
client from the flags (security settings only), the status line while a request waits, and their tables, JSON or
confirmation lines."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from asyncconsumer.config import ConsumerConfig
from asyncconsumer.errors import UnsupportedVersionError
from asyncconsumer.network.security import ConnectionSecurity
from asyncconsumer.protocol.messages.api_keys import ApiKey
from asyncconsumer.tools._common import Progress, UsageError, out, parse_properties
from asyncconsumer.tools.admin import AdminClient, PartitionOffsets, ShareGroupDescription

T = TypeVar("T")


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
        "sasl_kerberos_service_name",
        "sasl_kerberos_principal",
        "sasl_kerberos_keytab",
        "sasl_kerberos_domain_name",
    }
)


def security_properties(args: argparse.Namespace) -> dict[str, str]:
    """The security settings of ``--property``; any other setting is an error (the admin commands have nothing else
    to honour)."""
    properties = parse_properties(args)
    unused = sorted(set(properties) - _SECURITY_KEYS)
    if unused:
        names = ", ".join(k.replace("_", ".") for k in unused)
        raise UsageError(
            f"--property {names}: {args.command} uses only the security settings (security.protocol, ssl.*, sasl.*)"
        )
    return properties


def _admin(args: argparse.Namespace) -> AdminClient:
    """An admin client with the security settings of ``--property``."""
    properties = security_properties(args)
    config = ConsumerConfig.from_kwargs(args.bootstrap_server, **properties)
    security = ConnectionSecurity.from_config(config)
    return AdminClient(args.bootstrap_server, timeout_ms=args.timeout_ms, security=security)


def table(rows: Sequence[Sequence[object]]) -> list[str]:
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
    return table([header, *([r.partition.topic, r.partition.partition, r.beginning, r.end, r.records] for r in rows)])


def share_group_lines(group: ShareGroupDescription, fmt: str) -> list[str]:
    if fmt == "json":
        return [json.dumps(_share_group_json(group))]
    lag = "-" if group.total_lag is None else f"{group.total_lag:,}"
    lines = [
        f"share group {group.group_id}: {group.state or '-'}, group epoch {group.group_epoch}, assignment epoch "
        f"{group.assignment_epoch}, assignor {group.assignor or '-'}, coordinator node {group.coordinator}, "
        f"{len(group.members)} member(s), total lag {lag}"
    ]
    if group.members:
        lines.append("")
        header: list[object] = ["MEMBER", "CLIENT-ID", "HOST", "EPOCH", "SUBSCRIBED", "PARTITIONS"]
        rows: list[list[object]] = [header]
        for m in group.members:
            assigned = ",".join(str(tp) for tp in m.partitions) if m.partitions else "(none)"
            subscribed = ",".join(m.subscribed_topics) or "-"
            rows.append([m.member_id, m.client_id or "-", m.client_host or "-", m.member_epoch, subscribed, assigned])
        lines += table(rows)
    if group.start_offsets:
        lines.append("")
        errors = any(p.error for p in group.start_offsets)
        header = ["TOPIC", "PARTITION", "START-OFFSET", "LAG", *(["ERROR"] if errors else [])]
        lines += table(
            [
                header,
                *(
                    [p.partition.topic, p.partition.partition, p.start_offset, p.lag, *([p.error] if errors else [])]
                    for p in group.start_offsets
                ),
            ]
        )
    return lines


def _share_group_json(group: ShareGroupDescription) -> dict[str, object]:
    return {
        "group_id": group.group_id,
        "state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor,
        "coordinator": group.coordinator,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "subscribed_topics": list(m.subscribed_topics),
                "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in m.partitions],
            }
            for m in group.members
        ],
        "total_lag": group.total_lag,
        "start_offsets": [
            {
                "topic": p.partition.topic,
                "partition": p.partition.partition,
                "start_offset": p.start_offset,
                "lag": p.lag,
                "error": p.error,
            }
            for p in group.start_offsets
        ],
    }


def config_changes(sets: Sequence[str], deletes: Sequence[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """``--set KEY=VALUE`` and ``--delete KEY`` as (key → value, keys to delete), in the order given. The value is
    everything after the first ``=`` (the broker judges it); a key given twice, both set and deleted, or no change at
    all is a ``UsageError``."""
    changes: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set takes KEY=VALUE, got {item!r}")
        if key in changes:
            raise UsageError(f"--set {key} is given twice")
        changes[key] = value.strip()
    deleted: list[str] = []
    for item in deletes:
        key = item.strip()
        if not key or "=" in key:
            raise UsageError(f"--delete takes a config's name, got {item!r}")
        if key in changes:
            raise UsageError(f"{key} is both set and deleted")
        if key in deleted:
            raise UsageError(f"--delete {key} is given twice")
        deleted.append(key)
    if not changes and not deleted:
        raise UsageError("nothing to configure: give --set KEY=VALUE or --delete KEY")
    return changes, tuple(deleted)


def configured_lines(group: str, changes: Mapping[str, str], deleted: Sequence[str]) -> list[str]:
    """One line per config the broker altered: ``share group G: KEY=VALUE``, ``share group G: KEY deleted``."""
    return [f"share group {group}: {k}={v}" for k, v in changes.items()] + [
        f"share group {group}: {k} deleted" for k in deleted
    ]


def without_share_groups(exc: UnsupportedVersionError, bootstrap: str) -> UnsupportedVersionError:
    """``exc`` (which names the API the broker lacks) saying what it means to the share commands."""
    return UnsupportedVersionError(f"{exc}: the broker at {bootstrap} has no share groups (KIP-932)")


async def _admin_status(last_error: Callable[[], object], args: argparse.Namespace, progress: Progress) -> None:
    """Says, once a connection failed, what an admin command waits for (each request gives up after the timeout)."""
    while True:
        error = last_error()
        if error is not None:
            progress.waiting(f"connecting to {args.bootstrap_server}", str(error), bounded=True)
        await asyncio.sleep(0.25)


async def with_status(last_error: Callable[[], object], args: argparse.Namespace, call: Awaitable[T]) -> T:
    """Awaits ``call`` while the terminal says what it waits for once ``last_error()`` names a failed connection."""
    progress = Progress(sys.stderr, timeout_ms=args.timeout_ms)
    status = asyncio.ensure_future(_admin_status(last_error, args, progress))
    try:
        return await call
    finally:
        status.cancel()
        progress.close()


async def run_offsets(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        rows = await with_status(admin.last_connection_error, args, admin.topic_offsets(args.topic))
    for line in offsets_lines(rows, args.format):
        out(line)
    return 0


async def run_share_groups_describe(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        try:
            group = await with_status(admin.last_connection_error, args, admin.describe_share_group(args.group))
        except UnsupportedVersionError as exc:
            raise without_share_groups(exc, args.bootstrap_server) from exc
    for line in share_group_lines(group, args.format):
        out(line)
    return 0


async def _configure_share_group(
    admin: AdminClient, args: argparse.Namespace, changes: Mapping[str, str], deleted: Sequence[str]
) -> None:
    # A broker without share groups (Tansu 0.6) answers a GROUP resource's configs with no error and keeps
    # nothing, so share groups are asked for first.
    if not await admin.supports(ApiKey.SHARE_GROUP_HEARTBEAT):
        unsupported = UnsupportedVersionError("the brokers do not support SHARE_GROUP_HEARTBEAT (API 76)")
        raise without_share_groups(unsupported, args.bootstrap_server)
    await admin.alter_group_configs(args.group, changes, deleted)


async def run_share_groups_configure(args: argparse.Namespace) -> int:
    changes, deleted = config_changes(args.set, args.delete)
    async with _admin(args) as admin:
        await with_status(admin.last_connection_error, args, _configure_share_group(admin, args, changes, deleted))
    for line in configured_lines(args.group, changes, deleted):
        out(line)
    return 0
