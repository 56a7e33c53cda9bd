"""``groups describe``: what ``kafka-consumer-groups.sh --describe`` prints, on the public ``AsyncAdmin``, for
classic and KIP-848 groups alike. By default each partition's committed offset, log-end offset, lag and member
(``--offsets``); ``--members`` the members and how many partitions each has; ``--state`` the group's coordinator,
assignor, state and member count. The rows are worked out by plain functions (``offset_rows``, ``member_rows``,
``state_rows``) from the admin's answers; ``--format json`` prints one object with all of it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from asyncconsumer._caller.admin_results import offsets_only
from asyncconsumer.admin import AsyncAdmin, ConsumerGroupDescription, PartitionLag
from asyncconsumer.errors import GroupIdNotFoundError
from asyncconsumer.tools._admin_commands import with_status
from asyncconsumer.tools._common import out
from asyncconsumer.tools._group_commands import _admin

Row = list[object]

OFFSET_HEADER: Row = [
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
]
MEMBER_HEADER: Row = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
STATE_HEADER: Row = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]


def kafka_table(rows: Sequence[Row]) -> list[str]:
    """Every column left-aligned, two spaces apart, numbers as they are and ``-`` for nothing: Kafka's layout."""
    cells = [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def offset_rows(group_id: str, lag: Sequence[PartitionLag]) -> list[Row]:
    """One row per partition committed or assigned, as Kafka's ``--offsets`` (``-`` where there is nothing)."""
    rows = [OFFSET_HEADER]
    for p in lag:
        member = p.member
        rows.append(
            [
                group_id,
                p.partition.topic,
                p.partition.partition,
                p.committed,
                p.log_end_offset,
                p.lag,
                member.member_id if member else None,
                member.host if member else None,
                member.client_id if member else None,
            ]
        )
    return rows


def member_rows(group: ConsumerGroupDescription) -> list[Row]:
    """One row per member, as Kafka's ``--members``."""
    return [MEMBER_HEADER] + [
        [group.group_id, m.member_id, m.host, m.client_id, len(m.assignment)] for m in group.members
    ]


def state_rows(group: ConsumerGroupDescription, coordinator: str) -> list[Row]:
    """The group's one row, as Kafka's ``--state`` (its coordinator as ``host:port  (id)``)."""
    row: Row = [group.group_id, coordinator, group.partition_assignor or None, group.state, len(group.members)]
    return [STATE_HEADER, row]


def as_json(group: ConsumerGroupDescription, lag: Sequence[PartitionLag]) -> dict[str, object]:
    return {
        "group_id": group.group_id,
        "type": group.type,
        "state": group.state,
        "assignor": group.partition_assignor,
        "coordinator": group.coordinator,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "group_instance_id": m.group_instance_id,
                "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(m.assignment)],
            }
            for m in group.members
        ],
        "partitions": [
            {
                "topic": p.partition.topic,
                "partition": p.partition.partition,
                "committed": p.committed,
                "log_end": p.log_end_offset,
                "lag": p.lag,
                "member_id": p.member.member_id if p.member else None,
            }
            for p in lag
        ],
        "total_lag": sum(p.lag or 0 for p in lag),
    }


async def _described(admin: AsyncAdmin, group_id: str) -> tuple[ConsumerGroupDescription, list[PartitionLag], str]:
    lag = await admin.list_consumer_group_lag(group_id)
    try:
        group = (await admin.describe_consumer_groups([group_id]))[group_id]
    except GroupIdNotFoundError:  # only committed offsets are left of it
        group = offsets_only(group_id)
    coordinator = "-"
    if group.coordinator >= 0:
        brokers = {b.id: b for b in (await admin.describe_cluster()).brokers}
        node = brokers.get(group.coordinator)
        coordinator = f"{node.host}:{node.port}  ({node.id})" if node else f"({group.coordinator})"
    return group, lag, coordinator


async def run_groups_describe(args: argparse.Namespace) -> int:
    admin = _admin(args)
    async with admin:
        group, lag, coordinator = await with_status(
            lambda: admin.metrics().last_connection_error, args, _described(admin, args.group)
        )
    if args.format == "json":
        out(json.dumps(as_json(group, lag)))
        return 0
    if args.state:
        rows = state_rows(group, coordinator)
    elif args.members:
        rows = member_rows(group)
    else:
        rows = offset_rows(group.group_id, lag)
    if not group.members and not args.state:
        out(f"Consumer group '{group.group_id}' has no active members.")
        out("")
    if len(rows) > 1:
        for line in kafka_table(rows):
            out(line)
    return 0
