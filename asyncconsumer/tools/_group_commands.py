"""``groups list``, ``groups reset-offsets``, ``groups delete``, ``groups delete-offsets`` and ``topics ...``: the
day-to-day uses of Kafka's ``kafka-consumer-groups.sh`` and ``kafka-topics.sh``, on the public ``AsyncAdmin``.

As Kafka's tool, ``reset-offsets`` only shows the plan unless ``--execute`` is given, and refuses, changing nothing,
while the group has members. Output is a table, or with ``--format json`` one JSON value.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from collections.abc import Sequence

from asyncconsumer._caller.admin_results import TopicDescription
from asyncconsumer.admin import AsyncAdmin, NewTopic
from asyncconsumer.errors import GroupIdNotFoundError, NonEmptyGroupError
from asyncconsumer.records import TopicPartition
from asyncconsumer.tools._admin_commands import security_properties, table
from asyncconsumer.tools._common import UsageError, out
from asyncconsumer.tools._reset import ResetError, ResetSpec, parse_datetime_ms, parse_duration_back_ms, plan


def _admin(args: argparse.Namespace) -> AsyncAdmin:
    return AsyncAdmin(
        args.bootstrap_server,
        default_api_timeout_ms=args.timeout_ms,
        request_timeout_ms=min(args.timeout_ms, 30_000),
        **security_properties(args),  # type: ignore[arg-type]
    )


def _emit(rows: Sequence[Sequence[object]], fmt: str, as_json: object) -> None:
    if fmt == "json":
        out(json.dumps(as_json))
    elif len(rows) > 1:
        for line in table(rows):
            out(line)


# --- groups list / delete / delete-offsets -----------------------------------------------------------------------


async def run_groups_list(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        groups = await admin.list_groups(types=args.type or None, states=args.state or None)
    rows: list[list[object]] = [["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"]]
    rows += [[g.group_id, g.type, g.state, g.protocol_type or "-"] for g in groups]
    _emit(rows, args.format, [{"group": g.group_id, "type": g.type, "state": g.state} for g in groups])
    return 0


async def run_groups_delete(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        await admin.delete_consumer_groups(args.group)
    names = ", ".join(repr(g) for g in args.group)
    if args.format == "json":
        out(json.dumps({"deleted": list(args.group)}))
    else:
        out(f"Deletion of requested consumer groups ({names}) was successful.")
    return 0


def _partitions_of(specs: Sequence[str], described: dict[str, TopicDescription]) -> list[TopicPartition]:
    """``--topic t`` (every partition) or ``--topic t:0,2`` (those), as Kafka's tool reads them."""
    found: list[TopicPartition] = []
    for spec in specs:
        name, _, listed = spec.partition(":")
        if listed:
            try:
                numbers = [int(p) for p in listed.split(",") if p]
            except ValueError:
                raise UsageError(f"--topic {spec!r}: partitions are numbers, as TOPIC:0,1,2") from None
            found += [TopicPartition(name, p) for p in numbers]
        else:
            found += [TopicPartition(name, p.partition) for p in described[name].partitions]
    return sorted(set(found))


async def run_groups_delete_offsets(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        described = await admin.describe_topics(sorted({t.partition(":")[0] for t in args.topic}))
        partitions = _partitions_of(args.topic, described)
        await admin.delete_consumer_group_offsets(args.group, partitions)
    rows: list[list[object]] = [["TOPIC", "PARTITION", "STATUS"]]
    rows += [[tp.topic, tp.partition, "Successful"] for tp in partitions]
    _emit(rows, args.format, [{"topic": tp.topic, "partition": tp.partition} for tp in partitions])
    return 0


# --- groups reset-offsets ----------------------------------------------------------------------------------------


def reset_spec(args: argparse.Namespace, now_ms: int) -> ResetSpec:
    """The one reset option given, as a ``ResetSpec``; a bad time or duration is a ``ResetError`` naming it."""
    if args.to_earliest:
        return ResetSpec("earliest")
    if args.to_latest:
        return ResetSpec("latest")
    if args.to_current:
        return ResetSpec("current")
    if args.to_offset is not None:
        return ResetSpec("offset", args.to_offset)
    if args.shift_by is not None:
        return ResetSpec("shift", args.shift_by)
    if args.to_datetime is not None:
        return ResetSpec("time", parse_datetime_ms(args.to_datetime))
    return ResetSpec("time", parse_duration_back_ms(args.by_duration, now_ms))


async def run_groups_reset_offsets(args: argparse.Namespace) -> int:
    if not args.all_topics and not args.topic:
        raise UsageError("reset-offsets needs --topic TOPIC[:PARTITIONS] (repeatable) or --all-topics")
    try:
        spec = reset_spec(args, int(time.time() * 1000))
    except ResetError as exc:
        raise UsageError(str(exc)) from None
    async with _admin(args) as admin:
        try:
            description = (await admin.describe_consumer_groups([args.group]))[args.group]
        except GroupIdNotFoundError:  # a group that does not exist yet may be given offsets
            description = None
        if description is not None and (description.members or description.state.lower() not in ("empty", "dead")):
            raise NonEmptyGroupError(
                f"assignments can only be reset if group {args.group!r} is inactive, but it is {description.state} "
                f"with {len(description.members)} member(s)"
            )
        committed = {tp: o.offset for tp, o in (await admin.list_consumer_group_offsets(args.group)).items()}
        if args.all_topics:
            partitions = sorted(committed)
        else:
            described = await admin.describe_topics(sorted({t.partition(":")[0] for t in args.topic}))
            partitions = _partitions_of(args.topic, described)
        earliest = await admin.list_offsets(dict.fromkeys(partitions, "earliest")) if partitions else {}
        latest = await admin.list_offsets(dict.fromkeys(partitions, "latest")) if partitions else {}
        at = spec.lookup()
        found = await admin.list_offsets(dict.fromkeys(partitions, at)) if at is not None and partitions else None
        new = plan(spec, partitions, earliest, latest, committed, found)
        if args.execute and new:
            await admin.alter_consumer_group_offsets(args.group, new)
    rows: list[list[object]] = [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]]
    rows += [[args.group, tp.topic, tp.partition, offset] for tp, offset in new.items()]
    as_json = {
        "group": args.group,
        "executed": bool(args.execute),
        "offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": o} for tp, o in new.items()],
    }
    _emit(rows, args.format, as_json)
    return 0


# --- topics ---------------------------------------------------------------------------------------------------


async def run_topics_list(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        names = sorted(await admin.list_topics(internal=args.include_internal))
    if args.format == "json":
        out(json.dumps(names))
    else:
        for name in names:
            out(name)
    return 0


async def run_topics_describe(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        described = await admin.describe_topics(args.topic)
    if args.format == "json":
        out(
            json.dumps(
                [
                    {
                        "topic": d.name,
                        "topic_id": str(d.topic_id),
                        "partitions": [
                            {
                                "partition": p.partition,
                                "leader": p.leader,
                                "replicas": list(p.replicas),
                                "isr": list(p.isr),
                            }
                            for p in d.partitions
                        ],
                    }
                    for d in described.values()
                ]
            )
        )
        return 0
    for d in described.values():
        factor = len(d.partitions[0].replicas) if d.partitions else 0
        topic_id = base64.urlsafe_b64encode(d.topic_id.bytes).rstrip(b"=").decode()  # as Kafka's Uuid prints
        out(f"Topic: {d.name}\tTopicId: {topic_id}\tPartitionCount: {len(d.partitions)}\tReplicationFactor: {factor}")
        for p in d.partitions:
            replicas, isr = ",".join(map(str, p.replicas)), ",".join(map(str, p.isr))
            out(f"\tTopic: {d.name}\tPartition: {p.partition}\tLeader: {p.leader}\tReplicas: {replicas}\tIsr: {isr}")
    return 0


async def run_topics_create(args: argparse.Namespace) -> int:
    configs = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--config {item!r}: expected KEY=VALUE")
        configs[key] = value
    topic = NewTopic(args.topic, args.partitions, args.replication_factor, configs)
    async with _admin(args) as admin:
        await admin.create_topics([topic])
    out(f"Created topic {args.topic}.")
    return 0


async def run_topics_delete(args: argparse.Namespace) -> int:
    async with _admin(args) as admin:
        await admin.delete_topics(args.topic)
    out(f"Deleted topic(s) {', '.join(args.topic)}.")
    return 0
